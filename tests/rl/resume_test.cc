// Resuming an RL training run (rl/resume.h, fxt rl train --resume): a run interrupted after a
// checkpoint and resumed ends with the uninterrupted run's checkpoint bytes and metrics lines;
// resumes that cannot continue the run are refused in one line (exit 2).
#include "rl/resume.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/progress.h"
#include "rl/trainer.h"
#include "test_util.h"

namespace fxt::rl {
namespace {

namespace fs = std::filesystem;

EnvSpec env_named(const std::string& name) {
  EnvSpec s;
  s.name = name;
  s.execution.num_speeds = 5;
  return s;
}

// A small run: 1200 env steps on 2 lanes (3 with PER), an update every 2 steps from step 200,
// target updates every 100, greedy evaluations every 400, log lines every 100, checkpoints every
// 300 (each after a log line at the same step).
DqnConfig small_config(const EnvSpec& spec) {
  DqnConfig c;
  c.hidden = {16};
  c.support = spec.default_support();
  c.support.atoms = 11;
  c.batch = 32;
  c.buffer_size = 500;  // the ring wraps before the end
  c.learning_starts = 200;
  c.train_frequency = 2;
  c.target_update = 100;
  c.total_steps = 1200;
  c.num_envs = 2;
  c.seed = 7;
  return c;
}

TrainOptions small_options(const std::string& dir) {
  TrainOptions o;
  o.out_dir = dir;
  o.log_every = 100;
  o.eval_every = 400;
  o.eval_episodes = 2;
  o.checkpoint_every = 300;
  return o;
}

struct RunFiles {
  std::string checkpoint, metrics;
  TrainResult result;
};

RunFiles files_of(const std::string& dir, const TrainResult& r) {
  return {test::file_bytes(dir + "/checkpoint.fxt"),
          test::jsonl_without(dir + "/metrics.jsonl", "seconds"), r};
}

RunFiles run_uninterrupted(const EnvSpec& spec, const DqnConfig& cfg, const std::string& dir) {
  DqnAgent agent(cfg, spec.make(1)->obs_dim(), spec.make(1)->num_actions());
  auto r = train_dqn(spec, small_options(dir), &agent);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->interrupted);
  return files_of(dir, r.ok() ? r.value() : TrainResult());
}

// Stops after the first checkpoint (step 300), resumes and stops after the next one at least 300
// steps on (600), resumes to the end: each invocation with a fresh agent, as a new process.
RunFiles run_interrupted(const EnvSpec& spec, const DqnConfig& cfg, const std::string& dir) {
  auto env = spec.make(1);
  TrainResult last;
  const int64_t stops[] = {300, 600};
  for (int part = 0; part < 3; ++part) {
    DqnAgent agent(cfg, env->obs_dim(), env->num_actions());
    TrainOptions o = small_options(dir);
    o.resume = part > 0;
    o.stop_after_steps = part < 2 ? 1 : 0;
    if (part == 1) o.stop_after_steps = 300;
    auto r = train_dqn(spec, o, &agent);
    EXPECT_TRUE(r.ok()) << "part " << part << ": " << r.status().message();
    if (!r.ok()) return {};
    if (part < 2) {
      EXPECT_TRUE(r->interrupted);
      EXPECT_EQ(r->env_steps, stops[part]);
      EXPECT_TRUE(fs::exists(dir + "/" + kResumeFile));
    }
    last = r.value();
  }
  EXPECT_FALSE(last.interrupted);
  return files_of(dir, last);
}

void expect_same_run(const EnvSpec& spec, const DqnConfig& cfg) {
  Progress::set_enabled(false);
  const std::string dir = test::scratch_dir();
  const RunFiles a = run_uninterrupted(spec, cfg, dir + "/straight");
  const RunFiles b = run_interrupted(spec, cfg, dir + "/resumed");
  ASSERT_FALSE(a.checkpoint.empty());
  EXPECT_TRUE(a.checkpoint == b.checkpoint) << "final checkpoint bytes differ";
  EXPECT_EQ(a.metrics, b.metrics);
  // 12 log lines (every 100 steps) and the last evaluation at 1200 on the same line.
  EXPECT_EQ(std::count(a.metrics.begin(), a.metrics.end(), '\n'), 12);
  EXPECT_EQ(a.result.env_steps, 1200);
  EXPECT_EQ(b.result.env_steps, 1200);
  EXPECT_EQ(a.result.updates, b.result.updates);
  EXPECT_EQ(a.result.updates, 501);  // steps 200, 202, ..., 1200
  EXPECT_EQ(a.result.episodes, b.result.episodes);
  EXPECT_EQ(a.result.mean_recent_return, b.result.mean_recent_return);
  EXPECT_EQ(a.result.eval_curve, b.result.eval_curve);
  ASSERT_EQ(a.result.eval_curve.size(), 3u);  // at or just past 400, 800, 1200
  EXPECT_EQ(a.result.eval_curve[2].first, 1200);
}

TEST(RlResume, CartPoleC51ResumedTwiceEndsAsTheUninterruptedRun) {
  const EnvSpec spec = env_named("cartpole");
  expect_same_run(spec, small_config(spec));
}

TEST(RlResume, PrioritisedNStepMunchausenDuelingPolyakResumes) {
  const EnvSpec spec = env_named("cartpole");
  DqnConfig cfg = small_config(spec);
  cfg.per_alpha = 0.6;
  cfg.n_step = 3;
  cfg.munchausen = true;
  cfg.dueling = true;
  cfg.polyak = 0.5;
  cfg.num_envs = 3;
  cfg.total_steps = 1200;
  expect_same_run(spec, cfg);
}

TEST(RlResume, IqnThompsonOnExecutionResumes) {
  const EnvSpec spec = env_named("execution");
  DqnConfig cfg = small_config(spec);
  cfg.algo = Algo::kIqn;
  cfg.iqn_taus = 4;
  cfg.iqn_policy_taus = 8;
  cfg.iqn_embedding = 8;
  cfg.exploration = Exploration::kThompson;
  cfg.n_step = 2;
  expect_same_run(spec, cfg);
}

TEST(RlResume, MarketMakingMirrorResumes) {
  const EnvSpec spec = env_named("mm");
  DqnConfig cfg = small_config(spec);
  cfg.mirror = true;
  cfg.symmetric_policy = true;
  cfg.algo = Algo::kQrDqn;
  cfg.quantiles = 7;
  expect_same_run(spec, cfg);
}

// The replay buffer's and the n-step accumulator's saved form by hand: what save() writes,
// load() puts back, sum tree included.
TEST(RlResume, ReplayAndNStepRoundTrip) {
  ReplayBuffer replay(4, 2, 0.5);
  const float o[] = {1, 2}, n[] = {3, 4};
  for (int i = 0; i < 6; ++i) replay.add({o, i % 3, static_cast<float>(i), n, 0.5f});
  const int idx[] = {1, 3};
  const float prio[] = {4.0f, 0.25f};
  replay.update_priorities(idx, prio);
  Checkpoint ckpt;
  replay.save(&ckpt);
  EXPECT_EQ(ckpt.meta["replay"]["size"], 4);
  EXPECT_EQ(ckpt.meta["replay"]["next"], 2);
  auto pr = ckpt.get_f64("replay/priority");
  ASSERT_TRUE(pr.ok());
  // Leaves: transitions 4 and 5 overwrote slots 0 and 1 at the then largest priority 1, slot 1
  // was updated to 4^0.5 = 2 (the new largest), slot 3 to 0.25^0.5 = 0.5.
  EXPECT_EQ(pr.value(), (std::vector<double>{1.0, 2.0, 1.0, 0.5}));
  ReplayBuffer back(4, 2, 0.5);
  ASSERT_TRUE(back.load(ckpt, 3).ok());
  Rng r1(5), r2(5);
  ReplayBatch b1, b2;
  replay.sample(8, 0.4, r1, &b1);
  back.sample(8, 0.4, r2, &b2);
  EXPECT_EQ(b1.index, b2.index);
  EXPECT_EQ(b1.weight, b2.weight);
  EXPECT_EQ(b1.reward, b2.reward);
  // The next add lands in the same slot with the same (largest) priority in both.
  replay.add({n, 2, 9.0f, o, 0.0f});
  back.add({n, 2, 9.0f, o, 0.0f});
  Checkpoint c1, c2;
  replay.save(&c1);
  back.save(&c2);
  EXPECT_EQ(serialize_checkpoint(c1).value(), serialize_checkpoint(c2).value());
  // Loading into a buffer of another kind or with fewer actions is refused, naming the tensor.
  ReplayBuffer uniform(4, 2, 0.0);
  EXPECT_FALSE(uniform.load(ckpt, 3).ok());
  const Status few = back.load(ckpt, 2);
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.message().find("replay/action"), std::string::npos) << few.message();

