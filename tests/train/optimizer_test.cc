// AdamW and the learning-rate schedule: single steps against hand computations (bias
// correction, decoupled decay, group multipliers), global-norm clipping, skipped non-finite
// steps, layout validation, schedule values, and a bit-identical resume through a checkpoint
// file.
#include "train/optimizer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/logreg.h"
#include "model/loss.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace fxt {
namespace {

using model::ParamSpec;

ParamSpec spec(const std::string& name, size_t offset, int size, bool decay) {
  return {name, offset, static_cast<size_t>(size), {size}, decay};
}

AdamWConfig no_clip() {
  AdamWConfig c;
  c.max_grad_norm = 0;
  return c;
}

// ---- AdamW update ------------------------------------------------------------------------------

// p = [1, -2, 0.5]: "w" (2 elements, decayed) and "b" (1, not decayed); lr 0.1, wd 0.01.
// Step 1 (bias corrections 0.1 and 0.001 make m^ = g, v^ = g^2):
//   p <- p (1 - lr wd) - lr g / (|g| + eps)
//   = [0.999 - 0.1 * 0.1/(0.1 + 1e-8), -1.998 + 0.1 * 0.2/(0.2 + 1e-8), 0.5 - 0.1 * 0.3/(0.3 +
//   1e-8)] = [0.8990000100, -1.8980000050, 0.4000000033].
// Step 2 with g = [-0.05, 0.4, 0.3]: m = [0.004, 0.022, 0.057], v = [1.249e-5, 1.9996e-4,
//   1.7991e-4], bc1 = 0.19, bc2 = 0.001999; e.g. p0 = 0.8990000100 * 0.999 - 0.1 * (0.004 / 0.19)
//   / (sqrt(1.249e-5 / 0.001999) + 1e-8) = 0.8714673094.
TEST(AdamW, TwoStepsMatchHandComputation) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  std::vector<float> g = {0.1f, -0.2f, 0.3f};
  AdamW opt(no_clip());
  ASSERT_TRUE(opt.add_params(p, g, {spec("w", 0, 2, true), spec("b", 2, 1, false)}).ok());

  const StepStats s1 = opt.step(0.1);
  EXPECT_TRUE(s1.applied);
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_NEAR(p[0], 0.8990000100, 3e-7);
  EXPECT_NEAR(p[1], -1.8980000050, 3e-7);
  EXPECT_NEAR(p[2], 0.4000000033, 3e-7);
  EXPECT_NEAR(opt.first_moment(0)[1], -0.02, 1e-8);  // float: a few ulps
  EXPECT_NEAR(opt.second_moment(0)[2], 9e-5, 2e-11);

  g = {-0.05f, 0.4f, 0.3f};
  opt.step(0.1);
  EXPECT_EQ(opt.step_count(), 2);
  EXPECT_NEAR(p[0], 0.8714673094, 3e-7);
  EXPECT_NEAR(p[1], -1.9327123565, 3e-7);
  EXPECT_NEAR(p[2], 0.3000000067, 3e-7);
  EXPECT_NEAR(opt.first_moment(0)[0], 0.004, 2e-9);
  EXPECT_NEAR(opt.second_moment(0)[0], 1.249e-5, 1e-11);
}

// Two parameters with identical (zero) gradients: only the decayed one shrinks, by the factor
// 1 - lr * wd of each step.
TEST(AdamW, DecayOnlyWhereTheSpecSaysSo) {
  std::vector<float> p = {3.0f, 3.0f};
  std::vector<float> g = {0.0f, 0.0f};
  AdamWConfig cfg = no_clip();
  cfg.weight_decay = 0.5;
  AdamW opt(cfg);
  ASSERT_TRUE(opt.add_params(p, g, {spec("decayed", 0, 1, true), spec("plain", 1, 1, false)}).ok());
  // Zero gradient: m = v = 0, so the Adam term is exactly 0 and only decay acts.
  opt.step(0.1);
  EXPECT_FLOAT_EQ(p[0], 3.0f * (1.0f - 0.05f));
  EXPECT_EQ(p[1], 3.0f);
  opt.step(0.2);
  EXPECT_FLOAT_EQ(p[0], 3.0f * 0.95f * 0.9f);
  EXPECT_EQ(p[1], 3.0f);
}

