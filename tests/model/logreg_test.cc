// Logistic-regression baseline: layout and names, forward against a naive loop, a
// double-precision gradient check through the masked BCE, and convergence with AdamW on
// synthetic data (AUC and the signs of the true weights).
#include "model/logreg.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "grad_check.h"
#include "model/loss.h"
#include "train/metrics.h"
#include "train/optimizer.h"

namespace fxt::model {
namespace {

TEST(LogReg, LayoutSpecsAndInit) {
  const LogRegConfig cfg;  // F = 40, H = 5
  ASSERT_TRUE(logreg_validate(cfg).ok());
  EXPECT_FALSE(logreg_validate({0, 5}).ok());
  EXPECT_FALSE(logreg_validate({40, 0}).ok());
  const LogRegLayout l = logreg_layout(cfg);
  EXPECT_EQ(l.weight, 0u);
  EXPECT_EQ(l.bias, 200u);
  EXPECT_EQ(l.total, 205u);
  const std::vector<ParamSpec> specs = logreg_param_specs(cfg);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "logreg.weight");
  EXPECT_EQ(specs[0].shape, (std::vector<int>{5, 40}));
  EXPECT_EQ(specs[0].size, 200u);
  EXPECT_TRUE(specs[0].weight_decay);
  EXPECT_EQ(specs[1].name, "logreg.bias");
  EXPECT_EQ(specs[1].offset, 200u);
  EXPECT_EQ(specs[1].shape, (std::vector<int>{5}));
  EXPECT_FALSE(specs[1].weight_decay);
  std::vector<float> p(l.total, 3.0f);
  logreg_init(cfg, p.data());
  for (float v : p) EXPECT_EQ(v, 0.0f);
}

TEST(LogReg, ForwardMatchesNaiveLoop) {
  const LogRegConfig cfg{7, 3};
  constexpr int kRows = 130;  // more than one row chunk
  std::mt19937_64 rng(3);
  std::vector<double> p(logreg_layout(cfg).total);
  test::fill_uniform(p, rng);
  Tensor<double> x({kRows, cfg.features}), logits({kRows, cfg.horizons});
  test::fill_uniform(x.span(), rng, -2, 2);
  CpuContext ctx(3);
  logreg_forward<double>(ctx, cfg, p.data(), x, logits);
  for (int r = 0; r < kRows; ++r) {
    for (int h = 0; h < cfg.horizons; ++h) {
      double z = p[logreg_layout(cfg).bias + static_cast<size_t>(h)];
      for (int f = 0; f < cfg.features; ++f) {
        z += p[static_cast<size_t>(h * cfg.features + f)] * x.at(r, f);
      }
      EXPECT_NEAR(logits.at(r, h), z, 1e-12);
    }
  }
}

// loss = sum_h c_h L_h with L_h the masked BCE; checks d loss / d params and d loss / d x.
TEST(LogReg, GradientCheckDouble) {
  const LogRegConfig cfg{6, 3};
  constexpr int kRows = 9;
  std::mt19937_64 rng(11);
  const LogRegLayout l = logreg_layout(cfg);
  std::vector<double> p(l.total);
  test::fill_uniform(p, rng);
  Tensor<double> x({kRows, cfg.features}), y({kRows, cfg.horizons}), m({kRows, cfg.horizons});
  test::fill_uniform(x.span(), rng, -2, 2);
  std::bernoulli_distribution coin(0.5), keep(0.8);
  for (int64_t i = 0; i < y.numel(); ++i) {
    y[i] = coin(rng) ? 1.0 : 0.0;
    m[i] = keep(rng) ? 1.0 : 0.0;
  }
  Tensor<double> c({cfg.horizons});
  test::fill_uniform(c.span(), rng, 0.5, 2.0);
  CpuContext ctx;

  auto loss = [&] {
    Tensor<double> logits({kRows, cfg.horizons}), loss_h({cfg.horizons});
    logreg_forward<double>(ctx, cfg, p.data(), x, logits);
    masked_bce_forward<double>(logits, y, m, loss_h);
    double total = 0;
    for (int h = 0; h < cfg.horizons; ++h) total += c[h] * loss_h[h];
    return total;
  };
  Tensor<double> logits({kRows, cfg.horizons}), loss_h({cfg.horizons});
  Tensor<double> dlogits({kRows, cfg.horizons}), dx({kRows, cfg.features});
  std::vector<double> grads(l.total, 0.0);
  logreg_forward<double>(ctx, cfg, p.data(), x, logits);
  masked_bce_forward<double>(logits, y, m, loss_h);
  masked_bce_backward<double>(logits, y, m, c, dlogits);
  logreg_backward<double>(ctx, cfg, p.data(), x, dlogits, grads.data(), dx);

  const test::GradCheckResult rp = test::check_gradient(loss, p, grads);
  EXPECT_LE(rp.max_rel_error, 1e-6) << "params: " << rp.to_string();
  const test::GradCheckResult rx = test::check_gradient(loss, x.span(), dx.span());
  EXPECT_LE(rx.max_rel_error, 1e-6) << "x: " << rx.to_string();
  std::printf("  params %s\n  x      %s\n", rp.to_string().c_str(), rx.to_string().c_str());

  // Backward accumulates: a second call doubles the gradients.
  std::vector<double> twice = grads;
  logreg_backward<double>(ctx, cfg, p.data(), x, dlogits, twice.data(), {});
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_NEAR(twice[i], 2 * grads[i], 1e-15);
}

// Labels from a sparse true weight vector plus logistic noise; full-batch AdamW with the
// default clipping and schedule shape. Held-out AUC must exceed 0.9 and the signs of the
// clearly non-zero true weights must be recovered.
TEST(LogReg, ConvergesWithAdamW) {
  const LogRegConfig cfg{40, 3};
  constexpr int kTrain = 4000, kTest = 2000, kSteps = 300;
  const int F = cfg.features, H = cfg.horizons;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unif(1e-9, 1.0 - 1e-9);
  std::vector<double> w_true(static_cast<size_t>(H * F));
  for (double& w : w_true) w = std::abs(normal(rng)) < 0.8 ? 0.0 : 1.5 * normal(rng);
  const std::vector<double> b_true = {0.3, -0.2, 0.0};

  auto make = [&](int rows, Tensor<float>& x, Tensor<float>& y, Tensor<float>& mask) {
    x = Tensor<float>({rows, F});
    y = Tensor<float>({rows, H});
    mask = Tensor<float>({rows, H});
    for (int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(normal(rng));
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < H; ++h) {
        double z = b_true[static_cast<size_t>(h)];
        for (int f = 0; f < F; ++f) z += w_true[static_cast<size_t>(h * F + f)] * x.at(r, f);
        const double u = unif(rng);
        z += std::log(u / (1 - u));  // logistic noise: P(y = 1) = sigmoid(z)
        y.at(r, h) = z > 0 ? 1.0f : 0.0f;
        mask.at(r, h) = unif(rng) < 0.9 ? 1.0f : 0.0f;
      }
    }
  };
  Tensor<float> x, y, mask, xt, yt, maskt;
  make(kTrain, x, y, mask);
  make(kTest, xt, yt, maskt);

