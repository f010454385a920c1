// CfC recurrence: double-precision gradient checks of every parameter, the inputs h and the
// initial state c against central differences (uniform stride 1 and 4, non-uniform dt), a naive
// loop reference forward, float/double agreement, and timings.
#include "model/cfc.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace fxt::model {
namespace {

constexpr double kMaxRelErr = 1e-6;

using test::five_point_derivative;
using test::pick_coords;
using test::random_vector;
using test::relative_error;
using test::uniform;

// Random parameters (bias and tau_raw moved off their init), inputs, initial state, loss weights.
// dt empty means the constant dt_const.
struct Problem {
  CfcConfig cfg;
  int batch, seq_len;
  double dt_const;
  std::vector<double> params, h, c, dt, loss_w;
  CfcWorkspace<double> ws;

  Problem(const CfcConfig& cf, int b, int k, double s, bool real_time, std::uint64_t seed)
      : cfg(cf), batch(b), seq_len(k), dt_const(s) {
    const CfcLayout l = cfc_layout(cfg);
    params.resize(l.total);
    cfc_init(cfg, params.data(), seed);
    std::mt19937_64 rng(seed + 1);
    for (int i = 0; i < cfg.hidden; ++i) {
      params[l.bias + i] = uniform(rng, -0.5, 0.5);
      params[l.tau_raw + i] = uniform(rng, -1.0, 2.0);  // tau in about [0.41, 2.2]
    }
    h = random_vector(rng, static_cast<std::size_t>(b) * k * cfg.in_dim, -1.5, 1.5);
    c = random_vector(rng, static_cast<std::size_t>(b) * cfg.hidden, -1.0, 1.0);
    if (real_time) dt = random_vector(rng, static_cast<std::size_t>(b) * k, 0.1, 3.0);
    loss_w = random_vector(rng, static_cast<std::size_t>(b) * k * cfg.hidden, -1.0, 1.0);
    ws.resize(cfg, b, k);
  }
  const double* dt_ptr() const { return dt.empty() ? nullptr : dt.data(); }

