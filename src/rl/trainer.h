// The DQN training loop: N lanes of an env, ε-greedy (or Thompson) acting, n-step transitions into
// replay, one update every train_frequency env steps after learning_starts, target updates every
// target_update env steps, periodic greedy evaluation, metrics.jsonl lines and checkpoints
// (atomic) in the run directory. Deterministic in the config's seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"
#include "rl/dqn.h"
#include "rl/env_spec.h"

namespace fxt::rl {

struct TrainOptions {
  std::string out_dir;          // metrics.jsonl and checkpoint.fxt go here; "" writes nothing
  int64_t log_every = 10000;    // env steps between metrics lines
  int64_t eval_every = 0;       // env steps between greedy evaluations; 0: only at the end
  int eval_episodes = 10;
  uint64_t eval_seed = 0x5eed;  // the evaluation episodes' seed (the same every evaluation)
  double stop_return = std::numeric_limits<double>::quiet_NaN();  // stop once an eval reaches it
  int64_t checkpoint_every = 0;  // env steps between checkpoints; 0: only at the end
  // Continue the run in out_dir from its resume state (rl/resume.h), which every checkpoint of
  // a CPU run writes beside checkpoint.fxt; the config and these options must be the run's.
  bool resume = false;
  // > 0: return right after the first checkpoint at least this many env steps into this
  // invocation, as if the run had been killed there (continue it with resume).
  int64_t stop_after_steps = 0;
};

struct TrainResult {
  int64_t env_steps = 0;
  int64_t updates = 0;
  int64_t episodes = 0;
  double seconds = 0;
  double last_eval_mean = std::numeric_limits<double>::quiet_NaN();
  int64_t reached_stop_return_at = -1;  // env steps at the first eval >= stop_return
  double mean_recent_return = 0;        // last 100 training episodes
  std::vector<std::pair<int64_t, double>> eval_curve;  // (env steps, eval mean)
  bool interrupted = false;  // returned at a checkpoint (stop_after_steps): the run goes on
};

// One metrics.jsonl line (docs/RL.md "Commands"); NaN fields are written as null or left out.
struct MetricsLine {
  int64_t step = 0, episodes = 0, updates = 0;
  double episodic_return = std::numeric_limits<double>::quiet_NaN();  // NaN: no episode yet
  double loss = 0, q = 0, grad_norm = 0, epsilon = 0;
  double beta = std::numeric_limits<double>::quiet_NaN();  // prioritised replay only
  double eval_return = std::numeric_limits<double>::quiet_NaN();
};

// What the CPU and GPU trainers share about a run: metrics.jsonl in the run directory, the
// clock, and the evaluation curve with the stop-return rule.
class RunLog {
 public:
  // Opens RUN_DIR/metrics.jsonl (creating the directory); out_dir "" writes nothing.
  Status open(const std::string& out_dir);
  // Reopens a resumed run's RUN_DIR/metrics.jsonl: keeps its first keep_lines lines (those
  // written up to the resume state; the rest are written again, so the file ends as the
  // uninterrupted run's) and appends; the clock goes on from the last kept line's "seconds".
  // InvalidInput naming the file when it holds fewer lines.
  Status open_resumed(const std::string& out_dir, int64_t keep_lines);
  // Lines written to metrics.jsonl, those kept by open_resumed included.
  int64_t lines() const { return lines_; }
  // Appends the line (with "seconds" since construction); an IoError when the write fails.
  Status write(const MetricsLine& line);
  // Records an evaluation during training at `step` in result; true (stop) when it reaches
  // opts.stop_return. The evaluation after the last step is recorded with final_eval.
  bool record_eval(const TrainOptions& opts, int64_t step, double mean, TrainResult* result) const;
  static void final_eval(int64_t step, double mean, TrainResult* result);
  double seconds() const;

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::ofstream metrics_;
  std::string path_;
  int64_t lines_ = 0;
};

// spec's env's mirror symmetry as a MirrorMap (the map owns a one-lane env); an InvalidInput
// error when the env has none.
Result<MirrorMap> env_mirror_map(const EnvSpec& spec);
// --mirror and --symmetric-policy need an env with a mirror: a one-line usage error naming the
// flag otherwise.
Status check_mirror_flags(const DqnConfig& cfg, const EnvSpec& spec);
// --resume and --stop-after need a run directory, --stop-after needs --checkpoint-every, and
// neither works with the GPU learner, which saves no resume state (docs/RL.md "Resuming a
// run"): a one-line usage error naming the flag otherwise.
Status check_resume_options(const TrainOptions& opts, bool gpu_learner);

// Trains `agent` (built from cfg with the env's dimensions) on spec's env; with
// --symmetric-policy it gives the agent the env's mirror first. With opts.resume it continues
// the run in opts.out_dir from its resume state instead of starting afresh (rl/resume.h).
// Every checkpoint writes checkpoint.fxt and then resume.fxt.
Result<TrainResult> train_dqn(const EnvSpec& spec, const TrainOptions& opts, DqnAgent* agent);

// Checkpoint of an agent with its env: agent state plus config["env"].
Status write_agent_checkpoint(const std::string& path, const DqnAgent& agent, const EnvSpec& spec,
                              int64_t env_steps);
// Rebuilds the env spec and agent from a checkpoint file.
struct LoadedAgent {
  EnvSpec spec;
  std::unique_ptr<DqnAgent> agent;
  int64_t env_steps = 0;
};
Result<LoadedAgent> read_agent_checkpoint(const std::string& path);

}  // namespace fxt::rl
