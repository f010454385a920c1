// GPU vs CPU parity of the RL environments (rl/device_env.h against rl/vec_env.h's CPU envs):
// thousands of lanes, seeded random actions drawn on the device (and replayed on the host from
// the same per-lane streams), several episodes with resets, compared step by step. Exact: the
// actions, every done flag, the step counters, every random stream's position, and everything
// built from + − × ÷ alone (the execution inventory, the market-making inventory and its
// observations). What passes through CUDA's cos/sin (CartPole) or exp/log (the normal draws'
// log, the fill probabilities' exp), whose last bit may differ from glibc's, is compared as
// |gpu − cpu| / max(|cpu|, 1) (the state variables are O(1) in their units; a pure relative
// difference of a value crossing zero means nothing):
// - one step: the host's step from the device's own previous lane state: <= 1e-12 for all envs;
// - whole trajectories against the CPU env: <= 1e-12 for execution and market making; CartPole's
//   pole is unstable (small deviations grow ~e^{4 t/s}), so its one-ulp differences grow along an
//   episode: bound 1e-9 (the first device run measured 1.8e-11 as a pure relative difference).
// Float observations and rewards built from those doubles are equal or one float rounding apart.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "rl/cartpole.h"
#include "rl/device_env.h"
#include "rl/device_reference.h"
#include "rl/env_spec.h"
#include "rl/evaluate.h"
#include "rl/execution.h"
#include "rl/market_making.h"

namespace fxt::rl {
namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}
bool same_stream(Rng a, Rng b) {  // equal state: the next draws agree
  return a.next() == b.next() && a.next() == b.next() && a.next() == b.next();
}
double scaled_diff(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1.0);
}
// A float built from double values that agree to ~1e-15: equal, or one rounding apart.
bool within_float_rounding(float a, float b) {
  return std::abs(static_cast<double>(a) - b) <=
         std::abs(static_cast<double>(b)) * 0x1.0p-23 + 1e-30;
}

constexpr double kStepTol = 1e-12;

// Worst relative difference of a transcendental-fed double, and how many were not bit-equal.
struct Drift {
  double worst = 0;
  size_t inexact = 0, total = 0;
  void add(double gpu, double cpu) {
    ++total;
    if (!same_bits(gpu, cpu)) ++inexact, worst = std::max(worst, scaled_diff(gpu, cpu));
  }
};

// The host's version of the kernel's work for one lane: step, then restart if it ended.
void host_step(const CartPoleDynamics&, CartPoleLane* lane, int action) {
  const LaneStep r = cartpole_step(lane, action);
  if (r.terminated || r.truncated) cartpole_start(lane);
}
void host_step(const ExecutionDynamics& d, ExecutionLane* lane, int action) {
  const LaneStep r = execution_step_action(d, lane, action);
  if (r.terminated || r.truncated) execution_start(d, lane);
}
void host_step(const MarketMakingDynamics& d, MarketMakingLane* lane, int action) {
  const LaneStep r = market_making_step_action(d, lane, action);
  if (r.terminated || r.truncated) market_making_start(d, lane);
}

void check_lane(const CartPoleLane& g, const CartPoleLane& c, Drift* drift) {
  ASSERT_EQ(g.steps, c.steps);
  ASSERT_TRUE(same_stream(g.rng, c.rng));
  drift->add(g.s.x, c.s.x);
  drift->add(g.s.x_dot, c.s.x_dot);
  drift->add(g.s.theta, c.s.theta);
  drift->add(g.s.theta_dot, c.s.theta_dot);
}
void check_lane(const ExecutionLane& g, const ExecutionLane& c, Drift* drift) {
  ASSERT_EQ(g.k, c.k);
  ASSERT_TRUE(same_bits(g.q, c.q)) << g.q << " vs " << c.q;
  ASSERT_TRUE(same_stream(g.rng, c.rng));
  drift->add(g.s, c.s);
}
void check_lane(const MarketMakingLane& g, const MarketMakingLane& c, Drift* drift) {
  ASSERT_EQ(g.k, c.k);
  ASSERT_TRUE(same_bits(g.q, c.q)) << g.q << " vs " << c.q;
  ASSERT_TRUE(same_stream(g.mid_rng, c.mid_rng));
  ASSERT_TRUE(same_stream(g.fill_rng, c.fill_rng));
  drift->add(g.s, c.s);
}

