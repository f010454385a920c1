// The GPU learner's acting kernel (docs/RL.md "GPU learner", row "act"): one block per lane runs
// the lane's whole forward from the online parameters, picks the action (greedy, ε-greedy or
// Thompson, from the lane's Rng as DqnAgent::act) and, in training, writes the observation and
// action into the lane's replay slot. CUDA-only (included by the learner's .cu files).
#pragma once

#include "core/random.h"
#include "rl/device_learner.h"
#include "rl/device_net.cuh"

namespace fxt::rl {

// The ε schedule's constants (linear_epsilon's arguments but the step); thompson: Thompson
// exploration (DqnAgent::act) in place of the ε coin whenever ε > 0.
struct EpsSchedule {
  double start, end, fraction;
  long long total;
  bool thompson;
};

// One env step's acting for every lane (train) or greedy evaluation (!train: no stats or replay;
// Rngs only for the symmetric policy's tie coin). mir: --mirror's stored images; sym: the
// symmetric policy's mirror (null sign: none). Launch: grid (N lanes), block kLearnerThreads,
// dynamic shared memory 2·max_width + 3·A + K floats (IQN: one more max_width).
__global__ void act_kernel(bool train, const float* __restrict__ params, NetLayout net,
                           const float* __restrict__ atoms, int K, int A,
                           const float* __restrict__ obs, int d, Rng* rngs, EpsSchedule eps,
                           const DeviceLearnerStats* stats, int* actions, float* q_out,
                           float* r_obs, int* r_act, int cap, int ring, Mirror mir, Mirror sym);

}  // namespace fxt::rl