  const LogRegLayout l = logreg_layout(cfg);
  std::vector<float> params(l.total), grads(l.total);
  logreg_init(cfg, params.data());
  AdamW opt;
  ASSERT_TRUE(opt.add_params(params, grads, logreg_param_specs(cfg)).ok());
  const LrSchedule sched{0.05, 10, kSteps, 0.1};
  CpuContext ctx(2);
  Tensor<float> logits({kTrain, H}), dlogits({kTrain, H}), loss_h({H}), ones({H});
  ones.fill(1.0f);
  double first_loss = 0, last_loss = 0;
  for (int t = 0; t < kSteps; ++t) {
    logreg_forward<float>(ctx, cfg, params.data(), x, logits);
    masked_bce_forward<float>(logits, y, mask, loss_h);
    double total = 0;
    for (int h = 0; h < H; ++h) total += loss_h[h];
    if (t == 0) first_loss = total;
    last_loss = total;
    dlogits.fill(0.0f);
    std::fill(grads.begin(), grads.end(), 0.0f);
    masked_bce_backward<float>(logits, y, mask, ones, dlogits);
    logreg_backward<float>(ctx, cfg, params.data(), x, dlogits, grads.data(), {});
    ASSERT_TRUE(opt.step(sched.lr_at(opt.step_count())).applied);
  }
  EXPECT_NEAR(first_loss, H * std::log(2.0), 1e-4);  // zero init: p = 1/2 (float sums)
  EXPECT_LT(last_loss, 0.6 * first_loss);

  Tensor<float> test_logits({kTest, H});
  logreg_forward<float>(ctx, cfg, params.data(), xt, test_logits);
  std::vector<uint8_t> labels(static_cast<size_t>(kTest * H)), valid(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    labels[i] = yt[static_cast<int64_t>(i)] > 0.5f ? 1 : 0;
    valid[i] = maskt[static_cast<int64_t>(i)] > 0.5f ? 1 : 0;
  }
  const std::vector<int> horizons = {1, 2, 3};
  auto metrics = compute_metrics(test_logits.span(), labels, valid, horizons, ScoreKind::kLogit);
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  for (const HorizonMetrics& hm : metrics->horizons) {
    EXPECT_GT(hm.auc, 0.9) << "horizon " << hm.horizon;
    std::printf("  horizon %d: AUC %.4f\n", hm.horizon, hm.auc);
  }
  int checked = 0;
  for (size_t i = 0; i < w_true.size(); ++i) {
    if (std::abs(w_true[i]) < 0.3) continue;
    ++checked;
    EXPECT_EQ(params[l.weight + i] > 0, w_true[i] > 0)
        << "weight " << i << " true " << w_true[i] << " learned " << params[l.weight + i];
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace fxt::model
