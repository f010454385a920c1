// The GPU learner's loss kernels (docs/RL.md "GPU learner", rows "C51 loss", "QR-DQN loss", "IQN
// loss" and "stats"): one block per sample picks the bootstrap target's components as
// DqnAgent::update does (the first argmax, or the Munchausen mixture over every action), builds
// the target (C51 projection, or target quantiles), and writes the per-sample loss, mean Q and the
// gradient of the output rows; then one thread folds the batch's statistics. CUDA-only (included
// by the learner's .cu files).
#pragma once

#include <cstddef>

#include "gpu/adamw.h"
#include "rl/device_learner.h"
#include "rl/dqn_schedule.h"  // MunchausenConfig

namespace fxt::rl {

// Each loss kernel's dynamic shared memory in floats (A actions, K atoms / quantiles, N τ).
size_t c51_loss_smem_floats(int A, int K);
size_t qr_loss_smem_floats(int A, int K);
size_t iqn_loss_smem_floats(int A, int N);

// Launch (each loss): grid (B), block kLearnerThreads, the dynamic shared memory above.
__global__ void c51_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                                const float* __restrict__ next_sel, const float* __restrict__ cur_t,
                                const float* __restrict__ atoms, int K, int A, float v_min,
                                float v_max, float dz, bool munchausen, MunchausenConfig mc,
                                const int* b_act, const float* b_rew, const float* b_disc,
                                const float* weight, float inv_b, float* d_out, float* loss_b,
                                float* q_b);
__global__ void qr_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                               const float* __restrict__ next_sel, const float* __restrict__ cur_t,
                               int K, int A, bool munchausen, MunchausenConfig mc, const int* b_act,
                               const float* b_rew, const float* b_disc, const float* weight,
                               float inv_b, float* d_out, float* loss_b, float* q_b);
__global__ void iqn_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                                const float* __restrict__ q_sel, const float* __restrict__ q_cur,
                                const float* __restrict__ taus, int N, int A, bool munchausen,
                                MunchausenConfig mc, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b);

// The batch statistics and the update counter. Launch: 1 thread.
__global__ void update_stats_kernel(const float* loss_b, const float* q_b, const float* weight,
                                    int B, float inv_b, const gpu::AdamWStats* adam,
                                    DeviceLearnerStats* stats);

}  // namespace fxt::rl