// At step 1 the Adam direction is g / (|g| + eps), so each tensor moves by lr * multiplier.
TEST(AdamW, PerGroupLearningRateMultipliers) {
  std::vector<float> p = {0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<float> g = {1.0f, 1.0f, 1.0f, -1.0f};
  AdamWConfig cfg = no_clip();
  cfg.weight_decay = 0;
  cfg.group_lr_multipliers = {{"mamba", 0.5}, {"heads", 2.0}};
  ASSERT_TRUE(cfg.validate().ok());
  AdamW opt(cfg);
  ASSERT_TRUE(opt.add_params(p, g,
                             {spec("m", 0, 1, true), spec("c", 1, 1, true), spec("h", 2, 1, true)},
                             {"mamba", "cfc", "heads"})
                  .ok());
  // A second, separately registered set (the kendall log sigma_h) in the default group.
  std::vector<float> q = {0.0f};
  std::vector<float> gq = {-1.0f};
  ASSERT_TRUE(
      opt.add_params(std::span<float>(q), std::span<float>(gq), {spec("log_sigma", 0, 1, false)})
          .ok());
  opt.step(0.01);
  const double unit = 0.01 * (1.0 / (1.0 + 1e-8));
  EXPECT_NEAR(p[0], -0.5 * unit, 1e-8);
  EXPECT_NEAR(p[1], -1.0 * unit, 1e-8);
  EXPECT_NEAR(p[2], -2.0 * unit, 1e-8);
  EXPECT_EQ(p[3], 0.0f);  // not covered by any spec: never touched
  EXPECT_NEAR(q[0], unit, 1e-8);
}

TEST(AdamW, ConfigValidation) {
  AdamWConfig c;
  EXPECT_TRUE(c.validate().ok());
  c.beta1 = 1.0;
  EXPECT_FALSE(c.validate().ok());
  c = {};
  c.group_lr_multipliers = {{"cfc", -1.0}};
  EXPECT_FALSE(c.validate().ok());
  c.group_lr_multipliers = {{"cfc", 1.0}, {"cfc", 2.0}};
  EXPECT_FALSE(c.validate().ok());
  EXPECT_EQ(AdamWConfig{}.multiplier("heads"), 1.0);
}

TEST(AdamW, RejectsBadLayouts) {
  std::vector<float> p(4), g(4), g3(3);
  AdamW opt;
  EXPECT_FALSE(opt.add_params(p, g3, {spec("a", 0, 3, true)}).ok());
  EXPECT_FALSE(opt.add_params(p, g, {spec("a", 2, 3, true)}).ok());  // outside
  EXPECT_FALSE(
      opt.add_params(p, g, {spec("a", 0, 2, true), spec("b", 1, 2, true)}).ok());  // overlap
  EXPECT_FALSE(opt.add_params(p, g, {spec("a", 0, 2, true), spec("a", 2, 2, true)}).ok());  // twice
  EXPECT_FALSE(opt.add_params(p, g, {{"a", 0, 3, {2, 2}, true}}).ok());  // size != shape
  EXPECT_FALSE(opt.add_params(p, g, {spec("a", 0, 2, true)}, {"x", "y"}).ok());
  EXPECT_FALSE(opt.add_params(p, g, {spec("", 0, 2, true)}).ok());
  ASSERT_TRUE(opt.add_params(p, g, {spec("a", 0, 4, true)}).ok());
  std::vector<float> p2(1), g2(1);
  EXPECT_FALSE(opt.add_params(p2, g2, {spec("a", 0, 1, true)}).ok());  // name used by buffer 0
}

// ---- clipping ----------------------------------------------------------------------------------

TEST(AdamW, ClipsToTheGlobalNormOverAllBuffers) {
  std::vector<float> p = {0.0f, 0.0f}, g = {3.0f, 4.0f};
  std::vector<float> q = {0.0f}, gq = {12.0f};
  AdamW opt;  // max_grad_norm 1
  ASSERT_TRUE(opt.add_params(p, g, {spec("a", 0, 2, true)}).ok());
  ASSERT_TRUE(opt.add_params(q, gq, {spec("b", 0, 1, false)}).ok());
  const StepStats s = opt.step(1e-3);
  EXPECT_EQ(s.grad_norm, 13.0);  // sqrt(9 + 16 + 144), exact in double
  EXPECT_DOUBLE_EQ(s.clip_scale, 1.0 / 13.0);
  EXPECT_FLOAT_EQ(g[0], 3.0f / 13.0f);
  EXPECT_FLOAT_EQ(g[1], 4.0f / 13.0f);
  EXPECT_FLOAT_EQ(gq[0], 12.0f / 13.0f);
  // The moments saw the clipped gradient.
  EXPECT_NEAR(opt.first_moment(0)[1], 0.1 * 4.0 / 13.0, 1e-8);
}

TEST(AdamW, NoClippingBelowTheThreshold) {
  std::vector<float> p = {0.0f, 0.0f}, g = {0.3f, 0.4f};
  AdamW opt;
  ASSERT_TRUE(opt.add_params(p, g, {spec("a", 0, 2, true)}).ok());
  const StepStats s = opt.step(1e-3);
  EXPECT_NEAR(s.grad_norm, 0.5, 1e-7);
  EXPECT_EQ(s.clip_scale, 1.0);
  EXPECT_EQ(g[0], 0.3f);
  EXPECT_EQ(g[1], 0.4f);
}

TEST(AdamW, NonFiniteGradientSkipsTheStep) {
  std::vector<float> p = {1.0f, 2.0f}, g = {0.5f, std::numeric_limits<float>::quiet_NaN()};
  AdamW opt;
  ASSERT_TRUE(opt.add_params(p, g, {spec("a", 0, 2, true)}).ok());
  const StepStats s = opt.step(1e-3);
  EXPECT_FALSE(s.applied);
  EXPECT_TRUE(std::isnan(s.grad_norm));
  EXPECT_EQ(opt.step_count(), 0);
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 2.0f);
  EXPECT_EQ(opt.first_moment(0)[0], 0.0f);
  EXPECT_EQ(g[0], 0.5f);
}

