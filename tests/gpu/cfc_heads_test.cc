// GPU CfC recurrence and gated residual heads (gpu/cfc_heads.h) against the CPU reference ops
// (model::cfc_forward / cfc_backward, model::head_forward / head_backward) run in double on the
// same float-representable random inputs and parameters: forward within 1e-5, gradients within
// 1e-4 (normwise relative error, or at most 1.5 x the CPU float path's own where that is larger);
// and elementwise within max(5e-4, 16 x the same ops' CPU-float-vs-CPU-double error), with a
// floor of 1% of the tensor's largest magnitude so entries
// that cancel to ~0 are judged on the tensor's scale (gpu_test_util.h, expect_parity).
// Sizes: the model's (D = 128, K = 64, B = 4 and 32) and odd small ones that
// exercise partial chunks, idle lanes and every kernel variant (Q = 1, 2, 4 and the generic
// D > 128 path). Also: backward accumulation (+=) into non-zero gradients, nullptr-skipped
// gradients, the trunk scale lambda touching only ds, bit-identical repeated runs, and
// gather_last_positions, CUDA Graph capture/replay = eager. Prints the measured worst errors per
// tensor (vs double, vs float, float vs double) and the time per call of each op at B = 1, 32,
// 256.
#include "gpu/cfc_heads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "model/cfc.h"
#include "model/ops.h"
#include "model/tensor.h"

namespace fxt::gpu {
namespace {

using testing::expect_parity;
using testing::max_abs_f64;
using testing::ParityErrors;
using testing::random_vector;
using testing::to_device;
using testing::to_host;

constexpr double kFwdTol = 1e-5;
constexpr double kGradTol = 1e-4;

// Worst errors per tensor kind over all cases, printed once at exit (docs/GPU.md quotes them).
struct Worst {
  double vs_f64 = 0.0, vs_f32 = 0.0, f32_vs_f64 = 0.0;
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
      std::printf("[gpu-cfc-heads] %-22s worst rel error: gpu-cpu(f64) %.3e  gpu-cpu(f32) %.3e  "
                  "cpu(f32)-cpu(f64) %.3e\n",
                  k.c_str(), v.vs_f64, v.vs_f32, v.f32_vs_f64);
    }
  }
} printer;

