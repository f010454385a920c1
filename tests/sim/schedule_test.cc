#include "sim/schedule.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"

namespace fxt::sim {
namespace {

TEST(Twap, EqualSlices) {
  const std::vector<double> h = twap_holdings(10, 4);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_DOUBLE_EQ(h[0], 10);
  EXPECT_DOUBLE_EQ(h[1], 7.5);
  EXPECT_DOUBLE_EQ(h[2], 5);
  EXPECT_DOUBLE_EQ(h[3], 2.5);
  EXPECT_EQ(h[4], 0);
  const std::vector<double> buy = twap_holdings(-3, 3);  // acquiring: negative holdings left
  EXPECT_DOUBLE_EQ(buy[1], -2);
  EXPECT_EQ(buy[3], 0);
}

TEST(AlmgrenChriss, Kappa) {
  // κ = sqrt(λσ²/η) = sqrt(0.5·4/0.5) = 2.
  EXPECT_DOUBLE_EQ(almgren_chriss_kappa(2, 0.5, 0.5), 2);
  EXPECT_EQ(almgren_chriss_kappa(2, 0.5, 0), 0);
  // Discrete: cosh(κ̃·0.1) = 1 + 0.5·4·0.01/(2·0.5) = 1.02, κ̃ = acosh(1.02)/0.1.
  EXPECT_NEAR(almgren_chriss_discrete_kappa(2, 0.5, 0.5, 0.1), 1.996681577984152, 1e-12);
  // and κ̃ → κ as the interval shrinks.
  EXPECT_NEAR(almgren_chriss_discrete_kappa(2, 0.5, 0.5, 1e-4), 2, 1e-6);
}

TEST(AlmgrenChriss, HoldingsMatchClosedForm) {
  const double q0 = 1000, T = 1, kappa = 2;
  const std::vector<double> h = almgren_chriss_holdings(q0, T, 10, kappa);
  ASSERT_EQ(h.size(), 11u);
  EXPECT_EQ(h[0], q0);
  EXPECT_EQ(h[10], 0);
  EXPECT_NEAR(h[5], 324.0271368319427, 1e-9);  // 1000·sinh(1)/sinh(2)
  for (int j = 0; j <= 10; ++j) {
    const double t = j * T / 10;
    EXPECT_NEAR(h[j], q0 * std::sinh(kappa * (T - t)) / std::sinh(kappa * T), 1e-9) << j;
    if (j > 0) {
      EXPECT_LT(h[j], h[j - 1]);
    }
    // Front-loaded against TWAP: never more left than the straight line.
    EXPECT_LE(h[j], q0 * (1 - t / T) + 1e-9);
  }
}

TEST(AlmgrenChriss, TwapIsTheZeroKappaLimitAndLargeKappaIsFinite) {
  const std::vector<double> twap = twap_holdings(500, 8);
  EXPECT_EQ(almgren_chriss_holdings(500, 2, 8, 0), twap);
  const std::vector<double> near_zero = almgren_chriss_holdings(500, 2, 8, 1e-7);
  for (int j = 0; j <= 8; ++j) EXPECT_NEAR(near_zero[j], twap[j], 1e-6) << j;
  // κT = 1600 would overflow sinh; the ratio is e^(−κ t) to double precision.
  const std::vector<double> urgent = almgren_chriss_holdings(500, 2, 8, 800);
  EXPECT_NEAR(urgent[1] / (500 * std::exp(-800 * 0.25)), 1, 1e-12);
  for (double q : urgent) EXPECT_TRUE(std::isfinite(q));
}

// The discrete Almgren–Chriss objective E[cost] + λ·Var[cost] for holdings x_0..x_N with
// linear temporary impact and no permanent impact: trading n_j = x_{j−1} − x_j over an
// interval τ costs η·(n_j/τ)·n_j, and the variance is σ²·Σ_{j=1..N} τ·x_j².
double ac_objective(const std::vector<double>& x, double tau, double sigma, double eta,
                    double lambda) {
  double impact = 0, variance = 0;
  for (size_t j = 1; j < x.size(); ++j) {
    const double n = x[j - 1] - x[j];
    impact += eta * (n / tau) * n;
    variance += sigma * sigma * tau * x[j] * x[j];
  }
  return impact + lambda * variance;
}

TEST(AlmgrenChriss, DiscreteKappaTrajectoryMinimisesMeanVariance) {
  const double q0 = 1e6, T = 1, sigma = 0.95, eta = 2.5e-6, lambda = 2e-5;
  const int n = 20;
  const double tau = T / n;
  const double kappa_discrete = almgren_chriss_discrete_kappa(sigma, eta, lambda, tau);
  const double kappa = almgren_chriss_kappa(sigma, eta, lambda);
  EXPECT_NEAR(kappa, 2.6870057685, 1e-9);  // sqrt(2e-5·0.9025/2.5e-6) = sqrt(7.22)
  EXPECT_LT(kappa_discrete, kappa);
  const std::vector<double> best = almgren_chriss_holdings(q0, T, n, kappa_discrete);
  const double best_cost = ac_objective(best, tau, sigma, eta, lambda);

  // First-order conditions: x_{j−1} − 2x_j + x_{j+1} = (λσ²τ²/η)·x_j at every interior j.
  for (int j = 1; j < n; ++j) {
    const double lhs = best[j - 1] - 2 * best[j] + best[j + 1];
    EXPECT_NEAR(lhs, lambda * sigma * sigma * tau * tau / eta * best[j], 1e-6 * q0) << j;
  }
  // Beats TWAP, the continuous-κ trajectory, and random perturbations of itself.
  EXPECT_LT(best_cost, ac_objective(twap_holdings(q0, n), tau, sigma, eta, lambda));
  EXPECT_LE(best_cost,
            ac_objective(almgren_chriss_holdings(q0, T, n, kappa), tau, sigma, eta, lambda));
  Rng rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<double> x = best;
    const double scale = trial < 250 ? 0.05 * q0 : 1e-3 * q0;  // large and small steps
    for (int j = 1; j < n; ++j) x[j] += scale * (2 * rng.unit() - 1);
    EXPECT_GT(ac_objective(x, tau, sigma, eta, lambda), best_cost) << trial;
  }
}

}  // namespace
}  // namespace fxt::sim
