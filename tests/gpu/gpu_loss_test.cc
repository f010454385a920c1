// The GPU loss step (gpu/loss.h) against model::loss_step over consecutive training steps, so
// that the controllers (ema, zmax, lambdas) evolve: all three weightings, lambda on and off,
// horizons without any masked row, row counts that exercise the tile partition (one partial
// tile, the tile cap); validation's forward-only variant; determinism; state round trips.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "gpu/loss.h"
#include "gpu_test_util.h"
#include "model/loss.h"

namespace fxt::gpu {
namespace {

using model::In;
using model::Out;
using model::Shape;
using testing::expect_close;
using testing::random_vector;
using testing::to_device;
using testing::to_host;

// One step's batch: logits scaled per horizon (so the L_h, hence the z-scores, differ clearly),
// labels 0/1, mask 0/1 with ~75 % ones; horizon `empty_h` (if >= 0) has no masked row.
struct Batch {
  std::vector<float> logits, labels, mask;
};
Batch make_batch(int rows, int nh, uint64_t seed, int empty_h) {
  Batch b;
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(nh);
  b.logits = random_vector(n, seed, -3.0f, 3.0f);
  b.labels.resize(n);
  b.mask.resize(n);
  Rng rng(seed ^ 0x9e3779b97f4a7c15ull);
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < nh; ++h) {
      const size_t i = static_cast<size_t>(r) * static_cast<size_t>(nh) + static_cast<size_t>(h);
      b.logits[i] *= 0.5f + 0.6f * static_cast<float>(h);
      b.labels[i] = rng.uniform_real(0.0, 1.0) < 0.4 ? 1.0f : 0.0f;
      b.mask[i] = (h != empty_h && rng.uniform_real(0.0, 1.0) < 0.75) ? 1.0f : 0.0f;
    }
  }
  return b;
}

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// max_h |a - b| / max(|b|, floor).
double rel_error(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-6) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(b[i]), floor));
  }
  return worst;
}
double rel_error(double a, double b, double floor = 1e-6) {
  return std::abs(a - b) / std::max(std::abs(b), floor);
}

void expect_state_close(const ControllerHost& gpu, const model::ControllerState& cpu, double tol) {
  EXPECT_LE(rel_error(gpu.ema, cpu.ema), tol) << "ema";
  EXPECT_LE(rel_error(gpu.zmax, cpu.zmax), tol) << "zmax";
  EXPECT_EQ(gpu.ema_initialized, cpu.ema_initialized);
  EXPECT_EQ(gpu.zmax_initialized, cpu.zmax_initialized);
  EXPECT_EQ(gpu.step, cpu.step);
}

struct Case {
  model::HorizonWeighting weighting;
  bool lambda;
  int horizons;
  int rows;
};

std::string case_name(const Case& c) {
  return std::string(model::horizon_weighting_name(c.weighting)) +
         (c.lambda ? " lambda" : " no-lambda") + " H=" + std::to_string(c.horizons) +
         " R=" + std::to_string(c.rows);
}