// Steps the CPU env and the device env `steps` times with the device policy's actions and
// compares everything after every step. exact_obs: observations must be bit-equal (built from
// + − × ÷ only); otherwise within one float rounding.
template <class CpuEnv, class Lane, class Dynamics>
void expect_parity(CpuEnv* cpu, DeviceLaneEnv<Lane, Dynamics>* gpu, int steps, uint64_t seed,
                   bool exact_obs, bool exact_reward, double trajectory_tol) {
  const int n = cpu->num_envs(), dim = cpu->obs_dim(), num_actions = cpu->num_actions();
  ASSERT_EQ(gpu->num_envs(), n);
  ASSERT_EQ(gpu->obs_dim(), dim);
  ASSERT_EQ(gpu->num_actions(), num_actions);
  gpu::Context ctx;
  DeviceRandomPolicy policy(n, num_actions, seed + 1);
  std::vector<Rng> host_policy;
  for (int i = 0; i < n; ++i)
    host_policy.emplace_back(lane_seed(seed + 1, static_cast<uint64_t>(i), 0));

  std::vector<float> obs(static_cast<size_t>(n) * static_cast<size_t>(dim));
  cpu->reset(seed, obs);
  gpu->reset(seed, ctx.stream());
  ctx.sync();
  const size_t obs_size = obs.size();
  auto download_f = [&](const float* p, size_t count) {
    std::vector<float> v(count);
    FXT_CUDA_CHECK(cudaMemcpy(v.data(), p, count * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  };
  auto download_u8 = [&](const uint8_t* p) {
    std::vector<uint8_t> v(static_cast<size_t>(n));
    FXT_CUDA_CHECK(cudaMemcpy(v.data(), p, v.size(), cudaMemcpyDeviceToHost));
    return v;
  };
  auto expect_obs = [&](const std::vector<float>& g, const std::vector<float>& c, const char* what,
                        int step) {
    for (size_t j = 0; j < c.size(); ++j) {
      if (exact_obs) {
        ASSERT_EQ(std::memcmp(&g[j], &c[j], sizeof(float)), 0)
            << what << " step " << step << " entry " << j << ": " << g[j] << " vs " << c[j];
      } else {
        ASSERT_TRUE(within_float_rounding(g[j], c[j]))
            << what << " step " << step << " entry " << j << ": " << g[j] << " vs " << c[j];
      }
    }
  };
  expect_obs(download_f(gpu->obs(), obs_size), obs, "reset obs", 0);

  StepResult out;
  std::vector<int> actions(static_cast<size_t>(n));
  Drift drift, one_step;
  std::vector<Lane> previous = gpu->download_lanes();
  size_t episodes_ended = 0, reward_inexact = 0;
  for (int step = 1; step <= steps; ++step) {
    policy.act(ctx.stream());
    gpu->step(policy.actions(), ctx.stream());
    ctx.sync();
    for (int i = 0; i < n; ++i)
      actions[static_cast<size_t>(i)] = static_cast<int>(
          host_policy[static_cast<size_t>(i)].uniform(static_cast<uint64_t>(num_actions)));
    std::vector<int> device_actions(static_cast<size_t>(n));
    FXT_CUDA_CHECK(cudaMemcpy(device_actions.data(), policy.actions(),
                              device_actions.size() * sizeof(int), cudaMemcpyDeviceToHost));
    ASSERT_EQ(device_actions, actions) << "step " << step;

    cpu->step(actions, &out);
    expect_obs(download_f(gpu->next_obs(), obs_size), out.next_obs, "next_obs", step);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(download_u8(gpu->terminated()), out.terminated) << "step " << step;
    ASSERT_EQ(download_u8(gpu->truncated()), out.truncated) << "step " << step;
    const std::vector<float> reward = download_f(gpu->reward(), static_cast<size_t>(n));
    for (size_t i = 0; i < reward.size(); ++i) {
      if (std::memcmp(&reward[i], &out.reward[i], sizeof(float)) != 0) ++reward_inexact;
      if (exact_reward) {
        ASSERT_EQ(reward[i], out.reward[i]) << "step " << step << " lane " << i;
      } else {
        ASSERT_TRUE(within_float_rounding(reward[i], out.reward[i]))
            << "step " << step << " lane " << i << ": " << reward[i] << " vs " << out.reward[i];
      }
      episodes_ended += out.terminated[i] || out.truncated[i];
    }
    cpu->reset_finished(out, obs);
    expect_obs(download_f(gpu->obs(), obs_size), obs, "obs after reset", step);
    if (::testing::Test::HasFatalFailure()) return;

    const std::vector<Lane> lanes = gpu->download_lanes();
    for (int i = 0; i < n; ++i) {
      const size_t li = static_cast<size_t>(i);
      check_lane(lanes[li], cpu->lanes()[li], &drift);
      Lane replay = previous[li];  // the host stepping the device's own previous state
      host_step(gpu->dynamics(), &replay, actions[li]);
      check_lane(lanes[li], replay, &one_step);
      if (::testing::Test::HasFatalFailure()) {
        ADD_FAILURE() << "lane " << i << " at step " << step;
        return;
      }
    }
    previous = lanes;
  }
  EXPECT_LE(one_step.worst, kStepTol);
  EXPECT_LE(drift.worst, trajectory_tol);
  EXPECT_GE(episodes_ended, static_cast<size_t>(2 * n));  // several episodes, with resets
  std::printf(
      "%s: %d lanes x %d steps, %zu episodes ended; transcendental-fed state vs the CPU "
      "env: %zu of %zu values not bit-equal, worst scaled difference %.3g; one step from "
      "the device's state: %zu not bit-equal, worst %.3g; float rewards not bit-equal: "
      "%zu\n",
      gpu->name(), n, steps, episodes_ended, drift.inexact, drift.total, drift.worst,
      one_step.inexact, one_step.worst, reward_inexact);
}

TEST(RlEnvGpu, CartPoleMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const int n = 2048;
  CartPoleEnv cpu(n);
  DeviceCartPoleEnv gpu(CartPoleDynamics{}, n);
  // Random pushes end an episode in ~20 steps: 200 steps cover ~10 episodes per lane.
  expect_parity(&cpu, &gpu, 200, 11, /*exact_obs=*/false, /*exact_reward=*/true,
                /*trajectory_tol=*/1e-9);
}

TEST(RlEnvGpu, ExecutionMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const int n = 4096;
  const ExecutionParams p;  // 20 steps per episode: 5 episodes in 100 steps
  ExecutionEnv cpu(p, n);
  DeviceExecutionEnv gpu(execution_dynamics(p), n);
  expect_parity(&cpu, &gpu, 100, 12, /*exact_obs=*/true, /*exact_reward=*/false, kStepTol);
}

TEST(RlEnvGpu, MarketMakingMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const int n = 2048;
  MarketMakingParams p;
  p.market.steps = 40;  // three episodes in 120 steps
  p.max_inventory = 5;  // random quotes reach the bound: the unquoted-side rule is exercised
  MarketMakingEnv cpu(p, n);
  DeviceMarketMakingEnv gpu(market_making_dynamics(p), n);
  expect_parity(&cpu, &gpu, 120, 13, /*exact_obs=*/true, /*exact_reward=*/false, kStepTol);
}

TEST(RlEnvGpu, MarketMakingDefaultEpisodeMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const MarketMakingParams p;  // σ = 2, A = 140, k = 1.5, 200 steps, |q| <= 20
  MarketMakingEnv cpu(p, 1024);
  DeviceMarketMakingEnv gpu(market_making_dynamics(p), 1024);
  expect_parity(&cpu, &gpu, 400, 14, /*exact_obs=*/true, /*exact_reward=*/false, kStepTol);
}

// The closed-form references run whole episodes on the device (rl/device_reference.h): the same
// per-episode returns and mean inventory path as evaluate_reference() on the CPU with the same
// seed. Returns add float-rounded rewards, so a reward one ulp apart in double may round to
// neighbouring floats: per episode the bound is one float rounding per step (1e-6 scaled); the
// mean inventory path (doubles) is held to 1e-12.
void expect_same_evaluation(const DeviceEvaluation& gpu, const EvalResult& cpu, const char* what) {
  ASSERT_EQ(gpu.returns.size(), cpu.returns.size()) << what;
  ASSERT_EQ(gpu.mean_inventory.size(), cpu.mean_inventory.size()) << what;
  size_t exact = 0;
  double worst = 0, gpu_mean = 0;
  for (size_t i = 0; i < cpu.returns.size(); ++i) {
    exact += same_bits(gpu.returns[i], cpu.returns[i]);
    worst = std::max(worst, scaled_diff(gpu.returns[i], cpu.returns[i]));
    gpu_mean += gpu.returns[i] / static_cast<double>(cpu.returns.size());
  }
  EXPECT_LE(worst, 1e-6) << what;
  EXPECT_NEAR(gpu_mean, cpu.mean, 1e-9 * std::max(std::abs(cpu.mean), 1.0)) << what;
  double worst_inventory = 0;
  for (size_t k = 0; k < cpu.mean_inventory.size(); ++k)
    worst_inventory =
        std::max(worst_inventory, scaled_diff(gpu.mean_inventory[k], cpu.mean_inventory[k]));
  EXPECT_LE(worst_inventory, 1e-12) << what;
  std::printf(
      "%s: %zu episodes, %zu returns bit-equal, worst scaled difference %.3g; mean %.6f "
      "(CPU %.6f); mean inventory path worst %.3g\n",
      what, cpu.returns.size(), exact, worst, gpu_mean, cpu.mean, worst_inventory);
}

TEST(RlEnvGpu, ExecutionOptimumOnDeviceMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  EnvSpec spec;
  spec.name = "execution";
  const int n = 65536;  // paired paths
  auto cpu = evaluate_reference(spec, "optimal", 0, n, 2024);
  ASSERT_TRUE(cpu.ok());
  const DeviceEvaluation gpu =
      evaluate_execution_optimal_on_device(execution_dynamics(spec.execution), n, 2024);
  expect_same_evaluation(gpu, *cpu, "execution optimal");
}

TEST(RlEnvGpu, CarteaJaimungalOnDeviceMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  EnvSpec spec;
  spec.name = "mm";  // φ = α = 0.5
  const int n = 8192;
  auto cpu = evaluate_reference(spec, "cj", 0, n, 2025);
  ASSERT_TRUE(cpu.ok());
  const CarteaJaimungalAgent agent(spec.mm);
  const DeviceEvaluation gpu =
      evaluate_cartea_jaimungal_on_device(market_making_dynamics(spec.mm), agent.table(),
                                          spec.mm.max_inventory, 1.0 / spec.mm.market.k, n, 2025);
  expect_same_evaluation(gpu, *cpu, "mm cartea-jaimungal");
}

}  // namespace
}  // namespace fxt::rl
