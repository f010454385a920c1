// Mamba2 block: double-precision gradient checks of every parameter and the input against
// central differences, a naive reference forward (the SSD "attention" form, materialising the
// full K x K decay matrix instead of scanning), float/double agreement, and timings.
#include "model/mamba2.h"

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

// Gradient errors are relative_error(a, n, floor). The floor is 1e-8 on small shapes; at the real
// sizes the loss sums ~2000 outputs, so rounding noise in each loss evaluation (~eps *
// sqrt(#outputs)) over h puts the finite-difference noise near 5e-11 absolute, and coordinates with
// |grad| below ~1e-4 (a head whose decay exp(dt A) underflows) are judged with floor 1e-4 instead.

// A block with random (not just initial) parameters, input and loss weights.
struct Problem {
  Mamba2Config cfg;
  int batch = 2;
  int seq_len = 5;
  double stride = 1.0;
  std::vector<double> params, input, loss_w;
  Mamba2Workspace<double> ws;

  Problem(const Mamba2Config& c, int b, int k, double s, std::uint64_t seed)
      : cfg(c), batch(b), seq_len(k), stride(s) {
    const Mamba2Layout l = mamba2_layout(cfg);
    params.resize(l.total);
    mamba2_init(cfg, params.data(), seed);
    std::mt19937_64 rng(seed + 1);
    // Move D, w_norm and dt off their initial values so every term of the chain rule is live;
    // dt_bias in [-2, 1] gives dt = softplus * S in roughly [0.13, 1.3] * S.
    for (int h = 0; h < cfg.n_heads(); ++h) {
      params[l.d_skip + h] += uniform(rng, -0.5, 0.5);
      params[l.dt_bias + h] = uniform(rng, -2.0, 1.0);
    }
    for (int i = 0; i < cfg.d_inner(); ++i) params[l.norm_w + i] += uniform(rng, -0.5, 0.5);
    input = random_vector(rng, static_cast<std::size_t>(b) * k * cfg.in_dim, -2.0, 2.0);
    loss_w = random_vector(rng, static_cast<std::size_t>(b) * k * cfg.d_model, -1.0, 1.0);
    ws.resize(cfg, b, k);
  }

  double loss() {
    mamba2_forward(cfg, params.data(), input.data(), stride, &ws);
    double sum = 0;
    for (std::size_t i = 0; i < loss_w.size(); ++i) sum += loss_w[i] * ws.out[i];
    return sum;
  }
};

// Checks every parameter tensor and the input; returns the overall max relative error.
double check_gradients(Problem& pb, std::size_t max_coords, double floor, std::uint64_t seed) {
  const Mamba2Layout l = mamba2_layout(pb.cfg);
  std::vector<double> grads(l.total, 0.0), d_in(pb.input.size(), 0.0);
  pb.loss();
  mamba2_backward(pb.cfg, pb.params.data(), pb.input.data(), pb.stride, pb.loss_w.data(), &pb.ws,
                  grads.data(), d_in.data());

  std::mt19937_64 rng(seed);
  // Round-off noise in the difference grows as 1/h and the five-point truncation as h^4:
  // h = 3e-4 balances them at the real sizes (1e-4 leaves ~2e-10 absolute noise).
  const double h = 3e-4;
  double worst = 0;
  auto check = [&](const char* name, double* values, const double* analytic, std::size_t n) {
    double max_err = 0, max_abs = 0, max_abs_err = 0;
    const auto coords = pick_coords(rng, n, max_coords);
    for (std::size_t i : coords) {
      const double num = five_point_derivative([&] { return pb.loss(); }, values + i, h);
      const double err = relative_error(analytic[i], num, floor);
      max_err = std::max(max_err, err);
      max_abs_err = std::max(max_abs_err, std::abs(analytic[i] - num));
      if (err > kMaxRelErr) {
        std::printf("    %s[%zu]: analytic %.12e numeric %.12e\n", name, i, analytic[i], num);
      }
      max_abs = std::max(max_abs, std::abs(analytic[i]));
    }
    std::printf(
        "  %-20s %5zu of %5zu coords  max rel err %.2e  max abs err %.2e  max |grad| %.2e\n", name,
        coords.size(), n, max_err, max_abs_err, max_abs);
    EXPECT_LE(max_err, kMaxRelErr) << name;
    worst = std::max(worst, max_err);
  };
  for (const ParamSpec& spec : mamba2_param_specs(pb.cfg, "m")) {
    check(spec.name.c_str(), param_ptr(spec, pb.params.data()), param_ptr(spec, grads.data()),
          spec.size);
  }
  check("input", pb.input.data(), d_in.data(), pb.input.size());
  return worst;
}