  NStepAccumulator acc(2, 2, 3, 0.5);
  int emitted = 0;
  auto count = [&](const Transition&) { ++emitted; };
  acc.push(0, o, 1, 1.0f, n, false, false, count);
  acc.push(0, n, 0, 2.0f, o, false, false, count);
  acc.push(1, o, 1, 3.0f, n, false, false, count);
  Checkpoint nc;
  acc.save(&nc);
  EXPECT_EQ(nc.get_i64("nstep/count").value(), (std::vector<int64_t>{2, 1}));
  NStepAccumulator acc2(2, 2, 3, 0.5);
  ASSERT_TRUE(acc2.load(nc, 2).ok());
  // The third step of lane 0 emits the same 3-step transition from both: 1 + 0.5·2 + 0.25·4.
  // (The emitted obs points into the pending step, which is dropped after emit returns.)
  struct Seen {
    float reward = 0, discount = 0, obs0 = 0;
    int action = -1;
  } t1, t2;
  auto keep = [](Seen* seen) {
    return [seen](const Transition& t) { *seen = {t.reward, t.discount, t.obs[0], t.action}; };
  };
  acc.push(0, o, 1, 4.0f, n, false, false, keep(&t1));
  acc2.push(0, o, 1, 4.0f, n, false, false, keep(&t2));
  EXPECT_EQ(t1.reward, 3.0f);
  EXPECT_EQ(t2.reward, 3.0f);
  EXPECT_EQ(t2.discount, 0.125f);
  EXPECT_EQ(t2.obs0, 1.0f);
  EXPECT_EQ(t2.action, 1);
}

