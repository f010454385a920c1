// The vectorised-environment interface of the RL layer (DESIGN §8): N independent episodes of
// one environment stepped together, the CPU reference of the GPU envs (one lane per episode).
//
// Contract: reset(seed) starts every episode and writes the first observations; step(actions)
// advances every lane by one action and writes, per lane, the observation the action led to
// (before any reset), the reward, and whether the episode terminated (a true terminal state:
// no bootstrap) or was truncated (a time limit: bootstrap from next_obs). A lane whose episode
// ended is restarted by the next step() call's first act: reset_finished() writes its new first
// observation. Lane i draws its randomness from its own stream seeded by (seed, i), so a lane's
// path does not depend on the number of lanes, and outputs depend only on seed and actions.
//
// Thread-compatible: one owner steps it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/random.h"
#include "rl/env_lane.h"  // lane_seed

namespace fxt::rl {

struct StepResult {
  std::vector<float> next_obs;      // [N, obs_dim], the state each action led to
  std::vector<float> reward;        // [N]
  std::vector<uint8_t> terminated;  // [N] 1 = terminal state (value 0)
  std::vector<uint8_t> truncated;   // [N] 1 = time limit (the state still has a value)
  void resize(int n, int obs_dim) {
    next_obs.assign(static_cast<size_t>(n) * static_cast<size_t>(obs_dim), 0.0f);
    reward.assign(static_cast<size_t>(n), 0.0f);
    terminated.assign(static_cast<size_t>(n), 0);
    truncated.assign(static_cast<size_t>(n), 0);
  }
};

// Every lane's state as numbers, lane after lane: reals_per_lane doubles (positions, inventory,
// mid) and words_per_lane 64-bit words (step counter, random streams: rl/rng_state.h). A saved
// training run keeps it (rl/resume.h).
struct LaneRecord {
  int reals_per_lane = 0, words_per_lane = 0;
  std::vector<double> reals;    // [N, reals_per_lane]
  std::vector<uint64_t> words;  // [N, words_per_lane]
  // Holds `lanes` lanes of n_reals doubles and n_words words each.
  bool fits(size_t lanes, int n_reals, int n_words) const {
    return reals_per_lane == n_reals && words_per_lane == n_words &&
           reals.size() == lanes * static_cast<size_t>(n_reals) &&
           words.size() == lanes * static_cast<size_t>(n_words);
  }
};

class VecEnv {
 public:
  virtual ~VecEnv() = default;
  virtual std::string name() const = 0;
  virtual int num_envs() const = 0;
  virtual int obs_dim() const = 0;
  virtual int num_actions() const = 0;
  // Starts every lane; obs is [N, obs_dim].
  virtual void reset(uint64_t seed, std::span<float> obs) = 0;
  // Steps every lane with actions[i] in [0, num_actions()).
  virtual void step(std::span<const int> actions, StepResult* out) = 0;
  // Restarts the lanes whose last step ended (terminated or truncated) and writes their first
  // observation into obs; the other lanes' rows of obs get last step's next_obs.
  virtual void reset_finished(const StepResult& last, std::span<float> obs) = 0;
  // Every lane's whole state (what reset and the steps so far left: positions, step counters,
  // random streams), so that a saved training run continues exactly (rl/resume.h).
  virtual LaneRecord save_lanes() const = 0;
  // Puts back what save_lanes() gave for an env of the same kind, parameters and lane count;
  // false, changing nothing, when the record's sizes do not fit this env.
  virtual bool restore_lanes(const LaneRecord& record) = 0;
  // The env's mirror symmetry, if it has one: maps an observation (in place) and an action to
  // their mirror images, under which the dynamics and rewards are the same (a transition's
  // mirror is as likely, with the same reward). False: no symmetry (nothing is changed).
  virtual bool mirror(std::span<float> obs, int* action) const {
    (void)obs;
    (void)action;
    return false;
  }
};

}  // namespace fxt::rl
