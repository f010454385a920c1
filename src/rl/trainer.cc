#include "rl/trainer.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "core/file_util.h"
#include "core/progress.h"
#include "rl/evaluate.h"
#include "rl/resume.h"
#include "rl/train_schedule.h"

namespace fxt::rl {

Status RunLog::open(const std::string& out_dir) {
  if (out_dir.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return IoError("{}: cannot create the run directory: {}", out_dir, ec.message());
  path_ = out_dir + "/metrics.jsonl";
  metrics_.open(path_, std::ios::trunc);
  if (!metrics_) return IoError("{}: cannot open for writing", path_);
  lines_ = 0;
  return Status::Ok();
}

Status RunLog::open_resumed(const std::string& out_dir, int64_t keep_lines) {
  path_ = out_dir + "/metrics.jsonl";
  std::string kept;
  double seconds = 0;
  std::error_code ec;
  if (std::filesystem::exists(path_, ec)) {
    FXT_ASSIGN_OR_RETURN(std::string text, read_file(path_));
    size_t end = 0;
    for (int64_t i = 0; i < keep_lines; ++i) {
      const size_t nl = text.find('\n', end);
      if (nl == std::string::npos)
        return InvalidInput("{}: ends after line {}; the resume state was saved after line {}",
                            path_, i, keep_lines);
      end = nl + 1;
    }
    kept = text.substr(0, end);
    if (end > 0) {  // the clock goes on from the last kept line
      const size_t start = kept.rfind('\n', end - 2);
      const auto j = nlohmann::json::parse(kept.substr(start == std::string::npos ? 0 : start + 1),
                                           nullptr, false);
      if (j.is_object() && j.contains("seconds") && j["seconds"].is_number() &&
          j["seconds"].get<double>() >= 0 && j["seconds"].get<double>() < 1e9)
        seconds = j["seconds"].get<double>();
    }
  } else if (keep_lines > 0) {
    return InvalidInput("{}: missing; the resume state was saved after line {}", path_, keep_lines);
  }
  FXT_RETURN_IF_ERROR(write_file_atomic(path_, kept));
  metrics_.open(path_, std::ios::app);
  if (!metrics_) return IoError("{}: cannot open for appending", path_);
  lines_ = keep_lines;
  t0_ = std::chrono::steady_clock::now() -
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds));
  return Status::Ok();
}

double RunLog::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

Status RunLog::write(const MetricsLine& l) {
  if (!metrics_.is_open()) return Status::Ok();
  nlohmann::json j = {
      {"step", l.step},
      {"episodes", l.episodes},
      {"updates", l.updates},
      {"episodic_return",
       std::isnan(l.episodic_return) ? nlohmann::json() : nlohmann::json(l.episodic_return)},
      {"loss", l.loss},
      {"q", l.q},
      {"grad_norm", l.grad_norm},
      {"epsilon", l.epsilon},
      {"seconds", seconds()}};
  if (!std::isnan(l.beta)) j["beta"] = l.beta;
  if (!std::isnan(l.eval_return)) j["eval_return"] = l.eval_return;
  metrics_ << j.dump() << '\n';
  metrics_.flush();
  if (!metrics_) return IoError("{}: write failed", path_);
  ++lines_;
  return Status::Ok();
}

void RunLog::final_eval(int64_t step, double mean, TrainResult* result) {
  result->last_eval_mean = mean;
  result->eval_curve.emplace_back(step, mean);
}

bool RunLog::record_eval(const TrainOptions& opts, int64_t step, double mean,
                         TrainResult* result) const {
  final_eval(step, mean, result);
  if (std::isnan(opts.stop_return) || !(mean >= opts.stop_return)) return false;
  result->reached_stop_return_at = step;
  return true;
}

Result<MirrorMap> env_mirror_map(const EnvSpec& spec) {
  std::shared_ptr<const VecEnv> env = spec.make(1);
  std::vector<float> probe(static_cast<size_t>(env->obs_dim()), 0.0f);
  MirrorMap m;
  m.action.resize(static_cast<size_t>(env->num_actions()));
  for (int a = 0; a < env->num_actions(); ++a) {
    int b = a;
    if (!env->mirror(probe, &b)) return InvalidInput("env '{}' has no mirror symmetry", spec.name);
    m.action[static_cast<size_t>(a)] = b;
  }
  m.obs = [env](std::span<float> row) { env->mirror(row, nullptr); };
  return m;
}