// The envs' lane records put every lane back where it was: the same next steps.
TEST(RlResume, EnvLanesRoundTrip) {
  for (const char* name : {"cartpole", "execution", "mm"}) {
    const EnvSpec spec = env_named(name);
    auto a = spec.make(3), b = spec.make(3);
    std::vector<float> obs(static_cast<size_t>(3 * a->obs_dim())), obs_b = obs;
    a->reset(11, obs);
    StepResult out_a, out_b;
    std::vector<int> act = {0, 1, 1};
    for (int k = 0; k < 4; ++k) {
      a->step(act, &out_a);
      a->reset_finished(out_a, obs);
    }
    b->reset(99, obs_b);
    ASSERT_TRUE(b->restore_lanes(a->save_lanes())) << name;
    for (int k = 0; k < 30; ++k) {
      a->step(act, &out_a);
      b->step(act, &out_b);
      EXPECT_EQ(out_a.next_obs, out_b.next_obs) << name << " step " << k;
      EXPECT_EQ(out_a.reward, out_b.reward) << name << " step " << k;
      a->reset_finished(out_a, obs);
      b->reset_finished(out_b, obs_b);
    }
    // A record of another lane count does not fit.
    auto c = spec.make(2);
    EXPECT_FALSE(c->restore_lanes(a->save_lanes())) << name;
  }
}

// --- the command line: refusals, and the same run through fxt rl train ---