// Floor: 1% of the tensor's largest magnitude (of the double reference).
double floor_of(const std::vector<double>& ref) {
  return std::max(1e-2 * max_abs_f64(ref), 1e-20);
}
// Normwise GPU vs the CPU double reference <= tol (1e-5 forward, 1e-4 gradients; or the CPU float
// path's own error x1.5) and elementwise vs double <= max(5e-4, 16 x CPU float vs double)
// (expect_parity); prints the errors.
void check(const std::vector<float>& gpu, const std::vector<float>& cpu32,
           const std::vector<double>& cpu64, double tol, const std::string& kind,
           const std::string& where) {
  const double fl = floor_of(cpu64);
  const ParityErrors e = expect_parity(gpu, cpu32, cpu64, tol, kind + " " + where, fl);
  std::printf(
      "[gpu-cfc-heads %-24s] %-22s gpu-cpu(f64) %.3e (tol %.0e)  gpu-cpu(f32) %.3e "
      "(bound %.3e)  cpu(f32)-cpu(f64) %.3e  norm: gpu-cpu(f64) %.3e cpu(f32)-cpu(f64) %.3e\n",
      where.c_str(), kind.c_str(), e.vs_f64, tol, e.vs_f32, e.f32_bound, e.f32_vs_f64,
      e.norm_vs_f64, e.norm_f32_vs_f64);
  Worst& w = worst()[kind];
  w.vs_f64 = std::max(w.vs_f64, e.vs_f64);
  w.vs_f32 = std::max(w.vs_f32, e.vs_f32);
  w.f32_vs_f64 = std::max(w.f32_vs_f64, e.f32_vs_f64);
}
bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
template <typename T>
std::vector<T> slice(const std::vector<T>& v, size_t at, size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(at),
          v.begin() + static_cast<std::ptrdiff_t>(at + n)};
}
template <typename T>
std::vector<T> cast(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// ================================================================================================
// CfC
// ================================================================================================

enum class DtMode { kConst, kPerPosition };

struct CfcCase {
  int batch, seq_len, in_dim, hidden;
  DtMode mode;
  float dt_const;
  uint64_t seed;
  std::string name() const {
    char buf[96];
    if (mode == DtMode::kConst) {
      std::snprintf(buf, sizeof buf, "B%d K%d in%d D%d dt=%g", batch, seq_len, in_dim, hidden,
                    static_cast<double>(dt_const));
    } else {
      std::snprintf(buf, sizeof buf, "B%d K%d in%d D%d dt[]", batch, seq_len, in_dim, hidden);
    }
    return buf;
  }
};

struct CfcProblem {
  model::CfcConfig cfg;
  CfcCase cs;
  std::vector<float> params, h, c, dt, d_s, grads0, d_h0, d_c0;

  explicit CfcProblem(const CfcCase& k) : cs(k) {
    cfg.in_dim = k.in_dim;
    cfg.hidden = k.hidden;
    const model::CfcLayout l = model::cfc_layout(cfg);
    params.resize(l.total);
    model::cfc_init(cfg, params.data(), k.seed);
    // Move bias and tau_raw off their init so every term of the cell is exercised.
    const auto bias = random_vector(k.hidden, k.seed + 1, -0.5f, 0.5f);
    const auto traw = random_vector(k.hidden, k.seed + 2, -1.0f, 2.0f);  // tau ~ [0.41, 2.2]
    std::copy(bias.begin(), bias.end(), params.begin() + static_cast<std::ptrdiff_t>(l.bias));
    std::copy(traw.begin(), traw.end(), params.begin() + static_cast<std::ptrdiff_t>(l.tau_raw));
    const size_t rows = static_cast<size_t>(k.batch) * k.seq_len;
    h = random_vector(rows * k.in_dim, k.seed + 3, -1.5f, 1.5f);
    c = random_vector(static_cast<size_t>(k.batch) * k.hidden, k.seed + 4);
    if (k.mode == DtMode::kPerPosition) dt = random_vector(rows, k.seed + 5, 0.1f, 3.0f);
    d_s = random_vector(rows * k.hidden, k.seed + 6);
    // Backward adds: start every gradient at non-zero values.
    grads0 = random_vector(l.total, k.seed + 7, -0.1f, 0.1f);
    d_h0 = random_vector(rows * k.in_dim, k.seed + 8, -0.1f, 0.1f);
    d_c0 = random_vector(static_cast<size_t>(k.batch) * k.hidden, k.seed + 9, -0.1f, 0.1f);
  }
  const float* dt_ptr() const { return dt.empty() ? nullptr : dt.data(); }
};

template <typename T>
struct CfcResultT {
  std::vector<T> out, act, s_prev, grads, d_h, d_c;
};
using CfcResult = CfcResultT<float>;

// The CPU reference in precision T on the problem's (float) inputs and parameters.
template <typename T>
CfcResultT<T> cpu_cfc(const CfcProblem& p, bool want_dh, bool want_dc) {
  const std::vector<T> params = cast<T>(p.params), h = cast<T>(p.h), c = cast<T>(p.c);
  const std::vector<T> dt = cast<T>(p.dt), d_s = cast<T>(p.d_s);
  const T* dtp = dt.empty() ? nullptr : dt.data();
  const T dt_const = static_cast<T>(p.cs.dt_const);
  model::CfcWorkspace<T> ws;
  ws.resize(p.cfg, p.cs.batch, p.cs.seq_len);
  model::cfc_forward(p.cfg, params.data(), h.data(), c.data(), dtp, dt_const, &ws);
  CfcResultT<T> r;
  r.grads = cast<T>(p.grads0);
  r.d_h = cast<T>(p.d_h0);
  r.d_c = cast<T>(p.d_c0);
  model::cfc_backward(p.cfg, params.data(), h.data(), dtp, dt_const, d_s.data(), &ws,
                      r.grads.data(), want_dh ? r.d_h.data() : nullptr,
                      want_dc ? r.d_c.data() : nullptr);
  r.out = ws.out;
  r.act = ws.act;
  r.s_prev = ws.s_prev;
  return r;
}

CfcResult gpu_cfc(const Context& ctx, const CfcProblem& p, bool want_dh, bool want_dc) {
  const CfcDims dims{p.cs.batch, p.cs.seq_len, p.cs.in_dim, p.cs.hidden};
  const CfcOffsets o = cfc_offsets(p.cs.in_dim, p.cs.hidden);
  auto params = to_device(p.params), h = to_device(p.h), c = to_device(p.c), d_s = to_device(p.d_s);
  auto grads = to_device(p.grads0), d_h = to_device(p.d_h0), d_c = to_device(p.d_c0);
  DeviceBuffer<float> dt;
  if (!p.dt.empty()) dt = to_device(p.dt);
  DeviceBuffer<float> wsbuf(cfc_workspace_floats(dims));
  const CfcWorkspace ws = cfc_workspace_carve(dims, wsbuf.data());
  const float* dtp = p.dt.empty() ? nullptr : dt.data();
  cfc_forward(ctx, dims, o, params.data(), h.data(), c.data(), dtp, p.cs.dt_const, ws);
  cfc_backward(ctx, dims, o, params.data(), h.data(), dtp, p.cs.dt_const, d_s.data(), ws,
               grads.data(), want_dh ? d_h.data() : nullptr, want_dc ? d_c.data() : nullptr);
  ctx.sync();
  const size_t n = static_cast<size_t>(p.cs.batch) * p.cs.seq_len * p.cs.hidden;
  CfcResult r;
  r.out = to_host(ws.out, n);
  r.act = to_host(ws.act, n);
  r.s_prev = to_host(ws.s_prev, n);
  r.grads = grads.download();
  r.d_h = d_h.download();
  r.d_c = d_c.download();
  return r;
}

// g: GPU; r: CPU float; r64: CPU double.
void compare_cfc(const CfcProblem& p, const CfcResult& g, const CfcResult& r,
                 const CfcResultT<double>& r64) {
  const std::string w = p.cs.name();
  const model::CfcLayout l = model::cfc_layout(p.cfg);
  check(g.out, r.out, r64.out, kFwdTol, "cfc.s", w);
  check(g.act, r.act, r64.act, kFwdTol, "cfc.tanh", w);
  check(g.s_prev, r.s_prev, r64.s_prev, kFwdTol, "cfc.s_prev", w);
  const size_t d = static_cast<size_t>(p.cs.hidden);
  const auto grad = [&](size_t at, size_t n, const char* kind) {
    check(slice(g.grads, at, n), slice(r.grads, at, n), slice(r64.grads, at, n), kGradTol, kind, w);
  };
  grad(l.w_in, d * static_cast<size_t>(p.cs.in_dim), "cfc.d_w_in");
  grad(l.w_rec, d * d, "cfc.d_w_rec");
  grad(l.bias, d, "cfc.d_bias");
  grad(l.tau_raw, d, "cfc.d_tau_raw");
  check(g.d_h, r.d_h, r64.d_h, kGradTol, "cfc.d_h", w);
  check(g.d_c, r.d_c, r64.d_c, kGradTol, "cfc.d_c", w);
}

void run_cfc_case(const CfcCase& k) {
  SCOPED_TRACE(k.name());
  Context ctx;
  const CfcProblem p(k);
  // The offsets the GPU op takes must be the CPU layout.
  const model::CfcLayout l = model::cfc_layout(p.cfg);
  const CfcOffsets o = cfc_offsets(k.in_dim, k.hidden);
  ASSERT_EQ(o.w_in, l.w_in);
  ASSERT_EQ(o.w_rec, l.w_rec);
  ASSERT_EQ(o.bias, l.bias);
  ASSERT_EQ(o.tau_raw, l.tau_raw);
  ASSERT_EQ(o.total, l.total);
  compare_cfc(p, gpu_cfc(ctx, p, true, true), cpu_cfc<float>(p, true, true),
              cpu_cfc<double>(p, true, true));
}

TEST(GpuCfc, ModelSizeB4ConstDt1) {
  FXT_SKIP_WITHOUT_GPU();
  run_cfc_case({4, 64, 128, 128, DtMode::kConst, 1.0f, 11});
}
TEST(GpuCfc, ModelSizeB32ConstDt1) {
  FXT_SKIP_WITHOUT_GPU();
  run_cfc_case({32, 64, 128, 128, DtMode::kConst, 1.0f, 12});
}
TEST(GpuCfc, ModelSizeB32ConstDt4) {
  FXT_SKIP_WITHOUT_GPU();
  run_cfc_case({32, 64, 128, 128, DtMode::kConst, 4.0f, 13});
}
TEST(GpuCfc, ModelSizeB4PerPositionDt) {
  FXT_SKIP_WITHOUT_GPU();
  run_cfc_case({4, 64, 128, 128, DtMode::kPerPosition, 1.0f, 14});
}
TEST(GpuCfc, ModelSizeB32PerPositionDt) {
  FXT_SKIP_WITHOUT_GPU();
  run_cfc_case({32, 64, 128, 128, DtMode::kPerPosition, 1.0f, 15});
}
TEST(GpuCfc, OddSmallSizes) {
  FXT_SKIP_WITHOUT_GPU();
  // Q = 1 (D <= 32) with half the lanes idle; K shorter than one staging chunk.
  run_cfc_case({3, 5, 16, 16, DtMode::kConst, 1.0f, 21});
  run_cfc_case({3, 5, 24, 16, DtMode::kPerPosition, 1.0f, 22});
  // Q = 2 (D in (32, 64]), K crossing several forward and backward chunks, odd in_dim.
  run_cfc_case({3, 19, 7, 40, DtMode::kPerPosition, 1.0f, 23});
  // Q = 4 with idle channels (D = 100), K = 37: partial last chunks both ways.
  run_cfc_case({5, 37, 40, 100, DtMode::kConst, 4.0f, 24});
  // Generic path (D > 128).
  run_cfc_case({3, 7, 24, 160, DtMode::kPerPosition, 1.0f, 25});
  run_cfc_case({2, 5, 16, 136, DtMode::kConst, 1.0f, 26});
}

TEST(GpuCfc, SkipsNullInputGradients) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const CfcProblem p({3, 9, 20, 48, DtMode::kConst, 1.0f, 31});
  const CfcResult g = gpu_cfc(ctx, p, false, false);
  const CfcResult r = cpu_cfc<float>(p, false, false);
  const CfcResultT<double> r64 = cpu_cfc<double>(p, false, false);
  EXPECT_TRUE(same_bytes(g.d_h, p.d_h0));  // untouched
  EXPECT_TRUE(same_bytes(g.d_c, p.d_c0));
  check(g.grads, r.grads, r64.grads, kGradTol, "cfc.grads(no d_h,d_c)", p.cs.name());
}

