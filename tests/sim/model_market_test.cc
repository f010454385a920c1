#include "sim/model_market.h"

#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

namespace fxt::sim {
namespace {

// Published reference figures for the inventory (Avellaneda–Stoikov) agent:
// S0 = 100, T = 1, Δt = 0.005, σ = 2, A = 140, k = 1.5, q0 = 0.
struct Reference {
  double gamma;
  double mean_spread, mean_pnl, std_pnl, std_inventory;
};

TEST(ModelMarket, AvellanedaStoikovReference) {
  const Reference references[] = {{0.1, 1.49, 64.87, 6.69, 2.89}, {0.01, 1.35, 68.75, 8.72, 5.10}};
  const int n = 1000;
  const ModelMarketParams params;  // the defaults are the paper's
  std::printf("%-6s %-10s %-18s %-18s %-18s %-18s\n", "gamma", "agent", "spread repr/pub",
              "mean PnL repr/pub", "std PnL repr/pub", "std q_T repr/pub");
  for (const Reference& ref : references) {
    auto run = simulate_model_market(params, ModelMarketAgent::kInventory, ref.gamma, n, 2008);
    ASSERT_TRUE(run.ok()) << run.status().message();
    const ModelMarketSummary& s = *run;
    std::printf("%-6g %-10s %7.3f / %-8.2f %7.2f / %-8.2f %7.2f / %-8.2f %7.2f / %-8.2f\n",
                ref.gamma, "inventory", s.mean_spread, ref.mean_spread, s.mean_pnl, ref.mean_pnl,
                s.std_pnl, ref.std_pnl, s.std_terminal_inventory, ref.std_inventory);
    // 3 standard errors: of the mean for means, std/sqrt(2(n−1)) for standard deviations.
    const double se_mean_pnl = s.std_pnl / std::sqrt(n);
    const double se_std = 1 / std::sqrt(2.0 * (n - 1));
    EXPECT_NEAR(s.mean_pnl, ref.mean_pnl, 3 * se_mean_pnl) << "gamma " << ref.gamma;
    EXPECT_NEAR(s.std_pnl, ref.std_pnl, 3 * s.std_pnl * se_std) << "gamma " << ref.gamma;
    EXPECT_NEAR(s.std_terminal_inventory, ref.std_inventory, 3 * s.std_terminal_inventory * se_std)
        << "gamma " << ref.gamma;
    // The AS spread depends on τ only, so its path average has no sampling error: the
    // tolerance is the published figure's rounding (half a unit in the last digit).
    EXPECT_NEAR(s.mean_spread, ref.mean_spread, 0.005) << "gamma " << ref.gamma;
    EXPECT_NEAR(s.mean_terminal_inventory, 0, 3 * s.std_terminal_inventory / std::sqrt(n));

    // The paper's comparison: the same half spread around the mid earns about as much but
    // carries far more inventory and PnL risk.
    auto sym = simulate_model_market(params, ModelMarketAgent::kSymmetric, ref.gamma, n, 2008);
    ASSERT_TRUE(sym.ok());
    std::printf("%-6g %-10s %7.3f            %7.2f            %7.2f            %7.2f\n", ref.gamma,
                "symmetric", sym->mean_spread, sym->mean_pnl, sym->std_pnl,
                sym->std_terminal_inventory);
    EXPECT_NEAR(sym->mean_spread, s.mean_spread, 1e-12);
    EXPECT_GT(sym->std_pnl, 1.4 * s.std_pnl);
    EXPECT_GT(sym->std_terminal_inventory, 1.6 * s.std_terminal_inventory);
  }
}

TEST(ModelMarket, CertainFillsWithoutVolatilityEarnTheSpread) {
  // σ = 0 and A·Δt = 10 clip both fill probabilities to 1: every step buys at the bid and
  // sells at the ask, the inventory stays 0 and the PnL is the sum of the quoted spreads,
  // each (2/γ)·ln(1 + γ/k) = 1.2907704227514234 for γ = 0.1, k = 1.5.
  ModelMarketParams params;
  params.sigma = 0;
  params.A = 100;
  params.steps = 10;
  for (ModelMarketAgent agent : {ModelMarketAgent::kInventory, ModelMarketAgent::kSymmetric}) {
    auto run = simulate_model_market(params, agent, 0.1, 3, 1);
    ASSERT_TRUE(run.ok());
    for (const ModelMarketPath& path : run->paths) {
      EXPECT_NEAR(path.pnl, 12.907704227514234, 1e-9) << model_market_agent_name(agent);
      EXPECT_EQ(path.terminal_inventory, 0);
      EXPECT_EQ(path.bid_fills, 10);
      EXPECT_EQ(path.ask_fills, 10);
    }
    EXPECT_EQ(run->std_pnl, 0);
  }
}

TEST(ModelMarket, SeededAndDeterministic) {
  const ModelMarketParams params;
  auto a = simulate_model_market(params, ModelMarketAgent::kInventory, 0.1, 20, 5);
  auto b = simulate_model_market(params, ModelMarketAgent::kInventory, 0.1, 20, 5);
  auto c = simulate_model_market(params, ModelMarketAgent::kInventory, 0.1, 20, 6);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (size_t p = 0; p < a->paths.size(); ++p) {
    EXPECT_EQ(a->paths[p].pnl, b->paths[p].pnl);
    EXPECT_EQ(a->paths[p].terminal_inventory, b->paths[p].terminal_inventory);
  }
  EXPECT_NE(a->mean_pnl, c->mean_pnl);
  // Fills are unit-sized: terminal inventory = bid fills − ask fills.
  for (const ModelMarketPath& path : a->paths)
    EXPECT_EQ(path.terminal_inventory, path.bid_fills - path.ask_fills);
}

TEST(ModelMarket, BadParametersAreErrors) {
  ModelMarketParams params;
  params.k = 0;
  auto bad_k = simulate_model_market(params, ModelMarketAgent::kInventory, 0.1, 10, 1);
  ASSERT_FALSE(bad_k.ok());
  EXPECT_EQ(bad_k.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(bad_k.status().message(), "model market: k must be > 0, got 0");
  auto bad_gamma =
      simulate_model_market(ModelMarketParams{}, ModelMarketAgent::kInventory, -1, 10, 1);
  EXPECT_EQ(bad_gamma.status().message(), "model market: gamma must be > 0, got -1");
  auto no_paths =
      simulate_model_market(ModelMarketParams{}, ModelMarketAgent::kInventory, 0.1, 0, 1);
  EXPECT_EQ(no_paths.status().message(), "model market: paths must be >= 1, got 0");
}

TEST(ModelMarket, PolarNormalMoments) {
  Rng rng(11);
  const int n = 400000;
  std::vector<double> draws(n);
  for (double& z : draws) z = standard_normal(rng);
  double mean = 0, sd = 0;
  mean_and_std(draws, &mean, &sd);
  EXPECT_NEAR(mean, 0, 4 / std::sqrt(n));  // 4 standard errors
  EXPECT_NEAR(sd, 1, 4 / std::sqrt(2.0 * (n - 1)));
  int beyond_two = 0;  // P(|Z| > 2) = 0.0455003
  for (double z : draws) beyond_two += std::abs(z) > 2;
  const double p = 0.0455003;
  EXPECT_NEAR(beyond_two / double(n), p, 4 * std::sqrt(p * (1 - p) / n));
}

TEST(ModelMarket, MeanAndStd) {
  double mean = 0, sd = 0;
  mean_and_std({1, 2, 3, 4}, &mean, &sd);
  EXPECT_DOUBLE_EQ(mean, 2.5);
  EXPECT_DOUBLE_EQ(sd, std::sqrt(5.0 / 3.0));
  mean_and_std({7}, &mean, &sd);
  EXPECT_DOUBLE_EQ(mean, 7);
  EXPECT_EQ(sd, 0);
}

}  // namespace
}  // namespace fxt::sim
