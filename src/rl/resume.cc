#include "rl/resume.h"

#include <bit>
#include <cmath>
#include <filesystem>
#include <utility>

#include "rl/rng_state.h"
#include "train/checkpoint.h"

namespace fxt::rl {

namespace {

// The loop's doubles that may be NaN (no update or evaluation yet) go into an i64 tensor as their
// bits: exact, and a checkpoint's f64 tensors must be finite.
enum LoopDouble { kLoss, kMeanQ, kGradNorm, kLastEval, kLoopDoubles };

// "" when equal; else the first differing key (dotted path) with both values.
std::string first_difference(const nlohmann::json& stored, const nlohmann::json& given,
                             const std::string& path) {
  if (stored.is_object() && given.is_object()) {
    for (const auto& [key, value] : stored.items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      if (!given.contains(key)) return fmt::format("{} = {}; the flags give none", p, value.dump());
      std::string d = first_difference(value, given[key], p);
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : given.items())
      if (!stored.contains(key))
        return fmt::format("no {}; the flags give {}", path.empty() ? key : path + "." + key,
                           value.dump());
    return "";
  }
  if (stored == given) return "";
  return fmt::format("{} = {}; the flags give {}", path, stored.dump(), given.dump());
}

Status read_loop(const Checkpoint& ckpt, const DqnConfig& cfg, int obs_dim, LoopState* loop) {
  const std::string& w = ckpt.source;
  const int64_t n = cfg.num_envs, total = cfg.total_steps;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  LoopState s;
  FXT_ASSIGN_OR_RETURN(s.schedule.step, ckpt.meta_int("loop", "step", 0, total));
  // The schedule's next events lie after the step (a disabled one is -1 or 0).
  FXT_ASSIGN_OR_RETURN(s.schedule.next_update, ckpt.meta_int("loop", "next_update", 0, kMax));
  FXT_ASSIGN_OR_RETURN(s.schedule.next_target, ckpt.meta_int("loop", "next_target", 1, kMax));
  FXT_ASSIGN_OR_RETURN(s.schedule.next_log, ckpt.meta_int("loop", "next_log", 1, kMax));
  FXT_ASSIGN_OR_RETURN(s.schedule.next_eval, ckpt.meta_int("loop", "next_eval", -1, kMax));
  FXT_ASSIGN_OR_RETURN(s.schedule.next_ckpt, ckpt.meta_int("loop", "next_ckpt", -1, kMax));
  FXT_ASSIGN_OR_RETURN(s.result.episodes, ckpt.meta_int("loop", "episodes", 0, kMax));
  FXT_ASSIGN_OR_RETURN(s.result.reached_stop_return_at,
                       ckpt.meta_int("loop", "reached_stop_return_at", -1, total));
  FXT_ASSIGN_OR_RETURN(const int64_t stop, ckpt.meta_int("loop", "stop", 0, 1));
  s.stop = stop != 0;
  FXT_ASSIGN_OR_RETURN(s.metrics_lines, ckpt.meta_int("loop", "metrics_lines", 0, kMax));

  const int64_t obs_shape[] = {n, obs_dim}, lanes_shape[] = {n}, rng_shape[] = {2, 4},
                doubles_shape[] = {kLoopDoubles};
  FXT_ASSIGN_OR_RETURN(s.obs, ckpt.get_f32("loop/obs", obs_shape));
  FXT_ASSIGN_OR_RETURN(s.ep_return, ckpt.get_f64("loop/episode_return", lanes_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<double> recent, ckpt.get_f64("loop/recent"));
  const NamedTensor* rt = ckpt.find("loop/recent");
  if (rt->shape.size() != 1 || recent.size() > 100)
    return InvalidInput("{}: tensor 'loop/recent': shape {}, expected [0..100]", w,
                        shape_string(rt->shape));
  s.recent.assign(recent.begin(), recent.end());
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> eval_step, ckpt.get_i64("loop/eval_step"));
  const NamedTensor* et = ckpt.find("loop/eval_step");
  if (et->shape.size() != 1)
    return InvalidInput("{}: tensor 'loop/eval_step': shape {}, expected one dimension", w,
                        shape_string(et->shape));
  const int64_t eval_shape[] = {static_cast<int64_t>(eval_step.size())};
  FXT_ASSIGN_OR_RETURN(std::vector<double> eval_mean, ckpt.get_f64("loop/eval_mean", eval_shape));
  for (size_t i = 0; i < eval_step.size(); ++i)
    s.result.eval_curve.emplace_back(eval_step[i], eval_mean[i]);
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> rng, ckpt.get_i64("loop/rng", rng_shape));
  std::array<uint64_t, 8> words;
  for (size_t i = 0; i < 8; ++i) words[i] = std::bit_cast<uint64_t>(rng[i]);
  s.act_rng = rng_from_words(std::span<const uint64_t, 4>(words.data(), 4));
  s.sample_rng = rng_from_words(std::span<const uint64_t, 4>(words.data() + 4, 4));
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> bits, ckpt.get_i64("loop/doubles", doubles_shape));
  auto d = [&](LoopDouble i) { return std::bit_cast<double>(bits[static_cast<size_t>(i)]); };
  s.last.loss = d(kLoss);
  s.last.mean_q = d(kMeanQ);
  s.last.grad_norm = d(kGradNorm);
  s.result.last_eval_mean = d(kLastEval);
  *loop = std::move(s);
  return Status::Ok();
}

}  // namespace

