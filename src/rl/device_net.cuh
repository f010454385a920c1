// The GPU learner's shared device pieces (docs/RL.md "GPU learner"): the network layout the fused
// acting kernel reads, the --mirror map, block sizes, and the per-row value arithmetic that the
// acting and loss kernels both call (DqnAgent::expected_value's order). CUDA-only: included by
// the learner's .cu files (library fxt_rl_gpu).
#pragma once

#include <algorithm>
#include <cstddef>

#include "rl/device_learner.h"  // DeviceLayer

namespace fxt::rl {

constexpr int kMaxLayers = 8;
constexpr int kLearnerThreads = 128;  // block size of the acting, sampling and loss kernels
constexpr float kPi = 3.14159265358979323846f;  // QNetwork::forward_iqn's float π

// The network's layout, passed by value to the fused acting kernel.
struct NetLayout {
  DeviceLayer layer[kMaxLayers];  // torso ... head (with dueling, the advantage stream)
  DeviceLayer value;              // dueling: the value stream, from the torso output as the head
  DeviceLayer embed;              // IQN: iqn.embed [H, E]
  int count;
  bool dueling;
  int iqn_e, iqn_k;  // IQN: E cosine features (0: not IQN), K policy τ
};

// --mirror: obs'[k] = sign[k]·obs[k], a' = action[a] (sign null: no mirror). A lane's row then
// takes two replay slots, the transition at next + 2i and its mirror image at next + 2i + 1 (the
// CPU trainer's store order), so `rows` = 2 slots per lane and step.
struct Mirror {
  const float* sign;
  const int* action;
  __host__ __device__ int rows() const { return sign != nullptr ? 2 : 1; }
};

// Grid of a grid-stride kernel over n elements: ceil(n / threads) blocks, at most 1024.
inline unsigned grid_for(size_t n, int threads) {
  return static_cast<unsigned>(std::min<size_t>((n + threads - 1) / threads, 1024));
}

// Expected value Σ_j z_j softmax(logits)_j of one row, summed in the CPU's order
// (c51_expectation): the maximum, then e_j = exp(l_j − max) accumulated into Σ e and Σ e·z.
__device__ inline float expectation_row(const float* logits, const float* atoms, int K) {
  float mx = logits[0];
  for (int j = 1; j < K; ++j) mx = fmaxf(mx, logits[j]);
  float sum = 0, acc = 0;
  for (int j = 0; j < K; ++j) {
    const float e = expf(logits[j] - mx);
    sum += e;
    acc += e * atoms[j];
  }
  return acc / sum;
}

// An action's expected value in DqnAgent::expected_value's order: C51 (atoms given) Σ z_j
// softmax_j (expectation_row); QR-DQN (atoms null) its K quantiles summed in order, then / K.
__device__ inline float value_row(const float* row, const float* atoms, int K) {
  if (atoms != nullptr) return expectation_row(row, atoms, K);
  float sum = 0;
  for (int k = 0; k < K; ++k) sum += row[k];
  return sum / static_cast<float>(K);
}

}  // namespace fxt::rl