TEST(GpuCfc, Deterministic) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  for (const CfcCase& k : {CfcCase{32, 64, 128, 128, DtMode::kPerPosition, 1.0f, 41},
                           CfcCase{3, 7, 24, 160, DtMode::kConst, 1.0f, 42}}) {
    const CfcProblem p(k);
    const CfcResult a = gpu_cfc(ctx, p, true, true);
    const CfcResult b = gpu_cfc(ctx, p, true, true);
    EXPECT_TRUE(same_bytes(a.out, b.out)) << k.name();
    EXPECT_TRUE(same_bytes(a.grads, b.grads)) << k.name();
    EXPECT_TRUE(same_bytes(a.d_h, b.d_h)) << k.name();
    EXPECT_TRUE(same_bytes(a.d_c, b.d_c)) << k.name();
  }
}

// ================================================================================================
// Heads
// ================================================================================================

struct HeadCase {
  int rows, heads, d, mid;
  bool lambda;  // non-trivial trunk scale (else nullptr = ones)
  uint64_t seed;
  std::string name() const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "R%d H%d D%d mid%d%s", rows, heads, d, mid,
                  lambda ? " lambda" : "");
    return buf;
  }
};

struct HeadProblem {
  HeadCase cs;
  model::HeadLayout l;
  std::vector<float> params, s, dlogits, lambda, ds0, dparams0;
  explicit HeadProblem(const HeadCase& k) : cs(k), l(model::head_layout(k.d, k.mid)) {
    params.resize(static_cast<size_t>(k.heads * l.size));
    model::head_init<float>(l, model::TensorView<float>(params.data(), {k.heads, l.size}), k.seed);
    // Non-zero biases so every bias path is exercised.
    for (int h = 0; h < k.heads; ++h) {
      float* p = params.data() + h * l.size;
      const auto b1 = random_vector(k.mid, k.seed + 10 + h, -0.3f, 0.3f);
      const auto b2 = random_vector(k.mid, k.seed + 20 + h, -0.3f, 0.3f);
      std::copy(b1.begin(), b1.end(), p + l.b1);
      std::copy(b2.begin(), b2.end(), p + l.b2);
      const auto fh = static_cast<float>(h);
      p[l.bg] = 0.2f - 0.1f * fh;
      p[l.bm] = -0.15f + 0.07f * fh;
      p[l.bs] = 0.05f * fh - 0.1f;
    }
    s = random_vector(static_cast<size_t>(k.rows) * k.d, k.seed + 1, -1.5f, 1.5f);
    dlogits = random_vector(static_cast<size_t>(k.rows) * k.heads, k.seed + 2);
    const float lam[] = {1.0f, 1.5f, 2.0f, 1.2f, 1.7f};
    if (k.lambda) {
      for (int h = 0; h < k.heads; ++h) lambda.push_back(lam[h % 5] + 0.01f * static_cast<float>(h / 5));
    }
    ds0 = random_vector(s.size(), k.seed + 3, -0.1f, 0.1f);
    dparams0 = random_vector(params.size(), k.seed + 4, -0.1f, 0.1f);
  }
  size_t zn() const { return static_cast<size_t>(cs.heads) * cs.rows * cs.mid; }
};