Mamba2Config small_config() {
  Mamba2Config c;
  c.in_dim = 6;
  c.d_model = 8;   // d_inner 16
  c.head_dim = 4;  // 4 heads
  c.d_state = 3;
  return c;
}

TEST(Mamba2Grad, SmallShapesStride1) {
  Problem pb(small_config(), 2, 5, 1.0, 11);
  std::printf("mamba2 grad check B=2 K=5 in=6 D=8 P=4 N=3 S=1\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 1u << 20, 1e-8, 1));
}

TEST(Mamba2Grad, SmallShapesStride4) {
  Problem pb(small_config(), 2, 5, 4.0, 12);
  std::printf("mamba2 grad check B=2 K=5 in=6 D=8 P=4 N=3 S=4\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 1u << 20, 1e-8, 2));
}

TEST(Mamba2Grad, RealSizesRandomSubset) {
  Mamba2Config c;  // in 40, D 128, P 64, N 16
  Problem pb(c, 2, 8, 4.0, 13);
  std::printf("mamba2 grad check B=2 K=8 in=40 D=128 P=64 N=16 S=4 (random subset, floor 1e-4)\n");
  std::printf("  worst %.2e\n", check_gradients(pb, 24, 1e-4, 3));
}

// ---- naive reference forward --------------------------------------------------------------

double silu_ref(double v) {
  return v / (1.0 + std::exp(-v));
}

// Same block computed in the SSD dual ("attention") form: for each head the K x K matrix
// L[k, j] = exp(sum_{i=j+1..k} dt_i A) (C_k . B_j) dt_j (j <= k) is materialised and
// y_k = sum_j L[k, j] x_j + D x_k. Projections by explicit loops, conv by explicit padding.
std::vector<double> naive_forward(const Mamba2Config& cfg, const std::vector<double>& prm,
                                  const std::vector<double>& in, int bsz, int seq, double stride) {
  const Mamba2Layout l = mamba2_layout(cfg);
  const int di = cfg.d_inner(), nh = cfg.n_heads(), cd = cfg.conv_dim(), pd = cfg.proj_dim();
  const int ns = cfg.d_state, hp = cfg.head_dim, w = cfg.d_conv;
  std::vector<double> out(static_cast<std::size_t>(bsz) * seq * cfg.d_model);
  for (int b = 0; b < bsz; ++b) {
    std::vector<std::vector<double>> proj(seq, std::vector<double>(pd));
    for (int k = 0; k < seq; ++k)
      for (int o = 0; o < pd; ++o) {
        double acc = 0;
        for (int i = 0; i < cfg.in_dim; ++i)
          acc += prm[l.in_proj_w + o * cfg.in_dim + i] * in[(b * seq + k) * cfg.in_dim + i];
        proj[k][o] = acc;
      }
    // Padded conv input: w - 1 zero rows, then the K rows of [x, B, C].
    std::vector<std::vector<double>> pad(seq + w - 1, std::vector<double>(cd, 0.0));
    for (int k = 0; k < seq; ++k)
      for (int c = 0; c < cd; ++c) pad[k + w - 1][c] = proj[k][di + c];
    std::vector<std::vector<double>> xbc(seq, std::vector<double>(cd));
    for (int k = 0; k < seq; ++k)
      for (int c = 0; c < cd; ++c) {
        double acc = prm[l.conv_b + c];
        for (int j = 0; j < w; ++j) acc += prm[l.conv_w + c * w + j] * pad[k + j][c];
        xbc[k][c] = silu_ref(acc);
      }
    std::vector<std::vector<double>> y(seq, std::vector<double>(di));
    for (int h = 0; h < nh; ++h) {
      const double a = -std::exp(prm[l.a_log + h]);
      std::vector<double> dt(seq);
      for (int k = 0; k < seq; ++k)
        dt[k] = std::log(1.0 + std::exp(proj[k][di + cd + h] + prm[l.dt_bias + h])) * stride;
      for (int k = 0; k < seq; ++k)
        for (int p = 0; p < hp; ++p) {
          double acc = prm[l.d_skip + h] * xbc[k][h * hp + p];
          for (int j = 0; j <= k; ++j) {
            double seg = 0;
            for (int i = j + 1; i <= k; ++i) seg += dt[i] * a;
            double cb = 0;
            for (int n = 0; n < ns; ++n) cb += xbc[k][di + ns + n] * xbc[j][di + n];
            acc += std::exp(seg) * cb * dt[j] * xbc[j][h * hp + p];
          }
          y[k][h * hp + p] = acc;
        }
    }
    for (int k = 0; k < seq; ++k) {
      std::vector<double> g(di);
      double ms = 0;
      for (int i = 0; i < di; ++i) {
        g[i] = y[k][i] * silu_ref(proj[k][i]);
        ms += g[i] * g[i] / di;
      }
      for (int i = 0; i < di; ++i) g[i] = g[i] / std::sqrt(ms + 1e-5) * prm[l.norm_w + i];
      for (int o = 0; o < cfg.d_model; ++o) {
        double acc = 0;
        for (int i = 0; i < di; ++i) acc += prm[l.out_proj_w + o * di + i] * g[i];
        out[(b * seq + k) * cfg.d_model + o] = acc;
      }
    }
  }
  return out;
}

TEST(Mamba2Forward, MatchesNaiveSsdForm) {
  for (double stride : {1.0, 4.0}) {
    for (const Mamba2Config& c : {small_config(), Mamba2Config{}}) {
      Problem pb(c, 2, 7, stride, 21);
      pb.loss();
      const auto ref = naive_forward(c, pb.params, pb.input, 2, 7, stride);
      double max_diff = 0, max_ref = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(ref[i] - pb.ws.out[i]));
        max_ref = std::max(max_ref, std::abs(ref[i]));
      }
      std::printf("mamba2 vs naive SSD form D=%d N=%d S=%.0f: max |diff| %.2e (max |out| %.2e)\n",
                  c.d_model, c.d_state, stride, max_diff, max_ref);
      EXPECT_LE(max_diff, 1e-12 * std::max(1.0, max_ref));
    }
  }
}