Status check_resume_options(const TrainOptions& opts, bool gpu_learner) {
  const bool resuming = opts.resume || opts.stop_after_steps > 0;
  if (resuming && opts.out_dir.empty())
    return UsageError("--resume and --stop-after need a run directory (--out)");
  if (opts.stop_after_steps > 0 && opts.checkpoint_every <= 0)
    return UsageError("--stop-after stops at a checkpoint: it needs --checkpoint-every");
  if (resuming && gpu_learner)
    return UsageError("{}: the GPU learner (--device cuda) cannot resume a run; CPU runs only",
                      opts.resume ? "--resume" : "--stop-after");
  return Status::Ok();
}

Status check_mirror_flags(const DqnConfig& cfg, const EnvSpec& spec) {
  if ((!cfg.mirror && !cfg.symmetric_policy) || env_mirror_map(spec).ok()) return Status::Ok();
  return UsageError("{}: env '{}' has no mirror symmetry",
                    cfg.mirror ? "--mirror" : "--symmetric-policy", spec.name);
}

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
  if (cfg->symmetric_policy) {
    auto m = env_mirror_map(out.spec);
    if (!m.ok()) return InvalidInput("{}: symmetric_policy: {}", path, m.status().message());
    out.agent->set_mirror(std::move(m).value());
  }
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
  // A refused mirror flag leaves no run directory and allocates no replay buffer.
  FXT_RETURN_IF_ERROR(check_mirror_flags(cfg, spec));
  FXT_RETURN_IF_ERROR(check_resume_options(opts, /*gpu_learner=*/false));
  if (cfg.symmetric_policy && !agent->has_mirror()) {
    FXT_ASSIGN_OR_RETURN(MirrorMap m, env_mirror_map(spec));
    agent->set_mirror(std::move(m));
  }
  ReplayBuffer replay(cfg.buffer_size, d, cfg.per_alpha);
  NStepAccumulator nstep(n, d, cfg.n_step, cfg.gamma);
  TrainSchedule sched(cfg, opts, !opts.out_dir.empty());
  LoopState st;
  RunLog log;
  const std::string ckpt_path = opts.out_dir + "/checkpoint.fxt";
  const std::string resume_path = opts.out_dir + "/" + kResumeFile;
  const nlohmann::json identity = resume_identity(cfg, spec, opts);
  if (opts.resume) {
    // Everything is read and checked before metrics.jsonl is touched.
    FXT_RETURN_IF_ERROR(
        read_resume_state(resume_path, identity, agent, &replay, &nstep, env.get(), &st));
    sched.restore(st.schedule);
    FXT_RETURN_IF_ERROR(log.open_resumed(opts.out_dir, st.metrics_lines));
  } else {
    FXT_RETURN_IF_ERROR(log.open(opts.out_dir));
    st.act_rng = Rng(lane_seed(cfg.seed, 1, 11));
    st.sample_rng = Rng(lane_seed(cfg.seed, 2, 13));
    st.obs.resize(static_cast<size_t>(n) * static_cast<size_t>(d));
    env->reset(lane_seed(cfg.seed, 3, 17), st.obs);
    st.ep_return.assign(static_cast<size_t>(n), 0.0);
  }
  // --mirror: each transition is stored with its mirror image (same reward and discount).
  std::vector<float> mirror_obs(static_cast<size_t>(d)), mirror_next(static_cast<size_t>(d));
  auto store = [&](const Transition& t) {
    replay.add(t);
    if (!cfg.mirror) return;
    std::copy(t.obs, t.obs + d, mirror_obs.begin());
    std::copy(t.next_obs, t.next_obs + d, mirror_next.begin());
    Transition m = t;
    env->mirror(mirror_obs, &m.action);
    env->mirror(mirror_next, nullptr);
    m.obs = mirror_obs.data();
    m.next_obs = mirror_next.data();
    replay.add(m);
  };
  std::vector<float>& obs = st.obs;
  std::vector<int> actions;
  StepResult out;
  TrainResult& result = st.result;
  Progress progress("rl train", static_cast<uint64_t>(cfg.total_steps), "steps");
  const int64_t first_step = sched.step();
  progress.advance(static_cast<uint64_t>(first_step));
  int64_t step = first_step;
  auto write_line = [&](double eval_mean) -> Status {
    MetricsLine l;
    l.step = step;
    l.episodes = result.episodes;
    l.updates = agent->updates();
    if (!st.recent.empty()) {
      double mean_ret = 0;
      for (double r : st.recent) mean_ret += r / static_cast<double>(st.recent.size());
      l.episodic_return = mean_ret;
    }
    l.loss = st.last.loss;
    l.q = st.last.mean_q;
    l.grad_norm = st.last.grad_norm;
    l.epsilon = cfg.epsilon_at(step);
    if (cfg.per_alpha > 0) l.beta = cfg.beta_at(step);
    l.eval_return = eval_mean;
    return log.write(l);
  };
  bool& stop = st.stop;
  while (!sched.done() && !stop) {
    agent->act(obs, n, cfg.epsilon_at(step), st.act_rng, &actions);
    env->step(actions, &out);
    for (int i = 0; i < n; ++i) {
      const size_t li = static_cast<size_t>(i);
      nstep.push(i, &obs[li * static_cast<size_t>(d)], actions[li], out.reward[li],
                 &out.next_obs[li * static_cast<size_t>(d)], out.terminated[li] != 0,
                 out.truncated[li] != 0, store);
      st.ep_return[li] += out.reward[li];
      if (out.terminated[li] || out.truncated[li]) {
        st.recent.push_back(st.ep_return[li]);
        if (st.recent.size() > 100) st.recent.pop_front();
        st.ep_return[li] = 0;
        ++result.episodes;
      }
    }
    env->reset_finished(out, obs);
    sched.advance(1);
    step = sched.step();
    progress.advance(static_cast<uint64_t>(n));
    for (int u = sched.take_updates(replay.size()); u > 0; --u)
      st.last = agent->update(&replay, cfg.beta_at(step), st.sample_rng);
    for (int t = sched.take_targets(); t > 0; --t) agent->update_target();
    double eval_mean = std::numeric_limits<double>::quiet_NaN();
    if (sched.take_eval()) {
      eval_mean = evaluate_agent(agent, spec, opts.eval_episodes, opts.eval_seed).mean;
      stop = log.record_eval(opts, step, eval_mean, &result);
    }
    if (sched.take_log(!std::isnan(eval_mean))) FXT_RETURN_IF_ERROR(write_line(eval_mean));
    if (sched.take_checkpoint()) {
      FXT_RETURN_IF_ERROR(write_agent_checkpoint(ckpt_path, *agent, spec, step));
      st.schedule = sched.position();
      st.metrics_lines = log.lines();
      FXT_RETURN_IF_ERROR(
          write_resume_state(resume_path, identity, *agent, replay, nstep, *env, st));
      if (opts.stop_after_steps > 0 && step - first_step >= opts.stop_after_steps) {
        progress.finish();
        result.interrupted = true;
        result.env_steps = step;
        result.updates = agent->updates();
        result.seconds = log.seconds();
        return result;
      }
    }
  }
  progress.finish();
  const bool evaluated_last_step = !result.eval_curve.empty() && result.eval_curve.back().first == step;
  if (result.reached_stop_return_at < 0 && !evaluated_last_step) {
    const EvalResult ev = evaluate_agent(agent, spec, opts.eval_episodes, opts.eval_seed);
    RunLog::final_eval(step, ev.mean, &result);
    FXT_RETURN_IF_ERROR(write_line(ev.mean));
  }
  result.env_steps = step;
  result.updates = agent->updates();
  for (double r : st.recent) result.mean_recent_return += r / static_cast<double>(st.recent.size());
  result.seconds = log.seconds();
  if (!opts.out_dir.empty())
    FXT_RETURN_IF_ERROR(write_agent_checkpoint(ckpt_path, *agent, spec, step));
  return result;
}

}  // namespace fxt::rl