template <typename T>
struct HeadResultT {
  std::vector<T> logits, z1, z2, ds, dparams;
};
using HeadResult = HeadResultT<float>;

// The CPU reference in precision T on the problem's (float) inputs and parameters.
template <typename T>
HeadResultT<T> cpu_heads(const HeadProblem& p, bool lambda) {
  using CIn = model::TensorView<const T>;
  using COut = model::TensorView<T>;
  const int64_t R = p.cs.rows, H = p.cs.heads, D = p.cs.d, M = p.cs.mid;
  const std::vector<T> s_in = cast<T>(p.s), params_in = cast<T>(p.params);
  const std::vector<T> dlogits = cast<T>(p.dlogits), lam = cast<T>(p.lambda);
  model::CpuContext ctx(1);
  HeadResultT<T> r;
  r.logits.assign(static_cast<size_t>(R * H), T(0));
  r.z1.assign(p.zn(), T(0));
  r.z2.assign(p.zn(), T(0));
  r.ds = cast<T>(p.ds0);
  r.dparams = cast<T>(p.dparams0);
  const CIn s(s_in.data(), {R, D}), params(params_in.data(), {H, p.l.size});
  model::head_forward<T>(ctx, p.l, s, params, COut(r.logits.data(), {R, H}),
                         COut(r.z1.data(), {H, R, M}), COut(r.z2.data(), {H, R, M}));
  const CIn scale = lambda ? CIn(lam.data(), {H}) : CIn();
  model::head_backward<T>(ctx, p.l, s, params, CIn(r.z1.data(), {H, R, M}),
                          CIn(r.z2.data(), {H, R, M}), CIn(dlogits.data(), {R, H}), scale,
                          COut(r.ds.data(), {R, D}), COut(r.dparams.data(), {H, p.l.size}));
  return r;
}