TEST(Mamba2Forward, FloatMatchesDouble) {
  Mamba2Config c;
  const int bsz = 4, seq = 16;
  Problem pb(c, bsz, seq, 4.0, 31);
  pb.loss();
  std::vector<float> pf(pb.params.begin(), pb.params.end());
  std::vector<float> inf(pb.input.begin(), pb.input.end());
  Mamba2Workspace<float> ws;
  ws.resize(c, bsz, seq);
  mamba2_forward(c, pf.data(), inf.data(), 4.0f, &ws);
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < ws.out.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double(ws.out[i]) - pb.ws.out[i]));
    max_ref = std::max(max_ref, std::abs(pb.ws.out[i]));
  }
  std::printf("mamba2 float vs double (B=4 K=16 D=128): max |diff| %.2e, max |out| %.2e\n",
              max_diff, max_ref);
  EXPECT_LE(max_diff, 1e-4 * max_ref);
}

// The float training path's gradients agree with double: per tensor max |diff| / max |grad|.
TEST(Mamba2Grad, FloatBackwardMatchesDouble) {
  Mamba2Config c;
  const int bsz = 4, seq = 16;
  Problem pb(c, bsz, seq, 4.0, 32);
  const Mamba2Layout l = mamba2_layout(c);
  std::vector<double> gd(l.total, 0.0), dind(pb.input.size(), 0.0);
  pb.loss();
  mamba2_backward(c, pb.params.data(), pb.input.data(), 4.0, pb.loss_w.data(), &pb.ws, gd.data(),
                  dind.data());
  std::vector<float> pf(pb.params.begin(), pb.params.end());
  std::vector<float> inf(pb.input.begin(), pb.input.end());
  std::vector<float> wf(pb.loss_w.begin(), pb.loss_w.end());
  std::vector<float> gf(l.total, 0.0f), dinf(inf.size(), 0.0f);
  Mamba2Workspace<float> ws;
  ws.resize(c, bsz, seq);
  mamba2_forward(c, pf.data(), inf.data(), 4.0f, &ws);
  mamba2_backward(c, pf.data(), inf.data(), 4.0f, wf.data(), &ws, gf.data(), dinf.data());
  auto compare = [](const char* name, const float* f, const double* d, std::size_t n) {
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
      max_diff = std::max(max_diff, std::abs(double(f[i]) - d[i]));
      max_ref = std::max(max_ref, std::abs(d[i]));
    }
    std::printf("  %-20s float vs double: max |diff| / max |grad| %.2e\n", name,
                max_diff / max_ref);
    EXPECT_LE(max_diff, 1e-4 * max_ref) << name;
  };
  std::printf("mamba2 float vs double backward (B=4 K=16 D=128 S=4)\n");
  for (const ParamSpec& spec : mamba2_param_specs(c, "m")) {
    compare(spec.name.c_str(), param_ptr(spec, gf.data()), param_ptr(spec, gd.data()), spec.size);
  }
  compare("input", dinf.data(), dind.data(), dind.size());
}

