#include "rl/device_reference.h"

#include <cassert>

#include "gpu/runtime.h"
#include "rl/closed_form_lane.h"

namespace fxt::rl {
namespace {

constexpr int kThreads = 256;

// Launch: 1-D grid of kThreads-thread blocks, one thread per episode; thread i owns lane i in
// registers, returns[i] and column i of inventory [steps + 1, n] (coalesced per step).
__global__ void execution_optimal_kernel(ExecutionDynamics d, int n, uint64_t seed, double* returns,
                                         double* inventory) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  ExecutionLane lane;
  execution_seed(&lane, seed, static_cast<uint64_t>(i));
  execution_start(d, &lane);
  double ret = 0;
  inventory[i] = lane.q;
  for (int k = 1;; ++k) {
    const LaneStep r = execution_step(d, &lane, execution_optimal_speed(d, lane));
    ret += static_cast<double>(static_cast<float>(r.reward));
    inventory[static_cast<size_t>(k) * static_cast<size_t>(n) + static_cast<size_t>(i)] = lane.q;
    if (r.terminated || r.truncated) break;
  }
  returns[i] = ret;
}

__global__ void cartea_jaimungal_kernel(MarketMakingDynamics d, const double* h, int max_inventory,
                                        double inv_k, int n, uint64_t seed, double* returns,
                                        double* inventory) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  MarketMakingLane lane;
  market_making_seed(&lane, seed, static_cast<uint64_t>(i));
  market_making_start(d, &lane);
  double ret = 0;
  inventory[i] = lane.q;
  for (int k = 1;; ++k) {
    double bid = 0, ask = 0;
    cartea_jaimungal_depths(h, max_inventory, inv_k, lane, &bid, &ask);
    const LaneStep r = market_making_step(d, &lane, bid, ask);
    ret += static_cast<double>(static_cast<float>(r.reward));
    inventory[static_cast<size_t>(k) * static_cast<size_t>(n) + static_cast<size_t>(i)] = lane.q;
    if (r.terminated || r.truncated) break;
  }
  returns[i] = ret;
}

// Returns and the mean inventory path (summed over episodes in index order, as the CPU does).
DeviceEvaluation collect(const gpu::DeviceBuffer<double>& returns,
                         const gpu::DeviceBuffer<double>& inventory, int n, int steps) {
  DeviceEvaluation e;
  e.returns = returns.download();
  const std::vector<double> inv = inventory.download();
  e.mean_inventory.assign(static_cast<size_t>(steps) + 1, 0.0);
  for (size_t k = 0; k < e.mean_inventory.size(); ++k)
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      e.mean_inventory[k] += inv[k * static_cast<size_t>(n) + i] / static_cast<double>(n);
  return e;
}

unsigned blocks_for(int n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

}  // namespace

DeviceEvaluation evaluate_execution_optimal_on_device(const ExecutionDynamics& d, int episodes,
                                                      uint64_t seed) {
  assert(episodes >= 1);
  const size_t n = static_cast<size_t>(episodes);
  gpu::DeviceBuffer<double> returns(n), inventory((static_cast<size_t>(d.steps) + 1) * n);
  execution_optimal_kernel<<<blocks_for(episodes), kThreads>>>(d, episodes, seed, returns.data(),
                                                               inventory.data());
  FXT_CUDA_LAUNCH_CHECK();
  return collect(returns, inventory, episodes, d.steps);
}

DeviceEvaluation evaluate_cartea_jaimungal_on_device(const MarketMakingDynamics& d,
                                                     const std::vector<double>& h,
                                                     int max_inventory, double inv_k, int episodes,
                                                     uint64_t seed) {
  assert(episodes >= 1 && h.size() == (static_cast<size_t>(d.steps) + 1) *
                                          (2 * static_cast<size_t>(max_inventory) + 1));
  const size_t n = static_cast<size_t>(episodes);
  gpu::DeviceBuffer<double> table, returns(n), inventory((static_cast<size_t>(d.steps) + 1) * n);
  table.upload(h);
  cartea_jaimungal_kernel<<<blocks_for(episodes), kThreads>>>(
      d, table.data(), max_inventory, inv_k, episodes, seed, returns.data(), inventory.data());
  FXT_CUDA_LAUNCH_CHECK();
  return collect(returns, inventory, episodes, d.steps);
}

}  // namespace fxt::rl