// ---- schedule ----------------------------------------------------------------------------------

// peak 1e-3, W = 10, T = 110, r = 0.1.
TEST(LrSchedule, WarmupThenCosineToTheFloor) {
  const LrSchedule s{1e-3, 10, 110, 0.1};
  ASSERT_TRUE(s.validate().ok());
  EXPECT_DOUBLE_EQ(s.lr_at(0), 1e-4);     // (0 + 1) / 10
  EXPECT_DOUBLE_EQ(s.lr_at(4), 5e-4);     // (4 + 1) / 10
  EXPECT_DOUBLE_EQ(s.lr_at(9), 1e-3);     // last warm-up step reaches the peak
  EXPECT_DOUBLE_EQ(s.lr_at(10), 1e-3);    // cosine starts at the peak
  EXPECT_DOUBLE_EQ(s.lr_at(60), 5.5e-4);  // middle: 0.1 + 0.9 * 0.5
  // A quarter in: 0.1 + 0.9 * (1 + cos(pi / 4)) / 2.
  EXPECT_NEAR(s.lr_at(35), 1e-3 * (0.1 + 0.45 * (1 + std::sqrt(0.5))), 1e-18);
  EXPECT_NEAR(s.lr_at(110), 1e-4, 1e-18);  // end of the cosine: the floor
  EXPECT_DOUBLE_EQ(s.lr_at(500), 1e-4);    // and it stays there
}