  double loss() {
    cfc_forward(cfg, params.data(), h.data(), c.data(), dt_ptr(), dt_const, &ws);
    double sum = 0;
    for (std::size_t i = 0; i < loss_w.size(); ++i) sum += loss_w[i] * ws.out[i];
    return sum;
  }
};

double check_gradients(Problem& pb, std::size_t max_coords, double floor, std::uint64_t seed) {
  const CfcLayout l = cfc_layout(pb.cfg);
  std::vector<double> grads(l.total, 0.0), d_h(pb.h.size(), 0.0), d_c(pb.c.size(), 0.0);
  pb.loss();
  cfc_backward(pb.cfg, pb.params.data(), pb.h.data(), pb.dt_ptr(), pb.dt_const, pb.loss_w.data(),
               &pb.ws, grads.data(), d_h.data(), d_c.data());
  std::mt19937_64 rng(seed);
  double worst = 0;
  auto check = [&](const char* name, double* values, const double* analytic, std::size_t n) {
    double max_err = 0, max_abs = 0, max_abs_err = 0;
    const auto coords = pick_coords(rng, n, max_coords);
    for (std::size_t i : coords) {
      const double num = five_point_derivative([&] { return pb.loss(); }, values + i, 1e-4);
      const double err = relative_error(analytic[i], num, floor);
      max_err = std::max(max_err, err);
      max_abs_err = std::max(max_abs_err, std::abs(analytic[i] - num));
      max_abs = std::max(max_abs, std::abs(analytic[i]));
      if (err > kMaxRelErr) {
        std::printf("    %s[%zu]: analytic %.12e numeric %.12e\n", name, i, analytic[i], num);
      }
    }
    std::printf(
        "  %-12s %5zu of %5zu coords  max rel err %.2e  max abs err %.2e  max |grad| %.2e\n", name,
        coords.size(), n, max_err, max_abs_err, max_abs);
    EXPECT_LE(max_err, kMaxRelErr) << name;
    worst = std::max(worst, max_err);
  };
  for (const ParamSpec& spec : cfc_param_specs(pb.cfg, "cfc")) {
    check(spec.name.c_str(), param_ptr(spec, pb.params.data()), param_ptr(spec, grads.data()),
          spec.size);
  }
  check("h", pb.h.data(), d_h.data(), pb.h.size());
  check("c", pb.c.data(), d_c.data(), pb.c.size());
  return worst;
}

CfcConfig small_config() {
  return CfcConfig{6, 8};
}

TEST(CfcGrad, SmallStride1) {
  Problem pb(small_config(), 2, 5, 1.0, false, 11);
  std::printf("cfc grad check B=2 K=5 in=6 D=8 dt=1\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 1u << 20, 1e-8, 1));
}

TEST(CfcGrad, SmallStride4) {
  Problem pb(small_config(), 2, 5, 4.0, false, 12);
  std::printf("cfc grad check B=2 K=5 in=6 D=8 dt=4\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 1u << 20, 1e-8, 2));
}

TEST(CfcGrad, SmallNonUniformDt) {
  Problem pb(small_config(), 2, 5, 4.0, true, 13);
  std::printf("cfc grad check B=2 K=5 in=6 D=8 dt ~ U(0.1, 3) per position\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 1u << 20, 1e-8, 3));
}

TEST(CfcGrad, RealSizesRandomSubset) {
  Problem pb(CfcConfig{}, 2, 8, 4.0, true, 14);
  std::printf("cfc grad check B=2 K=8 in=128 D=128 non-uniform dt (random subset, floor 1e-4)\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 32, 1e-4, 4));
}

TEST(CfcGrad, BackwardAccumulates) {
  Problem pb(small_config(), 2, 5, 2.0, true, 15);
  const CfcLayout l = cfc_layout(pb.cfg);
  std::vector<double> g(l.total, 0.0), d_h(pb.h.size(), 0.0), d_c(pb.c.size(), 0.0);
  pb.loss();
  auto backward = [&] {
    cfc_backward(pb.cfg, pb.params.data(), pb.h.data(), pb.dt_ptr(), pb.dt_const, pb.loss_w.data(),
                 &pb.ws, g.data(), d_h.data(), d_c.data());
  };
  backward();
  const auto g1 = g, h1 = d_h, c1 = d_c;
  backward();  // adds the same gradients again
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2 * g1[i], 1e-12);
  for (std::size_t i = 0; i < d_h.size(); ++i) EXPECT_NEAR(d_h[i], 2 * h1[i], 1e-12);
  for (std::size_t i = 0; i < d_c.size(); ++i) EXPECT_NEAR(d_c[i], 2 * c1[i], 1e-12);
}

// Plain loops straight from the equations, state kept per sequence.
TEST(CfcForward, MatchesNaiveLoops) {
  Problem pb(CfcConfig{5, 7}, 3, 6, 4.0, true, 21);
  pb.loss();
  const CfcLayout l = cfc_layout(pb.cfg);
  const int d = pb.cfg.hidden, n_in = pb.cfg.in_dim;
  double max_diff = 0;
  for (int b = 0; b < pb.batch; ++b) {
    std::vector<double> s(pb.c.begin() + b * d, pb.c.begin() + (b + 1) * d), next(d);
    for (int k = 0; k < pb.seq_len; ++k) {
      for (int i = 0; i < d; ++i) {
        double pre = pb.params[l.bias + i];
        for (int j = 0; j < n_in; ++j)
          pre += pb.params[l.w_in + i * n_in + j] * pb.h[(b * pb.seq_len + k) * n_in + j];
        for (int j = 0; j < d; ++j) pre += pb.params[l.w_rec + i * d + j] * s[j];
        const double tau = std::log(1 + std::exp(pb.params[l.tau_raw + i])) + 0.1;
        const double e = std::exp(-pb.dt[b * pb.seq_len + k] / tau);
        next[i] = e * s[i] + (1 - e) * std::tanh(pre);
      }
      s = next;
      for (int i = 0; i < d; ++i)
        max_diff = std::max(max_diff, std::abs(s[i] - pb.ws.out[(b * pb.seq_len + k) * d + i]));
    }
  }
  std::printf("cfc vs naive loops: max |diff| %.2e\n", max_diff);
  EXPECT_LE(max_diff, 1e-13);
}

TEST(CfcForward, FloatMatchesDouble) {
  Problem pb(CfcConfig{}, 4, 16, 4.0, true, 31);
  pb.loss();
  auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const auto p = to_f(pb.params), h = to_f(pb.h), c = to_f(pb.c), dt = to_f(pb.dt);
  CfcWorkspace<float> ws;
  ws.resize(pb.cfg, 4, 16);
  cfc_forward(pb.cfg, p.data(), h.data(), c.data(), dt.data(), 4.0f, &ws);
  double max_diff = 0;
  for (std::size_t i = 0; i < ws.out.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double(ws.out[i]) - pb.ws.out[i]));
  }
  std::printf("cfc float vs double (B=4 K=16 D=128): max |diff| %.2e\n", max_diff);
  EXPECT_LE(max_diff, 1e-5);
}

// The float training path's gradients agree with double: per tensor max |diff| / max |grad|.
TEST(CfcGrad, FloatBackwardMatchesDouble) {
  Problem pb(CfcConfig{}, 4, 16, 4.0, true, 33);
  const CfcLayout l = cfc_layout(pb.cfg);
  std::vector<double> gd(l.total, 0.0), dhd(pb.h.size(), 0.0), dcd(pb.c.size(), 0.0);
  pb.loss();
  cfc_backward(pb.cfg, pb.params.data(), pb.h.data(), pb.dt_ptr(), 4.0, pb.loss_w.data(), &pb.ws,
               gd.data(), dhd.data(), dcd.data());
  auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const auto p = to_f(pb.params), h = to_f(pb.h), c = to_f(pb.c), dt = to_f(pb.dt);
  const auto w = to_f(pb.loss_w);
  std::vector<float> gf(l.total, 0.0f), dhf(h.size(), 0.0f), dcf(c.size(), 0.0f);
  CfcWorkspace<float> ws;
  ws.resize(pb.cfg, 4, 16);
  cfc_forward(pb.cfg, p.data(), h.data(), c.data(), dt.data(), 4.0f, &ws);
  cfc_backward(pb.cfg, p.data(), h.data(), dt.data(), 4.0f, w.data(), &ws, gf.data(), dhf.data(),
               dcf.data());
  auto compare = [](const char* name, const float* f, const double* d, std::size_t n) {
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
      max_diff = std::max(max_diff, std::abs(double(f[i]) - d[i]));
      max_ref = std::max(max_ref, std::abs(d[i]));
    }
    std::printf("  %-12s float vs double: max |diff| / max |grad| %.2e\n", name,
                max_diff / max_ref);
    EXPECT_LE(max_diff, 1e-4 * max_ref) << name;
  };
  std::printf("cfc float vs double backward (B=4 K=16 D=128, non-uniform dt)\n");
  for (const ParamSpec& spec : cfc_param_specs(pb.cfg, "cfc")) {
    compare(spec.name.c_str(), param_ptr(spec, gf.data()), param_ptr(spec, gd.data()), spec.size);
  }
  compare("h", dhf.data(), dhd.data(), dhd.size());
  compare("c", dcf.data(), dcd.data(), dcd.size());
}

TEST(CfcParams, NamesShapesDecayAndInit) {
  CfcConfig cfg;
  const auto specs = cfc_param_specs(cfg, "cfc");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "cfc.w_in");
  EXPECT_EQ(specs[1].name, "cfc.w_rec");
  EXPECT_EQ(specs[2].name, "cfc.bias");
  EXPECT_EQ(specs[3].name, "cfc.tau_raw");
  EXPECT_TRUE(specs[0].weight_decay && specs[1].weight_decay);
  EXPECT_FALSE(specs[2].weight_decay || specs[3].weight_decay);
  std::size_t next = 0;
  for (const auto& s : specs) {
    EXPECT_EQ(s.offset, next);
    next += s.size;
  }
  const CfcLayout l = cfc_layout(cfg);
  EXPECT_EQ(next, l.total);
  std::vector<double> p(l.total);
  cfc_init(cfg, p.data(), 3);
  EXPECT_NEAR(std::log1p(std::exp(p[l.tau_raw])) + kCfcTauMin, 1.0, 1e-12);  // tau = 1
  EXPECT_EQ(p[l.bias], 0.0);
  EXPECT_TRUE(cfc_validate(cfg).ok());
  EXPECT_FALSE(cfc_validate(CfcConfig{0, 8}).ok());
}

