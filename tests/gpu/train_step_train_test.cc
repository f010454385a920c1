// The captured GPU training step (gpu/train_step.h): 50 steps against the CPU reference loop on
// the same anchors (loss trajectories within 1e-4 relative), bit-identical repeat runs, graph
// replay equal to uncaptured steps, a state round trip that continues bit for bit, and inference
// after captured training equal to the CPU forward on the downloaded parameters.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "gpu/batch.h"
#include "gpu/train_step.h"
#include "gpu_test_util.h"
#include "model/loss.h"
#include "model/perception.h"
#include "train/optimizer.h"

namespace fxt::gpu {
namespace {

using model::In;
using model::Out;
using model::Shape;

constexpr int kF = 40, kH = 5;

struct Data {
  std::vector<float> features;
  std::vector<uint8_t> labels, masks;
  std::vector<uint64_t> pool;
  uint64_t rows = 0;
};

// Features with some structure (a slow sine per feature) so the loss moves.
Data make_data(uint64_t rows, int k) {
  Rng rng(42);
  Data d;
  d.rows = rows;
  d.features.resize(rows * kF);
  for (uint64_t r = 0; r < rows; ++r)
    for (int f = 0; f < kF; ++f)
      d.features[r * kF + f] = static_cast<float>(std::sin(0.01 * static_cast<double>(r) * (f + 1)) + 0.3 * (rng.unit() - 0.5));
  d.labels.resize(rows * kH);
  d.masks.resize(rows * kH);
  for (uint64_t r = 0; r < rows; ++r)
    for (int h = 0; h < kH; ++h) {
      d.labels[r * kH + h] = d.features[r * kF + h] > 0 ? 1 : 0;
      d.masks[r * kH + h] = (rng.next() % 5) != 0;
    }
  for (uint64_t r = 0; r + static_cast<uint64_t>(k) <= rows; r += 3) d.pool.push_back(r);
  return d;
}

TrainStepConfig small_config(int b, int k) {
  TrainStepConfig c;
  c.model.features = kF;
  c.model.horizons = kH;
  c.batch = b;
  c.window = k;
  c.seed = 9;
  c.schedule.peak_lr = 1e-3;
  c.schedule.warmup_steps = 10;
  c.schedule.total_steps = 60;
  return c;
}

std::unique_ptr<TrainStep> make_step(const TrainStepConfig& c, const Data& d) {
  auto s = std::make_unique<TrainStep>(c);
  TrainData td;
  td.features = d.features.data();
  td.labels = d.labels.data();
  td.masks = d.masks.data();
  td.rows = d.rows;
  td.pool = d.pool;
  s->upload_data(td);
  TrainHostState st = s->download_state();
  model::perception_init<float>(c.model, st.params.data(), 1);
  s->upload_state(st);
  return s;
}

TEST(TrainStepGpu, FiftyStepsMatchTheCpuLoop) {
  FXT_SKIP_WITHOUT_GPU();
  const int b = 8, k = 32, steps = 50;
  const Data d = make_data(4000, k);
  const TrainStepConfig c = small_config(b, k);
  auto gpu = make_step(c, d);
  std::vector<double> gpu_loss;
  for (int i = 0; i < steps; ++i) {
    gpu->run(1);
    gpu_loss.push_back(gpu->take_sums().loss);
  }

  // The CPU reference: the trainer's step on the same anchors.
  const model::PerceptionLayout l = model::perception_layout(c.model);
  std::vector<float> params(l.total), grads(l.total);
  model::perception_init<float>(c.model, params.data(), 1);
  std::vector<model::ParamSpec> specs;
  std::vector<std::string> groups;
  for (const auto& s : model::perception_param_specs(c.model)) {
    specs.push_back(s);
    groups.push_back(s.group);
  }
  fxt::AdamW opt;
  ASSERT_TRUE(opt.add_params(params, grads, specs, groups).ok());
  fxt::LrSchedule sched;
  sched.peak_lr = c.schedule.peak_lr;
  sched.warmup_steps = c.schedule.warmup_steps;
  sched.total_steps = c.schedule.total_steps;
  sched.min_lr_ratio = c.schedule.min_lr_ratio;
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<float> ws;
  ws.resize(c.model, b, k);
  model::LossConfig lcfg;
  model::ControllerState ctrl(kH);
  const size_t r = static_cast<size_t>(b) * k;
  std::vector<float> x(r * kF), y(r * kH), m(r * kH), dl(r * kH), lambda(kH);
  const Shape rh{static_cast<int64_t>(r), kH};
  for (int step = 0; step < steps; ++step) {
    Rng rng(step_seed(c.seed, step));
    for (int i = 0; i < b; ++i) {
      const uint64_t a = d.pool[rng.uniform(d.pool.size())];
      for (int p = 0; p < k; ++p) {
        const size_t o = static_cast<size_t>(i) * k + p;
        for (int f = 0; f < kF; ++f) x[o * kF + f] = d.features[(a + p) * kF + f];
        for (int h = 0; h < kH; ++h) {
          y[o * kH + h] = d.labels[(a + p) * kH + h];
          m[o * kH + h] = d.masks[(a + p) * kH + h];
        }
      }
    }
    model::perception_forward<float>(c.model, ctx, params.data(), x.data(), 1.0f, nullptr, &ws);
    std::fill(dl.begin(), dl.end(), 0.0f);
    const auto out = model::loss_step<float>(lcfg, ctrl, In<float>(ws.logits.data(), rh),
                                             In<float>(y.data(), rh), In<float>(m.data(), rh),
                                             In<float>(), Out<float>(dl.data(), rh), Out<float>());
    for (int h = 0; h < kH; ++h) lambda[h] = static_cast<float>(out.lambda[h]);
    model::perception_backward<float>(c.model, ctx, params.data(), x.data(), 1.0f, nullptr,
                                      dl.data(), lambda.data(), &ws, grads.data(), nullptr);
    opt.step(sched.lr_at(step));
    EXPECT_NEAR(gpu_loss[step], out.total, 1e-4 * std::abs(out.total)) << "step " << step;
  }
  // The parameters after 50 steps agree closely too.
  const TrainHostState st = gpu->download_state();
  testing::expect_close(st.params, params, 1e-3, "parameters after 50 steps", 1e-2);
  EXPECT_LT(gpu_loss.back(), gpu_loss.front());  // it learned something
}

TEST(TrainStepGpu, SameSeedGivesIdenticalBytes) {
  FXT_SKIP_WITHOUT_GPU();
  const Data d = make_data(4000, 64);
  const TrainStepConfig c = small_config(32, 64);
  auto a = make_step(c, d);
  auto b = make_step(c, d);
  a->run(20);
  b->run(20);
  const TrainHostState sa = a->download_state(), sb = b->download_state();
  EXPECT_EQ(sa.params, sb.params);
  EXPECT_EQ(sa.opt.m, sb.opt.m);
  EXPECT_EQ(sa.opt.v, sb.opt.v);
  EXPECT_EQ(sa.controller.ema, sb.controller.ema);
}

// TF32 and BF16 steps (products in TF32 / BF16, the rest FP32) follow the FP32 run: the loss of
// each of 50 steps within 4 e max(1, |loss|) of FP32's (e = precision_input_error: 2^-10 TF32,
// 2^-8 BF16, core/precision.h; the loss, log-variance weighted, crosses zero, hence the floor of
// 1), the loss falls, and a second run with the same seed is bit-identical. (TF32 measured
// 0.05 e on the H200; BF16 not yet measured.)
TEST(TrainStepGpu, ReducedPrecisionFollowsFp32AndIsReproducible) {
  FXT_SKIP_WITHOUT_GPU();
  const int steps = 50;
  const Data d = make_data(4000, 64);
  auto losses = [&](Precision p, std::vector<float>* params) {
    TrainStepConfig c = small_config(32, 64);
    c.precision = p;
    auto s = make_step(c, d);
    std::vector<double> out;
    for (int i = 0; i < steps; ++i) {
      s->run(1);
      out.push_back(s->take_sums().loss);
    }
    *params = s->download_state().params;
    return out;
  };
  std::vector<float> p32, p_again;
  const std::vector<double> fp32 = losses(Precision::kFp32, &p32);
  for (Precision p : {Precision::kTf32, Precision::kBf16}) {
    std::vector<float> pp;
    const std::vector<double> lp = losses(p, &pp);
    const double e = precision_input_error(p);
    double worst = 0.0;
    for (int i = 0; i < steps; ++i) {
      worst = std::max(worst, std::abs(lp[i] - fp32[i]) / std::max(1.0, std::abs(fp32[i])));
    }
    std::printf(
        "[train-step precision] %s: worst loss difference to FP32 over %d steps "
        "%.3e (%.2f e); loss %.5f -> %.5f (FP32 %.5f -> %.5f)\n",
        precision_name(p), steps, worst, worst / e, lp.front(), lp.back(), fp32.front(),
        fp32.back());
    EXPECT_LE(worst, 4 * e) << precision_name(p);
    EXPECT_LT(lp.back(), lp.front()) << precision_name(p);
    EXPECT_EQ(losses(p, &p_again), lp) << precision_name(p);
    EXPECT_EQ(p_again, pp) << precision_name(p);
  }
}

// In bf16 the first capture also sizes the BF16 workspace (Graph::capture takes it twice): the
// replays must still equal the uncaptured steps, which grow the workspace as they go.
TEST(TrainStepGpu, GraphReplayEqualsUncapturedSteps) {
  FXT_SKIP_WITHOUT_GPU();
  const Data d = make_data(4000, 64);
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    TrainStepConfig c = small_config(16, 64);
    c.precision = p;
    auto a = make_step(c, d);
    auto b = make_step(c, d);
    a->run(12);
    b->run_uncaptured(12);
    const StepSums ta = a->take_sums(), tb = b->take_sums();
    EXPECT_EQ(ta.steps, 12) << precision_name(p);
    EXPECT_EQ(ta.loss, tb.loss) << precision_name(p);
    EXPECT_EQ(a->download_state().params, b->download_state().params) << precision_name(p);
    EXPECT_GT(a->graph_nodes(), 20u) << precision_name(p);
  }
}

TEST(TrainStepGpu, StateRoundTripContinuesBitForBit) {
  FXT_SKIP_WITHOUT_GPU();
  const Data d = make_data(4000, 64);
  const TrainStepConfig c = small_config(16, 64);
  auto whole = make_step(c, d);
  whole->run(10);
  auto first = make_step(c, d);
  first->run(4);
  const TrainHostState mid = first->download_state();
  EXPECT_EQ(mid.opt.schedule_step, 4);
  auto second = make_step(c, d);
  second->upload_state(mid);
  second->run(6);
  EXPECT_EQ(second->download_state().params, whole->download_state().params);
}

TEST(TrainStepGpu, InferenceAfterCapturedTrainingMatchesTheCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const Data d = make_data(4000, 64);
  const TrainStepConfig c = small_config(16, 64);
  auto s = make_step(c, d);
  s->run(15);
  const TrainHostState st = s->download_state();
  InferenceGpu inf(c.model);
  inf.use_params(s->params());
  const int b = 5, k = 64;
  std::vector<float> x(d.features.begin(), d.features.begin() + b * k * kF);
  std::vector<float> logits;
  inf.forward(x.data(), nullptr, b, k, 1, /*last=*/true, &logits);
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<float> ws;
  ws.resize(c.model, b, k);
  model::perception_forward_last<float>(c.model, ctx, st.params.data(), x.data(), 1.0f, nullptr,
                                        &ws);
  const std::vector<float> cpu(ws.logits.begin(), ws.logits.begin() + b * kH);
  testing::expect_close(logits, cpu, 1e-5, "last-position logits after training");
}

}  // namespace
}  // namespace fxt::gpu
