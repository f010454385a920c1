#include "rl/cartpole.h"

#include <cassert>

namespace fxt::rl {

CartPoleEnv::CartPoleEnv(int num_envs) : lanes_(static_cast<size_t>(num_envs)) {
  assert(num_envs >= 1);
}

void CartPoleEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 4);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    cartpole_seed(&lanes_[i], seed, i);
    cartpole_start(&lanes_[i]);
    cartpole_obs(lanes_[i], obs.data() + 4 * i);
  }
}

void CartPoleEnv::step(std::span<const int> actions, StepResult* out) {
  const int n = num_envs();
  assert(actions.size() == static_cast<size_t>(n));
  out->resize(n, 4);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const LaneStep r = cartpole_step(&lanes_[i], actions[i]);
    cartpole_obs(lanes_[i], out->next_obs.data() + 4 * i);
    out->reward[i] = static_cast<float>(r.reward);
    out->terminated[i] = r.terminated ? 1 : 0;
    out->truncated[i] = r.truncated ? 1 : 0;
  }
}

void CartPoleEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      cartpole_start(&lanes_[i]);
      cartpole_obs(lanes_[i], obs.data() + 4 * i);
    } else {
      for (size_t d = 0; d < 4; ++d) obs[4 * i + d] = last.next_obs[4 * i + d];
    }
  }
}

}  // namespace fxt::rl
