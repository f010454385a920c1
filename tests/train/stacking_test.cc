// Stacks (train/stacking.h): the fit is the penalised logistic optimum over the inputs of each
// horizon's labelled rows with non-negative weights (the KKT conditions hold; positive generating
// weights are recovered, a negative one is held at 0), masked rows play no part, applying it is
// the stored affine map, and bad input is refused.
#include "train/stacking.h"

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"

namespace fxt {
namespace {

struct Problem {
  std::vector<float> a, b;  // two predictors' logits, [rows][2]
  std::vector<uint8_t> y, mask;
};

// Labels drawn from sigmoid(wa a + wb b + c) per horizon; every 5th row of horizon 1 unlabelled.
// Horizon 0 has a negative weight on b, horizon 1 two positive ones.
Problem make_problem(size_t n) {
  const double w[2][3] = {{1.2, -0.4, 0.3}, {0.5, 0.9, -0.2}};
  Problem p;
  Rng rng(11);
  for (size_t r = 0; r < n; ++r) {
    for (int h = 0; h < 2; ++h) {
      const double a = 1.5 * rng.normal(), b = 1.5 * rng.normal();
      const double z = w[h][0] * a + w[h][1] * b + w[h][2];
      p.a.push_back(static_cast<float>(a));
      p.b.push_back(static_cast<float>(b));
      p.y.push_back(rng.unit() < 1.0 / (1.0 + std::exp(-z)) ? 1 : 0);
      p.mask.push_back(h == 1 && r % 5 == 0 ? 0 : 1);
    }
  }
  return p;
}

TEST(LogitStack, IsTheNonNegativePenalisedOptimum) {
  Problem p = make_problem(100000);
  const std::vector<int> hz = {30, 100};
  auto s = fit_logit_stack({"a", "b"}, {p.a, p.b}, p.y, p.mask, hz);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->rows, (std::vector<int64_t>{100000, 80000}));
  // Horizon 1: both generating weights positive, so the constraint is inactive and the fit
  // recovers them (within ~4 standard errors, about 0.01 at these row counts).
  const double want[3] = {0.5, 0.9, -0.2};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s->weights[1][i], want[i], 0.04) << i;
  // Horizon 0: b's generating weight is -0.4, so b is held at exactly 0 and a (correlated with
  // nothing else here) keeps about its own weight.
  EXPECT_EQ(s->weights[0][1], 0.0);
  EXPECT_NEAR(s->weights[0][0], 1.1, 0.15);
  for (size_t h = 0; h < 2; ++h) {
    // KKT of min (1/n) sum bce + (lambda/2)|w|^2 subject to w >= 0 (the bias free): the
    // gradient is ~0 for a positive weight and the bias, and >= 0 for a weight held at 0.
    double g[3] = {0, 0, 0};
    double n = 0;
    for (size_t r = 0; r < p.y.size() / 2; ++r) {
      const size_t at = r * 2 + h;
      if (p.mask[at] == 0) continue;
      const double z = s->weights[h][0] * p.a[at] + s->weights[h][1] * p.b[at] + s->weights[h][2];
      const double e = 1.0 / (1.0 + std::exp(-z)) - p.y[at];
      g[0] += e * p.a[at];
      g[1] += e * p.b[at];
      g[2] += e;
      n += 1;
    }
    for (int i = 0; i < 3; ++i) {
      const double grad = g[i] / n + (i < 2 ? kStackPenalty * s->weights[h][i] : 0.0);
      if (i < 2 && s->weights[h][i] == 0.0) {
        EXPECT_GT(grad, 1e-3) << h << i;  // clearly wants to be negative
      } else {
        if (i < 2) {
          EXPECT_GT(s->weights[h][i], 0.0) << h << i;
        }
        EXPECT_NEAR(grad, 0.0, 1e-7) << h << i;
      }
    }
  }
  // Masked rows play no part: garbage there leaves the fit as it was.
  Problem q = p;
  for (size_t at = 0; at < q.mask.size(); ++at) {
    if (q.mask[at] == 0) {
      q.a[at] = 1e6f;
      q.y[at] = 1;
    }
  }
  auto t = fit_logit_stack({"a", "b"}, {q.a, q.b}, q.y, q.mask, hz);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->weights, s->weights);
  // JSON: the weights by input name, per horizon.
  const auto j = s->to_json();
  EXPECT_EQ(j["inputs"], (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(j["horizons"][1]["horizon"], 100);
  EXPECT_DOUBLE_EQ(j["horizons"][1]["weights"]["b"].get<double>(), s->weights[1][1]);
  EXPECT_DOUBLE_EQ(j["horizons"][0]["bias"].get<double>(), s->weights[0][2]);
}

TEST(LogitStack, ApplyIsTheStoredAffineMapPerHorizon) {
  LogitStack s;
  s.inputs = {"a", "b"};
  s.horizons = {30, 100};
  s.weights = {{2.0, -1.0, 0.5}, {0.25, 4.0, -1.0}};
  s.rows = {1, 1};
  const std::vector<float> a = {1, 2, -3, 0.5f}, b = {0.5f, -1, 2, 8};
  const std::vector<float> z = apply_logit_stack(s, {a, b});
  // Row 0: h30 2*1 - 0.5 + 0.5 = 2; h100 0.25*2 + 4*(-1) - 1 = -4.5. Row 1: h30 2*(-3) - 2 +
  // 0.5 = -7.5; h100 0.25*0.5 + 4*8 - 1 = 31.125.
  EXPECT_EQ(z, (std::vector<float>{2.0f, -4.5f, -7.5f, 31.125f}));
}

TEST(LogitStack, RefusesBadInput) {
  const std::vector<int> hz = {30};
  const std::vector<float> a = {0.1f, 0.2f, 0.3f}, shorter = {0.1f};
  const std::vector<uint8_t> y = {1, 0, 1}, one_class = {1, 1, 1}, m = {1, 1, 1};
  EXPECT_FALSE(fit_logit_stack({}, {}, y, m, hz).ok());
  EXPECT_FALSE(fit_logit_stack({"a"}, {shorter}, y, m, hz).ok());
  EXPECT_FALSE(fit_logit_stack({"a", "b"}, {a}, y, m, hz).ok());
  auto s = fit_logit_stack({"a"}, {a}, one_class, m, hz);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("needs both classes"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace fxt
