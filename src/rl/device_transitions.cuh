// The GPU learner's replay writes and reads (docs/RL.md "GPU learner", rows "store" and
// "sample"): an env step's next_obs, reward and discount into the replay slots (1-step, or the
// n-step accumulation from each lane's ring of its last n steps; --mirror: each row followed by
// its mirror image), the counters' advance, and the update's batch gather (uniform draws from
// per-row Rngs, or given indices; IQN: each row's τ and τ'). CUDA-only (included by the
// learner's .cu files).
#pragma once

#include <cstdint>

#include "core/random.h"
#include "rl/device_learner.h"
#include "rl/device_net.cuh"

namespace fxt::rl {

// 1-step store. Launch: one block of min(N, 1024) threads.
__global__ void store_kernel(const float* __restrict__ next_obs, const float* __restrict__ reward,
                             const uint8_t* __restrict__ terminated,
                             const uint8_t* __restrict__ truncated, int n, int d, float gamma,
                             DeviceLearnerStats* stats, double* lane_ret, double* recent,
                             float* r_next, float* r_rew, float* r_disc, int cap, Mirror mir);

// n-step store (ring = n > 1). Launch: one block of min(N, 1024) threads.
__global__ void nstep_store_kernel(
    const float* __restrict__ next_obs, const float* __restrict__ reward,
    const uint8_t* __restrict__ terminated, const uint8_t* __restrict__ truncated, int n, int d,
    double gamma, int ring, DeviceLearnerStats* stats, double* lane_ret, double* recent,
    float* p_obs, int* p_act, float* p_rew, uint8_t* p_end, float* p_next, float* r_obs, int* r_act,
    float* r_next, float* r_rew, float* r_disc, int cap, Mirror mir);

// The batch gather. Launch: grid ceil(B / kLearnerThreads), block kLearnerThreads.
__global__ void sample_kernel(bool draw, bool draw_index, Rng* rngs, int* idx,
                              const DeviceLearnerStats* stats, int B, int d, const float* r_obs,
                              const int* r_act, const float* r_rew, const float* r_next,
                              const float* r_disc, float* b_obs, int* b_act, float* b_rew,
                              float* b_next, float* b_disc, int n_tau, float* taus,
                              float* taus_next);

}  // namespace fxt::rl