HeadResult gpu_heads(const Context& ctx, const HeadProblem& p, bool lambda, bool want_ds) {
  const HeadDims dims{p.cs.rows, p.cs.heads, p.cs.d, p.cs.mid};
  const HeadOffsets o = head_offsets(p.cs.d, p.cs.mid);
  auto params = to_device(p.params), s = to_device(p.s), dl = to_device(p.dlogits);
  auto ds = to_device(p.ds0), dparams = to_device(p.dparams0);
  DeviceBuffer<float> lam;
  if (lambda) lam = to_device(p.lambda);
  DeviceBuffer<float> logits(static_cast<size_t>(p.cs.rows) * p.cs.heads), z1(p.zn()), z2(p.zn());
  DeviceBuffer<float> scratch(
      std::max(heads_forward_scratch_floats(dims), heads_backward_scratch_floats(dims)));
  heads_forward(ctx, dims, o, params.data(), s.data(), logits.data(), z1.data(), z2.data(),
                scratch.data());
  heads_backward(ctx, dims, o, params.data(), s.data(), z1.data(), z2.data(), dl.data(),
                 lambda ? lam.data() : nullptr, want_ds ? ds.data() : nullptr, dparams.data(),
                 scratch.data());
  ctx.sync();
  return {logits.download(), z1.download(), z2.download(), ds.download(), dparams.download()};
}

