// The masked BCE, the three horizon weightings and the controllers (DESIGN §4): values,
// double-precision gradient checks, the lambda-scaled trunk path through the heads.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "model/grad_check.h"
#include "model/loss.h"
#include "model/ops.h"

namespace fxt::model {
namespace {

using test::check_gradient;
using Td = Tensor<double>;

constexpr double kTol = 1e-6;

void report(const std::string& name, const test::GradCheckResult& r) {
  fmt::print("[grad] {:<34} {}\n", name, r.to_string());
  EXPECT_LE(r.max_rel_error, kTol) << name;
}

struct Batch {
  Td logits, labels, mask;
};
Batch random_batch(int64_t rows, int64_t nh, std::mt19937_64& gen) {
  Batch b{Td({rows, nh}), Td({rows, nh}), Td({rows, nh})};
  test::fill_uniform(b.logits.span(), gen, -3, 3);
  std::bernoulli_distribution coin(0.5), keep(0.8);
  for (int64_t i = 0; i < rows * nh; ++i) {
    b.labels[i] = coin(gen) ? 1.0 : 0.0;
    b.mask[i] = keep(gen) ? 1.0 : 0.0;
  }
  return b;
}

TEST(MaskedBce, ValuesStableAndMasked) {
  Td logits({3, 2}), labels({3, 2}), mask({3, 2}), loss({2});
  const double xs[] = {0.3, 800.0, -2.0, -800.0, 1.5, 0.0};
  const double ys[] = {1, 0, 0, 1, 1, 1};
  const double ms[] = {1, 0, 1, 0, 0, 0};  // horizon 1 fully masked out
  for (int i = 0; i < 6; ++i) {
    logits[i] = xs[i];
    labels[i] = ys[i];
    mask[i] = ms[i];
  }
  masked_bce_forward<double>(logits, labels, mask, loss);
  auto naive = [](double x, double y) {
    const double p = 1 / (1 + std::exp(-x));
    return -(y * std::log(p) + (1 - y) * std::log(1 - p));
  };
  EXPECT_NEAR(loss[0], (naive(0.3, 1) + naive(-2.0, 0)) / 2, 1e-14);
  EXPECT_EQ(loss[1], 0.0);  // sum m = 0
  // Extreme logits stay finite and exact: bce(800, 0) = 800.
  mask[1] = 1;
  masked_bce_forward<double>(logits, labels, mask, loss);
  EXPECT_DOUBLE_EQ(loss[1], 800.0);
  Tensor<float> lf({3, 2}), yf({3, 2}), mf({3, 2}), of({2});
  for (int i = 0; i < 6; ++i) {
    lf[i] = float(logits[i]);
    yf[i] = float(labels[i]);
    mf[i] = float(mask[i]);
  }
  masked_bce_forward<float>(lf, yf, mf, of);
  EXPECT_TRUE(std::isfinite(of[0]) && std::isfinite(of[1]));
  fmt::print("[f32 ] masked_bce max |float - double| = {:.3e}\n",
             std::max(std::abs(of[0] - loss[0]), std::abs(of[1] - loss[1])));
  EXPECT_NEAR(of[0], loss[0], 1e-6);
  // Fully masked horizon: no gradient.
  mask[1] = mask[3] = mask[5] = 0;
  Td dl({2}), dlogits({3, 2});
  dl[0] = dl[1] = 1;
  masked_bce_backward<double>(logits, labels, mask, dl, dlogits);
  EXPECT_EQ(dlogits[1], 0.0);
  EXPECT_EQ(dlogits[3], 0.0);
}

TEST(MaskedBce, GradientCheck) {
  std::mt19937_64 gen(11);
  Batch b = random_batch(9, 3, gen);
  Td loss({3}), c({3});
  test::fill_uniform(c.span(), gen);
  auto f = [&] {
    masked_bce_forward<double>(b.logits, b.labels, b.mask, loss);
    return test::dot(c.span(), loss.span());
  };
  Td dlogits(b.logits.shape());
  masked_bce_backward<double>(b.logits, b.labels, b.mask, c, dlogits);
  report("masked_bce.dlogits", check_gradient(f, b.logits.span(), dlogits.span()));
}

class WeightingTest : public ::testing::TestWithParam<HorizonWeighting> {};

TEST_P(WeightingTest, GradientCheckWithFrozenControllers) {
  const HorizonWeighting mode = GetParam();
  std::mt19937_64 gen(17);
  const int nh = 4;
  Batch b = random_batch(12, nh, gen);
  LossConfig cfg;
  cfg.weighting = mode;
  ControllerState state(nh);
  // Warm the EMAs with unequal losses so sigma and lambda differ per horizon.
  update_controllers(cfg, std::vector<double>{0.9, 0.1, 0.5, 2.0}, state);
  update_controllers(cfg, std::vector<double>{0.7, 0.3, 0.4, 1.0}, state);
  Td log_sigma({nh});
  test::fill_uniform(log_sigma.span(), gen, -0.5, 0.5);
  auto f = [&] {
    ControllerState frozen = state;
    return loss_step<double>(cfg, frozen, b.logits, b.labels, b.mask, log_sigma, Out<double>(),
                             Out<double>(), /*update_state=*/false)
        .total;
  };
  Td dlogits(b.logits.shape()), dlog_sigma({nh});
  ControllerState frozen = state;
  const LossStepOutputs out = loss_step<double>(cfg, frozen, b.logits, b.labels, b.mask, log_sigma,
                                                dlogits, dlog_sigma, false);
  const std::string name = horizon_weighting_name(mode);
  report(name + ".dlogits", check_gradient(f, b.logits.span(), dlogits.span()));
  if (mode == HorizonWeighting::kKendall) {
    report(name + ".dlog_sigma", check_gradient(f, log_sigma.span(), dlog_sigma.span()));
  } else {
    for (int h = 0; h < nh; ++h) EXPECT_EQ(dlog_sigma[h], 0.0);
  }
  // Totals by hand.
  double expect = 0;
  for (int h = 0; h < nh; ++h) {
    const double lh = out.loss_h[static_cast<size_t>(h)];
    if (mode == HorizonWeighting::kUniform) expect += lh;
    if (mode == HorizonWeighting::kKendallClosed) {
      const double ls = std::max(std::log(0.5), 0.5 * std::log(state.ema[size_t(h)]));
      expect += lh / (2 * std::exp(2 * ls)) + ls;
    }
    if (mode == HorizonWeighting::kKendall) {
      expect += lh / (2 * std::exp(2 * log_sigma[h])) + log_sigma[h];
    }
  }
  EXPECT_NEAR(out.total, expect, 1e-12);

  // Float forward agrees with double.
  Tensor<float> lf(b.logits.shape()), yf(b.logits.shape()), mf(b.logits.shape()), sf({nh});
  for (int64_t i = 0; i < lf.numel(); ++i) {
    lf[i] = float(b.logits[i]);
    yf[i] = float(b.labels[i]);
    mf[i] = float(b.mask[i]);
  }
  for (int h = 0; h < nh; ++h) sf[h] = float(log_sigma[h]);
  ControllerState frozen_f = state;
  const double total_f =
      loss_step<float>(cfg, frozen_f, lf, yf, mf, sf, Out<float>(), Out<float>(), false).total;
  fmt::print("[f32 ] {:<34} |float - double| = {:.3e}\n", name + ".total",
             std::abs(total_f - out.total));
  EXPECT_NEAR(total_f, out.total, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllModes, WeightingTest,
                         ::testing::Values(HorizonWeighting::kUniform,
                                           HorizonWeighting::kKendallClosed,
                                           HorizonWeighting::kKendall),
                         [](const auto& param_info) {
                           std::string n = horizon_weighting_name(param_info.param);
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(Controllers, EmaZmaxLambda) {
  LossConfig cfg;
  ControllerState s(3);
  std::vector<double> lambda(3);
  trunk_lambdas(cfg, s, lambda);
  for (double l : lambda) EXPECT_EQ(l, 1.0);  // before any update
  update_controllers(cfg, std::vector<double>{1.0, 2.0, 3.0}, s);
  EXPECT_EQ(s.ema, (std::vector<double>{1.0, 2.0, 3.0}));  // first value as is
  // z = (-1.2247, 0, 1.2247); zmax = 1.2247 as is.
  EXPECT_NEAR(s.zmax, std::sqrt(1.5), 1e-12);
  trunk_lambdas(cfg, s, lambda);
  EXPECT_EQ(lambda[0], 1.0);  // clamped below
  EXPECT_NEAR(lambda[1], 1.0, 1e-12);
  EXPECT_NEAR(lambda[2], 2.0, 1e-12);
  update_controllers(cfg, std::vector<double>{2.0, 2.0, 2.0}, s);
  EXPECT_NEAR(s.ema[0], 0.99 * 1.0 + 0.01 * 2.0, 1e-15);
  EXPECT_NEAR(s.ema[2], 0.99 * 3.0 + 0.01 * 2.0, 1e-15);
  EXPECT_EQ(s.step, 2);
  for (double l : lambda) EXPECT_LE(l, 2.0);
  cfg.trunk_lambda = false;
  trunk_lambdas(cfg, s, lambda);
  for (double l : lambda) EXPECT_EQ(l, 1.0);
  // Equal losses: z = 0 everywhere, lambda = 1.
  ControllerState eq(2);
  cfg.trunk_lambda = true;
  update_controllers(cfg, std::vector<double>{0.5, 0.5}, eq);
  std::vector<double> l2(2);
  trunk_lambdas(cfg, eq, l2);
  EXPECT_EQ(l2[0], 1.0);
  EXPECT_EQ(l2[1], 1.0);
  // The closed-form sigma floor.
  EXPECT_EQ(closed_log_sigma(cfg, 0.01), std::log(0.5));
  EXPECT_NEAR(closed_log_sigma(cfg, 4.0), std::log(2.0), 1e-15);
  EXPECT_EQ(closed_log_sigma(cfg, 0.0), std::log(0.5));
}

TEST(Controllers, JsonRoundTripAndReset) {
  LossConfig cfg;
  ControllerState s(5);
  update_controllers(cfg, std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.9}, s);
  const nlohmann::json j = s.to_json();
  auto back = ControllerState::from_json(j, 5);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ema, s.ema);
  EXPECT_EQ(back->zmax, s.zmax);
  EXPECT_EQ(back->step, 1);
  EXPECT_TRUE(back->zmax_initialized);
  EXPECT_FALSE(ControllerState::from_json(j, 4).ok());  // wrong H
  nlohmann::json bad = j;
  bad.erase("zmax");
  EXPECT_FALSE(ControllerState::from_json(bad, 5).ok());
  s.reset();
  EXPECT_EQ(s.horizons(), 5);
  EXPECT_FALSE(s.ema_initialized);
  EXPECT_EQ(s.step, 0);
  EXPECT_EQ(s.ema, std::vector<double>(5, 0.0));
  auto mode = parse_horizon_weighting("kendall-closed");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(*mode, HorizonWeighting::kKendallClosed);
  EXPECT_FALSE(parse_horizon_weighting("kendal").ok());
}

// s -> heads -> logits -> loss: head parameter gradients unscaled, trunk gradient scaled by
// lambda_h per head.
TEST(LambdaPath, HeadParamsUnscaledTrunkScaled) {
  std::mt19937_64 gen(23);
  const int64_t rows = 8, d = 10, nh = 3;
  const HeadLayout l = head_layout(d, 6);
  Td s({rows, d}), p({nh, l.size});
  test::fill_uniform(s.span(), gen);
  test::fill_uniform(p.span(), gen, -0.5, 0.5);
  Batch b = random_batch(rows, nh, gen);
  LossConfig cfg;  // kendall-closed, lambda on
  ControllerState state(nh);
  update_controllers(cfg, std::vector<double>{0.3, 0.9, 1.2}, state);
  CpuContext ctx;
  Td logits({rows, nh}), z1({nh, rows, l.mid}), z2({nh, rows, l.mid});
  auto total = [&] {
    head_forward<double>(ctx, l, s, p, logits, z1, z2);
    ControllerState frozen = state;
    return loss_step<double>(cfg, frozen, logits, b.labels, b.mask, In<double>(), Out<double>(),
                             Out<double>(), false);
  };
  const LossStepOutputs base = total();
  for (int h = 0; h < nh; ++h) EXPECT_GE(base.lambda[size_t(h)], 1.0);
  EXPECT_GT(base.lambda[2], 1.0);  // the hardest horizon gets more trunk gradient
  // The lambda-weighted objective the trunk sees: sum_h lambda_h w_h L_h (+ constants).
  auto f_trunk = [&] {
    const LossStepOutputs o = total();
    double v = 0;
    for (int h = 0; h < nh; ++h)
      v += base.lambda[size_t(h)] * o.weight[size_t(h)] * o.loss_h[size_t(h)];
    return v;
  };
  auto f = [&] { return total().total; };
  Td dlogits(logits.shape()), ds(s.shape()), dp(p.shape()), lambda({nh});
  for (int h = 0; h < nh; ++h) lambda[h] = base.lambda[size_t(h)];
  total();
  ControllerState frozen = state;
  loss_step<double>(cfg, frozen, logits, b.labels, b.mask, In<double>(), dlogits, Out<double>(),
                    false);
  head_backward<double>(ctx, l, s, p, z1, z2, dlogits, lambda, ds, dp);
  report("lambda_path.head_params(unscaled)", check_gradient(f, p.span(), dp.span()));
  report("lambda_path.trunk_ds(scaled)", check_gradient(f_trunk, s.span(), ds.span()));
  fmt::print("[info] lambda = [{:.4f}, {:.4f}, {:.4f}]\n", lambda[0], lambda[1], lambda[2]);
}

}  // namespace
}  // namespace fxt::model
