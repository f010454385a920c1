// One CartPole-v1 lane (rl/cartpole.h) as FXT_HD functions: the state, gym's Euler step and
// termination, the reset draw and the observation, shared by CartPoleEnv and its GPU lanes.
// Float64 state; cos/sin are the only functions whose last bit may differ between glibc and
// CUDA. C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include "core/host_device.h"
#include "core/random.h"
#include "rl/env_lane.h"

namespace fxt::rl {

struct CartPoleState {
  double x = 0, x_dot = 0, theta = 0, theta_dot = 0;
};

struct CartPoleLane {
  static constexpr int kMaxSteps = 500;
  static constexpr int kObsDim = 4;
  CartPoleState s;
  int steps = 0;  // in this episode
  Rng rng{0};     // the reset draws: lane_seed(seed, lane, 0)
};

// Seeds lane `lane` of an env reset with `seed` (the CPU env's reset and the GPU lanes alike).
FXT_HD inline void cartpole_seed(CartPoleLane* lane, uint64_t seed, uint64_t i) {
  lane->rng = Rng(lane_seed(seed, i, 0));
}

// One Euler step of gym's equations of motion (no termination logic).
FXT_HD inline CartPoleState cartpole_dynamics(const CartPoleState& s, int action) {
  const double gravity = 9.8, mass_cart = 1.0, mass_pole = 0.1;
  const double total_mass = mass_cart + mass_pole;
  const double length = 0.5;  // half the pole's length
  const double pole_mass_length = mass_pole * length;
  const double force_mag = 10.0, tau = 0.02;  // seconds between state updates
  const double force = action == 1 ? force_mag : -force_mag;
  const double costheta = cos(s.theta), sintheta = sin(s.theta);
  const double temp =
      (force + pole_mass_length * s.theta_dot * s.theta_dot * sintheta) / total_mass;
  const double thetaacc = (gravity * sintheta - costheta * temp) /
                          (length * (4.0 / 3.0 - mass_pole * costheta * costheta / total_mass));
  const double xacc = temp - pole_mass_length * thetaacc * costheta / total_mass;
  CartPoleState n;
  n.x = s.x + tau * s.x_dot;
  n.x_dot = s.x_dot + tau * xacc;
  n.theta = s.theta + tau * s.theta_dot;
  n.theta_dot = s.theta_dot + tau * thetaacc;
  return n;
}

// gym's termination test: |x| > 2.4 or |θ| > 12°.
FXT_HD inline bool cartpole_terminated(const CartPoleState& s) {
  const double x_threshold = 2.4;
  const double theta_threshold = 12 * 2 * 3.141592653589793 / 360;
  return s.x < -x_threshold || s.x > x_threshold || s.theta < -theta_threshold ||
         s.theta > theta_threshold;
}

FXT_HD inline void cartpole_obs(const CartPoleLane& lane, float* obs) {
  obs[0] = static_cast<float>(lane.s.x);
  obs[1] = static_cast<float>(lane.s.x_dot);
  obs[2] = static_cast<float>(lane.s.theta);
  obs[3] = static_cast<float>(lane.s.theta_dot);
}

// A new episode: the four state variables uniform in [−0.05, 0.05) from the lane's stream.
FXT_HD inline void cartpole_start(CartPoleLane* lane) {
  lane->s.x = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.x_dot = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.theta = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.theta_dot = lane->rng.uniform_real(-0.05, 0.05);
  lane->steps = 0;
}

// Push left (0) or right (1): reward 1 every step including the last; truncated at 500.
FXT_HD inline LaneStep cartpole_step(CartPoleLane* lane, int action) {
  lane->s = cartpole_dynamics(lane->s, action);
  ++lane->steps;
  LaneStep r;
  r.reward = 1.0;
  r.terminated = cartpole_terminated(lane->s);
  r.truncated = !r.terminated && lane->steps >= CartPoleLane::kMaxSteps;
  return r;
}

}  // namespace fxt::rl