// g: GPU; r: CPU float; r64: CPU double.
void compare_heads(const HeadProblem& p, const HeadResult& g, const HeadResult& r,
                   const HeadResultT<double>& r64) {
  const std::string w = p.cs.name();
  check(g.logits, r.logits, r64.logits, kFwdTol, "heads.logits", w);
  check(g.z1, r.z1, r64.z1, kFwdTol, "heads.z1", w);
  check(g.z2, r.z2, r64.z2, kFwdTol, "heads.z2", w);
  check(g.ds, r.ds, r64.ds, kGradTol, "heads.ds", w);
  // Every parameter tensor of every head on its own scale.
  const model::HeadLayout& l = p.l;
  const struct {
    const char* name;
    int64_t off, n;
  } parts[] = {{"w1", l.w1, l.mid * l.d}, {"b1", l.b1, l.mid}, {"w2", l.w2, l.mid * l.mid},
               {"b2", l.b2, l.mid},       {"wg", l.wg, l.mid}, {"bg", l.bg, 1},
               {"wm", l.wm, l.mid},       {"bm", l.bm, 1},     {"ws", l.ws, l.d},
               {"bs", l.bs, 1}};
  for (const auto& part : parts) {
    std::vector<float> gp, rp;
    std::vector<double> rp64;
    for (int h = 0; h < p.cs.heads; ++h) {
      const size_t at = static_cast<size_t>(h * l.size + part.off);
      const auto a = slice(g.dparams, at, static_cast<size_t>(part.n));
      const auto b = slice(r.dparams, at, static_cast<size_t>(part.n));
      const auto b64 = slice(r64.dparams, at, static_cast<size_t>(part.n));
      gp.insert(gp.end(), a.begin(), a.end());
      rp.insert(rp.end(), b.begin(), b.end());
      rp64.insert(rp64.end(), b64.begin(), b64.end());
    }
    check(gp, rp, rp64, kGradTol, std::string("heads.d_") + part.name, w);
  }
}

void run_head_case(const HeadCase& k) {
  SCOPED_TRACE(k.name());
  Context ctx;
  const HeadProblem p(k);
  const HeadOffsets o = head_offsets(k.d, k.mid);
  ASSERT_EQ(o.w1, p.l.w1);
  ASSERT_EQ(o.b1, p.l.b1);
  ASSERT_EQ(o.w2, p.l.w2);
  ASSERT_EQ(o.b2, p.l.b2);
  ASSERT_EQ(o.wg, p.l.wg);
  ASSERT_EQ(o.bg, p.l.bg);
  ASSERT_EQ(o.wm, p.l.wm);
  ASSERT_EQ(o.bm, p.l.bm);
  ASSERT_EQ(o.ws, p.l.ws);
  ASSERT_EQ(o.bs, p.l.bs);
  ASSERT_EQ(o.size, p.l.size);
  compare_heads(p, gpu_heads(ctx, p, k.lambda, true), cpu_heads<float>(p, k.lambda),
                cpu_heads<double>(p, k.lambda));
}

TEST(GpuHeads, ModelSizeB4) {
  FXT_SKIP_WITHOUT_GPU();
  run_head_case({4 * 64, 5, 128, 64, true, 51});
}
TEST(GpuHeads, ModelSizeB32) {
  FXT_SKIP_WITHOUT_GPU();
  run_head_case({32 * 64, 5, 128, 64, true, 52});
  run_head_case({32 * 64, 5, 128, 64, false, 53});
}
TEST(GpuHeads, OddSmallSizes) {
  FXT_SKIP_WITHOUT_GPU();
  run_head_case({15, 5, 16, 64, true, 61});  // B = 3, K = 5
  run_head_case({15, 3, 24, 40, true, 62});  // mid not a multiple of 32
  run_head_case({7, 1, 33, 70, false, 63});  // one head, odd widths
  run_head_case({3, 5, 128, 64, true, 64});  // inference shape: B rows of the last position
}

