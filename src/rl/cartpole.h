// CartPole-v1 with gym's exact dynamics (gym/envs/classic_control/cartpole.py, Euler
// integration, float64 state, float32 observations): a pole on a cart, push left (action 0) or
// right (action 1) with 10 N; reward 1 per step including the last; terminated when |x| > 2.4
// or |theta| > 12 degrees; truncated after 500 steps. Reset draws the four state variables
// uniformly from [-0.05, 0.05) from the lane's stream. The per-lane arithmetic is
// rl/cartpole_lane.h, shared with the GPU lanes (rl/device_env.h).
#pragma once

#include <vector>

#include "rl/cartpole_lane.h"
#include "rl/vec_env.h"

namespace fxt::rl {

class CartPoleEnv final : public VecEnv {
 public:
  static constexpr int kMaxSteps = CartPoleLane::kMaxSteps;
  explicit CartPoleEnv(int num_envs);

  std::string name() const override { return "cartpole"; }
  int num_envs() const override { return static_cast<int>(lanes_.size()); }
  int obs_dim() const override { return 4; }
  int num_actions() const override { return 2; }
  void reset(uint64_t seed, std::span<float> obs) override;
  void step(std::span<const int> actions, StepResult* out) override;
  void reset_finished(const StepResult& last, std::span<float> obs) override;
  // Per lane: x, ẋ, θ, θ̇; the step counter and the reset stream's four words.
  LaneRecord save_lanes() const override;
  bool restore_lanes(const LaneRecord& record) override;

  // For tests: the state of lane i.
  const CartPoleState& state(int i) const { return lanes_[static_cast<size_t>(i)].s; }
  void set_state(int i, const CartPoleState& s) { lanes_[static_cast<size_t>(i)].s = s; }
  // Every lane's state (the GPU lanes' parity reference).
  const std::vector<CartPoleLane>& lanes() const { return lanes_; }

 private:
  std::vector<CartPoleLane> lanes_;
};

}  // namespace fxt::rl
