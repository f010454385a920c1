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
#include "rl/device_net.cuh"  // value_row
#include "rl/dqn_schedule.h"  // MunchausenConfig

namespace fxt::rl {

// --symmetric-policy: the networks' outputs at the mirrored states (the plain outputs' layout,
// [B, A·K]) and the action map m(a); action null: no symmetric policy.
struct MirrorOutputs {
  const float* next_t;  // the target net at m(s')
  const float*
      next_sel;        // the net whose values pick a* at m(s'): online with double Q, else target
  const float* cur_t;  // Munchausen: the target net at m(s)
  const int* action;   // [A] m(a)
};

// The C51 loss (one block per sample): the projection of the target mixture onto the atoms, the
// cross-entropy and its gradient. Launch: grid (B), block kLearnerThreads, dynamic shared memory
// c51_loss_smem_floats(A, K) floats.
size_t c51_loss_smem_floats(int A, int K);
__global__ void c51_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                                const float* __restrict__ next_sel, const float* __restrict__ cur_t,
                                const float* __restrict__ atoms, int K, int A, float v_min,
                                float v_max, float dz, bool munchausen, MunchausenConfig mc,
                                MirrorOutputs mo, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b);

// The quantile loss's two layouts, its only differences between the heads: where quantile k of
// action a lies in a sample's outputs, the fraction of predicted quantile i, the values that pick
// the bootstrap (DqnAgent::update's and update_iqn's), and the mean Q of the taken action.
//
// QR-DQN: a sample's outputs are rows [A, K] (quantile k of action a at a·K + k), the fractions
// the fixed τ̂_i = (2i + 1)/(2K); the values are the quantile means (value_row) of next_sel's rows
// (the online net at s' with double Q, else the target) and, with Munchausen, cur_t's (the target
// net at s; null otherwise); the mean Q is the taken action's quantile mean. Symmetric policy
// (mo.action non-null): the values are ½[q(s, a) + q(m(s), m(a))] and every target quantile is
// followed by its mirror's, θ'(m(s'), m(a'))_k, each at half the weight (2 halves).
struct QrDqnQuantiles {
  const float* next_sel;
  const float* cur_t;
  MirrorOutputs mo;
  int K, A;
  __device__ int count() const { return K; }
  __device__ int halves() const { return mo.action != nullptr ? 2 : 1; }
  __device__ size_t block(int b) const { return static_cast<size_t>(b) * A * K; }
  __device__ size_t at(int k, int a) const { return static_cast<size_t>(a) * K + k; }
  __device__ int action_of(int e) const { return e / K; }
  __device__ float fraction(int /*b*/, int i) const {
    return (2.0f * static_cast<float>(i) + 1.0f) / (2.0f * static_cast<float>(K));
  }
  // Threads j: qs[j] and, with Munchausen, qc[j] of the sample whose outputs start at row.
  __device__ void values(int b, float* qs, float* qc) const {
    const size_t row = block(b);
    for (int j = threadIdx.x; j < A; j += blockDim.x) {
      qs[j] = value_row(next_sel + row + at(0, j), nullptr, K);
      if (cur_t != nullptr) qc[j] = value_row(cur_t + row + at(0, j), nullptr, K);
      if (mo.action == nullptr) continue;  // DqnAgent::row_values
      const size_t mj = row + at(0, mo.action[j]);
      qs[j] = 0.5f * (qs[j] + value_row(mo.next_sel + mj, nullptr, K));
      if (cur_t != nullptr) qc[j] = 0.5f * (qc[j] + value_row(mo.cur_t + mj, nullptr, K));
    }
  }
  // The target net's quantile k of action m(a) at m(s') (symmetric policy only).
  __device__ float mirror_target(size_t row, int k, int a) const {
    return mo.next_t[row + at(k, mo.action[a])];
  }
  __device__ float mean(const float* blk, int a) const {
    return value_row(blk + at(0, a), nullptr, K);
  }
};

// IQN: a sample's outputs are a block [N, A] (the net at N sampled τ: fraction i at row i), the
// fractions taus [B, N]; the values are the K-τ means q_sel [B, A] (online at s' with double Q,
// else target; the target's with Munchausen) and q_cur [B, A] (the target's at s; Munchausen,
// else null); the mean Q is Σ_i θ_i/N in order.
struct IqnQuantiles {
  const float* q_sel;
  const float* q_cur;
  const float* taus;
  int N, A;
  __device__ int count() const { return N; }
  __device__ int halves() const { return 1; }  // no symmetric policy with IQN
  __device__ size_t block(int b) const { return static_cast<size_t>(b) * N * A; }
  __device__ size_t at(int k, int a) const { return static_cast<size_t>(k) * A + a; }
  __device__ int action_of(int e) const { return e % A; }
  __device__ float fraction(int b, int i) const { return taus[static_cast<size_t>(b) * N + i]; }
  __device__ void values(int b, float* qs, float* qc) const {
    for (int j = threadIdx.x; j < A; j += blockDim.x) {
      qs[j] = q_sel[static_cast<size_t>(b) * A + j];
      if (q_cur != nullptr) qc[j] = q_cur[static_cast<size_t>(b) * A + j];
    }
  }
  __device__ float mirror_target(size_t, int, int) const { return 0.0f; }
  __device__ float mean(const float* blk, int a) const {
    float mean = 0;
    for (int i = 0; i < N; ++i) mean += blk[at(i, a)] / static_cast<float>(N);
    return mean;
  }
};

// The quantile Huber loss (κ = 1) of the taken action's K = layout.count() quantiles against the
// target mixture's, and its gradient; one block per sample. Launch: grid (B), block
// kLearnerThreads, dynamic shared memory quantile_loss_smem_floats(A, K, symmetric) floats.
// One body (quantile_loss in device_losses.cu); a kernel per layout.
size_t quantile_loss_smem_floats(int A, int K, bool symmetric);
__global__ void qr_dqn_loss_kernel(QrDqnQuantiles layout, const float* __restrict__ out,
                                   const float* __restrict__ next_t, int A, bool munchausen,
                                   MunchausenConfig mc, const int* b_act, const float* b_rew,
                                   const float* b_disc, const float* weight, float inv_b,
                                   float* d_out, float* loss_b, float* q_b);
__global__ void iqn_loss_kernel(IqnQuantiles layout, const float* __restrict__ out,
                                const float* __restrict__ next_t, int A, bool munchausen,
                                MunchausenConfig mc, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b);

// The batch statistics and the update counter. Launch: 1 thread.
__global__ void update_stats_kernel(const float* loss_b, const float* q_b, const float* weight,
                                    int B, float inv_b, const gpu::AdamWStats* adam,
                                    DeviceLearnerStats* stats);

}  // namespace fxt::rl
