// GPU variable selection, LayerNorm and attention pool (gpu/ops.h) against the CPU reference ops
// (model/ops.h) on the same inputs: forward within 1e-5, gradients within 1e-4 (relative, with
// a floor of 10% of the tensor's largest magnitude so entries that cancel to ~0 are judged on the
// tensor's scale), at the model's sizes and at odd small ones; backward accumulation (+=) and
// nullptr-skipped gradients; bit-identical repeated runs. Prints the measured worst errors.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "gpu/ops.h"
#include "model/ops.h"
#include "model/tensor.h"

namespace fxt::gpu {
namespace {

using testing::expect_close;
using testing::max_rel_error;
using testing::random_vector;
using testing::to_device;
using testing::to_host;
using CIn = model::TensorView<const float>;
using COut = model::TensorView<float>;

constexpr double kFwdTol = 1e-5;
constexpr double kGradTol = 1e-4;

// Worst error per tensor kind, printed once at exit for docs/GPU.md: first with the floor the
// tolerance applies to (10% of the tensor's scale), then with the plain 1e-3 absolute floor.
struct Worst {
  double scaled = 0.0, plain = 0.0;
};
std::map<std::string, Worst>& worst() {
  static std::map<std::string, Worst> m;
  return m;
}
struct Printer {
  // The map is constructed first, so it is destroyed after this printer (reverse order).
  Printer() { worst(); }
  ~Printer() {
    for (const auto& [k, v] : worst()) {
      std::printf("[gpu-ops] %-22s worst rel error %.3e (floor 1e-3: %.3e)\n", k.c_str(), v.scaled,
                  v.plain);
    }
  }
} printer;

double floor_of(const std::vector<float>& ref) {
  double mx = 0.0;
  for (float v : ref) mx = std::max(mx, static_cast<double>(std::abs(v)));
  return std::max(0.1 * mx, 1e-20);
}
void check(const std::vector<float>& gpu, const std::vector<float>& cpu, double tol,
           const std::string& kind, const std::string& where) {
  const double fl = floor_of(cpu);
  expect_close(gpu, cpu, tol, kind + " " + where, fl);
  Worst& w = worst()[kind];
  w.scaled = std::max(w.scaled, max_rel_error(gpu, cpu, fl));
  w.plain = std::max(w.plain, max_rel_error(gpu, cpu));
}
std::string dims(std::initializer_list<int> d) {
  std::string s;
  for (int v : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v);
  }
  return s;
}
bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- variable selection -------------------------------------------------------------------------

struct VarselOut {
  std::vector<float> y, gates, dx, dw, db;
};

// GPU forward + backward; gradients start at the given values (backward adds).
VarselOut gpu_varsel(const Context& ctx, const std::vector<float>& x, const std::vector<float>& w,
                     const std::vector<float>& b, const std::vector<float>& dy,
                     const std::vector<float>& dx0, const std::vector<float>& dw0,
                     const std::vector<float>& db0, int rows, int f, bool want_dx, bool want_dw,
                     bool want_db) {
  auto dxv = to_device(x), dwv = to_device(w), dbv = to_device(b), ddy = to_device(dy);
  DeviceBuffer<float> y(x.size()), gates(x.size());
  auto ddx = to_device(dx0), ddw = to_device(dw0), ddb = to_device(db0);
  DeviceBuffer<float> scratch(varsel_backward_scratch(rows, f));
  varsel_forward(ctx, dxv.data(), dwv.data(), dbv.data(), y.data(), gates.data(), rows, f);
  varsel_backward(ctx, dxv.data(), dwv.data(), gates.data(), ddy.data(),
                  want_dx ? ddx.data() : nullptr, want_dw ? ddw.data() : nullptr,
                  want_db ? ddb.data() : nullptr, rows, f, scratch.data());
  ctx.sync();
  return {y.download(), gates.download(), ddx.download(), ddw.download(), ddb.download()};
}

void run_varsel(int rows, int f, uint64_t seed, bool want_dx = true, bool want_dw = true,
                bool want_db = true) {
  const std::string where = "varsel " + dims({rows, f});
  const size_t n = static_cast<size_t>(rows) * f;
  const auto x = random_vector(n, seed, -2.0f, 2.0f);
  const auto w = random_vector(static_cast<size_t>(f) * f, seed + 1, -0.5f, 0.5f);
  const auto b = random_vector(static_cast<size_t>(f), seed + 2, -0.5f, 0.5f);
  const auto dy = random_vector(n, seed + 3);
  const auto dx0 = random_vector(n, seed + 4);
  const auto dw0 = random_vector(static_cast<size_t>(f) * f, seed + 5);
  const auto db0 = random_vector(static_cast<size_t>(f), seed + 6);

  // CPU reference.
  model::CpuContext cpu(1);
  std::vector<float> y(n), gates(n), dx = dx0, dw = dw0, db = db0;
  const model::Shape sx{rows, f}, sw{f, f}, sb{f};
  model::varsel_forward<float>(cpu, CIn(x.data(), sx), CIn(w.data(), sw), CIn(b.data(), sb),
                               COut(y.data(), sx), COut(gates.data(), sx));
  model::varsel_backward<float>(cpu, CIn(x.data(), sx), CIn(w.data(), sw), CIn(gates.data(), sx),
                                CIn(dy.data(), sx), want_dx ? COut(dx.data(), sx) : COut(),
                                want_dw ? COut(dw.data(), sw) : COut(),
                                want_db ? COut(db.data(), sb) : COut());

  Context ctx;
  const VarselOut g =
      gpu_varsel(ctx, x, w, b, dy, dx0, dw0, db0, rows, f, want_dx, want_dw, want_db);
  check(g.y, y, kFwdTol, "varsel y", where);
  check(g.gates, gates, kFwdTol, "varsel gates", where);
  check(g.dx, dx, kGradTol, "varsel dx", where);
  check(g.dw, dw, kGradTol, "varsel dw", where);
  check(g.db, db, kGradTol, "varsel db", where);
  if (!want_dx) {
    EXPECT_TRUE(same_bytes(g.dx, dx0)) << where << ": dx touched although nullptr";
  }
  if (!want_dw) {
    EXPECT_TRUE(same_bytes(g.dw, dw0)) << where << ": dw touched although nullptr";
  }
  if (!want_db) {
    EXPECT_TRUE(same_bytes(g.db, db0)) << where << ": db touched although nullptr";
  }
}

TEST(GpuOps, VarselModelSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_varsel(32 * 64, 40, 11);
  run_varsel(4 * 64, 40, 12);
}

TEST(GpuOps, VarselOddSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_varsel(3 * 5, 40, 21);
  run_varsel(1, 40, 22);
  run_varsel(13, 7, 23);  // fewer features than lanes
  run_varsel(9, 45, 24);  // more features than lanes, rows not a multiple of the 8 per block
  run_varsel(70, 33, 25);
}

TEST(GpuOps, VarselSkipsNullGradients) {
  FXT_SKIP_WITHOUT_GPU();
  run_varsel(15, 40, 31, true, false, false);
  run_varsel(15, 40, 32, false, true, false);
  run_varsel(15, 40, 33, false, false, true);
}

// ---- LayerNorm ----------------------------------------------------------------------------------

void run_layernorm(int rows, int cols, uint64_t seed, bool want_dx = true, bool want_dw = true,
                   bool want_db = true) {
  const std::string where = "layernorm " + dims({rows, cols});
  const size_t n = static_cast<size_t>(rows) * cols;
  auto x = random_vector(n, seed, -3.0f, 3.0f);
  for (size_t i = 0; i < n; ++i) x[i] += static_cast<float>(i / cols % 5);  // row offsets
  const auto w = random_vector(static_cast<size_t>(cols), seed + 1, 0.5f, 1.5f);
  const auto b = random_vector(static_cast<size_t>(cols), seed + 2, -0.5f, 0.5f);
  const auto dy = random_vector(n, seed + 3);
  const auto dx0 = random_vector(n, seed + 4);
  const auto dw0 = random_vector(static_cast<size_t>(cols), seed + 5);
  const auto db0 = random_vector(static_cast<size_t>(cols), seed + 6);

  model::CpuContext cpu(1);
  std::vector<float> y(n), mean(rows), rstd(rows), dx = dx0, dw = dw0, db = db0;
  const model::Shape sx{rows, cols}, sc{cols}, sr{rows};
  model::layernorm_forward<float>(cpu, CIn(x.data(), sx), CIn(w.data(), sc), CIn(b.data(), sc),
                                  COut(y.data(), sx), COut(mean.data(), sr), COut(rstd.data(), sr));
  model::layernorm_backward<float>(
      cpu, CIn(x.data(), sx), CIn(w.data(), sc), CIn(mean.data(), sr), CIn(rstd.data(), sr),
      CIn(dy.data(), sx), want_dx ? COut(dx.data(), sx) : COut(),
      want_dw ? COut(dw.data(), sc) : COut(), want_db ? COut(db.data(), sc) : COut());

  Context ctx;
  auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
  DeviceBuffer<float> gy(n), gmean(rows), grstd(rows);
  auto gdx = to_device(dx0), gdw = to_device(dw0), gdb = to_device(db0);
  DeviceBuffer<float> scratch(layernorm_backward_scratch(rows, cols));
  layernorm_forward(ctx, gx.data(), gw.data(), gb.data(), gy.data(), gmean.data(), grstd.data(),
                    rows, cols);
  layernorm_backward(ctx, gx.data(), gw.data(), gmean.data(), grstd.data(), gdy.data(),
                     want_dx ? gdx.data() : nullptr, want_dw ? gdw.data() : nullptr,
                     want_db ? gdb.data() : nullptr, rows, cols, scratch.data());
  ctx.sync();
  check(gy.download(), y, kFwdTol, "layernorm y", where);
  check(gmean.download(), mean, kFwdTol, "layernorm mean", where);
  check(grstd.download(), rstd, kFwdTol, "layernorm rstd", where);
  check(gdx.download(), dx, kGradTol, "layernorm dx", where);
  check(gdw.download(), dw, kGradTol, "layernorm dw", where);
  check(gdb.download(), db, kGradTol, "layernorm db", where);
  if (!want_dx) {
    EXPECT_TRUE(same_bytes(gdx.download(), dx0)) << where << ": dx touched";
  }
  if (!want_dw) {
    EXPECT_TRUE(same_bytes(gdw.download(), dw0)) << where << ": dw touched";
  }
  if (!want_db) {
    EXPECT_TRUE(same_bytes(gdb.download(), db0)) << where << ": db touched";
  }
}

TEST(GpuOps, LayerNormModelSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_layernorm(32 * 64, 128, 41);
  run_layernorm(4 * 64, 128, 42);
  run_layernorm(32, 128, 43);  // the pooled context [B, D]
}

TEST(GpuOps, LayerNormOddSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_layernorm(3 * 5, 37, 51);
  run_layernorm(1, 128, 52);
  run_layernorm(33, 5, 53);  // tile boundary (32 rows) crossed by one row; fewer cols than lanes
  run_layernorm(100, 130, 54);
}

// add_layernorm_forward: the same bits as add_inplace onto a copy, then layernorm_forward.
TEST(GpuOps, AddLayerNormIsAddThenLayerNorm) {
  FXT_SKIP_WITHOUT_GPU();
  for (const auto& [rows, cols] : {std::pair{64, 128}, std::pair{33, 5}, std::pair{1, 130}}) {
    const size_t n = static_cast<size_t>(rows) * cols;
    const auto a = random_vector(n, 71), x = random_vector(n, 72);
    const auto w = random_vector(static_cast<size_t>(cols), 73, 0.5f, 1.5f);
    const auto b = random_vector(static_cast<size_t>(cols), 74, -0.5f, 0.5f);
    Context ctx;
    auto ga = to_device(a), gx = to_device(x), gw = to_device(w), gb = to_device(b);
    DeviceBuffer<float> sum(n), y(n), mean(rows), rstd(rows);
    add_layernorm_forward(ctx, ga.data(), gx.data(), sum.data(), gw.data(), gb.data(), y.data(),
                          mean.data(), rstd.data(), rows, cols);
    auto sum2 = to_device(x);
    DeviceBuffer<float> y2(n), mean2(rows), rstd2(rows);
    add_inplace(ctx, ga.data(), sum2.data(), n);
    layernorm_forward(ctx, sum2.data(), gw.data(), gb.data(), y2.data(), mean2.data(), rstd2.data(),
                      rows, cols);
    ctx.sync();
    const std::string where = std::to_string(rows) + "x" + std::to_string(cols);
    EXPECT_TRUE(same_bytes(sum.download(), sum2.download())) << where << " sum";
    EXPECT_TRUE(same_bytes(y.download(), y2.download())) << where << " y";
    EXPECT_TRUE(same_bytes(mean.download(), mean2.download())) << where << " mean";
    EXPECT_TRUE(same_bytes(rstd.download(), rstd2.download())) << where << " rstd";
    // And the sum is the sum: a concrete element.
    EXPECT_EQ(sum.download()[n - 1], x[n - 1] + a[n - 1]) << where;
  }
}

TEST(GpuOps, LayerNormSkipsNullGradients) {
  FXT_SKIP_WITHOUT_GPU();
  run_layernorm(40, 64, 61, true, false, false);
  run_layernorm(40, 64, 62, false, true, false);
  run_layernorm(40, 64, 63, false, false, true);
}

// ---- attention pool -----------------------------------------------------------------------------

void run_attn_pool(int batch, int k, int d, uint64_t seed, bool want_dh = true,
                   bool want_dq = true) {
  const std::string where = "attn_pool " + dims({batch, k, d});
  const size_t nh = static_cast<size_t>(batch) * k * d;
  const auto h = random_vector(nh, seed, -2.0f, 2.0f);
  const auto q = random_vector(static_cast<size_t>(d), seed + 1, -1.5f, 1.5f);
  const auto dc = random_vector(static_cast<size_t>(batch) * d, seed + 2);
  const auto dh0 = random_vector(nh, seed + 3);
  const auto dq0 = random_vector(static_cast<size_t>(d), seed + 4);

  model::CpuContext cpu(1);
  std::vector<float> c(static_cast<size_t>(batch) * d), attn(static_cast<size_t>(batch) * k);
  std::vector<float> dh = dh0, dq = dq0;
  const model::Shape sh{batch, k, d}, sq{d}, sc{batch, d}, sa{batch, k};
  model::attn_pool_forward<float>(cpu, CIn(h.data(), sh), CIn(q.data(), sq), COut(c.data(), sc),
                                  COut(attn.data(), sa));
  model::attn_pool_backward<float>(cpu, CIn(h.data(), sh), CIn(q.data(), sq), CIn(attn.data(), sa),
                                   CIn(dc.data(), sc), want_dh ? COut(dh.data(), sh) : COut(),
                                   want_dq ? COut(dq.data(), sq) : COut());

  Context ctx;
  auto gh = to_device(h), gq = to_device(q), gdc = to_device(dc);
  DeviceBuffer<float> gc(c.size()), gattn(attn.size());
  auto gdh = to_device(dh0), gdq = to_device(dq0);
  DeviceBuffer<float> scratch(attn_pool_backward_scratch(batch, d));
  attn_pool_forward(ctx, gh.data(), gq.data(), gc.data(), gattn.data(), batch, k, d);
  attn_pool_backward(ctx, gh.data(), gq.data(), gattn.data(), gdc.data(),
                     want_dh ? gdh.data() : nullptr, want_dq ? gdq.data() : nullptr, batch, k, d,
                     scratch.data());
  ctx.sync();
  check(gc.download(), c, kFwdTol, "attn_pool c", where);
  check(gattn.download(), attn, kFwdTol, "attn_pool attn", where);
  check(gdh.download(), dh, kGradTol, "attn_pool dh", where);
  check(gdq.download(), dq, kGradTol, "attn_pool dq", where);
  if (!want_dh) {
    EXPECT_TRUE(same_bytes(gdh.download(), dh0)) << where << ": dh touched";
  }
  if (!want_dq) {
    EXPECT_TRUE(same_bytes(gdq.download(), dq0)) << where << ": dq touched";
  }
}

TEST(GpuOps, AttnPoolModelSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_attn_pool(32, 64, 128, 71);
  run_attn_pool(4, 64, 128, 72);
}

TEST(GpuOps, AttnPoolOddSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_attn_pool(3, 5, 37, 81);
  run_attn_pool(1, 1, 128, 82);   // one position: weight 1, score gradient 0
  run_attn_pool(5, 70, 130, 83);  // more positions than the 32 lanes of the softmax warp
  run_attn_pool(2, 64, 16, 84);
}

TEST(GpuOps, AttnPoolSkipsNullGradients) {
  FXT_SKIP_WITHOUT_GPU();
  run_attn_pool(3, 9, 20, 91, true, false);
  run_attn_pool(3, 9, 20, 92, false, true);
}

// Mean pooling at init: q = 0 gives uniform weights and c = mean_k h_k.
TEST(GpuOps, AttnPoolZeroQueryIsMean) {
  FXT_SKIP_WITHOUT_GPU();
  const int batch = 3, k = 8, d = 16;
  const auto h = random_vector(static_cast<size_t>(batch) * k * d, 5);
  Context ctx;
  auto gh = to_device(h), gq = to_device(std::vector<float>(d, 0.0f));
  DeviceBuffer<float> gc(static_cast<size_t>(batch) * d), gattn(static_cast<size_t>(batch) * k);
  attn_pool_forward(ctx, gh.data(), gq.data(), gc.data(), gattn.data(), batch, k, d);
  const auto c = gc.download(), a = gattn.download();
  for (float v : a) EXPECT_FLOAT_EQ(v, 1.0f / k);
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < d; ++i) {
      double s = 0;
      for (int j = 0; j < k; ++j) s += h[(static_cast<size_t>(b) * k + j) * d + i];
      EXPECT_NEAR(c[static_cast<size_t>(b) * d + i], s / k, 1e-6);
    }
  }
}

