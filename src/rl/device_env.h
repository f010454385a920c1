// The vectorised environments on the GPU (DESIGN §8): the device-side sibling of VecEnv
// (rl/vec_env.h), for a GPU learner that drives thousands of lanes without a host round trip.
//
// One thread per env lane. Lane states, observations, rewards and done flags stay in device
// memory; step() reads the actions from device memory, advances every lane, writes next_obs,
// reward, terminated, truncated and then restarts the lanes that ended, writing obs (the first
// observation of a restarted lane, next_obs otherwise): the CPU env's step() followed by its
// reset_finished(), in one kernel. The per-lane arithmetic is the CPU env's own FXT_HD functions
// (rl/*_lane.h) and lane i draws from the CPU lane i's streams (lane_seed), so the same seed and
// actions give the CPU env's trajectories: bit for bit where only + − × ÷ are involved, to ~1e-15
// relative where CUDA's exp/log/sin/cos round differently from glibc's (tests/gpu/rl_env_gpu_test).
//
// Every call enqueues on the given stream and returns: no allocation, no synchronisation, no host
// branch on device data, so a learner can capture "act, step, store" in one CUDA graph. Buffers
// are allocated once by the constructor. Thread-compatible: one owner drives it. Defined only in
// CUDA builds (FXT_HAVE_CUDA, library fxt_rl_gpu); C++17-clean.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "gpu/runtime.h"
#include "rl/cartpole_lane.h"
#include "rl/execution_lane.h"
#include "rl/market_making_lane.h"

namespace fxt::rl {

class DeviceVecEnv {
 public:
  virtual ~DeviceVecEnv() = default;
  virtual const char* name() const = 0;
  int num_envs() const { return num_envs_; }
  int obs_dim() const { return obs_dim_; }
  int num_actions() const { return num_actions_; }

  // Seeds lane i's streams from (seed, i) exactly as the CPU env's reset(seed) does, starts every
  // episode and writes obs().
  virtual void reset(uint64_t seed, cudaStream_t stream) = 0;
  // Steps every lane with actions[i] (device memory, [N], each in [0, num_actions())), then
  // restarts the lanes that ended.
  virtual void step(const int* actions, cudaStream_t stream) = 0;

  // Device arrays owned by the env, valid for its lifetime, as of the last enqueued call.
  const float* obs() const { return obs_.data(); }            // [N, obs_dim]: act on this next
  const float* next_obs() const { return next_obs_.data(); }  // [N, obs_dim]: before any reset
  const float* reward() const { return reward_.data(); }      // [N]
  const uint8_t* terminated() const { return terminated_.data(); }  // [N] 1 = terminal state
  const uint8_t* truncated() const { return truncated_.data(); }    // [N] 1 = time limit

 protected:
  DeviceVecEnv(int num_envs, int obs_dim, int num_actions);
  int num_envs_, obs_dim_, num_actions_;
  gpu::DeviceBuffer<float> obs_, next_obs_, reward_;
  gpu::DeviceBuffer<uint8_t> terminated_, truncated_;
};

// CartPole has no parameters.
struct CartPoleDynamics {};

// The lanes of one env (Lane, Dynamics) = (CartPoleLane, CartPoleDynamics), (ExecutionLane,
// ExecutionDynamics) or (MarketMakingLane, MarketMakingDynamics); instantiated in device_env.cu.
template <class Lane, class Dynamics>
class DeviceLaneEnv final : public DeviceVecEnv {
 public:
  // d as built by execution_dynamics() / market_making_dynamics() from validated params.
  DeviceLaneEnv(const Dynamics& d, int num_envs);
  const char* name() const override;
  void reset(uint64_t seed, cudaStream_t stream) override;
  void step(const int* actions, cudaStream_t stream) override;

  const Dynamics& dynamics() const { return d_; }
  const Lane* lanes() const { return lanes_.data(); }  // device [N], for device policies
  std::vector<Lane> download_lanes() const;            // synchronous; for tests and reports

 private:
  Dynamics d_;
  gpu::DeviceBuffer<Lane> lanes_;
};

using DeviceCartPoleEnv = DeviceLaneEnv<CartPoleLane, CartPoleDynamics>;
using DeviceExecutionEnv = DeviceLaneEnv<ExecutionLane, ExecutionDynamics>;
using DeviceMarketMakingEnv = DeviceLaneEnv<MarketMakingLane, MarketMakingDynamics>;

// Uniformly random actions drawn on the device: lane i's action is Rng(lane_seed(seed, i, 0))'s
// next uniform(num_actions) draw, so a host loop over the same Rngs reproduces them (tests), and
// exploration, benchmarks and random baselines need no host round trip.
class DeviceRandomPolicy {
 public:
  DeviceRandomPolicy(int num_envs, int num_actions, uint64_t seed);
  // Draws the next actions into actions() (enqueued on stream).
  void act(cudaStream_t stream);
  const int* actions() const { return actions_.data(); }
  int* mutable_actions() { return actions_.data(); }

 private:
  int num_envs_, num_actions_;
  gpu::DeviceBuffer<Rng> rngs_;
  gpu::DeviceBuffer<int> actions_;
};

}  // namespace fxt::rl
