// What every env lane shares, on the CPU (rl/vec_env.h) and the GPU (rl/device_env.h): the seed
// of its random streams and the outcome of one step. An env's lane (rl/*_lane.h) is its state
// plus FXT_HD functions start / step / obs that both backends call: the step arithmetic is
// written once. C++17-clean: included by .cu files.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/random.h"

namespace fxt::rl {

// One lane's step: the reward in double (stored as float by both backends) and how it ended.
struct LaneStep {
  double reward = 0;
  bool terminated = false;  // a true terminal state (no bootstrap)
  bool truncated = false;   // a time limit (the state still has a value)
};

// The seed of lane `lane`'s stream `stream`: splitmix64 mixing keeps neighbouring triples far
// apart in xoshiro's state space (the same construction as the model market's path seeds).
FXT_HD inline uint64_t lane_seed(uint64_t seed, uint64_t lane, uint64_t stream) {
  uint64_t state = seed;
  uint64_t mixed = splitmix64(&state) ^ (lane * 0x9E3779B97F4A7C15ULL);
  state = mixed;
  mixed = splitmix64(&state) ^ stream;
  state = mixed;
  return splitmix64(&state);
}

}  // namespace fxt::rl
