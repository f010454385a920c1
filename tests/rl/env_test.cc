#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "rl/cartpole.h"
#include "rl/env_spec.h"
#include "rl/evaluate.h"
#include "rl/execution.h"
#include "rl/market_making.h"
#include "sim/model_market.h"

namespace fxt::rl {
namespace {

TEST(CartPole, OneStepMatchesGymByHand) {
  // Values from gym's equations evaluated in Python (float64) from (0.01, −0.02, 0.03, 0.04).
  const CartPoleState s{0.01, -0.02, 0.03, 0.04};
  const CartPoleState r = cartpole_dynamics(s, 1);
  EXPECT_DOUBLE_EQ(r.x, 0.009600000000000001);
  EXPECT_NEAR(r.x_dot, 0.17467919574755525, 1e-15);
  EXPECT_DOUBLE_EQ(r.theta, 0.030799999999999998);
  EXPECT_NEAR(r.theta_dot, -0.2430687179600081, 1e-15);
  const CartPoleState l = cartpole_dynamics(s, 0);
  EXPECT_NEAR(l.x_dot, -0.21553901710278936, 1e-15);
  EXPECT_NEAR(l.theta_dot, 0.34199522377603914, 1e-15);
}

TEST(CartPole, TerminationTruncationAndReset) {
  EXPECT_FALSE(cartpole_terminated({2.4, 0, 0.2094, 0}));
  EXPECT_TRUE(cartpole_terminated({2.41, 0, 0, 0}));
  EXPECT_TRUE(cartpole_terminated({0, 0, -0.21, 0}));  // 12° = 0.20944 rad
  CartPoleEnv env(3);
  std::vector<float> obs(12);
  env.reset(5, obs);
  for (float v : obs) EXPECT_LT(std::abs(v), 0.05f);
  // Pushing right forever falls over well before the time limit, reward 1 every step.
  StepResult out;
  std::vector<int> right(3, 1);
  int steps = 0;
  for (; steps < 500; ++steps) {
    env.step(right, &out);
    EXPECT_EQ(out.reward[0], 1.0f);
    if (out.terminated[0]) break;
    env.reset_finished(out, obs);
  }
  EXPECT_LT(steps, 100);
  EXPECT_EQ(out.truncated[0], 0);
  // Balanced by hand (push against the pole's lean) it survives to the 500-step limit.
  CartPoleEnv one(1);
  std::vector<float> o(4);
  one.reset(1, o);
  std::vector<int> a(1);
  for (int k = 0; k < 500; ++k) {
    a[0] = o[2] + 0.5f * o[3] > 0 ? 1 : 0;
    one.step(a, &out);
    ASSERT_EQ(out.terminated[0], 0) << k;
    if (k < 499) {
      EXPECT_EQ(out.truncated[0], 0);
    }
    one.reset_finished(out, o);
  }
  EXPECT_EQ(out.truncated[0], 1);
}

TEST(Execution, StepByHand) {
  ExecutionParams p;
  p.sigma = 0;  // deterministic: Δs = −b·ν·Δt
  ExecutionEnv env(p, 1);
  std::vector<float> obs(2);
  env.reset(1, obs);
  EXPECT_FLOAT_EQ(obs[1], 1.0f);
  StepResult out;
  std::vector<int> a = {10};  // ν = 2 (grid step 0.2)
  env.step(a, &out);
  // −k·ν²·Δt + q'·Δs − φ·Δt·(q² − q·ν·Δt + ν²Δt²/3) = −0.2 − 0.009 − 0.25·(0.9 + 0.01/3)
  EXPECT_NEAR(out.reward[0], -0.2 - 0.009 - 0.25 * (0.9 + 0.01 / 3), 1e-6);
  EXPECT_NEAR(env.inventory(0), 0.9, 1e-15);
  EXPECT_FLOAT_EQ(out.next_obs[0], 0.05f);
  EXPECT_FLOAT_EQ(out.next_obs[1], 0.9f);
}

TEST(Execution, ClosedFormLimits) {
  ExecutionParams p;
  // Almgren–Chriss (α → ∞): v(τ) = γ·coth(γτ), q*(t) = q0·sinh(γ(T−t))/sinh(γT).
  p.alpha = 1e12;
  const double g = std::sqrt(p.phi / p.temp_impact);
  EXPECT_NEAR(execution_speed_factor(p, 0.3), g / std::tanh(g * 0.3), 1e-9);
  EXPECT_NEAR(execution_optimal_inventory(p, 0.4), std::sinh(g * 0.6) / std::sinh(g), 1e-9);
  // TWAP (φ = 0, α → ∞): v = 1/τ, q* linear, value −(k/T + b/2)·q0².
  p.phi = 0;
  EXPECT_NEAR(execution_speed_factor(p, 0.25), 4.0, 1e-9);
  EXPECT_NEAR(execution_optimal_inventory(p, 0.25), 0.75, 1e-9);
  EXPECT_NEAR(execution_optimal_value(p), -(1.0 + 0.05), 1e-9);
  // Terminal condition v(0) = (2α − b)/(2k).
  ExecutionParams d;
  EXPECT_NEAR(execution_speed_factor(d, 0), (2 * d.alpha - d.perm_impact) / (2 * d.temp_impact),
              1e-12);
}

TEST(Execution, FineStepsReachTheClosedFormValue) {
  // Without noise and with 4000 steps the closed-form agent's return is the continuous value.
  ExecutionParams p;
  p.sigma = 0;
  p.steps = 4000;
  EnvSpec spec;
  spec.name = "execution";
  spec.execution = p;
  auto r = evaluate_reference(spec, "optimal", 0, 2, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->mean, execution_optimal_value(p), 2e-3 * std::abs(execution_optimal_value(p)));
  // Its inventory path is the optimal one.
  for (int k = 0; k <= p.steps; k += 400)
    EXPECT_NEAR(r->mean_inventory[static_cast<size_t>(k)],
                execution_optimal_inventory(p, k * p.dt()), 2e-3)
        << k;
}

TEST(Execution, OptimumBeatsTwapOnTheSamePaths) {
  EnvSpec spec;
  spec.name = "execution";
  auto opt = evaluate_reference(spec, "optimal", 0, 500, 77);
  ASSERT_TRUE(opt.ok());
  // TWAP on the grid: ν = q0/T = 1 (action 5) every step, same seed.
  auto env = spec.make(500);
  std::vector<float> obs(1000);
  env->reset(77, obs);
  StepResult out;
  std::vector<int> twap(500, 5);
  std::vector<double> ret(500, 0.0);
  for (int k = 0; k < spec.execution.steps; ++k) {
    env->step(twap, &out);
    for (size_t i = 0; i < 500; ++i) ret[i] += out.reward[i];
  }
  double diff = 0;
  for (size_t i = 0; i < 500; ++i) diff += (opt->returns[i] - ret[i]) / 500;
  // Expected costs: TWAP k + φ/3 + b/2 = 2.7167; the optimum about 2.30.
  EXPECT_GT(diff, 0.3);
  EXPECT_NEAR(opt->mean, execution_optimal_value(spec.execution), 0.05);
}

TEST(MarketMaking, AsAgentFollowsTheModelMarketPaths) {
  // Pure PnL (φ = α = 0), bounds never reached: lane i's summed rewards are the model market's
  // path-i PnL minus q0·s0 (zero here), path for path.
  EnvSpec spec;
  spec.name = "mm";
  spec.mm.phi = 0;
  spec.mm.alpha = 0;
  spec.mm.max_inventory = 1000;
  auto ev = evaluate_reference(spec, "as", 0.1, 200, 2008);
  ASSERT_TRUE(ev.ok());
  auto sim =
      sim::simulate_model_market(spec.mm.market, sim::ModelMarketAgent::kInventory, 0.1, 200, 2008);
  ASSERT_TRUE(sim.ok());
  for (size_t i = 0; i < 200; ++i)
    EXPECT_NEAR(ev->returns[i], sim->paths[i].pnl, 2e-3) << i;  // float rewards, 200 steps
  EXPECT_NEAR(ev->mean, sim->mean_pnl, 1e-3);
}

TEST(MarketMaking, CarteaJaimungalBeatsAsOnItsCriterion) {
  EnvSpec spec;
  spec.name = "mm";  // φ = α = 0.5
  CarteaJaimungalAgent cj(spec.mm);
  // h is even in q (symmetric intensities) and the depths at q = 0 are symmetric.
  EXPECT_NEAR(cj.h(0, 3), cj.h(0, -3), 1e-9);
  EXPECT_GT(cj.h(0, 0), cj.h(0, 3));  // holding inventory costs
  auto c = evaluate_reference(spec, "cj", 0, 1000, 11);
  ASSERT_TRUE(c.ok());
  double best_as = -1e300;
  for (double g : {0.01, 0.1, 0.3, 1.0}) {
    auto a = evaluate_reference(spec, "as", g, 1000, 11);
    ASSERT_TRUE(a.ok());
    best_as = std::max(best_as, a->mean);
  }
  EXPECT_GT(c->mean, best_as);
  // At φ = α = 0 and far from the bounds (in reach of the walk left before T), CJ quotes 1/k.
  MarketMakingParams flat;
  flat.phi = 0;
  flat.alpha = 0;
  CarteaJaimungalAgent zero(flat);
  EXPECT_NEAR(1 / flat.market.k + zero.h(190, 0) - zero.h(190, 1), 1 / flat.market.k, 1e-9);
}

// CJ's h = ln ω / k: finite in every state of the default table (the eigen-decomposition used
// before rounded ω to <= 0, h = NaN, near |q| = 20 in the last steps), -αq² at T, and on a small
// inventory range (well conditioned) equal to an independent exp(M τ) z by eigen-decomposition.
TEST(MarketMaking, CarteaJaimungalTableIsFiniteAndMatchesTheMatrixExponential) {
  MarketMakingParams p;  // φ = α = 0.5, Q = 20, 200 steps
  CarteaJaimungalAgent cj(p);
  for (int i = 0; i <= p.market.steps; ++i)
    for (int q = -p.max_inventory; q <= p.max_inventory; ++q)
      ASSERT_TRUE(std::isfinite(cj.h(i, q))) << "step " << i << " q " << q;
  for (int q = -p.max_inventory; q <= p.max_inventory; ++q)
    EXPECT_NEAR(cj.h(p.market.steps, q), -p.alpha * q * q, 1e-12 * (1 + q * q)) << q;
  MarketMakingParams small = p;
  small.max_inventory = 3;
  CarteaJaimungalAgent cs(small);
  const int Q = 3, n = 2 * Q + 1;
  const double k = small.market.k;
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(n, n);
  Eigen::VectorXd z(n);
  for (int r = 0; r < n; ++r) {
    const double q = r - Q;
    M(r, r) = -small.phi * k * q * q;
    if (r > 0) M(r, r - 1) = small.market.A * std::exp(-1.0);
    if (r + 1 < n) M(r, r + 1) = small.market.A * std::exp(-1.0);
    z(r) = std::exp(-small.alpha * k * q * q);
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(M);
  for (int i : {0, 50, 199}) {
    const double tau = small.market.horizon * (1.0 - static_cast<double>(i) / small.market.steps);
    const Eigen::VectorXd w =
        eig.eigenvectors() * (eig.eigenvalues().array() * tau)
                                 .exp()
                                 .matrix()
                                 .cwiseProduct(eig.eigenvectors().transpose() * z);
    for (int r = 0; r < n; ++r)
      EXPECT_NEAR(cs.h(i, r - Q), std::log(w(r)) / k, 1e-9) << "step " << i << " q " << r - Q;
  }
}

TEST(MarketMaking, CarteaJaimungalRoundedToTheGrid) {
  EnvSpec spec;
  spec.name = "mm";
  auto c = evaluate_reference(spec, "cj", 0, 500, 11);
  auto g = evaluate_reference(spec, "cj-grid", 0, 500, 11);
  ASSERT_TRUE(c.ok() && g.ok());
  // The default grid (step 0.25) costs the closed form little; a fine grid almost nothing.
  EXPECT_LT(g->mean, c->mean);
  EXPECT_GT(g->mean, 0.98 * c->mean);
  spec.mm.num_depths = 4001;
  spec.mm.min_depth = -1;
  spec.mm.max_depth = 3;
  auto fine = evaluate_reference(spec, "cj-grid", 0, 500, 11);
  ASSERT_TRUE(fine.ok());
  EXPECT_NEAR(fine->mean, c->mean, 1e-3 * c->mean);
  // E|q| per step: 0 at the start, never below |E q|, and positive once fills came.
  ASSERT_EQ(c->mean_abs_inventory.size(), c->mean_inventory.size());
  EXPECT_EQ(c->mean_abs_inventory[0], 0.0);
  for (size_t k = 0; k < c->mean_inventory.size(); ++k)
    EXPECT_GE(c->mean_abs_inventory[k] + 1e-12, std::abs(c->mean_inventory[k])) << k;
  EXPECT_GT(c->mean_abs_inventory.back(), 0.2);  // 0.49 on these paths
}

TEST(MarketMaking, StepByHand) {
  // σ = 0 (Δs = 0), Δt = 0.5; bid depth −1 fills surely (A·Δt·e^{1.5} > 1), ask depth 50 never
  // (A·Δt·e^{−75} ≈ 3e−31); the bound max_inventory = 1 then stops the bid being quoted at all.
  MarketMakingParams p;
  p.market.sigma = 0;
  p.market.steps = 2;
  p.max_inventory = 1;
  MarketMakingEnv env(p, 1);
  std::vector<float> obs(2);
  env.reset(3, obs);
  StepResult out;
  const std::vector<double> bid = {-1.0}, ask = {50.0};
  env.step_depths(bid, ask, &out);
  EXPECT_EQ(env.inventory(0), 1.0);
  EXPECT_FLOAT_EQ(out.reward[0], static_cast<float>(-1.0 - 0.5 * 1 * 0.5));  // δ_b − φq'²Δt
  EXPECT_FLOAT_EQ(out.next_obs[0], 0.5f);
  EXPECT_FLOAT_EQ(out.next_obs[1], 1.0f);
  EXPECT_EQ(out.terminated[0], 0);
  env.step_depths(bid, ask, &out);  // at the bound: no bid, no fill; − φq²Δt − αq_T²
  EXPECT_EQ(env.inventory(0), 1.0);
  EXPECT_FLOAT_EQ(out.reward[0], static_cast<float>(-0.5 * 0.5 - 0.5));
  EXPECT_EQ(out.terminated[0], 1);
}

TEST(MarketMaking, ExpectedRewardIsTheMeanOfTheDrawnOne) {
  // By hand: q = 2, depths 0.5 / 1.0, A·Δt = 0.7, k = 1.5 (defaults, Δt = 0.005): p_b =
  // 0.7e^{−0.75}, p_a = 0.7e^{−1.5}; E[q'²] = (2 + p_b − p_a)² + p_b(1 − p_b) + p_a(1 − p_a).
  MarketMakingParams p;
  MarketMakingDynamics d = market_making_dynamics(p);
  const double pb = 0.7 * std::exp(-0.75), pa = 0.7 * std::exp(-1.5);
  const double q_sq = (2 + pb - pa) * (2 + pb - pa) + pb * (1 - pb) + pa * (1 - pa);
  const double want = 0.5 * pb + 1.0 * pa - 0.5 * q_sq * 0.005;
  EXPECT_NEAR(market_making_expected_reward(d, 2, 0.5, 1.0, false), want, 1e-12);
  EXPECT_NEAR(market_making_expected_reward(d, 2, 0.5, 1.0, true), want - 0.5 * q_sq, 1e-12);
  // An unquoted side (infinite depth) adds nothing: no NaN from ∞·0.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(market_making_expected_reward(d, 0, inf, 1.0, false),
              pa - 0.5 * (pa * pa + pa * (1 - pa)) * 0.005, 1e-12);
  // The mean of the drawn reward over many lanes from the same state, mid noise included.
  double sum = 0, sum_sq = 0;
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    MarketMakingLane lane;
    market_making_seed(&lane, 77, static_cast<uint64_t>(i));
    market_making_start(d, &lane);
    lane.q = 2;
    const double r = market_making_step(d, &lane, 0.5, 1.0).reward;
    sum += r;
    sum_sq += r * r;
  }
  const double mean = sum / n, se = std::sqrt((sum_sq / n - mean * mean) / n);
  EXPECT_NEAR(mean, want, 4 * se) << "se " << se;
  // With the flag, the step returns the expectation and moves the state as the draw does.
  d.expected_reward = true;
  MarketMakingDynamics drawn = d;
  drawn.expected_reward = false;
  MarketMakingLane a, b;
  market_making_seed(&a, 5, 0);
  market_making_seed(&b, 5, 0);
  market_making_start(d, &a);
  market_making_start(d, &b);
  int at_bound = 0;
  for (int k = 0; k < 200; ++k) {
    // The bound's rule: at ±max_inventory the side that would cross it is not quoted (the
    // walk reaches −20 within the episode: the ask is quoted tighter).
    const double db = a.q >= d.max_inventory ? inf : 0.75, da = a.q <= -d.max_inventory ? inf : 0.5;
    const double expect = market_making_expected_reward(d, a.q, db, da, k == 199);
    const LaneStep sa = market_making_step(d, &a, 0.75, 0.5);
    const LaneStep sb = market_making_step(drawn, &b, 0.75, 0.5);
    ASSERT_EQ(sa.reward, expect) << k;
    ASSERT_EQ(a.q, b.q) << k;
    ASSERT_EQ(a.s, b.s) << k;
    ASSERT_EQ(sa.terminated, sb.terminated) << k;
    at_bound += a.q <= -d.max_inventory ? 1 : 0;
  }
  EXPECT_GT(at_bound, 0);  // the bound's branch was exercised
  // Evaluation always scores the drawn criterion, whatever the spec trains on.
  EnvSpec spec;
  spec.name = "mm";
  auto plain = evaluate_reference(spec, "cj", 0, 200, 3);
  spec.mm.expected_reward = true;
  auto flagged = evaluate_reference(spec, "cj", 0, 200, 3);
  ASSERT_TRUE(plain.ok() && flagged.ok());
  EXPECT_EQ(plain->returns, flagged->returns);
  // The flag travels with the env config (checkpoints); configs without it read as false.
  auto back = EnvSpec::from_json(spec.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->mm.expected_reward);
  nlohmann::json old = spec.to_json();
  old["params"].erase("expected_reward");
  EXPECT_FALSE(EnvSpec::from_json(old)->mm.expected_reward);
}

TEST(EnvLanes, NormalDrawIsTheModelMarkets) {
  // Rng::normal (compiled for host and device) is sim::standard_normal, bit for bit.
  Rng a(5), b(5);
  for (int i = 0; i < 100000; ++i) {
    const double x = a.normal(), y = sim::standard_normal(b);
    ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << i;
  }
}

TEST(EnvLanes, FillDrawIsTheModelMarkets) {
  // The env's dynamics feed the shared fill check (sim::model_fill_draws, host and device) the
  // model market's own A·Δt and k: the env's fills are sim::model_market_fills', draw for draw.
  MarketMakingParams p;
  const MarketMakingDynamics d = market_making_dynamics(p);
  Rng depths(9), a(21), b(21);
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 20000; ++i) {
    const double db = i % 97 == 0 ? inf : depths.uniform_real(-1, 3);
    const double da = i % 89 == 0 ? inf : depths.uniform_real(-1, 3);
    const sim::ModelMarketFills f = sim::model_fill_draws(d.arrival_prob, d.k, db, da, &a);
    const sim::ModelMarketFills g = sim::model_market_fills(p.market, db, da, b);
    ASSERT_EQ(f.bid, g.bid) << i;
    ASSERT_EQ(f.ask, g.ask) << i;
  }
  EXPECT_EQ(a.next(), b.next());
}

TEST(Env, BadReferenceIsAUsageError) {
  EnvSpec spec;
  spec.name = "cartpole";
  auto r = evaluate_reference(spec, "optimal", 0, 1, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 2);
  spec.name = "nope";
  EXPECT_EQ(spec.validate().exit_code(), 2);
}

}  // namespace
}  // namespace fxt::rl