TEST(GpuHeads, LambdaScalesOnlyTheTrunkGradient) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const HeadProblem p({64, 5, 32, 64, true, 71});
  const HeadResult with = gpu_heads(ctx, p, true, true);
  const HeadResult without = gpu_heads(ctx, p, false, true);
  const HeadResult no_ds = gpu_heads(ctx, p, true, false);
  EXPECT_TRUE(same_bytes(with.dparams, without.dparams));
  EXPECT_TRUE(same_bytes(with.dparams, no_ds.dparams));
  EXPECT_TRUE(same_bytes(no_ds.ds, p.ds0));  // ds == nullptr: untouched
  EXPECT_FALSE(same_bytes(with.ds, without.ds));
}

TEST(GpuHeads, Deterministic) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const HeadProblem p({32 * 64, 5, 128, 64, true, 81});
  const HeadResult a = gpu_heads(ctx, p, true, true);
  const HeadResult b = gpu_heads(ctx, p, true, true);
  EXPECT_TRUE(same_bytes(a.logits, b.logits));
  EXPECT_TRUE(same_bytes(a.z1, b.z1));
  EXPECT_TRUE(same_bytes(a.z2, b.z2));
  EXPECT_TRUE(same_bytes(a.ds, b.ds));
  EXPECT_TRUE(same_bytes(a.dparams, b.dparams));
}

TEST(GpuHeads, GatherLastPositions) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const int B = 5, K = 7, D = 24;
  const auto s = random_vector(static_cast<size_t>(B) * K * D, 91);
  auto ds = to_device(s);
  DeviceBuffer<float> out(static_cast<size_t>(B) * D);
  gather_last_positions(ctx, ds.data(), B, K, D, out.data());
  ctx.sync();
  const auto got = out.download();
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < D; ++j) {
      EXPECT_EQ(got[static_cast<size_t>(b) * D + j], s[(static_cast<size_t>(b) * K + K - 1) * D + j]);
    }
  }
}

// ================================================================================================
// CUDA Graph capture and timing
// ================================================================================================

