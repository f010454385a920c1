#include "rl/device_replay.h"

#include <algorithm>
#include <cassert>

#include "rl/per_math.h"

namespace fxt::rl {
namespace {

constexpr int kThreads = 128;

// Re-sums the ancestors of the leaves slot(k), k < n, level by level up to the root, in one
// block: thread t handles k = t, t + blockDim, …; a __syncthreads between levels makes the level
// below final before it is read. Threads whose leaves share an ancestor write it the same value
// (its children's sum), so the result is the CPU's bits whatever the order.
template <typename Slot>
__device__ void resum_ancestors(double* tree, int leaves, int n, Slot slot) {
  for (int h = 1; (leaves >> h) >= 1; ++h) {
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
      const size_t node = (static_cast<size_t>(leaves) + static_cast<size_t>(slot(k))) >> h;
      tree[node] = tree[2 * node] + tree[2 * node + 1];
    }
    __syncthreads();
  }
}

// Launch: one block of min(rows·lanes, 1024) threads. ReplayBuffer::add's priority for the
// rows·lanes slots the store kernel is about to write (it reads the same replay_next; n-step: none
// before t = n − 1).
__global__ void per_insert_kernel(double* tree, int leaves, const double* max_priority,
                                  double alpha, const DeviceLearnerStats* stats, int lanes,
                                  int n_step, int cap, int rows) {
  if (n_step > 1 && stats->env_steps / lanes < n_step - 1) return;  // uniform over the block
  const int next = stats->replay_next, count = rows * lanes;
  const double leaf = per_leaf(*max_priority, alpha);
  auto slot = [&](int i) { return (next + i) % cap; };
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    tree[static_cast<size_t>(leaves) + static_cast<size_t>(slot(i))] = leaf;
  __syncthreads();
  resum_ancestors(tree, leaves, count, slot);
}

// Launch: grid ceil(B / kThreads), block kThreads. Row b: u from its Rng (or units[b]), the leaf
// at the stratified mass (ReplayBuffer::sample's order of arithmetic) and its raw IS weight at β
// of the device step counter.
__global__ void per_sample_kernel(const double* tree, int leaves, Rng* rngs, const double* units,
                                  const DeviceLearnerStats* stats, double beta0,
                                  long long total_steps, int B, int* idx, double* w_raw) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  double u;
  if (rngs != nullptr) {
    Rng r = rngs[b];
    u = r.unit();
    rngs[b] = r;
  } else {
    u = units[b];
  }
  const double total = tree[1];
  const int i = sum_tree_find(tree, leaves, per_mass(total, B, b, u));
  idx[b] = i;
  const double beta = per_beta(beta0, total_steps, stats->env_steps);
  w_raw[b] = per_is_weight(stats->replay_size, tree[static_cast<size_t>(leaves + i)], total, beta);
}

// Launch: one block of kThreads. weight[b] = float(w_raw[b] / max_b w_raw) (the maximum is exact
// in any order).
__global__ void per_weights_kernel(const double* w_raw, int B, float* weight) {
  __shared__ double part[kThreads];
  double mx = 0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) mx = mx < w_raw[b] ? w_raw[b] : mx;
  part[threadIdx.x] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int t = 1; t < blockDim.x; ++t) mx = mx < part[t] ? part[t] : mx;
    part[0] = mx;
  }
  __syncthreads();
  mx = part[0];
  for (int b = threadIdx.x; b < B; b += blockDim.x) weight[b] = static_cast<float>(w_raw[b] / mx);
}

// Launch: one block of min(B, 1024) threads. ReplayBuffer::update_priorities: the leaf of idx[b]
// becomes max(loss_b, 1e-6)^α where b is the last row holding that index (the CPU's sequential
// set() keeps the last); thread 0 folds the priorities into the largest in row order.
__global__ void per_update_kernel(double* tree, int leaves, double* max_priority, double alpha,
                                  const int* idx, const float* loss, int B) {
  for (int b = threadIdx.x; b < B; b += blockDim.x) {
    const int i = idx[b];
    bool last = true;
    for (int c = b + 1; c < B && last; ++c) last = idx[c] != i;
    if (last) tree[static_cast<size_t>(leaves + i)] = per_leaf(per_priority(loss[b]), alpha);
  }
  if (threadIdx.x == 0) {
    double mx = *max_priority;
    for (int b = 0; b < B; ++b) {
      const double p = per_priority(loss[b]);
      mx = mx < p ? p : mx;  // std::max(mx, p)
    }
    *max_priority = mx;
  }
  __syncthreads();
  resum_ancestors(tree, leaves, B, [&](int k) { return idx[k]; });
}

