// Prioritised replay's arithmetic (Schaul et al. 2016), shared by the CPU buffer (rl/replay.cc)
// and the GPU learner's device buffer (rl/device_replay.cu), so the two cannot drift: the sum
// tree's layout and descent, the stratified draw's mass, the IS weight, the priority of a
// sample's loss and the annealed β. FXT_HD, C++17-clean (included by .cu files). docs/RL.md has
// the formulas.
//
// The tree: `leaves` = capacity rounded up to a power of two; tree[1] is the root, leaf i at
// tree[leaves + i], node k = tree[2k] + tree[2k + 1] (double). Every node is always its
// children's sum, so the tree is a function of its leaves alone: any order of leaf writes that
// ends by re-summing their ancestors bottom-up gives the same bits.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "core/host_device.h"

namespace fxt::rl {

// The power of two >= capacity (>= 1).
FXT_HD inline int sum_tree_leaves(int capacity) {
  int n = 1;
  while (n < capacity) n *= 2;
  return n;
}

// The leaf whose cumulative range [Σ_{k<i} p_k, Σ_{k<=i} p_k) holds `mass`: from the root, go
// left while mass < left sum (or the right subtree is empty), else subtract the left sum and go
// right; rounding that ends on a zero leaf at the right edge steps back to a positive one.
FXT_HD inline int sum_tree_find(const double* tree, int leaves, double mass) {
  size_t node = 1;
  const size_t n = static_cast<size_t>(leaves);
  while (node < n) {
    const size_t left = 2 * node;
    if (mass < tree[left] || tree[left + 1] <= 0) {
      node = left;
    } else {
      mass -= tree[left];
      node = left + 1;
    }
  }
  int i = static_cast<int>(node) - leaves;
  while (i > 0 && tree[n + static_cast<size_t>(i)] <= 0) --i;
  return i;
}

// Every internal node re-summed bottom-up (leaves already in place).
FXT_HD inline void sum_tree_rebuild(double* tree, int leaves) {
  for (size_t node = static_cast<size_t>(leaves) - 1; node >= 1; --node)
    tree[node] = tree[2 * node] + tree[2 * node + 1];
}

// The stratified draw of row b of a batch of B: uniform u in [0, 1) inside the b-th of B equal
// slices of the total.
FXT_HD inline double per_mass(double total, int batch, int b, double u) {
  return (static_cast<double>(b) + u) * (total / static_cast<double>(batch));
}

// The unnormalised IS weight (N·P(i))^−β of a leaf (P(i) = leaf / total, N the replay's size);
// the batch's weights are then divided by their maximum and rounded to float.
FXT_HD inline double per_is_weight(int size, double leaf, double total, double beta) {
  return pow(static_cast<double>(size) * (leaf / total), -beta);
}

// A sample's new priority from its (unweighted) loss: at least 1e-6, so no transition starves.
// The leaf holds priority^α; the buffer keeps the largest priority for new transitions.
constexpr double kPerMinPriority = 1e-6;
FXT_HD inline double per_priority(float loss) {
  const double p = static_cast<double>(loss);
  return p < kPerMinPriority ? kPerMinPriority : p;  // std::max(p, 1e-6)'s rule
}
FXT_HD inline double per_leaf(double priority, double alpha) {
  return pow(priority, alpha);
}

// β annealed linearly from beta0 at step 0 to 1 at total_steps (env steps), then flat.
FXT_HD inline double per_beta(double beta0, int64_t total_steps, int64_t step) {
  const double f = fmin(1.0, static_cast<double>(step) / static_cast<double>(total_steps));
  return beta0 + f * (1.0 - beta0);
}

}  // namespace fxt::rl