TEST(Mamba2Params, NamesShapesAndDecay) {
  Mamba2Config c;
  const auto specs = mamba2_param_specs(c, "m1");
  const Mamba2Layout l = mamba2_layout(c);
  ASSERT_EQ(specs.size(), 8u);
  const char* names[] = {"m1.in_proj.weight", "m1.conv.weight",    "m1.conv.bias",
                         "m1.dt_bias",        "m1.A_log",          "m1.D",
                         "m1.norm.weight",    "m1.out_proj.weight"};
  std::size_t next = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].name, names[i]);
    EXPECT_EQ(specs[i].offset, next);  // contiguous, in layout order
    next += specs[i].size;
    EXPECT_EQ(specs[i].weight_decay, i == 0 || i == 1 || i == 7) << specs[i].name;
  }
  EXPECT_EQ(next, l.total);
  EXPECT_EQ(specs[0].shape, (std::vector<int>{548, 40}));  // 2*256 + 2*16 + 4 rows
  EXPECT_TRUE(mamba2_validate(c).ok());
  c.head_dim = 60;
  EXPECT_FALSE(mamba2_validate(c).ok());
}

TEST(Mamba2Init, RangesAsSpecified) {
  Mamba2Config c;
  const Mamba2Layout l = mamba2_layout(c);
  std::vector<float> p(l.total);
  mamba2_init(c, p.data(), 7);
  for (int h = 0; h < c.n_heads(); ++h) {
    const double a = std::exp(double(p[l.a_log + h]));
    EXPECT_GE(a, 1.0);
    EXPECT_LE(a, 16.0);
    const double dt = std::log1p(std::exp(double(p[l.dt_bias + h])));
    EXPECT_GE(dt, 1e-3 * 0.999);
    EXPECT_LE(dt, 1e-1 * 1.001);
    EXPECT_EQ(p[l.d_skip + h], 1.0f);
  }
  const float bound = 1.0f / std::sqrt(40.0f);
  for (std::size_t i = 0; i < l.conv_w - l.in_proj_w; ++i) {
    EXPECT_LE(std::abs(p[l.in_proj_w + i]), bound);
  }
}

// Adding into grads and d_in: a second backward doubles them.
TEST(Mamba2Grad, BackwardAccumulates) {
  Problem pb(small_config(), 2, 5, 2.0, 41);
  const Mamba2Layout l = mamba2_layout(pb.cfg);
  std::vector<double> g(l.total, 0.0), d_in(pb.input.size(), 0.0);
  pb.loss();
  mamba2_backward(pb.cfg, pb.params.data(), pb.input.data(), 2.0, pb.loss_w.data(), &pb.ws,
                  g.data(), d_in.data());
  const std::vector<double> g1 = g, d1 = d_in;
  mamba2_backward(pb.cfg, pb.params.data(), pb.input.data(), 2.0, pb.loss_w.data(), &pb.ws,
                  g.data(), d_in.data());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2 * g1[i], 1e-12);
  for (std::size_t i = 0; i < d_in.size(); ++i) EXPECT_NEAR(d_in[i], 2 * d1[i], 1e-12);
}

// ---- threading ------------------------------------------------------------------------------

