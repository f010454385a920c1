// GPU Mamba2 block vs the CPU reference (model::mamba2_forward / mamba2_backward) run in double
// on the same float-representable inputs and parameters (normwise relative error: forward <= 1e-5,
// gradients <= 1e-4, or 1.5 x the CPU float path's own where larger), and elementwise within a
// bound derived from the CPU float path's own worst entry (gpu_test_util.h, expect_parity): the block output, the saved
// activations, every parameter-gradient tensor and d_in, on realistic
// sizes (D = 128, N = 16, P = 64, K = 64, B = 4 / 32, stride 1 / 4) and small odd sizes that
// exercise the kernels' edge paths (partial warps, several states per thread, partial scan
// chunks, K < d_conv); plus the ADD semantics of the backward and bitwise determinism.
#include "gpu/mamba2.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "model/mamba2.h"

namespace fxt::gpu {
namespace {

using testing::expect_close;
using testing::expect_parity;
using testing::max_abs_f64;
using testing::ParityErrors;
using testing::random_vector;
using testing::to_device;

struct Case {
  const char* name;
  model::Mamba2Config cfg;
  int batch;
  int seq;
  float stride;
};

// mamba2_init parameters, with D and norm_w moved off their constant init value of 1 so that a
// per-head or per-channel indexing error cannot hide.
std::vector<float> make_params(const model::Mamba2Config& cfg) {
  const model::Mamba2Layout l = model::mamba2_layout(cfg);
  std::vector<float> p(l.total);
  model::mamba2_init(cfg, p.data(), 1234);
  const auto jitter = random_vector(l.total, 99, -0.5f, 0.5f);
  for (int h = 0; h < cfg.n_heads(); ++h) p[l.d_skip + h] += jitter[l.d_skip + h];
  for (int i = 0; i < cfg.d_inner(); ++i) p[l.norm_w + i] += jitter[l.norm_w + i];
  return p;
}

// CPU reference in precision T on the same (float) inputs and parameters: double is the
// asserted parity reference, float the one whose own error bounds the float comparison.
template <typename T>
struct CpuResult {
  std::vector<T> out, y, xbc, dt, grads, d_in;
};
template <typename T>
CpuResult<T> run_cpu(const Case& c, const std::vector<float>& params, const std::vector<float>& in,
                     const std::vector<float>& d_out) {
  const auto cast = [](const std::vector<float>& v) { return std::vector<T>(v.begin(), v.end()); };
  const std::vector<T> p = cast(params), x = cast(in), dy = cast(d_out);
  model::Mamba2Workspace<T> ws;
  ws.resize(c.cfg, c.batch, c.seq);
  model::mamba2_forward(c.cfg, p.data(), x.data(), static_cast<T>(c.stride), &ws);
  std::vector<T> grads(p.size(), T(0)), d_in(x.size(), T(0));
  model::mamba2_backward(c.cfg, p.data(), x.data(), static_cast<T>(c.stride), dy.data(), &ws,
                         grads.data(), d_in.data());
  return {ws.out, ws.y, ws.xbc, ws.dt, grads, d_in};
}

template <typename T>
std::vector<T> slice(const std::vector<T>& v, size_t off, size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(off),
          v.begin() + static_cast<std::ptrdiff_t>(off + n)};
}

// Relative errors use an absolute floor of 1% of the tensor's largest magnitude (as
// tests/gpu/ops_test.cc): entries that cancel to ~0 are judged on the tensor's scale, since
// float sums in a different order (cuBLAS vs Eigen, tree vs sequential) differ by ~1e-7 of the
// summed magnitudes, not of the result. The scale is the double reference's.
double floor_of(const std::vector<double>& ref) {
  return std::max(1e-2 * max_abs_f64(ref), 1e-20);
}
double floor_of(const std::vector<float>& ref) {
  return floor_of(std::vector<double>(ref.begin(), ref.end()));
}

// Asserts the normwise error vs the double reference <= tol (or the CPU float path's, x1.5) and the
// elementwise error vs double <= the derived bound (expect_parity); prints them.
void check(const Case& c, const std::string& what, const std::vector<float>& gpu,
           const std::vector<float>& cpu32, const std::vector<double>& cpu64, double tol) {
  const double fl = floor_of(cpu64);
  const ParityErrors e =
      expect_parity(gpu, cpu32, cpu64, tol, std::string(c.name) + " " + what, fl);
  std::printf(
      "[mamba2 %-18s] %-22s gpu-cpu(f64) %.3e (tol %.0e)  gpu-cpu(f32) %.3e (bound %.3e)  "
      "cpu(f32)-cpu(f64) %.3e  norm: gpu-cpu(f64) %.3e cpu(f32)-cpu(f64) %.3e\n",
      c.name, what.c_str(), e.vs_f64, tol, e.vs_f32, e.f32_bound, e.f32_vs_f64, e.norm_vs_f64,
      e.norm_f32_vs_f64);
}

void run_parity(const Case& c) {
  const model::Mamba2Config& cfg = c.cfg;
  ASSERT_TRUE(model::mamba2_validate(cfg).ok());
  const Mamba2GpuDims dims = mamba2_gpu_dims(cfg);
  ASSERT_EQ(mamba2_gpu_unsupported(dims), nullptr);
  const model::Mamba2Layout layout = model::mamba2_layout(cfg);
  const Mamba2GpuOffsets off = mamba2_gpu_offsets(layout);
  const size_t rows = static_cast<size_t>(c.batch) * c.seq;

  const std::vector<float> params = make_params(cfg);
  const std::vector<float> in = random_vector(rows * cfg.in_dim, 11);
  const std::vector<float> d_out = random_vector(rows * cfg.d_model, 12);
  const CpuResult<float> ref = run_cpu<float>(c, params, in, d_out);
  const CpuResult<double> ref64 = run_cpu<double>(c, params, in, d_out);

  Context ctx;
  Mamba2GpuWorkspace ws;
  ws.resize(dims, c.batch, c.seq);
  DeviceBuffer<float> d_params = to_device(params), d_x = to_device(in), d_dy = to_device(d_out);
  DeviceBuffer<float> d_grads(layout.total), d_in(rows * cfg.in_dim);
  d_grads.zero();
  d_in.zero();
  mamba2_forward(ctx, dims, off, d_params.data(), d_x.data(), c.stride, &ws);
  mamba2_backward(ctx, dims, off, d_params.data(), d_x.data(), c.stride, d_dy.data(), &ws,
                  d_grads.data(), d_in.data());
  ctx.sync();

  // Forward (<= 1e-5 vs double): the saved activations (to localise a failure) and the block
  // output.
  constexpr double kFwdTol = 1e-5, kGradTol = 1e-4;
  check(c, "xbc", ws.xbc.download(), ref.xbc, ref64.xbc, kFwdTol);
  check(c, "dt", ws.dt.download(), ref.dt, ref64.dt, kFwdTol);
  check(c, "y", ws.y.download(), ref.y, ref64.y, kFwdTol);
  check(c, "out", ws.out.download(), ref.out, ref64.out, kFwdTol);

  // An inference forward (no backward follows): up to 8 sequences of K <= 64 take the scan's
  // quadratic form; the same outputs within the same tolerance.
  {
    Mamba2GpuWorkspace wi;
    wi.resize(dims, c.batch, c.seq);
    mamba2_forward(ctx, dims, off, d_params.data(), d_x.data(), c.stride, &wi,
                   /*for_backward=*/false);
    ctx.sync();
    check(c, "y (inference)", wi.y.download(), ref.y, ref64.y, kFwdTol);
    check(c, "out (inference)", wi.out.download(), ref.out, ref64.out, kFwdTol);
  }

  // Backward (<= 1e-4 vs double): every parameter tensor, then d_in.
  const std::vector<float> grads = d_grads.download();
  for (const model::ParamSpec& spec : model::mamba2_param_specs(cfg, "m")) {
    check(c, spec.name, slice(grads, spec.offset, spec.size),
          slice(ref.grads, spec.offset, spec.size), slice(ref64.grads, spec.offset, spec.size),
          kGradTol);
  }
  check(c, "d_in", d_in.download(), ref.d_in, ref64.d_in, kGradTol);

  // ADD semantics: a second backward onto nonzero grads / d_in adds the same gradient.
  const std::vector<float> g0 = random_vector(layout.total, 21, -0.1f, 0.1f);
  const std::vector<float> x0 = random_vector(rows * cfg.in_dim, 22, -0.1f, 0.1f);
  DeviceBuffer<float> g_add = to_device(g0), x_add = to_device(x0);
  mamba2_backward(ctx, dims, off, d_params.data(), d_x.data(), c.stride, d_dy.data(), &ws,
                  g_add.data(), x_add.data());
  ctx.sync();
  std::vector<float> g_expect(g0), x_expect(x0);
  const std::vector<float> din_first = d_in.download();
  for (size_t i = 0; i < g_expect.size(); ++i) g_expect[i] += grads[i];
  for (size_t i = 0; i < x_expect.size(); ++i) x_expect[i] += din_first[i];
  expect_close(g_add.download(), g_expect, 1e-5, std::string(c.name) + " grads ADD",
               floor_of(g_expect));
  expect_close(x_add.download(), x_expect, 1e-5, std::string(c.name) + " d_in ADD",
               floor_of(x_expect));
}

model::Mamba2Config real_cfg(int in_dim) {
  model::Mamba2Config cfg;
  cfg.in_dim = in_dim;
  cfg.d_model = 128;
  cfg.expand = 2;
  cfg.head_dim = 64;
  cfg.d_state = 16;
  cfg.d_conv = 4;
  return cfg;
}

model::Mamba2Config small_cfg(int in_dim, int d_model, int head_dim, int d_state, int d_conv) {
  model::Mamba2Config cfg;
  cfg.in_dim = in_dim;
  cfg.d_model = d_model;
  cfg.expand = 2;
  cfg.head_dim = head_dim;
  cfg.d_state = d_state;
  cfg.d_conv = d_conv;
  return cfg;
}

TEST(GpuMamba2, RealSizesB4) {
  FXT_SKIP_WITHOUT_GPU();
  run_parity({"F40_B1_S1", real_cfg(40), 1, 64, 1.0f});  // one window: the inference latency case
  run_parity({"F40_B4_S1", real_cfg(40), 4, 64, 1.0f});
  run_parity({"F128_B4_S4", real_cfg(128), 4, 64, 4.0f});
}

TEST(GpuMamba2, RealSizesB32) {
  FXT_SKIP_WITHOUT_GPU();
  run_parity({"F40_B32_S4", real_cfg(40), 32, 64, 4.0f});
  run_parity({"F128_B32_S1", real_cfg(128), 32, 64, 1.0f});
}

TEST(GpuMamba2, SmallOddSizes) {
  FXT_SKIP_WITHOUT_GPU();
  // d_inner 48 = 3 heads of 16; N = 8: 8 lanes per channel, one state each.
  run_parity({"B3_K5_N8", small_cfg(7, 24, 16, 8, 4), 3, 5, 1.0f});
  // K < d_conv: every position sees the zero padding.
  run_parity({"B3_K3_N8_conv4", small_cfg(5, 24, 16, 8, 4), 3, 3, 4.0f});
  // N = 40: 16 lanes x 3 states (the last lanes partly empty); 12 x 16 threads = 6 warps;
  // K = 37: partial scan chunks (forward 32 + 5, backward 16 + 16 + 5).
  run_parity({"B2_K37_N40_P12", small_cfg(9, 6, 12, 40, 3), 2, 37, 2.0f});
  // P = 5, N = 3: 4 lanes per channel, 20 threads in a 32-thread block (inactive lanes).
  run_parity({"B5_K9_P5_N3", small_cfg(3, 5, 5, 3, 2), 5, 9, 1.0f});
}

TEST(GpuMamba2, LongSequences) {
  FXT_SKIP_WITHOUT_GPU();
  // K = 150 > 64: three forward scan chunks, the conv backward's 64-position shared tiles with
  // their halo across tile edges; 4 heads of 8 channels, N = 16 (the thread-per-channel scan).
  run_parity({"B2_K150_N16_conv4", small_cfg(6, 16, 8, 16, 4), 2, 150, 1.0f});
  // d_conv = 32: the conv backward's tile shrinks to 16 positions (shared-memory budget), so
  // K = 70 spans five tiles, each with a 31-position halo.
  run_parity({"B2_K70_N16_conv32", small_cfg(6, 16, 8, 16, 32), 2, 70, 2.0f});
}

TEST(GpuMamba2, BackwardIsDeterministic) {
  FXT_SKIP_WITHOUT_GPU();
  const model::Mamba2Config cfg = real_cfg(40);
  const int batch = 32, seq = 64;
  const float stride = 4.0f;
  const Mamba2GpuDims dims = mamba2_gpu_dims(cfg);
  const model::Mamba2Layout layout = model::mamba2_layout(cfg);
  const Mamba2GpuOffsets off = mamba2_gpu_offsets(layout);
  const size_t rows = static_cast<size_t>(batch) * seq;
  DeviceBuffer<float> params = to_device(make_params(cfg));
  DeviceBuffer<float> x = to_device(random_vector(rows * cfg.in_dim, 31));
  DeviceBuffer<float> dy = to_device(random_vector(rows * cfg.d_model, 32));
  Context ctx;
  Mamba2GpuWorkspace ws;
  ws.resize(dims, batch, seq);

  struct Run {
    std::vector<float> out, grads, d_in;
  };
  const auto run = [&]() {
    DeviceBuffer<float> grads(layout.total), d_in(rows * cfg.in_dim);
    grads.zero();
    d_in.zero();
    mamba2_forward(ctx, dims, off, params.data(), x.data(), stride, &ws);
    mamba2_backward(ctx, dims, off, params.data(), x.data(), stride, dy.data(), &ws, grads.data(),
                    d_in.data());
    ctx.sync();
    return Run{ws.out.download(), grads.download(), d_in.download()};
  };
  const Run a = run(), b = run();
  const auto same_bytes = [](const std::vector<float>& u, const std::vector<float>& v) {
    return u.size() == v.size() && std::memcmp(u.data(), v.data(), u.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same_bytes(a.out, b.out)) << "forward output differs between runs";
  EXPECT_TRUE(same_bytes(a.grads, b.grads)) << "parameter gradients differ between runs";
  EXPECT_TRUE(same_bytes(a.d_in, b.d_in)) << "d_in differs between runs";
}

TEST(GpuMamba2, DimsMatchModelLayout) {
  // Host-only: the conversions agree with the CPU model (runs without a GPU too).
  const model::Mamba2Config cfg = small_cfg(9, 6, 12, 40, 3);
  const Mamba2GpuDims d = mamba2_gpu_dims(cfg);
  EXPECT_EQ(d.d_inner, cfg.d_inner());
  EXPECT_EQ(d.n_heads, cfg.n_heads());
  EXPECT_EQ(d.conv_dim(), cfg.conv_dim());
  EXPECT_EQ(d.proj_dim(), cfg.proj_dim());
  const model::Mamba2Layout l = model::mamba2_layout(cfg);
  const Mamba2GpuOffsets o = mamba2_gpu_offsets(l);
  EXPECT_EQ(o.conv_w, l.conv_w);
  EXPECT_EQ(o.out_proj_w, l.out_proj_w);
  EXPECT_EQ(o.total, l.total);
  EXPECT_EQ(mamba2_gpu_unsupported(d), nullptr);
  Mamba2GpuDims bad = d;
  bad.n_heads += 1;
  EXPECT_NE(mamba2_gpu_unsupported(bad), nullptr);
}

}  // namespace
}  // namespace fxt::gpu