// Runs `steps` training steps on both backends from fresh states and compares every output.
// Against loss_step<double> on the same inputs (its own controller state): L_h and ema <= 1e-6
// (the GPU's L_h is the double-accumulated mean rounded to float), the float combine <= 1e-5.
// Against loss_step<float> (the trainer's CPU path): <= 1e-5, except that with tens of thousands
// of rows the CPU's serial float row sums alone drift by a few 1e-6, so 5e-5 there.
void run_parity(const Case& c, int steps) {
  SCOPED_TRACE(case_name(c));
  const double tol = c.rows > 10000 ? 5e-5 : 1e-5;
  Context ctx;
  const int nh = c.horizons, rows = c.rows;
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(nh);
  model::LossConfig mcfg;
  mcfg.weighting = c.weighting;
  mcfg.trunk_lambda = c.lambda;
  const LossConfig gcfg = to_gpu_config(mcfg);
  const bool kendall = c.weighting == model::HorizonWeighting::kKendall;

  model::ControllerState cpu_state(nh), cpu_state_d(nh);
  DeviceControllerState gpu_state(nh);
  LossOutputs out(nh);

  std::vector<float> log_sigma = random_vector(static_cast<size_t>(nh), 11, -0.4f, 0.4f);
  std::vector<double> log_sigma_d = widen(log_sigma);
  std::vector<float> cpu_dls = random_vector(static_cast<size_t>(nh), 12, -0.1f, 0.1f);
  DeviceBuffer<float> d_log_sigma = to_device(log_sigma);
  DeviceBuffer<float> d_dls = to_device(cpu_dls);

  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    // Steps 0 and 7 have a horizon with no masked row (at step 0 its ema starts at 0).
    const int empty_h = step == 0 ? 1 % nh : (step == 7 ? nh - 1 : -1);
    const Batch b = make_batch(rows, nh, 1000 + static_cast<uint64_t>(step), empty_h);
    // dlogits starts non-zero: both backends ADD the gradient.
    std::vector<float> cpu_dlogits =
        random_vector(n, 2000 + static_cast<uint64_t>(step), -1e-3f, 1e-3f);
    DeviceBuffer<float> d_logits = to_device(b.logits), d_labels = to_device(b.labels),
                        d_mask = to_device(b.mask), d_dlogits = to_device(cpu_dlogits);
    FXT_CUDA_CHECK(cudaDeviceSynchronize());

    loss_step(ctx, gcfg, nh, rows, d_logits.data(), d_labels.data(), d_mask.data(),
              kendall ? d_log_sigma.data() : nullptr, d_dlogits.data(),
              kendall ? d_dls.data() : nullptr, gpu_state, /*update_state=*/true, out);
    ctx.sync();

    const Shape rh{rows, nh}, sh{nh};
    const model::LossStepOutputs ref = model::loss_step<float>(
        mcfg, cpu_state, In<float>(b.logits.data(), rh), In<float>(b.labels.data(), rh),
        In<float>(b.mask.data(), rh), kendall ? In<float>(log_sigma.data(), sh) : In<float>(),
        Out<float>(cpu_dlogits.data(), rh),
        kendall ? Out<float>(cpu_dls.data(), sh) : Out<float>());
    const std::vector<double> ld = widen(b.logits), yd = widen(b.labels), md = widen(b.mask);
    const model::LossStepOutputs ref_d = model::loss_step<double>(
        mcfg, cpu_state_d, In<double>(ld.data(), rh), In<double>(yd.data(), rh),
        In<double>(md.data(), rh), kendall ? In<double>(log_sigma_d.data(), sh) : In<double>(),
        Out<double>(), Out<double>());

    const LossOutputs::Host got = out.download(ctx);
    // Against the double reference (the exact sums): L_h and ema to 1e-6, the float combine to
    // 1e-5.
    EXPECT_LE(rel_error(got.loss_h, ref_d.loss_h), 1e-6) << "loss_h vs double CPU";
    EXPECT_LE(rel_error(got.total, ref_d.total), 1e-5) << "total vs double CPU";
    EXPECT_LE(rel_error(got.weight, ref_d.weight), 1e-5) << "weight vs double CPU";
    EXPECT_LE(rel_error(got.lambda, ref_d.lambda), 1e-5) << "lambda vs double CPU";
    const ControllerHost gs = gpu_state.download(ctx);
    EXPECT_LE(rel_error(gs.ema, cpu_state_d.ema), 1e-6) << "ema vs double CPU";
    expect_state_close(gs, cpu_state_d, 1e-5);
    // Against the float reference the trainer runs on the CPU.
    EXPECT_LE(rel_error(got.loss_h, ref.loss_h), tol) << "loss_h vs float CPU";
    if (empty_h >= 0) {
      EXPECT_EQ(got.loss_h[static_cast<size_t>(empty_h)], 0.0);
    }
    EXPECT_LE(rel_error(got.total, ref.total), tol) << "total " << got.total << " " << ref.total;
    EXPECT_LE(rel_error(got.weight, ref.weight), tol) << "weight";
    EXPECT_LE(rel_error(got.lambda, ref.lambda), tol) << "lambda";
    expect_close(to_host(d_dlogits.data(), n), cpu_dlogits, tol, "dlogits", 1e-4);
    if (kendall) {
      expect_close(to_host(d_dls.data(), static_cast<size_t>(nh)), cpu_dls, tol, "dlog_sigma",
                   1e-3);
    }
    expect_state_close(gs, cpu_state, tol);
  }
  // The controllers did move: after the steps lambda leaves 1 for some horizon when it is on.
  const LossOutputs::Host last = out.download(ctx);
  bool moved = false;
  for (double l : last.lambda) moved = moved || l > 1.0;
  EXPECT_EQ(moved, c.lambda && nh > 1);
}

TEST(GpuLoss, MatchesCpuOverTwentySteps) {
  FXT_SKIP_WITHOUT_GPU();
  using W = model::HorizonWeighting;
  for (W w : {W::kUniform, W::kKendallClosed, W::kKendall}) {
    for (bool lambda : {true, false}) run_parity({w, lambda, 4, 1000}, 20);
  }
}

TEST(GpuLoss, MatchesCpuAtOtherShapes) {
  FXT_SKIP_WITHOUT_GPU();
  using W = model::HorizonWeighting;
  run_parity({W::kKendallClosed, true, 3, 40000}, 20);  // > kLossMaxTiles tiles of 256 rows
  run_parity({W::kKendall, true, 7, 37}, 20);           // one partial tile, 7 horizons
  run_parity({W::kUniform, true, 1, 300}, 5);           // one horizon: std 0, lambda 1
}