nlohmann::json resume_identity(const DqnConfig& cfg, const EnvSpec& spec,
                               const TrainOptions& opts) {
  return {{"agent", cfg.to_json()},
          {"env", spec.to_json()},
          {"log_every", opts.log_every},
          {"eval_every", opts.eval_every},
          {"eval_episodes", opts.eval_episodes},
          {"eval_seed", opts.eval_seed},
          {"stop_return",
           std::isnan(opts.stop_return) ? nlohmann::json() : nlohmann::json(opts.stop_return)},
          {"checkpoint_every", opts.checkpoint_every}};
}

Status write_resume_state(const std::string& path, const nlohmann::json& identity,
                          const DqnAgent& agent, const ReplayBuffer& replay,
                          const NStepAccumulator& nstep, const VecEnv& env, const LoopState& loop) {
  Checkpoint ckpt;
  agent.save(&ckpt);
  ckpt.config["run"] = identity;
  ckpt.meta["kind"] = "rl-resume";
  ckpt.meta["format"] = kResumeFormat;
  ckpt.meta["env_steps"] = loop.schedule.step;
  replay.save(&ckpt);
  nstep.save(&ckpt);

  const LaneRecord lanes = env.save_lanes();
  const int64_t n = env.num_envs();
  ckpt.meta["env_lanes"] = {{"reals_per_lane", lanes.reals_per_lane},
                            {"words_per_lane", lanes.words_per_lane}};
  ckpt.set_f64("env/reals", {n, lanes.reals_per_lane}, lanes.reals);
  std::vector<int64_t> words(lanes.words.size());
  for (size_t i = 0; i < words.size(); ++i) words[i] = std::bit_cast<int64_t>(lanes.words[i]);
  ckpt.set_i64("env/words", {n, lanes.words_per_lane}, words);

  const TrainSchedule::Position& p = loop.schedule;
  ckpt.meta["loop"] = {{"step", p.step},
                       {"next_update", p.next_update},
                       {"next_target", p.next_target},
                       {"next_log", p.next_log},
                       {"next_eval", p.next_eval},
                       {"next_ckpt", p.next_ckpt},
                       {"episodes", loop.result.episodes},
                       {"reached_stop_return_at", loop.result.reached_stop_return_at},
                       {"stop", loop.stop ? 1 : 0},
                       {"metrics_lines", loop.metrics_lines}};
  ckpt.set_f32("loop/obs", {n, env.obs_dim()}, loop.obs);
  ckpt.set_f64("loop/episode_return", {n}, loop.ep_return);
  const std::vector<double> recent(loop.recent.begin(), loop.recent.end());
  ckpt.set_f64("loop/recent", {static_cast<int64_t>(recent.size())}, recent);
  std::vector<int64_t> eval_step;
  std::vector<double> eval_mean;
  for (const auto& [step, mean] : loop.result.eval_curve) {
    eval_step.push_back(step);
    eval_mean.push_back(mean);
  }
  const int64_t evals = static_cast<int64_t>(eval_step.size());
  ckpt.set_i64("loop/eval_step", {evals}, eval_step);
  ckpt.set_f64("loop/eval_mean", {evals}, eval_mean);
  std::vector<int64_t> rng;
  for (const Rng* r : {&loop.act_rng, &loop.sample_rng})
    for (uint64_t word : rng_words(*r)) rng.push_back(std::bit_cast<int64_t>(word));
  ckpt.set_i64("loop/rng", {2, 4}, rng);
  std::vector<int64_t> bits(kLoopDoubles);
  bits[kLoss] = std::bit_cast<int64_t>(loop.last.loss);
  bits[kMeanQ] = std::bit_cast<int64_t>(loop.last.mean_q);
  bits[kGradNorm] = std::bit_cast<int64_t>(loop.last.grad_norm);
  bits[kLastEval] = std::bit_cast<int64_t>(loop.result.last_eval_mean);
  ckpt.set_i64("loop/doubles", {kLoopDoubles}, bits);
  return write_checkpoint(path, ckpt);
}