// ---- determinism: two runs of every op, forward and backward, give identical bytes -------------

TEST(GpuOps, Deterministic) {
  FXT_SKIP_WITHOUT_GPU();
  const int rows = 32 * 64, f = 40, cols = 128, batch = 32, k = 64, d = 128;
  Context ctx;
  auto run = [&]() {
    std::vector<std::vector<float>> out;
    // variable selection
    {
      const size_t n = static_cast<size_t>(rows) * f;
      const auto x = random_vector(n, 101), dy = random_vector(n, 102);
      const auto w = random_vector(static_cast<size_t>(f) * f, 103),
                 b = random_vector(static_cast<size_t>(f), 104);
      const VarselOut g = gpu_varsel(ctx, x, w, b, dy, std::vector<float>(n, 0.0f),
                                     std::vector<float>(w.size(), 0.0f),
                                     std::vector<float>(b.size(), 0.0f), rows, f, true, true, true);
      out.insert(out.end(), {g.y, g.gates, g.dx, g.dw, g.db});
    }
    // LayerNorm
    {
      const size_t n = static_cast<size_t>(rows) * cols;
      auto gx = to_device(random_vector(n, 111)), gdy = to_device(random_vector(n, 112));
      auto gw = to_device(random_vector(static_cast<size_t>(cols), 113, 0.5f, 1.5f));
      auto gb = to_device(random_vector(static_cast<size_t>(cols), 114));
      DeviceBuffer<float> y(n), mean(rows), rstd(rows), dx(n), dw(cols), db(cols);
      DeviceBuffer<float> scratch(layernorm_backward_scratch(rows, cols));
      dx.zero(), dw.zero(), db.zero();
      layernorm_forward(ctx, gx.data(), gw.data(), gb.data(), y.data(), mean.data(), rstd.data(),
                        rows, cols);
      layernorm_backward(ctx, gx.data(), gw.data(), mean.data(), rstd.data(), gdy.data(), dx.data(),
                         dw.data(), db.data(), rows, cols, scratch.data());
      ctx.sync();
      out.insert(out.end(), {y.download(), mean.download(), rstd.download(), dx.download(),
                             dw.download(), db.download()});
    }
    // attention pool
    {
      const size_t nh = static_cast<size_t>(batch) * k * d;
      auto gh = to_device(random_vector(nh, 121));
      auto gq = to_device(random_vector(static_cast<size_t>(d), 122));
      auto gdc = to_device(random_vector(static_cast<size_t>(batch) * d, 123));
      DeviceBuffer<float> c(static_cast<size_t>(batch) * d), attn(static_cast<size_t>(batch) * k),
          dh(nh), dq(d), scratch(attn_pool_backward_scratch(batch, d));
      dh.zero(), dq.zero();
      attn_pool_forward(ctx, gh.data(), gq.data(), c.data(), attn.data(), batch, k, d);
      attn_pool_backward(ctx, gh.data(), gq.data(), attn.data(), gdc.data(), dh.data(), dq.data(),
                         batch, k, d, scratch.data());
      ctx.sync();
      out.insert(out.end(), {c.download(), attn.download(), dh.download(), dq.download()});
    }
    return out;
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bytes(a[i], b[i])) << "output " << i;
}

}  // namespace
}  // namespace fxt::gpu
