#include "rl/execution.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "sim/model_market.h"  // standard_normal

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
  const double a = p.alpha - p.perm_impact / 2;
  if (p.phi == 0) {
    const double v_terminal = a / p.temp_impact;
    return v_terminal / (1 + v_terminal * tau);
  }
  const double gamma = std::sqrt(p.phi / p.temp_impact);
  const double c = std::sqrt(p.temp_impact * p.phi);
  const double up = (a + c) * std::exp(gamma * tau), down = (a - c) * std::exp(-gamma * tau);
  return gamma * (up + down) / (up - down);
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

ExecutionEnv::ExecutionEnv(const ExecutionParams& p, int num_envs)
    : p_(p), lanes_(static_cast<size_t>(num_envs)) {
  assert(p.validate().ok() && num_envs >= 1);
}

void ExecutionEnv::write_obs(const Lane& lane, float* obs) const {
  obs[0] = static_cast<float>(lane.k) / static_cast<float>(p_.steps);
  obs[1] = static_cast<float>(lane.q / p_.q0);
}

void ExecutionEnv::start(Lane* lane, float* obs) const {
  lane->q = p_.q0;
  lane->s = p_.s0;
  lane->k = 0;
  write_obs(*lane, obs);
}

void ExecutionEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].rng = Rng(lane_seed(seed, i, 0));
    start(&lanes_[i], obs.data() + 2 * i);
  }
}

void ExecutionEnv::step_speeds(std::span<const double> speeds, StepResult* out) {
  const int n = num_envs();
  assert(speeds.size() == static_cast<size_t>(n));
  out->resize(n, 2);
  const double dt = p_.dt(), sd = p_.sigma * std::sqrt(dt);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    const double nu = speeds[i], q = lane.q;
    const double q_next = q - nu * dt;
    const double ds = -p_.perm_impact * nu * dt + sd * sim::standard_normal(lane.rng);
    const double q_sq_integral = dt * (q * q - q * nu * dt + nu * nu * dt * dt / 3);
    double reward = -p_.temp_impact * nu * nu * dt + q_next * ds - p_.phi * q_sq_integral;
    lane.q = q_next;
    lane.s += ds;
    ++lane.k;
    const bool last = lane.k >= p_.steps;
    if (last) reward -= p_.alpha * q_next * q_next;
    write_obs(lane, out->next_obs.data() + 2 * i);
    out->reward[i] = static_cast<float>(reward);
    out->terminated[i] = last ? 1 : 0;  // the horizon is part of the state: a true terminal
    out->truncated[i] = 0;
  }
}

void ExecutionEnv::step(std::span<const int> actions, StepResult* out) {
  std::vector<double> speeds(actions.size());
  for (size_t i = 0; i < actions.size(); ++i) {
    assert(actions[i] >= 0 && actions[i] < p_.num_speeds);
    speeds[i] = p_.speed(actions[i]);
  }
  step_speeds(speeds, out);
}

void ExecutionEnv::optimal_speeds(std::vector<double>* speeds) const {
  speeds->resize(lanes_.size());
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const double t = lanes_[i].k * p_.dt();
    (*speeds)[i] = std::max(0.0, execution_speed_factor(p_, p_.horizon - t) * lanes_[i].q);
  }
}

void ExecutionEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      start(&lanes_[i], obs.data() + 2 * i);
    } else {
      obs[2 * i] = last.next_obs[2 * i];
      obs[2 * i + 1] = last.next_obs[2 * i + 1];
    }
  }
}

}  // namespace fxt::rl
