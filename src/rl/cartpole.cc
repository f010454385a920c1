#include "rl/cartpole.h"

#include <cassert>

#include "rl/rng_state.h"

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

LaneRecord CartPoleEnv::save_lanes() const {
  LaneRecord r;
  r.reals_per_lane = 4;
  r.words_per_lane = 5;
  for (const CartPoleLane& l : lanes_) {
    r.reals.insert(r.reals.end(), {l.s.x, l.s.x_dot, l.s.theta, l.s.theta_dot});
    r.words.push_back(static_cast<uint64_t>(l.steps));
    const auto w = rng_words(l.rng);
    r.words.insert(r.words.end(), w.begin(), w.end());
  }
  return r;
}

bool CartPoleEnv::restore_lanes(const LaneRecord& r) {
  if (!r.fits(lanes_.size(), 4, 5)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i)  // a lane between episodes has been restarted
    if (r.words[5 * i] >= static_cast<uint64_t>(kMaxSteps)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const double* x = &r.reals[4 * i];
    const uint64_t* w = &r.words[5 * i];
    lanes_[i].s = {x[0], x[1], x[2], x[3]};
    lanes_[i].steps = static_cast<int>(w[0]);
    lanes_[i].rng = rng_from_words(std::span<const uint64_t, 4>(w + 1, 4));
  }
  return true;
}

}  // namespace fxt::rl
