// One optimal-execution lane (rl/execution.h) as FXT_HD functions, shared by ExecutionEnv and
// its GPU lanes: the step is + − × ÷ on doubles plus one normal draw (whose log may differ from
// glibc's in the last bit on the device). C++17-clean: included by .cu files.
#pragma once

#include "core/host_device.h"
#include "core/random.h"
#include "rl/env_lane.h"

namespace fxt::rl {

// ExecutionParams reduced to what a step needs, with Δt and σ·sqrt(Δt) computed once on the host
// (execution_dynamics() in rl/execution.h), so both backends start from the same bits.
struct ExecutionDynamics {
  double horizon = 0;  // T
  double dt = 0;       // T / steps
  double mid_sd = 0;   // σ·sqrt(Δt)
  double temp_impact = 0, perm_impact = 0, phi = 0, alpha = 0;
  double q0 = 0, s0 = 0;
  int steps = 0;
  int num_speeds = 0;
  double max_speed = 0;
  // Speed of action j: j·max_speed/(num_speeds − 1) shares per unit time.
  FXT_HD double speed(int action) const { return max_speed * action / (num_speeds - 1); }
};

struct ExecutionLane {
  static constexpr int kObsDim = 2;
  double q = 0, s = 0;  // inventory (shares), mid (currency)
  int k = 0;            // steps taken in this episode
  Rng rng{0};           // the mid noise: lane_seed(seed, lane, 0)
};

// Seeds lane i of an env reset with `seed` (the CPU env's reset and the GPU lanes alike).
FXT_HD inline void execution_seed(ExecutionLane* lane, uint64_t seed, uint64_t i) {
  lane->rng = Rng(lane_seed(seed, i, 0));
}

FXT_HD inline void execution_start(const ExecutionDynamics& d, ExecutionLane* lane) {
  lane->q = d.q0;
  lane->s = d.s0;
  lane->k = 0;
}

// Observation (t/T, q/q0).
FXT_HD inline void execution_obs(const ExecutionDynamics& d, const ExecutionLane& lane,
                                 float* obs) {
  obs[0] = static_cast<float>(lane.k) / static_cast<float>(d.steps);
  obs[1] = static_cast<float>(lane.q / d.q0);
}

// One step at selling speed nu (any value: the closed-form agent trades off the grid); the
// formulas are rl/execution.h's. Terminated after `steps` steps (the horizon is in the state).
FXT_HD inline LaneStep execution_step(const ExecutionDynamics& d, ExecutionLane* lane, double nu) {
  const double dt = d.dt, q = lane->q;
  const double q_next = q - nu * dt;
  const double ds = -d.perm_impact * nu * dt + d.mid_sd * lane->rng.normal();
  const double q_sq_integral = dt * (q * q - q * nu * dt + nu * nu * dt * dt / 3);
  LaneStep r;
  r.reward = -d.temp_impact * nu * nu * dt + q_next * ds - d.phi * q_sq_integral;
  lane->q = q_next;
  lane->s += ds;
  ++lane->k;
  r.terminated = lane->k >= d.steps;
  if (r.terminated) r.reward -= d.alpha * q_next * q_next;
  return r;
}

// The step of grid action `action` (speed(action)).
FXT_HD inline LaneStep execution_step_action(const ExecutionDynamics& d, ExecutionLane* lane,
                                             int action) {
  return execution_step(d, lane, d.speed(action));
}

}  // namespace fxt::rl