// Forward outputs, parameter gradients, dL/dh and dL/dc have identical bytes for 1, 2 and 3
// threads and across repeated runs, with and without per-position dt. B = 17: three chunks.
TEST(CfcThreads, BitIdenticalAcrossThreadCounts) {
  const CfcConfig cfg{12, 20};
  const int bsz = 17, seq = 11;
  const CfcLayout l = cfc_layout(cfg);
  std::vector<float> p(l.total);
  cfc_init(cfg, p.data(), 31);
  std::mt19937_64 rng(32);
  for (std::size_t i = l.bias; i < l.total; ++i) p[i] += float(uniform(rng, -0.3, 0.3));
  const auto n = static_cast<std::size_t>(bsz) * seq;
  std::vector<float> h(n * cfg.in_dim), d_s(n * cfg.hidden), dt(n);
  std::vector<float> c(static_cast<std::size_t>(bsz) * cfg.hidden);
  for (float& v : h) v = float(uniform(rng, -1, 1));
  for (float& v : d_s) v = float(uniform(rng, -1, 1));
  for (float& v : c) v = float(uniform(rng, -1, 1));
  for (float& v : dt) v = float(uniform(rng, 0.2, 3));
  struct Result {
    std::vector<float> out, grads, d_h, d_c;
  };
  auto run = [&](int threads, const float* dt_ptr) {
    CpuContext ctx(threads);
    CfcWorkspace<float> ws;
    ws.resize(cfg, bsz, seq);
    Result r{{},
             std::vector<float>(l.total),
             std::vector<float>(h.size()),
             std::vector<float>(c.size())};
    for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the workspace
      std::fill(r.grads.begin(), r.grads.end(), 0.0f);
      std::fill(r.d_h.begin(), r.d_h.end(), 0.0f);
      std::fill(r.d_c.begin(), r.d_c.end(), 0.0f);
      cfc_forward(cfg, ctx, p.data(), h.data(), c.data(), dt_ptr, 2.0f, &ws);
      cfc_backward(cfg, ctx, p.data(), h.data(), dt_ptr, 2.0f, d_s.data(), &ws, r.grads.data(),
                   r.d_h.data(), r.d_c.data());
    }
    r.out = ws.out;
    return r;
  };
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_GT(num_seq_chunks(bsz, kCfcSeqsPerChunk), 2);
  for (const float* dt_ptr :
       {static_cast<const float*>(nullptr), static_cast<const float*>(dt.data())}) {
    const Result ref = run(1, dt_ptr);
    for (int threads : {1, 2, 3}) {
      const Result r = run(threads, dt_ptr);
      EXPECT_TRUE(same(r.out, ref.out)) << threads;
      EXPECT_TRUE(same(r.grads, ref.grads)) << threads;
      EXPECT_TRUE(same(r.d_h, ref.d_h)) << threads;
      EXPECT_TRUE(same(r.d_c, ref.d_c)) << threads;
    }
  }
}

