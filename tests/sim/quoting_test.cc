#include "sim/quoting.h"

#include <cmath>

#include <gtest/gtest.h>

namespace fxt::sim {
namespace {

TEST(AvellanedaStoikovQuote, HandComputedLongInventory) {
  // s = 100, q = 2, τ = 0.5, γ = 0.1, σ = 2, k = 1.5: σ²τ = 2,
  // r = 100 − 2·0.1·2 = 99.6; spread = 0.1·2 + 20·ln(16/15) = 1.4907704227514234.
  const Quote q = avellaneda_stoikov_quote(100, 2, 0.5, 0.1, 2, 1.5);
  EXPECT_NEAR(q.reservation, 99.6, 1e-12);
  EXPECT_NEAR(q.half_spread, 1.4907704227514234 / 2, 1e-12);
  EXPECT_NEAR(q.bid, 99.6 - 0.7453852113757117, 1e-12);
  EXPECT_NEAR(q.ask, 99.6 + 0.7453852113757117, 1e-12);
}

TEST(AvellanedaStoikovQuote, ShortInventorySkewsUpAndSpreadShrinksToHorizon) {
  // q = −3 raises the reservation by 3·γσ²τ = 3·0.1·4·0.25 = 0.3.
  const Quote q = avellaneda_stoikov_quote(50, -3, 0.25, 0.1, 2, 1.5);
  EXPECT_NEAR(q.reservation, 50.3, 1e-12);
  EXPECT_NEAR(q.ask - q.bid, 0.1 + 1.2907704227514234, 1e-12);
  // At the horizon only the liquidity term is left: (2/γ)·ln(1 + γ/k), the reservation is s.
  const Quote end = avellaneda_stoikov_quote(50, -3, 0, 0.1, 2, 1.5);
  EXPECT_DOUBLE_EQ(end.reservation, 50);
  EXPECT_NEAR(2 * end.half_spread, 1.2907704227514234, 1e-12);
  // γ → 0: the spread tends to 2/k.
  const Quote tiny_gamma = avellaneda_stoikov_quote(50, 0, 1, 1e-9, 2, 1.5);
  EXPECT_NEAR(2 * tiny_gamma.half_spread, 2 / 1.5, 1e-7);
  EXPECT_DOUBLE_EQ(tiny_gamma.reservation, 50);
}

TEST(GlftQuote, HandComputed) {
  // γ = ξ = 0.05, σ = 2, A = 140, k = 1.5, Δ = 1:
  // c1 = 20·ln(31/30) = 0.6557964564598193,
  // c2 = sqrt(0.05/420 · (31/30)^31) = 0.01813790668562462,
  // half spread = c1 + σ·c2/2 = 0.673934363145444, skew = σ·c2 = 0.03627581337124924.
  const Quote q = glft_quote(100, -3, 0.05, 2, 140, 1.5);
  EXPECT_NEAR(q.half_spread, 0.673934363145444, 1e-12);
  EXPECT_NEAR(q.reservation, 100 + 3 * 0.03627581337124924, 1e-12);
  EXPECT_NEAR(q.bid, 99.4348930769683, 1e-12);
  EXPECT_NEAR(q.ask, 100.78276180325919, 1e-12);
}

TEST(GlftQuote, OrderSizeAndFlatInventory) {
  // Δ = 2, γ = 0.1, σ = 1, A = 10, k = 2: ξΔ = 0.2, c1 = 5·ln(1.1) = 0.47655089902162,
  // c2 = sqrt(0.1/80 · 1.1^11) = sqrt(0.00356639) = 0.05971931; half spread = c1 + c2.
  const double c1 = 5 * std::log(1.1);
  const double c2 = std::sqrt(0.1 / 80 * std::pow(1.1, 11));
  EXPECT_NEAR(c2, 0.0597193091, 1e-9);
  const Quote q = glft_quote(20, 0, 0.1, 1, 10, 2, 2);
  EXPECT_NEAR(c1, 0.47655089902162, 1e-12);
  EXPECT_NEAR(q.half_spread, c1 + c2, 1e-12);
  EXPECT_DOUBLE_EQ(q.reservation, 20);  // no inventory, no skew
  EXPECT_NEAR(q.ask - 20, 20 - q.bid, 1e-12);
  // One unit long moves both quotes down by σ·c2.
  const Quote long_one = glft_quote(20, 1, 0.1, 1, 10, 2, 2);
  EXPECT_NEAR(q.bid - long_one.bid, c2, 1e-12);
  EXPECT_NEAR(q.ask - long_one.ask, c2, 1e-12);
}

}  // namespace
}  // namespace fxt::sim
