// The GPU learner's prioritised replay (docs/RL.md "GPU learner"): a sum tree over the replay's
// slots in device memory with the CPU ReplayBuffer's semantics (rl/replay.h; the shared
// arithmetic is rl/per_math.h), driven from inside the learner's CUDA graphs:
//   - insert: the slots an env step stores get leaf max_priority^α (ReplayBuffer::add);
//   - sample: row b draws u from its own Rng (or a test's given draw), descends the tree at mass
//     (b + u)·total/B (stratified) and gets the IS weight (N·P(i))^−β / max over the batch, β
//     annealed from the device step counter;
//   - update: each sampled leaf becomes max(loss_b, 1e-6)^α (the last row wins for a repeated
//     index, as the CPU's sequential set()), the largest priority is kept.
// Both writes re-sum the changed leaves' ancestors level by level in one block (no atomics);
// since a node is always its children's sum the tree's bits are a function of its leaves.
// C++17-clean (included by .cu files); CUDA builds only (library fxt_rl_gpu).
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "gpu/runtime.h"
#include "rl/device_learner.h"  // DeviceLearnerStats

namespace fxt::rl {

class DevicePrioritizedReplay {
 public:
  // capacity: the replay's slots; batch: rows per update; alpha > 0; β = per_beta(beta0,
  // total_steps, env steps).
  DevicePrioritizedReplay(int capacity, int batch, double alpha, double beta0, int64_t total_steps);

  int leaves() const { return leaves_; }
  // Every leaf 0, the largest priority 1 (an empty ReplayBuffer). Synchronous.
  void reset();

  // Enqueue on s. Insert: before the env step's store kernel (which reads the same counters):
  // the slots (replay_next + i) mod capacity, i < rows·lanes (rows 2 with --mirror: each
  // transition and its mirror image), get max_priority^α, unless n-step returns (n_step > 1)
  // store nothing yet (env step t < n − 1).
  void enqueue_insert(cudaStream_t s, const DeviceLearnerStats* stats, int lanes, int n_step,
                      int rows = 1);
  // idx[b] and weight()[b] for every row: u from rngs[b] (one unit() draw, written back) or,
  // with rngs null, from the set_units draws (tests).
  void enqueue_sample(cudaStream_t s, Rng* rngs, const DeviceLearnerStats* stats, int* idx);
  // After the update: leaves idx[b] from the per-sample losses loss[b] (unweighted).
  void enqueue_update(cudaStream_t s, const int* idx, const float* loss);

  const float* weight() const { return weight_.data(); }  // [batch] the IS weights
  // Tests: the rows' draws [batch] that enqueue_sample reads when given no Rngs. Synchronous.
  void set_units(const std::vector<double>& units);

  // Synchronous host copies (the caller syncs its stream first).
  std::vector<double> tree() const;  // [2·leaves]: tree[1] the root, leaf i at leaves + i
  double max_priority() const;
  std::vector<float> weights() const;
  // Tests: leaves (priority^α; the rest 0) and the largest priority; the sums rebuilt.
  void set_leaves(const std::vector<double>& leaves, double max_priority);
  // Tests: sum_tree_find on the device tree for each mass.
  std::vector<int> find(cudaStream_t s, const std::vector<double>& masses) const;

 private:
  int capacity_, batch_, leaves_;
  double alpha_, beta0_;
  int64_t total_steps_;
  gpu::DeviceBuffer<double> tree_, max_priority_, w_raw_, units_;
  gpu::DeviceBuffer<float> weight_;
};

}  // namespace fxt::rl