// Validation: no controller update, no gradients; same outputs as the CPU's update_state=false.
TEST(GpuLoss, ForwardOnlyLeavesStateUnchanged) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const int nh = 4, rows = 513;
  model::LossConfig mcfg;  // kendall-closed with lambda
  model::ControllerState cpu_state(nh);
  DeviceControllerState gpu_state(nh);
  LossOutputs out(nh);
  // Bring both states to the same evolved point through the CPU and an upload.
  for (int step = 0; step < 5; ++step) {
    const Batch b = make_batch(rows, nh, 50 + static_cast<uint64_t>(step), -1);
    std::vector<double> loss_h(static_cast<size_t>(nh));
    model::masked_bce_forward<double>(In<double>(widen(b.logits).data(), Shape{rows, nh}),
                                      In<double>(widen(b.labels).data(), Shape{rows, nh}),
                                      In<double>(widen(b.mask).data(), Shape{rows, nh}),
                                      Out<double>(loss_h.data(), Shape{nh}));
    model::update_controllers(mcfg, loss_h, cpu_state);
  }
  gpu_state.upload(ctx, to_controller_host(cpu_state));
  const ControllerHost before = gpu_state.download(ctx);
  expect_state_close(before, cpu_state, 0.0);

  const Batch b = make_batch(rows, nh, 77, 2);
  DeviceBuffer<float> d_logits = to_device(b.logits), d_labels = to_device(b.labels),
                      d_mask = to_device(b.mask);
  FXT_CUDA_CHECK(cudaDeviceSynchronize());
  loss_forward(ctx, to_gpu_config(mcfg), nh, rows, d_logits.data(), d_labels.data(), d_mask.data(),
               nullptr, gpu_state, out);
  const model::LossStepOutputs ref = model::loss_step<float>(
      mcfg, cpu_state, In<float>(b.logits.data(), Shape{rows, nh}),
      In<float>(b.labels.data(), Shape{rows, nh}), In<float>(b.mask.data(), Shape{rows, nh}),
      In<float>(), Out<float>(), Out<float>(), /*update_state=*/false);
  const LossOutputs::Host got = out.download(ctx);
  EXPECT_LE(rel_error(got.loss_h, ref.loss_h), 1e-5);
  EXPECT_LE(rel_error(got.total, ref.total), 1e-5);
  EXPECT_LE(rel_error(got.weight, ref.weight), 1e-5);
  EXPECT_LE(rel_error(got.lambda, ref.lambda), 1e-5);
  const ControllerHost after = gpu_state.download(ctx);
  EXPECT_EQ(after.ema, before.ema);  // bit for bit
  EXPECT_EQ(after.zmax, before.zmax);
  EXPECT_EQ(after.step, before.step);
}

// Two runs from the same state on the same inputs give identical bytes.
TEST(GpuLoss, Deterministic) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const int nh = 5, rows = 20000;
  const size_t n = static_cast<size_t>(rows) * nh;
  LossConfig cfg;
  cfg.weighting = HorizonWeighting::kKendall;
  std::vector<float> log_sigma = random_vector(nh, 3, -0.3f, 0.3f);
  DeviceBuffer<float> d_log_sigma = to_device(log_sigma);
  auto run = [&](std::vector<float>* dlogits, std::vector<float>* dls, ControllerHost* state,
                 std::vector<double>* loss_h) {
    DeviceControllerState st(nh);
    LossOutputs out(nh);
    DeviceBuffer<float> d_dlogits(n), d_dls(static_cast<size_t>(nh));
    d_dlogits.zero();
    d_dls.zero();
    for (int step = 0; step < 6; ++step) {
      const Batch b = make_batch(rows, nh, 900 + static_cast<uint64_t>(step), -1);
      DeviceBuffer<float> d_logits = to_device(b.logits), d_labels = to_device(b.labels),
                          d_mask = to_device(b.mask);
      FXT_CUDA_CHECK(cudaDeviceSynchronize());
      loss_step(ctx, cfg, nh, rows, d_logits.data(), d_labels.data(), d_mask.data(),
                d_log_sigma.data(), d_dlogits.data(), d_dls.data(), st, true, out);
      ctx.sync();
    }
    *dlogits = to_host(d_dlogits.data(), n);
    *dls = to_host(d_dls.data(), static_cast<size_t>(nh));
    *state = st.download(ctx);
    *loss_h = out.download(ctx).loss_h;
  };
  std::vector<float> g1, g2, s1, s2;
  ControllerHost c1, c2;
  std::vector<double> l1, l2;
  run(&g1, &s1, &c1, &l1);
  run(&g2, &s2, &c2, &l2);
  ASSERT_EQ(g1.size(), g2.size());
  EXPECT_EQ(0, std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), s1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(c1.ema.data(), c2.ema.data(), c1.ema.size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(l1.data(), l2.data(), l1.size() * sizeof(double)));
  EXPECT_EQ(c1.zmax, c2.zmax);
}

// Controller state: model -> host arrays -> device -> host arrays -> model is the identity, and
// reset() gives the fresh state.
TEST(GpuLoss, ControllerStateRoundTrip) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  model::ControllerState s(3);
  s.ema = {0.61, 0.72, 1.3};
  s.zmax = 1.2;
  s.ema_initialized = true;
  s.zmax_initialized = true;
  s.step = 42;
  DeviceControllerState d(3);
  d.upload(ctx, to_controller_host(s));
  const model::ControllerState back = to_model_state(d.download(ctx));
  EXPECT_EQ(back.to_json(), s.to_json());
  d.reset(ctx);
  EXPECT_EQ(to_model_state(d.download(ctx)).to_json(), model::ControllerState(3).to_json());
}

}  // namespace
}  // namespace fxt::gpu