// Forward outputs, parameter gradients and input gradients have identical bytes for 1, 2 and 3
// threads and across repeated runs. B = 9 gives three uneven chunks of sequences.
TEST(Mamba2Threads, BitIdenticalAcrossThreadCounts) {
  Mamba2Config c;
  c.in_dim = 24;
  c.d_model = 32;
  c.head_dim = 16;
  c.d_state = 8;
  const int bsz = 9, seq = 13;
  const Mamba2Layout l = mamba2_layout(c);
  std::vector<float> p(l.total);
  mamba2_init(c, p.data(), 21);
  std::mt19937_64 rng(22);
  for (std::size_t i = l.conv_b; i < l.out_proj_w; ++i) p[i] += float(uniform(rng, -0.3, 0.3));
  std::vector<float> in(static_cast<std::size_t>(bsz) * seq * c.in_dim);
  std::vector<float> d_out(static_cast<std::size_t>(bsz) * seq * c.d_model);
  for (float& v : in) v = float(uniform(rng, -1, 1));
  for (float& v : d_out) v = float(uniform(rng, -1, 1));
  struct Result {
    std::vector<float> out, grads, d_in;
  };
  auto run = [&](int threads) {
    CpuContext ctx(threads);
    Mamba2Workspace<float> ws;
    ws.resize(c, bsz, seq);
    Result r{{}, std::vector<float>(l.total, 0.0f), std::vector<float>(in.size(), 0.0f)};
    for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the workspace
      std::fill(r.grads.begin(), r.grads.end(), 0.0f);
      std::fill(r.d_in.begin(), r.d_in.end(), 0.0f);
      mamba2_forward(c, ctx, p.data(), in.data(), 2.0f, &ws);
      mamba2_backward(c, ctx, p.data(), in.data(), 2.0f, d_out.data(), &ws, r.grads.data(),
                      r.d_in.data());
    }
    r.out = ws.out;
    return r;
  };
  const Result ref = run(1);
  EXPECT_GT(num_seq_chunks(bsz, kMamba2SeqsPerChunk), 2);
  for (int threads : {1, 2, 3}) {
    const Result r = run(threads);
    EXPECT_EQ(0, std::memcmp(r.out.data(), ref.out.data(), ref.out.size() * sizeof(float)))
        << threads;
    EXPECT_EQ(0, std::memcmp(r.grads.data(), ref.grads.data(), ref.grads.size() * sizeof(float)))
        << threads;
    EXPECT_EQ(0, std::memcmp(r.d_in.data(), ref.d_in.data(), ref.d_in.size() * sizeof(float)))
        << threads;
  }
}

// ---- timing ---------------------------------------------------------------------------------

void time_block(const char* label, int in_dim, int threads) {
  CpuContext ctx(threads);
  Mamba2Config c;
  c.in_dim = in_dim;
  const int bsz = 32, seq = 64;
  const Mamba2Layout l = mamba2_layout(c);
  std::vector<float> p(l.total), g(l.total, 0.0f);
  mamba2_init(c, p.data(), 5);
  std::mt19937_64 rng(6);
  std::vector<float> in(static_cast<std::size_t>(bsz) * seq * in_dim), d_in(in.size());
  std::vector<float> d_out(static_cast<std::size_t>(bsz) * seq * c.d_model);
  for (float& v : in) v = float(uniform(rng, -1, 1));
  for (float& v : d_out) v = float(uniform(rng, -1, 1));
  Mamba2Workspace<float> ws;
  ws.resize(c, bsz, seq);
  using Clock = std::chrono::steady_clock;
  std::vector<double> fwd_ms, bwd_ms;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = Clock::now();
    mamba2_forward(c, ctx, p.data(), in.data(), 4.0f, &ws);
    const auto t1 = Clock::now();
    mamba2_backward(c, ctx, p.data(), in.data(), 4.0f, d_out.data(), &ws, g.data(), d_in.data());
    const auto t2 = Clock::now();
    if (rep == 0) continue;  // warm-up
    fwd_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    bwd_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  std::sort(fwd_ms.begin(), fwd_ms.end());
  std::sort(bwd_ms.begin(), bwd_ms.end());
  std::printf(
      "TIMING %s B=32 K=64 in=%d D=128 N=16 float, %d thread(s): forward %.2f ms, backward "
      "%.2f ms (median of 5)\n",
      label, in_dim, threads, fwd_ms[2], bwd_ms[2]);
}

TEST(Mamba2Timing, M1AndM2) {
#ifdef FXT_SANITIZED
  GTEST_SKIP() << "timings under the sanitizers measure the sanitizers; the Release run prints them";
#endif
  for (int threads : {1, 2}) {
    time_block("m1", 40, threads);
    time_block("m2", 128, threads);
  }
}

}  // namespace
}  // namespace fxt::model
