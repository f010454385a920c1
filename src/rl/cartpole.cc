#include "rl/cartpole.h"

#include <cassert>
#include <cmath>
#include <numbers>

namespace fxt::rl {

namespace {
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassCart + kMassPole;
constexpr double kLength = 0.5;  // half the pole's length
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;  // seconds between state updates
constexpr double kThetaThreshold = 12 * 2 * std::numbers::pi / 360;
constexpr double kXThreshold = 2.4;

void write_obs(const CartPoleState& s, float* obs) {
  obs[0] = static_cast<float>(s.x);
  obs[1] = static_cast<float>(s.x_dot);
  obs[2] = static_cast<float>(s.theta);
  obs[3] = static_cast<float>(s.theta_dot);
}
}  // namespace

CartPoleState cartpole_dynamics(const CartPoleState& s, int action) {
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(s.theta), sintheta = std::sin(s.theta);
  const double temp =
      (force + kPoleMassLength * s.theta_dot * s.theta_dot * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * costheta * costheta / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  CartPoleState n;
  n.x = s.x + kTau * s.x_dot;
  n.x_dot = s.x_dot + kTau * xacc;
  n.theta = s.theta + kTau * s.theta_dot;
  n.theta_dot = s.theta_dot + kTau * thetaacc;
  return n;
}

bool cartpole_terminated(const CartPoleState& s) {
  return s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold ||
         s.theta > kThetaThreshold;
}

CartPoleEnv::CartPoleEnv(int num_envs) : lanes_(static_cast<size_t>(num_envs)) {
  assert(num_envs >= 1);
}

void CartPoleEnv::start(Lane* lane, float* obs) {
  lane->s.x = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.x_dot = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.theta = lane->rng.uniform_real(-0.05, 0.05);
  lane->s.theta_dot = lane->rng.uniform_real(-0.05, 0.05);
  lane->steps = 0;
  write_obs(lane->s, obs);
}

void CartPoleEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 4);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].rng = Rng(lane_seed(seed, i, 0));
    start(&lanes_[i], obs.data() + 4 * i);
  }
}

void CartPoleEnv::step(std::span<const int> actions, StepResult* out) {
  const int n = num_envs();
  assert(actions.size() == static_cast<size_t>(n));
  out->resize(n, 4);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    lane.s = cartpole_dynamics(lane.s, actions[i]);
    ++lane.steps;
    write_obs(lane.s, out->next_obs.data() + 4 * i);
    out->reward[i] = 1.0f;
    out->terminated[i] = cartpole_terminated(lane.s) ? 1 : 0;
    out->truncated[i] = !out->terminated[i] && lane.steps >= kMaxSteps ? 1 : 0;
  }
}

void CartPoleEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      start(&lanes_[i], obs.data() + 4 * i);
    } else {
      for (size_t d = 0; d < 4; ++d) obs[4 * i + d] = last.next_obs[4 * i + d];
    }
  }
}

}  // namespace fxt::rl
