#include "rl/device_trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/progress.h"
#include "rl/evaluate.h"
#include "rl/execution.h"
#include "rl/market_making.h"
#include "rl/train_schedule.h"
#include "sim/model_market.h"  // mean_and_std
#include "train/optimizer.h"

namespace fxt::rl {

Status device_learner_supports(const DqnConfig& cfg) {
  auto no = [](const char* what) {
    return UsageError("--device cuda: the GPU learner has no {} (use --device cpu)", what);
  };
  // The symmetric policy's own refusals (IQN, Thompson exploration) are DqnConfig::validate's.
  if (cfg.symmetric_policy) FXT_RETURN_IF_ERROR(cfg.validate());
  if (cfg.hidden.size() > 7) return no("torso deeper than 7 layers (--hidden)");
  const int rows = cfg.mirror ? 2 : 1;  // --mirror: each transition and its mirror image
  if (rows * cfg.num_envs > cfg.buffer_size)
    return UsageError(
        "--device cuda: --envs {} exceeds --buffer-size {} (one replay slot per lane "
        "and step{})",
        cfg.num_envs, cfg.buffer_size, cfg.mirror ? ", two with --mirror" : "");
  return Status::Ok();
}

Status set_device_mirror(const EnvSpec& spec, DeviceLearnerConfig* d) {
  FXT_ASSIGN_OR_RETURN(MirrorMap m, env_mirror_map(spec));
  if (m.action.size() != static_cast<size_t>(d->num_actions))
    return InvalidInput("env '{}': mirror of {} actions, expected {}", spec.name, m.action.size(),
                        d->num_actions);
  // Two probes of distinct, exactly representable values: each entry must map to ± itself.
  const size_t n = static_cast<size_t>(d->obs_dim);
  std::vector<float> a(n), b(n);
  for (size_t k = 0; k < n; ++k) a[k] = b[k] = static_cast<float>(k) + 1.5f;
  for (size_t k = 0; k < n; ++k) b[k] = -0.25f * static_cast<float>(2 * k + 3);
  std::vector<float> ma = a, mb = b;
  m.obs(ma);
  m.obs(mb);
  d->mirror_sign.assign(n, 1.0f);
  for (size_t k = 0; k < n; ++k) {
    const float s = ma[k] == a[k] ? 1.0f : -1.0f;
    if (ma[k] != s * a[k] || mb[k] != s * b[k])
      return UsageError(
          "--device cuda: the GPU learner's mirror (--mirror, --symmetric-policy) needs a "
          "mirror that flips "
          "signs of observation entries; env '{}' maps entry {} otherwise",
          spec.name, k);
    d->mirror_sign[k] = s;
  }
  d->mirror_action = m.action;
  return Status::Ok();
}

DeviceLearnerConfig device_learner_config(const DqnConfig& cfg, int obs_dim, int num_actions) {
  const QNetwork<float> net(q_network_config(cfg, obs_dim, num_actions));
  DeviceLearnerConfig d;
  d.obs_dim = obs_dim;
  d.num_actions = num_actions;
  d.quantile = cfg.algo == Algo::kQrDqn;
  d.atoms = cfg.num_outputs();  // C51 atoms, QR-DQN quantiles or IQN's 1
  d.v_min = cfg.support.v_min;
  d.v_max = cfg.support.v_max;
  if (cfg.algo == Algo::kC51)
    for (int j = 0; j < d.atoms; ++j)
      d.atom_values.push_back(static_cast<float>(cfg.support.atom(j)));
  const auto& specs = net.specs();  // (weight, bias) per layer, torso then head
  for (size_t i = 0; i + 1 < specs.size(); i += 2)
    d.layers.push_back({specs[i].offset, specs[i + 1].offset, specs[i].shape[1], specs[i].shape[0]});
  d.dueling = cfg.dueling;
  if (d.dueling) {  // the head is head.value then head.adv: the value stream apart
    d.value = d.layers[d.layers.size() - 2];
    d.layers.erase(d.layers.end() - 2);
  }
  if (cfg.algo == Algo::kIqn) {  // iqn.embed sits between the torso and the head: apart
    const auto at = d.layers.begin() + static_cast<std::ptrdiff_t>(cfg.hidden.size());
    d.embed = *at;
    d.layers.erase(at);
    d.iqn_embedding = cfg.iqn_embedding;
    d.iqn_taus = cfg.iqn_taus;
    d.iqn_policy_taus = cfg.iqn_policy_taus;
  }
  d.num_params = net.num_params();
  d.segments = gpu::segments_from_specs(specs);
  d.double_q = cfg.double_q;
  d.munchausen = cfg.munchausen;
  d.mdqn = cfg.mdqn;
  d.gamma = cfg.gamma;
  d.n_step = cfg.n_step;
  d.lr = cfg.lr;
  d.adam_eps = cfg.adam_eps;
  d.max_grad_norm = cfg.max_grad_norm;
  d.batch = cfg.batch;
  d.buffer_size = cfg.buffer_size;
  d.per_alpha = cfg.per_alpha;
  d.per_beta0 = cfg.per_beta0;
  d.polyak = cfg.polyak;
  d.eps_start = cfg.eps_start;
  d.eps_end = cfg.eps_end;
  d.exploration_fraction = cfg.exploration_fraction;
  d.thompson = cfg.exploration == Exploration::kThompson;
  d.mirror = cfg.mirror;
  d.symmetric_policy = cfg.symmetric_policy;
  d.total_steps = cfg.total_steps;
  d.num_envs = cfg.num_envs;
  d.train_frequency = cfg.train_frequency;
  d.seed = cfg.seed;
  return d;
}

std::unique_ptr<DeviceVecEnv> make_device_env(const EnvSpec& spec, int n) {
  if (spec.name == "execution")
    return std::make_unique<DeviceExecutionEnv>(execution_dynamics(spec.execution), n);
  if (spec.name == "mm")
    return std::make_unique<DeviceMarketMakingEnv>(market_making_dynamics(spec.mm), n);
  return std::make_unique<DeviceCartPoleEnv>(CartPoleDynamics{}, n);
}

Status copy_device_state(const DeviceC51Learner& learner, DqnAgent* agent) {
  const DqnConfig& cfg = agent->config();
  const DeviceLearnerConfig& dc = learner.config();
  const QNetwork<float> net(q_network_config(cfg, dc.obs_dim, dc.num_actions));
  std::vector<float> online = learner.online(), target = learner.target();
  std::vector<float> grads(online.size(), 0.0f);
  Checkpoint ckpt;
  for (const auto& s : net.specs()) {
    std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
    ckpt.set_f32(s.name, shape, std::span<const float>(online.data() + s.offset, s.size));
    ckpt.set_f32("target/" + s.name, shape, std::span<const float>(target.data() + s.offset, s.size));
  }
  // The optimizer state through the CPU AdamW's own checkpoint writer (its tensor names).
  AdamWConfig ac;
  ac.eps = cfg.adam_eps;
  ac.weight_decay = 0;
  ac.max_grad_norm = cfg.max_grad_norm;
  AdamW adam(ac);
  FXT_RETURN_IF_ERROR(adam.add_params(online, grads, net.specs()));
  const gpu::AdamWHostState st = learner.adam_state();
  FXT_RETURN_IF_ERROR(adam.import_state(st.step, st.m, st.v));
  adam.save_state(&ckpt);
  return agent->load(ckpt);
}

Result<TrainResult> train_dqn_device(const EnvSpec& spec, const TrainOptions& opts,
                                     DqnAgent* agent) {
  const DqnConfig& cfg = agent->config();
  FXT_RETURN_IF_ERROR(device_learner_supports(cfg));
  FXT_RETURN_IF_ERROR(check_mirror_flags(cfg, spec));
  FXT_RETURN_IF_ERROR(check_resume_options(opts, /*gpu_learner=*/true));
  if (!gpu::cuda_available()) return UsageError("--device cuda: no CUDA device is usable");
  const int n = cfg.num_envs;
  RunLog log;
  FXT_RETURN_IF_ERROR(log.open(opts.out_dir));
  gpu::Context ctx(0);
  auto env = make_device_env(spec, n);
  auto eval_env = make_device_env(spec, opts.eval_episodes);
  const std::vector<float> init(agent->params().begin(), agent->params().end());
  DeviceLearnerConfig dcfg = device_learner_config(cfg, env->obs_dim(), env->num_actions());
  if (cfg.mirror || cfg.symmetric_policy) FXT_RETURN_IF_ERROR(set_device_mirror(spec, &dcfg));
  DeviceC51Learner learner(dcfg, env.get(), ctx, init);
  learner.reset(lane_seed(cfg.seed, 3, 17));  // the CPU trainer's env seed
  TrainResult result;
  DeviceLearnerStats last{};
  TrainSchedule sched(cfg, opts, !opts.out_dir.empty());
  sched.set_replay_lag(static_cast<int64_t>(cfg.n_step - 1) * n);  // n-step rows come n − 1 late
  sched.set_replay_rows(cfg.mirror ? 2 : 1);  // --mirror: each transition and its mirror image
  int64_t updates = 0;
  Progress progress("rl train (cuda)", static_cast<uint64_t>(cfg.total_steps), "steps");
  int64_t step = 0;
  auto write_line = [&](double eval_mean) -> Status {
    last = learner.stats();
    MetricsLine l;
    l.step = step;
    l.episodes = last.episodes;
    l.updates = last.updates;
    l.episodic_return = learner.recent_return_mean();  // NaN before the first episode
    l.loss = last.loss;
    l.q = last.mean_q;
    l.grad_norm = last.grad_norm;
    l.epsilon = cfg.epsilon_at(step);
    if (cfg.per_alpha > 0) l.beta = cfg.beta_at(step);
    l.eval_return = eval_mean;
    return log.write(l);
  };
  auto evaluate = [&]() {
    EvalResult ev;
    ev.returns = learner.evaluate(eval_env.get(), opts.eval_seed);
    sim::mean_and_std(ev.returns, &ev.mean, &ev.std);
    return ev.mean;
  };
  auto write_checkpoint = [&]() -> Status {
    FXT_RETURN_IF_ERROR(copy_device_state(learner, agent));
    return write_agent_checkpoint(opts.out_dir + "/checkpoint.fxt", *agent, spec, step);
  };
  const int k = learner.chunk_steps();
  bool stop = false;
  while (!sched.done() && !stop) {
    // k env steps (and the one update after them) as one graph where the schedule allows.
    const TrainSchedule::Next next = sched.plan(k);
    if (next.iterations > 1) {
      if (next.update) {
        learner.env_chunk_update();
      } else {
        learner.env_chunk();
      }
    } else {
      learner.env_step();
    }
    sched.advance(next.iterations);
    step = sched.step();
    const int due = sched.take_updates();  // includes the chunk's own update
    for (int u = next.update ? 1 : 0; u < due; ++u) learner.update();
    updates += due;
    progress.set(static_cast<uint64_t>(step));
    for (int t = sched.take_targets(); t > 0; --t) learner.update_target();
    double eval_mean = std::numeric_limits<double>::quiet_NaN();
    if (sched.take_eval()) {
      eval_mean = evaluate();
      stop = log.record_eval(opts, step, eval_mean, &result);
    }
    if (sched.take_log(!std::isnan(eval_mean))) FXT_RETURN_IF_ERROR(write_line(eval_mean));
    if (sched.take_checkpoint()) FXT_RETURN_IF_ERROR(write_checkpoint());
  }
  progress.finish();
  const bool evaluated_last_step = !result.eval_curve.empty() && result.eval_curve.back().first == step;
  if (result.reached_stop_return_at < 0 && !evaluated_last_step) {
    const double ev = evaluate();
    RunLog::final_eval(step, ev, &result);
    FXT_RETURN_IF_ERROR(write_line(ev));
  }
  last = learner.stats();
  result.env_steps = step;
  result.updates = last.updates;
  result.episodes = last.episodes;
  const double recent = learner.recent_return_mean();
  result.mean_recent_return = std::isnan(recent) ? 0.0 : recent;
  result.seconds = log.seconds();
  FXT_RETURN_IF_ERROR(copy_device_state(learner, agent));
  if (updates != last.updates)
    return InternalError("GPU learner: {} updates scheduled, {} ran", updates, last.updates);
  if (!opts.out_dir.empty())
    FXT_RETURN_IF_ERROR(write_agent_checkpoint(opts.out_dir + "/checkpoint.fxt", *agent, spec, step));
  return result;
}

}  // namespace fxt::rl
