#include "rl/device_env.h"

#include <cassert>

#include "rl/env_lane.h"

namespace fxt::rl {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// ---- One interface over the three envs' FXT_HD lane functions --------------------------------
// obs_dim, name, action count, stream seeding, start, observation and grid-action step.

FXT_HD void seed_lane(CartPoleLane* lane, uint64_t seed, uint64_t i) {
  cartpole_seed(lane, seed, i);
}
FXT_HD void seed_lane(ExecutionLane* lane, uint64_t seed, uint64_t i) {
  execution_seed(lane, seed, i);
}
FXT_HD void seed_lane(MarketMakingLane* lane, uint64_t seed, uint64_t i) {
  market_making_seed(lane, seed, i);
}

FXT_HD void start_lane(const CartPoleDynamics&, CartPoleLane* lane) {
  cartpole_start(lane);
}
FXT_HD void start_lane(const ExecutionDynamics& d, ExecutionLane* lane) {
  execution_start(d, lane);
}
FXT_HD void start_lane(const MarketMakingDynamics& d, MarketMakingLane* lane) {
  market_making_start(d, lane);
}

FXT_HD void lane_obs(const CartPoleDynamics&, const CartPoleLane& lane, float* obs) {
  cartpole_obs(lane, obs);
}
FXT_HD void lane_obs(const ExecutionDynamics& d, const ExecutionLane& lane, float* obs) {
  execution_obs(d, lane, obs);
}
FXT_HD void lane_obs(const MarketMakingDynamics& d, const MarketMakingLane& lane, float* obs) {
  market_making_obs(d, lane, obs);
}

FXT_HD LaneStep step_lane(const CartPoleDynamics&, CartPoleLane* lane, int action) {
  return cartpole_step(lane, action);
}
FXT_HD LaneStep step_lane(const ExecutionDynamics& d, ExecutionLane* lane, int action) {
  return execution_step_action(d, lane, action);
}
FXT_HD LaneStep step_lane(const MarketMakingDynamics& d, MarketMakingLane* lane, int action) {
  return market_making_step_action(d, lane, action);
}

int action_count(const CartPoleDynamics&) {
  return 2;
}
int action_count(const ExecutionDynamics& d) {
  return d.num_speeds;
}
int action_count(const MarketMakingDynamics& d) {
  return d.num_actions();
}

const char* env_name(const CartPoleDynamics&) {
  return "cartpole";
}
const char* env_name(const ExecutionDynamics&) {
  return "execution";
}
const char* env_name(const MarketMakingDynamics&) {
  return "mm";
}

// ---- Kernels. Launch: 1-D grid of kThreads-thread blocks, one thread per lane; thread i owns
// lanes[i] (loaded into registers, stored back once) and row i of every output. --------------

template <class Lane, class Dynamics>
__global__ void reset_kernel(Dynamics d, Lane* lanes, int n, uint64_t seed, float* obs) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  Lane lane;
  seed_lane(&lane, seed, static_cast<uint64_t>(i));
  start_lane(d, &lane);
  lane_obs(d, lane, obs + static_cast<size_t>(i) * Lane::kObsDim);
  lanes[i] = lane;
}

template <class Lane, class Dynamics>
__global__ void step_kernel(Dynamics d, Lane* lanes, int n, const int* actions, float* obs,
                            float* next_obs, float* reward, uint8_t* terminated,
                            uint8_t* truncated) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  Lane lane = lanes[i];
  const LaneStep r = step_lane(d, &lane, actions[i]);
  const size_t row = static_cast<size_t>(i) * Lane::kObsDim;
  lane_obs(d, lane, next_obs + row);
  reward[i] = static_cast<float>(r.reward);
  terminated[i] = r.terminated ? 1 : 0;
  truncated[i] = r.truncated ? 1 : 0;
  if (r.terminated || r.truncated) start_lane(d, &lane);  // the CPU env's reset_finished
  lane_obs(d, lane, obs + row);
  lanes[i] = lane;
}

