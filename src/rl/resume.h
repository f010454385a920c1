// The resume state of a CPU training run (fxt rl train --resume; docs/RL.md "Resuming a run"):
// RUN_DIR/resume.fxt, written atomically right after checkpoint.fxt at every --checkpoint-every.
// It holds everything train_dqn's loop depends on at that point — the agent (online and target
// parameters, AdamW moments and step), the replay buffer (transitions, ring position, the
// prioritised sum tree's leaves and the largest priority), every lane's pending n-step steps,
// every env lane (state, step counter, random streams), the acting and sampling Rngs, the lanes'
// current observations and running returns, the last 100 episode returns, the last update's
// statistics, the schedule's position (step; next update, target update, evaluation, log line
// and checkpoint; ε and β are functions of the step), the episode count, the evaluation curve,
// the stop-return flag and the number of metrics.jsonl lines written — so a run interrupted after
// a checkpoint and resumed gives the uninterrupted run's checkpoint bytes and metrics lines. No
// wall-clock time: the same run gives the same resume.fxt bytes.
//
// One self-checking Checkpoint file (train/checkpoint.h: CRC32s, atomic write, deterministic
// bytes), kind "rl-resume"; fxt rl eval's policy checkpoint (checkpoint.fxt) is unchanged. Its
// config["run"] is the run's identity (resume_identity): a resume whose flags give another
// identity is refused, naming the first key that differs.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/random.h"
#include "core/status.h"
#include "rl/dqn.h"
#include "rl/env_spec.h"
#include "rl/replay.h"
#include "rl/train_schedule.h"
#include "rl/trainer.h"
#include "rl/vec_env.h"

namespace fxt::rl {

inline constexpr const char* kResumeFile = "resume.fxt";
inline constexpr int kResumeFormat = 1;

// The loop's own state besides the agent, the replay buffer, the n-step accumulator and the env.
struct LoopState {
  TrainSchedule::Position schedule;
  Rng act_rng{0}, sample_rng{0};
  std::vector<float> obs;         // [N, obs_dim]: each lane's current observation
  std::vector<double> ep_return;  // [N]: each lane's running episode return
  std::deque<double> recent;      // the last (at most 100) finished episodes' returns
  UpdateStats last;               // the last update's statistics (metrics lines carry them)
  // episodes, eval_curve, last_eval_mean and reached_stop_return_at so far.
  TrainResult result;
  bool stop = false;          // an evaluation reached --stop-return
  int64_t metrics_lines = 0;  // lines written to metrics.jsonl
};

// What must be equal between a run and its resumption: the agent's config (seed, algorithm,
// network, schedules, steps, lanes, ...), the env and the options that shape metrics.jsonl and
// the checkpoints.
nlohmann::json resume_identity(const DqnConfig& cfg, const EnvSpec& spec, const TrainOptions& opts);

// Writes the resume state to `path` atomically.
Status write_resume_state(const std::string& path, const nlohmann::json& identity,
                          const DqnAgent& agent, const ReplayBuffer& replay,
                          const NStepAccumulator& nstep, const VecEnv& env, const LoopState& loop);

// Restores a run's parts (built from the same config as the run's) from `path`. Errors, in one
// line naming the file: NotFound when it does not exist; a UsageError when its identity differs
// from `identity` (the first differing key, both values); InvalidInput for a file that is not a
// resume state, is truncated or corrupt, or whose contents do not fit the parts.
Status read_resume_state(const std::string& path, const nlohmann::json& identity, DqnAgent* agent,
                         ReplayBuffer* replay, NStepAccumulator* nstep, VecEnv* env,
                         LoopState* loop);

}  // namespace fxt::rl