// Everything the step runs (CfC forward + backward, heads forward + backward) captured once as a
// CUDA Graph and replayed gives the same bytes as the eager calls: the ops only enqueue work.
TEST(GpuCfcHeads, GraphReplayMatchesEager) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const CfcProblem p({4, 64, 128, 128, DtMode::kPerPosition, 1.0f, 101});
  const HeadProblem hp({4 * 64, 5, 128, 64, true, 102});
  const CfcDims dims{4, 64, 128, 128};
  const CfcOffsets o = cfc_offsets(128, 128);
  const HeadDims hd{4 * 64, 5, 128, 64};
  const HeadOffsets ho = head_offsets(128, 64);
  auto params = to_device(p.params), h = to_device(p.h), c = to_device(p.c), dt = to_device(p.dt);
  auto d_s = to_device(p.d_s), g0 = to_device(p.grads0), dh0 = to_device(p.d_h0);
  auto hparams = to_device(hp.params), dl = to_device(hp.dlogits), lam = to_device(hp.lambda);
  auto dp0 = to_device(hp.dparams0);
  DeviceBuffer<float> grads(g0.size()), d_h(dh0.size()), d_c(p.d_c0.size());
  DeviceBuffer<float> wsbuf(cfc_workspace_floats(dims));
  const CfcWorkspace ws = cfc_workspace_carve(dims, wsbuf.data());
  DeviceBuffer<float> logits(static_cast<size_t>(hd.rows) * hd.heads), z1(hp.zn()), z2(hp.zn());
  DeviceBuffer<float> dparams(dp0.size()), ds(static_cast<size_t>(hd.rows) * hd.d);
  DeviceBuffer<float> scratch(
      std::max(heads_forward_scratch_floats(hd), heads_backward_scratch_floats(hd)));
  // One "step": reset the gradients, CfC forward, heads on its outputs, both backwards.
  auto step = [&] {
    copy(ctx, g0.data(), grads.data(), g0.size());
    copy(ctx, dh0.data(), d_h.data(), dh0.size());
    fill(ctx, d_c.data(), 0.0f, d_c.size());
    copy(ctx, dp0.data(), dparams.data(), dp0.size());
    fill(ctx, ds.data(), 0.0f, ds.size());
    cfc_forward(ctx, dims, o, params.data(), h.data(), c.data(), dt.data(), 1.0f, ws);
    heads_forward(ctx, hd, ho, hparams.data(), ws.out, logits.data(), z1.data(), z2.data(),
                  scratch.data());
    heads_backward(ctx, hd, ho, hparams.data(), ws.out, z1.data(), z2.data(), dl.data(), lam.data(),
                   ds.data(), dparams.data(), scratch.data());
    add_inplace(ctx, d_s.data(), ds.data(), ds.size());
    cfc_backward(ctx, dims, o, params.data(), h.data(), dt.data(), 1.0f, ds.data(), ws,
                 grads.data(), d_h.data(), d_c.data());
  };
  auto snapshot = [&] {
    return std::vector<std::vector<float>>{logits.download(), dparams.download(), grads.download(),
                                           d_h.download(), d_c.download()};
  };
  step();
  ctx.sync();
  const auto eager = snapshot();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FXT_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
  step();
  FXT_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
  FXT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 2; ++rep) {
    FXT_CUDA_CHECK(cudaGraphLaunch(exec, ctx.stream()));
    ctx.sync();
    const auto replay = snapshot();
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(same_bytes(replay[i], eager[i])) << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// Prints the time per call of each op at the training sizes (K = 64, D = 128, H = 5) for
// docs/GPU.md and docs/PERFORMANCE.md; asserts only that the outputs are finite.
TEST(GpuCfcHeads, Timing) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  for (int B : {1, 32, 256}) {
    const int K = 64, D = 128, R = B * K;
    const CfcProblem p({B, K, D, D, DtMode::kConst, 1.0f, 111});
    const CfcDims dims{B, K, D, D};
    const CfcOffsets o = cfc_offsets(D, D);
    auto params = to_device(p.params), h = to_device(p.h), c = to_device(p.c);
    auto d_s = to_device(p.d_s), grads = to_device(p.grads0), d_h = to_device(p.d_h0);
    auto d_c = to_device(p.d_c0);
    DeviceBuffer<float> wsbuf(cfc_workspace_floats(dims));
    const CfcWorkspace ws = cfc_workspace_carve(dims, wsbuf.data());
    const HeadProblem hp({R, 5, D, 64, true, 112});
    const HeadDims hd{R, 5, D, 64};
    const HeadOffsets ho = head_offsets(D, 64);
    auto hparams = to_device(hp.params), s = to_device(hp.s), dl = to_device(hp.dlogits);
    auto lam = to_device(hp.lambda), ds = to_device(hp.ds0), dparams = to_device(hp.dparams0);
    DeviceBuffer<float> logits(static_cast<size_t>(R) * 5), z1(hp.zn()), z2(hp.zn());
    DeviceBuffer<float> scratch(
        std::max(heads_forward_scratch_floats(hd), heads_backward_scratch_floats(hd)));
    auto time_us = [&](auto&& fn) {
      for (int i = 0; i < 3; ++i) fn();
      EventTimer t;
      constexpr int kReps = 50;
      t.start(ctx);
      for (int i = 0; i < kReps; ++i) fn();
      return 1000.0 * t.stop_ms(ctx) / kReps;
    };
    const double cf = time_us([&] {
      cfc_forward(ctx, dims, o, params.data(), h.data(), c.data(), nullptr, 1.0f, ws);
    });
    const double cb = time_us([&] {
      cfc_backward(ctx, dims, o, params.data(), h.data(), nullptr, 1.0f, d_s.data(), ws,
                   grads.data(), d_h.data(), d_c.data());
    });
    const double hf = time_us([&] {
      heads_forward(ctx, hd, ho, hparams.data(), s.data(), logits.data(), z1.data(), z2.data(),
                    scratch.data());
    });
    const double hb = time_us([&] {
      heads_backward(ctx, hd, ho, hparams.data(), s.data(), z1.data(), z2.data(), dl.data(),
                     lam.data(), ds.data(), dparams.data(), scratch.data());
    });
    std::printf("[gpu-cfc-heads] B=%3d K=64 D=128: cfc fwd %7.1f us  cfc bwd %7.1f us  "
                "heads fwd %7.1f us  heads bwd %7.1f us  (%s)\n",
                B, cf, cb, hf, hb, ctx.device_name().c_str());
    for (float v : to_host(ws.out, static_cast<size_t>(R) * D)) ASSERT_TRUE(std::isfinite(v));
    for (float v : logits.download()) ASSERT_TRUE(std::isfinite(v));
  }
}

}  // namespace
}  // namespace fxt::gpu