__global__ void seed_policy_kernel(Rng* rngs, int n, uint64_t seed) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) rngs[i] = Rng(lane_seed(seed, static_cast<uint64_t>(i), 0));
}

__global__ void random_actions_kernel(Rng* rngs, int n, uint64_t num_actions, int* actions) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  Rng rng = rngs[i];
  actions[i] = static_cast<int>(rng.uniform(num_actions));
  rngs[i] = rng;
}

}  // namespace

DeviceVecEnv::DeviceVecEnv(int num_envs, int obs_dim, int num_actions)
    : num_envs_(num_envs),
      obs_dim_(obs_dim),
      num_actions_(num_actions),
      obs_(static_cast<size_t>(num_envs) * static_cast<size_t>(obs_dim)),
      next_obs_(static_cast<size_t>(num_envs) * static_cast<size_t>(obs_dim)),
      reward_(static_cast<size_t>(num_envs)),
      terminated_(static_cast<size_t>(num_envs)),
      truncated_(static_cast<size_t>(num_envs)) {
  assert(num_envs >= 1 && num_actions >= 1);
}

template <class Lane, class Dynamics>
DeviceLaneEnv<Lane, Dynamics>::DeviceLaneEnv(const Dynamics& d, int num_envs)
    : DeviceVecEnv(num_envs, Lane::kObsDim, action_count(d)),
      d_(d),
      lanes_(static_cast<size_t>(num_envs)) {}

template <class Lane, class Dynamics>
const char* DeviceLaneEnv<Lane, Dynamics>::name() const {
  return env_name(d_);
}

template <class Lane, class Dynamics>
void DeviceLaneEnv<Lane, Dynamics>::reset(uint64_t seed, cudaStream_t stream) {
  reset_kernel<Lane, Dynamics><<<blocks_for(num_envs_), kThreads, 0, stream>>>(
      d_, lanes_.data(), num_envs_, seed, obs_.data());
  FXT_CUDA_LAUNCH_CHECK();
}

template <class Lane, class Dynamics>
void DeviceLaneEnv<Lane, Dynamics>::step(const int* actions, cudaStream_t stream) {
  step_kernel<Lane, Dynamics><<<blocks_for(num_envs_), kThreads, 0, stream>>>(
      d_, lanes_.data(), num_envs_, actions, obs_.data(), next_obs_.data(), reward_.data(),
      terminated_.data(), truncated_.data());
  FXT_CUDA_LAUNCH_CHECK();
}

template <class Lane, class Dynamics>
std::vector<Lane> DeviceLaneEnv<Lane, Dynamics>::download_lanes() const {
  return lanes_.download();
}

template class DeviceLaneEnv<CartPoleLane, CartPoleDynamics>;
template class DeviceLaneEnv<ExecutionLane, ExecutionDynamics>;
template class DeviceLaneEnv<MarketMakingLane, MarketMakingDynamics>;

DeviceRandomPolicy::DeviceRandomPolicy(int num_envs, int num_actions, uint64_t seed)
    : num_envs_(num_envs),
      num_actions_(num_actions),
      rngs_(static_cast<size_t>(num_envs)),
      actions_(static_cast<size_t>(num_envs)) {
  assert(num_envs >= 1 && num_actions >= 1);
  seed_policy_kernel<<<blocks_for(num_envs_), kThreads>>>(rngs_.data(), num_envs_, seed);
  FXT_CUDA_LAUNCH_CHECK();
  FXT_CUDA_CHECK(cudaDeviceSynchronize());
}

void DeviceRandomPolicy::act(cudaStream_t stream) {
  random_actions_kernel<<<blocks_for(num_envs_), kThreads, 0, stream>>>(
      rngs_.data(), num_envs_, static_cast<uint64_t>(num_actions_), actions_.data());
  FXT_CUDA_LAUNCH_CHECK();
}

}  // namespace fxt::rl