// fxt rl train with small_config / small_options as flags; `set` replaces a flag's value (each
// flag is given once).
std::string train_command(const std::vector<std::pair<std::string, std::string>>& set = {}) {
  std::vector<std::pair<std::string, std::string>> flags = {{"--env", "cartpole"},
                                                            {"--hidden", "16"},
                                                            {"--atoms", "11"},
                                                            {"--batch", "32"},
                                                            {"--buffer-size", "500"},
                                                            {"--learning-starts", "200"},
                                                            {"--train-frequency", "2"},
                                                            {"--target-update", "100"},
                                                            {"--steps", "1200"},
                                                            {"--envs", "2"},
                                                            {"--seed", "7"},
                                                            {"--log-every", "100"},
                                                            {"--eval-every", "400"},
                                                            {"--eval-episodes", "2"},
                                                            {"--checkpoint-every", "300"}};
  for (const auto& [flag, value] : set) {
    bool found = false;
    for (auto& f : flags)
      if (f.first == flag) f.second = value, found = true;
    if (!found) flags.emplace_back(flag, value);
  }
  std::string cmd = "-q rl train";
  for (const auto& [flag, value] : flags) cmd += " " + flag + (value.empty() ? "" : " " + value);
  return cmd;
}

TEST(RlResume, CommandLineResumeMatchesAndRefusals) {
  const std::string dir = test::scratch_dir();
  const std::string a = dir + "/a", b = dir + "/b";
  auto straight = test::run_fxt(train_command() + " --out " + a);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  EXPECT_FALSE(fs::exists(a + "/" + kResumeFile)) << "a finished run keeps no resume state";

  // Without --resume a directory holding an unfinished run is refused; so is --resume where
  // there is nothing to resume.
  auto none = test::run_fxt(train_command() + " --resume --out " + b);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find(b + "/resume.fxt does not exist"), std::string::npos) << none.output;
  auto stopped = test::run_fxt(train_command({{"--stop-after", "500"}}) + " --out " + b);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("stopped after the checkpoint at 600 env steps"), std::string::npos)
      << stopped.output;
  EXPECT_FALSE(fs::exists(b + "/run.json"));
  const std::string metrics_at_600 = test::file_bytes(b + "/metrics.jsonl");
  const std::string resume_at_600 = test::file_bytes(b + "/" + kResumeFile);
  // The resume state holds no wall-clock time: the same run, stopped at the same checkpoint,
  // writes the same bytes.
  auto twin = test::run_fxt(train_command({{"--stop-after", "600"}}) + " --out " + dir + "/twin");
  ASSERT_EQ(twin.exit_code, 0) << twin.output;
  EXPECT_TRUE(test::file_bytes(dir + "/twin/" + kResumeFile) == resume_at_600);
  auto again = test::run_fxt(train_command() + " --out " + b);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("unfinished run (resume.fxt): add --resume"), std::string::npos)
      << again.output;

  // Flags that differ from the run's: refused, naming the file and the first differing key.
  auto seed = test::run_fxt(train_command({{"--seed", "8"}}) + " --resume --out " + b);
  EXPECT_EQ(seed.exit_code, 2) << seed.output;
  EXPECT_NE(seed.output.find(b + "/resume.fxt holds a run with agent.seed = 7; the flags give 8"),
            std::string::npos)
      << seed.output;
  auto hidden = test::run_fxt(train_command({{"--hidden", "32"}}) + " --resume --out " + b);
  EXPECT_EQ(hidden.exit_code, 2) << hidden.output;
  EXPECT_NE(hidden.output.find("agent.hidden = [16]; the flags give [32]"), std::string::npos)
      << hidden.output;
  auto every = test::run_fxt(train_command({{"--eval-every", "200"}}) + " --resume --out " + b);
  EXPECT_EQ(every.exit_code, 2) << every.output;
  EXPECT_NE(every.output.find("eval_every = 400; the flags give 200"), std::string::npos)
      << every.output;
  auto env = test::run_fxt(train_command({{"--env", "execution"}}) + " --resume --out " + b);
  EXPECT_EQ(env.exit_code, 2) << env.output;
  auto cuda = test::run_fxt(train_command({{"--device", "cuda"}}) + " --resume --out " + b);
  EXPECT_EQ(cuda.exit_code, 2) << cuda.output;
  EXPECT_NE(cuda.output.find("--resume: the GPU learner"), std::string::npos) << cuda.output;
  auto no_ckpt =
      test::run_fxt(train_command({{"--checkpoint-every", "0"}, {"--stop-after", "10"}}) +
                    " --out " + dir + "/c");
  EXPECT_EQ(no_ckpt.exit_code, 2) << no_ckpt.output;
  // Nothing a refusal read was changed.
  EXPECT_EQ(test::file_bytes(b + "/metrics.jsonl"), metrics_at_600);
  EXPECT_EQ(test::file_bytes(b + "/" + kResumeFile), resume_at_600);

  auto resumed = test::run_fxt(train_command() + " --resume --out " + b);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(test::file_bytes(a + "/checkpoint.fxt") == test::file_bytes(b + "/checkpoint.fxt"));
  EXPECT_EQ(test::jsonl_without(a + "/metrics.jsonl", "seconds"),
            test::jsonl_without(b + "/metrics.jsonl", "seconds"));
  EXPECT_FALSE(fs::exists(b + "/" + kResumeFile));
  const auto record = nlohmann::json::parse(test::file_bytes(b + "/run.json"));
  EXPECT_EQ(record["resumed"], true);
  EXPECT_EQ(record["eval_curve"],
            nlohmann::json::parse(test::file_bytes(a + "/run.json"))["eval_curve"]);
  // A finished run has nothing to resume.
  auto finished = test::run_fxt(train_command() + " --resume --out " + b);
  EXPECT_EQ(finished.exit_code, 2) << finished.output;
  EXPECT_NE(finished.output.find("records a finished run"), std::string::npos) << finished.output;
}