__global__ void per_find_kernel(const double* tree, int leaves, const double* masses, int n,
                                int* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) out[k] = sum_tree_find(tree, leaves, masses[k]);
}

}  // namespace

DevicePrioritizedReplay::DevicePrioritizedReplay(int capacity, int batch, double alpha,
                                                 double beta0, int64_t total_steps)
    : capacity_(capacity),
      batch_(batch),
      leaves_(sum_tree_leaves(capacity)),
      alpha_(alpha),
      beta0_(beta0),
      total_steps_(total_steps) {
  assert(capacity >= 1 && batch >= 1 && alpha > 0 && total_steps >= 1);
  tree_.resize(2 * static_cast<size_t>(leaves_));
  max_priority_.resize(1);
  w_raw_.resize(static_cast<size_t>(batch));
  units_.resize(static_cast<size_t>(batch));
  weight_.resize(static_cast<size_t>(batch));
  reset();
}

void DevicePrioritizedReplay::reset() {
  tree_.zero();
  max_priority_.upload(std::vector<double>{1.0});
  units_.zero();
  weight_.zero();
}

void DevicePrioritizedReplay::enqueue_insert(cudaStream_t s, const DeviceLearnerStats* stats,
                                             int lanes, int n_step, int rows) {
  const unsigned threads = static_cast<unsigned>(std::min(rows * lanes, 1024));
  per_insert_kernel<<<1, threads, 0, s>>>(tree_.data(), leaves_, max_priority_.data(), alpha_,
                                          stats, lanes, n_step, capacity_, rows);
  FXT_CUDA_LAUNCH_CHECK();
}

void DevicePrioritizedReplay::enqueue_sample(cudaStream_t s, Rng* rngs,
                                             const DeviceLearnerStats* stats, int* idx) {
  const unsigned grid = static_cast<unsigned>((batch_ + kThreads - 1) / kThreads);
  per_sample_kernel<<<grid, kThreads, 0, s>>>(tree_.data(), leaves_, rngs, units_.data(), stats,
                                              beta0_, static_cast<long long>(total_steps_), batch_,
                                              idx, w_raw_.data());
  FXT_CUDA_LAUNCH_CHECK();
  per_weights_kernel<<<1, kThreads, 0, s>>>(w_raw_.data(), batch_, weight_.data());
  FXT_CUDA_LAUNCH_CHECK();
}

void DevicePrioritizedReplay::enqueue_update(cudaStream_t s, const int* idx, const float* loss) {
  const unsigned threads = static_cast<unsigned>(std::min(batch_, 1024));
  per_update_kernel<<<1, threads, 0, s>>>(tree_.data(), leaves_, max_priority_.data(), alpha_, idx,
                                          loss, batch_);
  FXT_CUDA_LAUNCH_CHECK();
}

void DevicePrioritizedReplay::set_units(const std::vector<double>& units) {
  assert(units.size() == static_cast<size_t>(batch_));
  units_.upload(units.data(), units.size());
}

std::vector<double> DevicePrioritizedReplay::tree() const {
  return tree_.download();
}
double DevicePrioritizedReplay::max_priority() const {
  return max_priority_.download()[0];
}
std::vector<float> DevicePrioritizedReplay::weights() const {
  return weight_.download();
}

void DevicePrioritizedReplay::set_leaves(const std::vector<double>& leaves, double max_priority) {
  assert(leaves.size() <= static_cast<size_t>(leaves_));
  std::vector<double> t(2 * static_cast<size_t>(leaves_), 0.0);
  std::copy(leaves.begin(), leaves.end(), t.begin() + leaves_);
  sum_tree_rebuild(t.data(), leaves_);
  tree_.upload(t.data(), t.size());
  max_priority_.upload(&max_priority, 1);
}

std::vector<int> DevicePrioritizedReplay::find(cudaStream_t s,
                                               const std::vector<double>& masses) const {
  const int n = static_cast<int>(masses.size());
  if (n == 0) return {};
  gpu::DeviceBuffer<double> m(masses.size());
  gpu::DeviceBuffer<int> out(masses.size());
  m.upload(masses.data(), masses.size());
  per_find_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      tree_.data(), leaves_, m.data(), n, out.data());
  FXT_CUDA_LAUNCH_CHECK();
  FXT_CUDA_CHECK(cudaStreamSynchronize(s));
  return out.download();
}

}  // namespace fxt::rl
