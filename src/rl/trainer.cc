#include "rl/trainer.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>

#include "core/file_util.h"
#include "core/progress.h"
#include "rl/evaluate.h"
#include "rl/train_schedule.h"

namespace fxt::rl {

Status write_agent_checkpoint(const std::string& path, const DqnAgent& agent, const EnvSpec& spec,
                              int64_t env_steps) {
  Checkpoint ckpt;
  agent.save(&ckpt);
  ckpt.config["env"] = spec.to_json();
  ckpt.meta["env_steps"] = env_steps;
  ckpt.meta["kind"] = "rl-dqn";
  return write_checkpoint(path, ckpt);
}

Result<LoadedAgent> read_agent_checkpoint(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(Checkpoint ckpt, read_checkpoint(path));
  if (!ckpt.config.contains("agent") || !ckpt.config.contains("env") ||
      !ckpt.config.contains("obs_dim") || !ckpt.config.contains("num_actions"))
    return InvalidInput("{}: not an RL agent checkpoint (config lacks agent/env)", path);
  auto cfg = DqnConfig::from_json(ckpt.config["agent"]);
  if (!cfg.ok()) return InvalidInput("{}: {}", path, cfg.status().message());
  auto spec = EnvSpec::from_json(ckpt.config["env"]);
  if (!spec.ok()) return InvalidInput("{}: {}", path, spec.status().message());
  LoadedAgent out;
  out.spec = spec.value();
  auto env = out.spec.make(1);
  const auto& obs_dim = ckpt.config["obs_dim"];
  const auto& num_actions = ckpt.config["num_actions"];
  if (!obs_dim.is_number_integer() || obs_dim.get<int>() != env->obs_dim() ||
      !num_actions.is_number_integer() || num_actions.get<int>() != env->num_actions())
    return InvalidInput("{}: obs_dim/num_actions {}/{} do not match env '{}' ({}/{})", path,
                        obs_dim.dump(), num_actions.dump(), out.spec.name, env->obs_dim(),
                        env->num_actions());
  out.agent = std::make_unique<DqnAgent>(cfg.value(), env->obs_dim(), env->num_actions());
  Status s = out.agent->load(ckpt);
  if (!s.ok()) return InvalidInput("{}: {}", path, s.message());
  if (ckpt.meta.contains("env_steps") && ckpt.meta["env_steps"].is_number_integer())
    out.env_steps = ckpt.meta["env_steps"].get<int64_t>();
  return out;
}

Result<TrainResult> train_dqn(const EnvSpec& spec, const TrainOptions& opts, DqnAgent* agent) {
  const DqnConfig& cfg = agent->config();
  auto env = spec.make(cfg.num_envs);
  const int n = cfg.num_envs, d = env->obs_dim();
  std::ofstream metrics;
  std::string metrics_path;
  if (!opts.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.out_dir, ec);
    if (ec) return IoError("{}: cannot create the run directory: {}", opts.out_dir, ec.message());
    metrics_path = opts.out_dir + "/metrics.jsonl";
    metrics.open(metrics_path, std::ios::trunc);
    if (!metrics) return IoError("{}: cannot open for writing", metrics_path);
  }
  ReplayBuffer replay(cfg.buffer_size, d, cfg.per_alpha);
  NStepAccumulator nstep(n, d, cfg.n_step, cfg.gamma);
  Rng act_rng(lane_seed(cfg.seed, 1, 11)), sample_rng(lane_seed(cfg.seed, 2, 13));
  std::vector<float> obs(static_cast<size_t>(n) * static_cast<size_t>(d));
  env->reset(lane_seed(cfg.seed, 3, 17), obs);
  std::vector<int> actions;
  std::vector<double> ep_return(static_cast<size_t>(n), 0.0);
  std::deque<double> recent;
  StepResult out;
  TrainResult result;
  UpdateStats last;
  TrainSchedule sched(cfg, opts, !opts.out_dir.empty());
  const auto t0 = std::chrono::steady_clock::now();
  Progress progress("rl train", static_cast<uint64_t>(cfg.total_steps), "steps");
  int64_t step = 0;
  auto write_line = [&](double eval_mean) -> Status {
    if (!metrics.is_open()) return Status::Ok();
    double mean_ret = 0;
    for (double r : recent) mean_ret += r / static_cast<double>(recent.size());
    nlohmann::json j = {{"step", step},
                        {"episodes", result.episodes},
                        {"updates", agent->updates()},
                        {"episodic_return", recent.empty() ? nlohmann::json() : nlohmann::json(mean_ret)},
                        {"loss", last.loss},
                        {"q", last.mean_q},
                        {"grad_norm", last.grad_norm},
                        {"epsilon", cfg.epsilon_at(step)},
                        {"seconds", std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count()}};
    if (cfg.per_alpha > 0) j["beta"] = cfg.beta_at(step);
    if (!std::isnan(eval_mean)) j["eval_return"] = eval_mean;
    metrics << j.dump() << '\n';
    metrics.flush();
    if (!metrics) return IoError("{}: write failed", metrics_path);
    return Status::Ok();
  };
  bool stop = false;
  while (!sched.done() && !stop) {
    agent->act(obs, n, cfg.epsilon_at(step), act_rng, &actions);
    env->step(actions, &out);
    for (int i = 0; i < n; ++i) {
      const size_t li = static_cast<size_t>(i);
      nstep.push(i, &obs[li * static_cast<size_t>(d)], actions[li], out.reward[li],
                 &out.next_obs[li * static_cast<size_t>(d)], out.terminated[li] != 0,
                 out.truncated[li] != 0, [&](const Transition& t) { replay.add(t); });
      ep_return[li] += out.reward[li];
      if (out.terminated[li] || out.truncated[li]) {
        recent.push_back(ep_return[li]);
        if (recent.size() > 100) recent.pop_front();
        ep_return[li] = 0;
        ++result.episodes;
      }
    }
    env->reset_finished(out, obs);
    sched.advance(1);
    step = sched.step();
    progress.advance(static_cast<uint64_t>(n));
    for (int u = sched.take_updates(replay.size()); u > 0; --u)
      last = agent->update(&replay, cfg.beta_at(step), sample_rng);
    for (int t = sched.take_targets(); t > 0; --t) agent->update_target();
    double eval_mean = std::numeric_limits<double>::quiet_NaN();
    if (sched.take_eval()) {
      eval_mean = evaluate_agent(agent, spec, opts.eval_episodes, opts.eval_seed).mean;
      result.last_eval_mean = eval_mean;
      result.eval_curve.emplace_back(step, eval_mean);
      if (!std::isnan(opts.stop_return) && eval_mean >= opts.stop_return) {
        result.reached_stop_return_at = step;
        stop = true;
      }
    }
    if (sched.take_log(!std::isnan(eval_mean))) FXT_RETURN_IF_ERROR(write_line(eval_mean));
    if (sched.take_checkpoint())
      FXT_RETURN_IF_ERROR(
          write_agent_checkpoint(opts.out_dir + "/checkpoint.fxt", *agent, spec, step));
  }
  progress.finish();
  const bool evaluated_last_step = !result.eval_curve.empty() && result.eval_curve.back().first == step;
  if (result.reached_stop_return_at < 0 && !evaluated_last_step) {
    const EvalResult ev = evaluate_agent(agent, spec, opts.eval_episodes, opts.eval_seed);
    result.last_eval_mean = ev.mean;
    result.eval_curve.emplace_back(step, ev.mean);
    FXT_RETURN_IF_ERROR(write_line(ev.mean));
  }
  result.env_steps = step;
  result.updates = agent->updates();
  for (double r : recent) result.mean_recent_return += r / static_cast<double>(recent.size());
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!opts.out_dir.empty())
    FXT_RETURN_IF_ERROR(
        write_agent_checkpoint(opts.out_dir + "/checkpoint.fxt", *agent, spec, step));
  return result;
}

}  // namespace fxt::rl