void time_cfc(int threads) {
  CpuContext ctx(threads);
  CfcConfig cfg;
  const int bsz = 32, seq = 64;
  const CfcLayout l = cfc_layout(cfg);
  std::vector<float> p(l.total), g(l.total, 0.0f);
  cfc_init(cfg, p.data(), 5);
  std::mt19937_64 rng(6);
  const auto n = static_cast<std::size_t>(bsz) * seq * cfg.hidden;
  std::vector<float> h(n), d_h(n), d_s(n), c(static_cast<std::size_t>(bsz) * cfg.hidden), d_c(c);
  for (float& v : h) v = float(uniform(rng, -1, 1));
  for (float& v : d_s) v = float(uniform(rng, -1, 1));
  for (float& v : c) v = float(uniform(rng, -1, 1));
  CfcWorkspace<float> ws;
  ws.resize(cfg, bsz, seq);
  using Clock = std::chrono::steady_clock;
  std::vector<double> fwd_ms, bwd_ms;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = Clock::now();
    cfc_forward(cfg, ctx, p.data(), h.data(), c.data(), static_cast<const float*>(nullptr), 4.0f,
                &ws);
    const auto t1 = Clock::now();
    cfc_backward(cfg, ctx, p.data(), h.data(), static_cast<const float*>(nullptr), 4.0f, d_s.data(),
                 &ws, g.data(), d_h.data(), d_c.data());
    const auto t2 = Clock::now();
    if (rep == 0) continue;
    fwd_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    bwd_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  std::sort(fwd_ms.begin(), fwd_ms.end());
  std::sort(bwd_ms.begin(), bwd_ms.end());
  std::printf(
      "TIMING cfc B=32 K=64 D=128 float, %d thread(s): forward %.2f ms, backward %.2f ms "
      "(median of 5)\n",
      threads, fwd_ms[2], bwd_ms[2]);
}

TEST(CfcTiming, D128) {
  for (int threads : {1, 2}) time_cfc(threads);
}

}  // namespace
}  // namespace fxt::model
