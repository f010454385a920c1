// RL environment throughput (DESIGN §8, docs/RL.md "GPU environments"): env steps/s of the
// three vectorised envs (0 cartpole, 1 execution, 2 mm, default parameters) under uniformly
// random actions.
// - BM_GpuEnv/env/N/mode: N lanes on the device (rl/device_env.h), actions drawn on the device
//   (DeviceRandomPolicy), no host round trip. Timed with CUDA events over kSteps steps per
//   iteration after a warm-up. mode 0: one policy and one step launch per step; mode 1: the same
//   kSteps steps captured once as a CUDA graph and replayed; mode 2: the graph of kSteps env
//   steps alone on fixed actions (the env's own cost).
// - BM_CpuEnv/env/N: the CPU reference (rl/vec_env.h), one thread: random actions from per-lane
//   Rngs, step(), reset_finished(); counted per lane-step.
// Counter "env-steps/s" (lane-steps per second). Compare rows of one run only.
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "rl/cartpole.h"
#include "rl/execution.h"
#include "rl/market_making.h"
#if FXT_HAVE_CUDA
#include "gpu/runtime.h"
#include "rl/device_env.h"
#endif

namespace {

using namespace fxt::rl;

constexpr int kSteps = 200;  // steps per timed iteration (a multiple of every episode length)
constexpr uint64_t kSeed = 2026;

std::unique_ptr<VecEnv> make_cpu_env(int env, int n) {
  if (env == 0) return std::make_unique<CartPoleEnv>(n);
  if (env == 1) return std::make_unique<ExecutionEnv>(ExecutionParams{}, n);
  return std::make_unique<MarketMakingEnv>(MarketMakingParams{}, n);
}

void BM_CpuEnv(benchmark::State& state) {
  const int env_id = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  std::unique_ptr<VecEnv> env = make_cpu_env(env_id, n);
  state.SetLabel(env->name());
  std::vector<fxt::Rng> policy;
  for (int i = 0; i < n; ++i)
    policy.emplace_back(lane_seed(kSeed + 1, static_cast<uint64_t>(i), 0));
  std::vector<float> obs(static_cast<size_t>(n) * static_cast<size_t>(env->obs_dim()));
  env->reset(kSeed, obs);
  std::vector<int> actions(static_cast<size_t>(n));
  StepResult out;
  const uint64_t num_actions = static_cast<uint64_t>(env->num_actions());
  for (auto _ : state) {
    for (size_t i = 0; i < actions.size(); ++i)
      actions[i] = static_cast<int>(policy[i].uniform(num_actions));
    env->step(actions, &out);
    env->reset_finished(out, obs);
    benchmark::DoNotOptimize(obs.data());
  }
  state.counters["env-steps/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * n, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CpuEnv)
    ->ArgsProduct({{0, 1, 2}, {1024, 65536}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

#if FXT_HAVE_CUDA
std::unique_ptr<DeviceVecEnv> make_device_env(int env, int n) {
  if (env == 0) return std::make_unique<DeviceCartPoleEnv>(CartPoleDynamics{}, n);
  if (env == 1)
    return std::make_unique<DeviceExecutionEnv>(execution_dynamics(ExecutionParams{}), n);
  return std::make_unique<DeviceMarketMakingEnv>(market_making_dynamics(MarketMakingParams{}), n);
}

void BM_GpuEnv(benchmark::State& state) {
  if (!fxt::gpu::cuda_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int env_id = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const int mode = static_cast<int>(state.range(2));
  fxt::gpu::Context ctx;
  std::unique_ptr<DeviceVecEnv> env = make_device_env(env_id, n);
  state.SetLabel(env->name());
  DeviceRandomPolicy policy(n, env->num_actions(), kSeed + 1);
  env->reset(kSeed, ctx.stream());
  auto steps = [&] {
    for (int k = 0; k < kSteps; ++k) {
      if (mode != 2) policy.act(ctx.stream());
      env->step(policy.actions(), ctx.stream());
    }
  };
  if (mode == 2) policy.act(ctx.stream());
  fxt::gpu::Graph graph;
  if (mode != 0) graph.capture(ctx, steps);
  auto run = [&] { mode == 0 ? steps() : graph.launch(ctx); };
  run();  // warm-up
  ctx.sync();
  fxt::gpu::EventTimer timer;
  for (auto _ : state) {
    timer.start(ctx);
    run();
    state.SetIterationTime(timer.stop_ms(ctx) / 1e3);
  }
  state.counters["env-steps/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n * kSteps, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GpuEnv)
    ->ArgsProduct({{0, 1, 2}, {1024, 4096, 16384, 65536, 262144, 1048576}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();
#endif

}  // namespace

BENCHMARK_MAIN();