Status read_resume_state(const std::string& path, const nlohmann::json& identity, DqnAgent* agent,
                         ReplayBuffer* replay, NStepAccumulator* nstep, VecEnv* env,
                         LoopState* loop) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return NotFound(
        "--resume: {} does not exist (a CPU run writes it at every --checkpoint-every; a run "
        "without checkpoints cannot be resumed)",
        path);
  FXT_ASSIGN_OR_RETURN(Checkpoint ckpt, read_checkpoint(path));
  ckpt.source = path;
  const auto kind = ckpt.meta.find("kind");
  if (kind == ckpt.meta.end() || *kind != "rl-resume")
    return InvalidInput("{}: not an RL resume state (meta.kind {}, expected \"rl-resume\")", path,
                        kind == ckpt.meta.end() ? "absent" : kind->dump());
  const auto format = ckpt.meta.find("format");
  if (format == ckpt.meta.end() || *format != kResumeFormat)
    return InvalidInput("{}: resume state format {}, expected {}", path,
                        format == ckpt.meta.end() ? "absent" : format->dump(), kResumeFormat);
  if (!ckpt.config.contains("run"))
    return InvalidInput("{}: the resume state has no config.run (the run's flags)", path);
  const std::string diff = first_difference(ckpt.config["run"], identity, "");
  if (!diff.empty())
    return UsageError("--resume: {} holds a run with {} (resume with the run's own flags)", path,
                      diff);

  FXT_RETURN_IF_ERROR(agent->load(ckpt));
  FXT_RETURN_IF_ERROR(replay->load(ckpt, agent->num_actions()));
  FXT_RETURN_IF_ERROR(nstep->load(ckpt, agent->num_actions()));

  LaneRecord lanes;
  FXT_ASSIGN_OR_RETURN(const int64_t r, ckpt.meta_int("env_lanes", "reals_per_lane", 0, 64));
  FXT_ASSIGN_OR_RETURN(const int64_t wpl, ckpt.meta_int("env_lanes", "words_per_lane", 0, 64));
  const int64_t n = env->num_envs();
  lanes.reals_per_lane = static_cast<int>(r);
  lanes.words_per_lane = static_cast<int>(wpl);
  const int64_t reals_shape[] = {n, r}, words_shape[] = {n, wpl};
  FXT_ASSIGN_OR_RETURN(lanes.reals, ckpt.get_f64("env/reals", reals_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> words, ckpt.get_i64("env/words", words_shape));
  for (int64_t word : words) lanes.words.push_back(std::bit_cast<uint64_t>(word));
  LoopState s;
  FXT_RETURN_IF_ERROR(read_loop(ckpt, agent->config(), env->obs_dim(), &s));
  if (!env->restore_lanes(lanes))
    return InvalidInput(
        "{}: the env lanes ({} reals, {} words per lane) do not fit env '{}' with {} lanes", path,
        r, wpl, env->name(), n);
  *loop = std::move(s);
  return Status::Ok();
}

}  // namespace fxt::rl
