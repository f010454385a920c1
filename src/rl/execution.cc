#include "rl/execution.h"

#include <cassert>
#include <cmath>

#include "rl/closed_form_lane.h"
#include "rl/rng_state.h"

namespace fxt::rl {

Status ExecutionParams::validate() const {
  auto finite = [](double x) { return std::isfinite(x); };
  if (!finite(horizon) || horizon <= 0)
    return UsageError("execution: horizon must be > 0, got {}", horizon);
  if (steps < 1) return UsageError("execution: steps must be >= 1, got {}", steps);
  if (!finite(q0) || q0 <= 0) return UsageError("execution: q0 must be > 0, got {}", q0);
  if (!finite(s0)) return UsageError("execution: s0 must be finite, got {}", s0);
  if (!finite(sigma) || sigma < 0) return UsageError("execution: sigma must be >= 0, got {}", sigma);
  if (!finite(temp_impact) || temp_impact <= 0)
    return UsageError("execution: temporary impact k must be > 0, got {}", temp_impact);
  if (!finite(perm_impact) || perm_impact < 0)
    return UsageError("execution: permanent impact b must be >= 0, got {}", perm_impact);
  if (!finite(phi) || phi < 0) return UsageError("execution: phi must be >= 0, got {}", phi);
  if (!finite(alpha) || alpha < perm_impact / 2)
    return UsageError("execution: alpha must be finite and >= b/2 = {}, got {}", perm_impact / 2,
                      alpha);
  if (num_speeds < 2) return UsageError("execution: num_speeds must be >= 2, got {}", num_speeds);
  if (!finite(max_speed) || max_speed <= 0)
    return UsageError("execution: max_speed must be > 0, got {}", max_speed);
  return Status::Ok();
}

double execution_speed_factor(const ExecutionParams& p, double tau) {
  return execution_speed_factor(execution_dynamics(p), tau);
}

double execution_optimal_inventory(const ExecutionParams& p, double t) {
  const double a = p.alpha - p.perm_impact / 2;
  const double tau = p.horizon - t;
  if (p.phi == 0) {
    const double v_terminal = a / p.temp_impact;
    return p.q0 * (1 + v_terminal * tau) / (1 + v_terminal * p.horizon);
  }
  const double gamma = std::sqrt(p.phi / p.temp_impact);
  const double c = std::sqrt(p.temp_impact * p.phi);
  auto f = [&](double x) { return (a + c) * std::exp(gamma * x) - (a - c) * std::exp(-gamma * x); };
  return p.q0 * f(tau) / f(p.horizon);
}

double execution_optimal_value(const ExecutionParams& p) {
  return -(p.temp_impact * execution_speed_factor(p, p.horizon) + p.perm_impact / 2) * p.q0 *
         p.q0;
}

ExecutionDynamics execution_dynamics(const ExecutionParams& p) {
  ExecutionDynamics d;
  d.horizon = p.horizon;
  d.dt = p.dt();
  d.mid_sd = p.sigma * std::sqrt(d.dt);
  d.temp_impact = p.temp_impact;
  d.perm_impact = p.perm_impact;
  d.phi = p.phi;
  d.alpha = p.alpha;
  d.q0 = p.q0;
  d.s0 = p.s0;
  d.steps = p.steps;
  d.num_speeds = p.num_speeds;
  d.max_speed = p.max_speed;
  return d;
}

ExecutionEnv::ExecutionEnv(const ExecutionParams& p, int num_envs)
    : p_(p), d_(execution_dynamics(p)), lanes_(static_cast<size_t>(num_envs)) {
  assert(p.validate().ok() && num_envs >= 1);
}

void ExecutionEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    execution_seed(&lanes_[i], seed, i);
    execution_start(d_, &lanes_[i]);
    execution_obs(d_, lanes_[i], obs.data() + 2 * i);
  }
}

void ExecutionEnv::step_speeds(std::span<const double> speeds, StepResult* out) {
  const int n = num_envs();
  assert(speeds.size() == static_cast<size_t>(n));
  out->resize(n, 2);
  for (size_t i = 0; i < lanes_.size(); ++i)
    write_step(execution_step(d_, &lanes_[i], speeds[i]), i, out);
}

void ExecutionEnv::write_step(const LaneStep& r, size_t i, StepResult* out) const {
  execution_obs(d_, lanes_[i], out->next_obs.data() + 2 * i);
  out->reward[i] = static_cast<float>(r.reward);
  out->terminated[i] = r.terminated ? 1 : 0;
  out->truncated[i] = r.truncated ? 1 : 0;
}

void ExecutionEnv::step(std::span<const int> actions, StepResult* out) {
  const int n = num_envs();
  assert(actions.size() == static_cast<size_t>(n));
  out->resize(n, 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    assert(actions[i] >= 0 && actions[i] < p_.num_speeds);
    write_step(execution_step_action(d_, &lanes_[i], actions[i]), i, out);
  }
}

void ExecutionEnv::optimal_speeds(std::vector<double>* speeds) const {
  speeds->resize(lanes_.size());
  for (size_t i = 0; i < lanes_.size(); ++i) (*speeds)[i] = execution_optimal_speed(d_, lanes_[i]);
}

void ExecutionEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      execution_start(d_, &lanes_[i]);
      execution_obs(d_, lanes_[i], obs.data() + 2 * i);
    } else {
      obs[2 * i] = last.next_obs[2 * i];
      obs[2 * i + 1] = last.next_obs[2 * i + 1];
    }
  }
}

LaneRecord ExecutionEnv::save_lanes() const {
  LaneRecord r;
  r.reals_per_lane = 2;
  r.words_per_lane = 5;
  for (const ExecutionLane& l : lanes_) {
    r.reals.insert(r.reals.end(), {l.q, l.s});
    r.words.push_back(static_cast<uint64_t>(l.k));
    const auto w = rng_words(l.rng);
    r.words.insert(r.words.end(), w.begin(), w.end());
  }
  return r;
}

bool ExecutionEnv::restore_lanes(const LaneRecord& r) {
  if (!r.fits(lanes_.size(), 2, 5)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i)  // a lane between episodes has been restarted
    if (r.words[5 * i] >= static_cast<uint64_t>(p_.steps)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const uint64_t* w = &r.words[5 * i];
    lanes_[i].q = r.reals[2 * i];
    lanes_[i].s = r.reals[2 * i + 1];
    lanes_[i].k = static_cast<int>(w[0]);
    lanes_[i].rng = rng_from_words(std::span<const uint64_t, 4>(w + 1, 4));
  }
  return true;
}

}  // namespace fxt::rl