TEST(LrSchedule, NoWarmupAndValidation) {
  const LrSchedule s{2e-3, 0, 100, 0.0};
  EXPECT_DOUBLE_EQ(s.lr_at(0), 2e-3);
  EXPECT_NEAR(s.lr_at(50), 1e-3, 1e-18);
  EXPECT_NEAR(s.lr_at(100), 0.0, 1e-18);
  EXPECT_FALSE((LrSchedule{0.0, 0, 10, 0.1}).validate().ok());
  EXPECT_FALSE((LrSchedule{1e-3, 20, 10, 0.1}).validate().ok());
  EXPECT_FALSE((LrSchedule{1e-3, 0, 10, 1.5}).validate().ok());
  EXPECT_FALSE((LrSchedule{1e-3, -1, 10, 0.1}).validate().ok());
}

// ---- resume ------------------------------------------------------------------------------------

// A small training setup: a logistic regression on fixed random data (a different minibatch
// each step) plus a kendall-style log sigma vector in a second buffer, so both kinds of
// registration and every code path of the step (clipping included) take part.
struct Trainer {
  static constexpr int kF = 6, kH = 3, kRows = 32, kBatch = 8;
  model::LogRegConfig cfg{kF, kH};
  std::vector<float> x, y, mask;  // [kRows, kF], [kRows, kH], [kRows, kH]
  std::vector<float> params, grads;
  std::vector<float> log_sigma = std::vector<float>(kH, 0.0f), dlog_sigma = log_sigma;
  AdamW opt;
  LrSchedule sched{0.05, 3, 20, 0.1};
  model::CpuContext ctx;

  Trainer() : opt(make_config()) {
    uint64_t state = 12345;
    auto next = [&state] {  // tiny LCG in [-1, 1)
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<float>(static_cast<double>(state >> 11) / 4503599627370496.0 - 1.0);
    };
    x.resize(kRows * kF);
    for (float& v : x) v = 2.0f * next();
    y.resize(kRows * kH);
    mask.resize(kRows * kH);
    for (int r = 0; r < kRows; ++r) {
      for (int h = 0; h < kH; ++h) {
        const float s = x[r * kF + h] - 0.5f * x[r * kF + h + 1] + 0.3f * next();
        y[r * kH + h] = s > 0 ? 1.0f : 0.0f;
        mask[r * kH + h] = next() > -0.8f ? 1.0f : 0.0f;
      }
    }
    const model::LogRegLayout l = model::logreg_layout(cfg);
    params.assign(l.total, 0.0f);
    grads.assign(l.total, 0.0f);
    EXPECT_TRUE(
        opt.add_params(params, grads, model::logreg_param_specs(cfg), {"heads", "heads"}).ok());
    EXPECT_TRUE(
        opt.add_params(log_sigma, dlog_sigma, {{"loss.log_sigma", 0, kH, {kH}, false}}, {"loss"})
            .ok());
  }
  static AdamWConfig make_config() {
    AdamWConfig c;
    c.max_grad_norm = 0.5;  // low enough to clip on some steps
    c.group_lr_multipliers = {{"heads", 1.5}, {"loss", 0.25}};
    return c;
  }

  void train_step() {
    const int64_t t = opt.step_count();
    const int begin = static_cast<int>((t * 5) % (kRows - kBatch));
    model::TensorView<const float> xb(x.data() + begin * kF, {kBatch, kF});
    model::TensorView<const float> yb(y.data() + begin * kH, {kBatch, kH});
    model::TensorView<const float> mb(mask.data() + begin * kH, {kBatch, kH});
    model::Tensor<float> logits({kBatch, kH}), dlogits({kBatch, kH}), loss_h({kH}), dloss({kH});
    model::logreg_forward<float>(ctx, cfg, params.data(), xb, logits);
    model::masked_bce_forward<float>(logits, yb, mb, loss_h);
    std::fill(grads.begin(), grads.end(), 0.0f);
    for (int h = 0; h < kH; ++h) {
      // total = sum_h L_h exp(-2 s_h) / 2 + s_h (kendall with s = log sigma).
      const float w = 0.5f * std::exp(-2.0f * log_sigma[static_cast<size_t>(h)]);
      dloss[h] = w;
      dlog_sigma[static_cast<size_t>(h)] = -2.0f * w * loss_h[h] + 1.0f;
    }
    model::masked_bce_backward<float>(logits, yb, mb, dloss, dlogits);
    model::logreg_backward<float>(ctx, cfg, params.data(), xb, dlogits, grads.data(), {});
    opt.step(sched.lr_at(t));
  }