// A truncated or corrupted resume state, a file that is not one, and a metrics.jsonl shorter
// than the state says: one line naming the file, exit 2, and metrics.jsonl left as it was.
TEST(RlResume, CorruptResumeStateIsRefused) {
  const std::string dir = test::scratch_dir();
  const std::string run = dir + "/run", state = run + "/" + kResumeFile;
  auto stopped = test::run_fxt(train_command({{"--stop-after", "300"}}) + " --out " + run);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  const std::string good = test::file_bytes(state),
                    metrics = test::file_bytes(run + "/metrics.jsonl");
  ASSERT_GT(good.size(), 1000u);
  auto refused = [&](const std::string& what, const std::string& expect) {
    auto r = test::run_fxt(train_command() + " --resume --out " + run);
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << what << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << what << ": " << r.output;
    EXPECT_EQ(test::file_bytes(run + "/metrics.jsonl"), metrics) << what;
  };
  test::write_bytes(state, good.substr(0, good.size() / 2));
  refused("truncated", state);
  std::string flipped = good;
  flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x40);
  test::write_bytes(state, flipped);
  refused("one byte flipped", state);
  test::write_bytes(state, "");
  refused("empty", state);
  test::write_bytes(state, test::file_bytes(run + "/checkpoint.fxt"));
  refused("the policy checkpoint", "not an RL resume state");
  test::write_bytes(state, good);
  test::write_bytes(run + "/metrics.jsonl", metrics.substr(0, metrics.size() / 2));
  const std::string half = test::file_bytes(run + "/metrics.jsonl");
  auto short_metrics = test::run_fxt(train_command() + " --resume --out " + run);
  EXPECT_EQ(short_metrics.exit_code, 2) << short_metrics.output;
  EXPECT_NE(short_metrics.output.find(
                "metrics.jsonl: ends after line 1; the resume state was saved after line 3"),
            std::string::npos)
      << short_metrics.output;
  EXPECT_EQ(test::file_bytes(run + "/metrics.jsonl"), half);
  // Library level: the status names the file and maps to exit code 2.
  test::write_bytes(state, good.substr(0, 100));
  const EnvSpec spec = env_named("cartpole");
  DqnConfig cfg = small_config(spec);
  DqnAgent agent(cfg, 4, 2);
  ReplayBuffer replay(cfg.buffer_size, 4, 0);
  NStepAccumulator nstep(2, 4, 1, cfg.gamma);
  auto env = spec.make(2);
  LoopState loop;
  const Status s = read_resume_state(state, resume_identity(cfg, spec, small_options(run)), &agent,
                                     &replay, &nstep, env.get(), &loop);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_NE(s.message().find(state), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fxt::rl
