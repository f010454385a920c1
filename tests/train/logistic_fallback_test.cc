// The logistic fallback (src/train/logistic_fallback.h): which heads go back to the logistic
// start, the composed model's early-stopping value, and that a head put back is exactly the
// logistic on the window's last features while the other heads are untouched.
#include "train/logistic_fallback.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/random.h"
#include "model/perception.h"
#include "train/scoring.h"

namespace fxt::train_detail {
namespace {

ValResult val_of(std::vector<double> loss_h, std::vector<double> auc) {
  ValResult v;
  v.loss_h = std::move(loss_h);
  for (double a : auc) {
    HorizonMetrics h;
    h.auc = a;
    v.metrics.horizons.push_back(h);
  }
  return v;
}

TEST(LogisticFallback, ChoosesTheStartWhereItValidatesBetter) {
  LogisticStart start;
  start.val = {0.50, 0.60, 0.70};  // per-horizon validation loss of the logistic
  const StopMetric by_loss{};       // val_loss: lower is better
  const HeadChoice c = choose_heads(start, val_of({0.55, 0.58, 0.70}, {}), by_loss);
  EXPECT_EQ(c.logistic, (std::vector<bool>{true, false, false}));  // a tie keeps the trained
  EXPECT_DOUBLE_EQ(c.value, (0.50 + 0.58 + 0.70) / 3);

  // An undefined trained value (NaN) takes the start; an undefined start never wins.
  start.val = {0.50, std::nan(""), 0.70};
  const HeadChoice n = choose_heads(start, val_of({std::nan(""), 0.58, 0.69}, {}), by_loss);
  EXPECT_EQ(n.logistic, (std::vector<bool>{true, false, false}));
  EXPECT_DOUBLE_EQ(n.value, (0.50 + 0.58 + 0.69) / 3);

  // AUC metrics: higher is better; auc_h<h> takes that horizon's composed value.
  start.val = {0.80, 0.70};
  StopMetric by_auc;
  by_auc.lower_is_better = false;
  const HeadChoice a = choose_heads(start, val_of({0, 0}, {0.79, 0.75}), by_auc);
  EXPECT_EQ(a.logistic, (std::vector<bool>{true, false}));
  EXPECT_DOUBLE_EQ(a.value, (0.80 + 0.75) / 2);
  by_auc.horizon_index = 0;
  EXPECT_DOUBLE_EQ(choose_heads(start, val_of({0, 0}, {0.79, 0.75}), by_auc).value, 0.80);
}

TEST(LogisticFallback, JsonRoundTripAndBadSizes) {
  LogisticStart s;
  s.skip_w = {1, 2, 3, 4, 5, 6};
  s.bias = {0.5f, -0.5f};
  s.val = {0.4, std::nan("")};
  auto back = LogisticStart::from_json(s.to_json(), 2, 3, "x.ckpt");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->skip_w, s.skip_w);
  EXPECT_EQ(back->bias, s.bias);
  EXPECT_DOUBLE_EQ(back->val[0], 0.4);
  EXPECT_TRUE(std::isnan(back->val[1]));
  auto bad = LogisticStart::from_json(s.to_json(), 3, 3, "x.ckpt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.ckpt: meta.logistic_start"), std::string::npos);
}

// Without and with snapshot heads and the PLE path (a put-back horizon silences its snapshot
// head and its row of W_ple too).
void check_put_back(bool snapshot_heads, int ple_bins) {
  SCOPED_TRACE(fmt::format("snapshot heads {}, PLE bins {}", snapshot_heads, ple_bins));
  model::PerceptionConfig pc;
  pc.features = 6;
  pc.horizons = 3;
  pc.d_model = 16;
  pc.d_state = 4;
  pc.head_dim = 8;
  pc.head_mid = 8;
  pc.input_skip = true;
  pc.snapshot_heads = snapshot_heads;
  pc.ple_bins = ple_bins;
  const model::PerceptionLayout l = model::perception_layout(pc);
  std::vector<float> p(l.total);
  model::perception_init(pc, p.data(), 3);
  // A trained-looking parameter set: every head and the skip path non-zero.
  Rng rng(11);
  for (float& v : p) v += static_cast<float>(rng.uniform_real(-0.1, 0.1));
  LogisticStart start;
  for (int i = 0; i < pc.horizons * pc.features; ++i) start.skip_w.push_back(0.1f * static_cast<float>(i % 7 - 3));
  start.bias = {0.25f, -0.5f, 0.75f};
  start.val = {0, 0, 0};
  const std::vector<float> q = with_logistic_heads(pc, p, start, {false, true, false});

  const int k = 5;
  std::vector<float> x(static_cast<size_t>(k * pc.features));
  for (float& v : x) v = static_cast<float>(rng.uniform_real(-2, 2));
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<float> ws_p, ws_q;
  ws_p.resize(pc, 1, k);
  ws_q.resize(pc, 1, k);
  model::perception_forward_last<float>(pc, ctx, p.data(), x.data(), 1.0f, nullptr, &ws_p);
  model::perception_forward_last<float>(pc, ctx, q.data(), x.data(), 1.0f, nullptr, &ws_q);
  const float* last = x.data() + (k - 1) * pc.features;
  double logistic = start.bias[1];
  for (int i = 0; i < pc.features; ++i) logistic += start.skip_w[pc.features + i] * last[i];
  EXPECT_NEAR(ws_q.logits[1], logistic, 1e-5);
  EXPECT_NE(ws_p.logits[1], ws_q.logits[1]);
  EXPECT_EQ(ws_q.logits[0], ws_p.logits[0]);
  EXPECT_EQ(ws_q.logits[2], ws_p.logits[2]);
}

TEST(LogisticFallback, APutBackHeadIsTheLogisticAndTheOthersAreUntouched) {
  check_put_back(false, 0);
  check_put_back(true, 0);
  check_put_back(false, 4);
  check_put_back(true, 6);
}

}  // namespace
}  // namespace fxt::train_detail