  void save(Checkpoint* ck) const {
    for (const ParamSpec& s : model::logreg_param_specs(cfg)) {
      ck->set_f32(s.name, std::vector<int64_t>(s.shape.begin(), s.shape.end()),
                  std::span<const float>(params.data() + s.offset, s.size));
    }
    ck->set_f32("loss.log_sigma", {kH}, log_sigma);
    opt.save_state(ck);
  }
  void load(const Checkpoint& ck) {
    for (const ParamSpec& s : model::logreg_param_specs(cfg)) {
      ASSERT_TRUE(ck.read_f32_into(s.name, std::vector<int64_t>(s.shape.begin(), s.shape.end()),
                                   std::span<float>(params.data() + s.offset, s.size))
                      .ok());
    }
    ASSERT_TRUE(ck.read_f32_into("loss.log_sigma", std::vector<int64_t>{kH}, log_sigma).ok());
    const Status st = opt.load_state(ck);
    ASSERT_TRUE(st.ok()) << st.message();
  }
};

bool same_bytes(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AdamW, ResumeThroughACheckpointFileIsBitIdentical) {
  constexpr int kTotal = 20, kSplit = 7;
  Trainer straight;
  for (int i = 0; i < kTotal; ++i) straight.train_step();

  const std::string path = test::scratch_dir() + "/resume.fxtckpt";
  {
    Trainer first;
    for (int i = 0; i < kSplit; ++i) first.train_step();
    Checkpoint ck;
    first.save(&ck);
    EXPECT_EQ(ck.optimizer["step"], kSplit);
    ASSERT_NE(ck.find("adam.m/logreg.weight"), nullptr);
    ASSERT_NE(ck.find("adam.v/loss.log_sigma"), nullptr);
    const Status st = write_checkpoint(path, ck);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  auto loaded = read_checkpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Trainer resumed;
  resumed.load(*loaded);
  EXPECT_EQ(resumed.opt.step_count(), kSplit);
  for (int i = kSplit; i < kTotal; ++i) resumed.train_step();

  EXPECT_EQ(resumed.opt.step_count(), kTotal);
  EXPECT_TRUE(same_bytes(straight.params, resumed.params));
  EXPECT_TRUE(same_bytes(straight.log_sigma, resumed.log_sigma));
  for (int b = 0; b < 2; ++b) {
    EXPECT_TRUE(same_bytes(straight.opt.first_moment(b), resumed.opt.first_moment(b)));
    EXPECT_TRUE(same_bytes(straight.opt.second_moment(b), resumed.opt.second_moment(b)));
  }
  // The run actually moved (the comparison is not between two untouched buffers).
  EXPECT_NE(straight.params[0], 0.0f);
}

TEST(AdamW, LoadStateFailsCleanlyOnAMissingOrMisshapenTensor) {
  Trainer t;
  for (int i = 0; i < 3; ++i) t.train_step();
  Checkpoint ck;
  t.save(&ck);

  Trainer fresh;
  Checkpoint missing = ck;
  missing.tensors.erase(missing.tensors.begin() + static_cast<long>(missing.tensors.size()) - 1);
  EXPECT_FALSE(fresh.opt.load_state(missing).ok());
  Checkpoint misshapen = ck;
  misshapen.set_f32("adam.m/logreg.bias", {1, Trainer::kH}, std::vector<float>(Trainer::kH));
  const Status st = fresh.opt.load_state(misshapen);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("adam.m/logreg.bias"), std::string::npos) << st.message();
  Checkpoint no_step = ck;
  no_step.optimizer.erase("step");
  EXPECT_FALSE(fresh.opt.load_state(no_step).ok());
  // Nothing was restored by the failed attempts.
  EXPECT_EQ(fresh.opt.step_count(), 0);
  for (float v : fresh.opt.first_moment(0)) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace fxt
