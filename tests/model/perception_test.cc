// The assembled perception model: parameter table and count, the uniform-gate identity,
// double-precision gradient checks of every parameter tensor and the input against central
// differences (full on a tiny config; a random subset at the real sizes; stride 1 and 4 and
// per-position dt; a linear loss and the masked BCE through loss_step with the lambda path),
// float/double agreement, bit-identical determinism across runs and thread counts, an SGD
// overfit sanity check and timings.
#include "model/perception.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"
#include "model/loss.h"

namespace fxt::model {
namespace {

constexpr double kMaxRelErr = 1e-6;

// [rows, cols] and [n] views over test vectors, for the loss functions.
template <typename T>
TensorView<T> mat(std::vector<T>& v, std::size_t rows) {
  return {v.data(), Shape{static_cast<int64_t>(rows), static_cast<int64_t>(v.size() / rows)}};
}
template <typename T>
TensorView<T> vec(std::vector<T>& v) {
  return {v.data(), Shape{static_cast<int64_t>(v.size())}};
}

PerceptionConfig tiny_config() {
  PerceptionConfig c;
  c.features = 5;
  c.d_model = 8;  // d_inner 16, 4 Mamba2 heads
  c.head_dim = 4;
  c.d_state = 3;
  c.head_mid = 4;
  c.horizons = 2;
  return c;
}

using test::random_vector;

// Init, then vectors (biases, norms, A_log, D, dt_bias, tau_raw, pool q) moved off their init so
// that no gradient path is degenerate (q = 0 and zero biases would hide errors).
std::vector<double> random_params(const PerceptionConfig& cfg, std::uint64_t seed) {
  const PerceptionLayout l = perception_layout(cfg);
  std::vector<double> p(l.total);
  perception_init(cfg, p.data(), seed);
  std::mt19937_64 rng(seed + 101);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (const ModelParamSpec& s : perception_param_specs(cfg)) {
    if (s.weight_decay || s.name == "ple.edges") continue;  // the edges stay ordered
    // dt = softplus(dt_bias) S and A = -exp(A_log) kept where exp(dt A) does not underflow:
    // otherwise the A_log gradients are ~1e-12, below what central differences resolve.
    const bool dt_bias = s.name.ends_with(".dt_bias"), a_log = s.name.ends_with(".A_log");
    for (std::size_t i = 0; i < s.size; ++i) {
      double& v = p[s.offset + i];
      if (dt_bias) {
        v = std::uniform_real_distribution<double>(-2.0, 0.5)(rng);
      } else if (a_log) {
        v = std::uniform_real_distribution<double>(std::log(0.25), std::log(2.0))(rng);
      } else {
        v += u(rng);
      }
    }
  }
  return p;
}

// A double-precision model instance with fixed inputs; loss() reruns the forward.
struct Problem {
  PerceptionConfig cfg;
  int batch, seq_len;
  double stride;
  std::vector<double> params, x, dt, loss_w;
  PerceptionWorkspace<double> ws;
  CpuContext ctx{2};

  Problem(const PerceptionConfig& c, int b, int k, double s, bool real_time, std::uint64_t seed)
      : cfg(c), batch(b), seq_len(k), stride(s) {
    params = random_params(cfg, seed);
    std::mt19937_64 rng(seed + 7);
    const auto r = static_cast<std::size_t>(b) * static_cast<std::size_t>(k);
    x = random_vector(rng, r * static_cast<std::size_t>(cfg.features), -2.0, 2.0);
    if (real_time) dt = random_vector(rng, r, 0.1, 3.0);
    loss_w = random_vector(rng, r * static_cast<std::size_t>(cfg.horizons), -1.0, 1.0);
    ws.resize(cfg, b, k);
  }
  const double* dt_ptr() const { return dt.empty() ? nullptr : dt.data(); }
  void forward() { perception_forward(cfg, ctx, params.data(), x.data(), stride, dt_ptr(), &ws); }
  double loss() {
    forward();
    return test::dot(loss_w, ws.logits);
  }
};

// Worst relative error per checked tensor; `tag` prefixes the printed lines.
struct CheckReport {
  std::map<std::string, double> worst;
  double overall = 0.0;
};

// Compares analytic gradients with numeric derivatives of f for up to max_coords random coords
// of every spec (in params) and of the input x. floor: smallest relative-error denominator.
CheckReport check_all(Problem& pb, const std::function<double()>& f_trunk,
                      const std::function<double()>& f_heads, const std::vector<double>& grads,
                      const std::vector<double>& d_x, std::size_t max_coords, double floor,
                      std::uint64_t seed) {
  CheckReport rep;
  std::mt19937_64 rng(seed);
  test::GradCheckOptions opt;
  opt.denom_floor = floor;
  // Two step sizes, h = 1e-3 and 1e-4 (relative), and the better agreement counts: the deep
  // composition has large higher derivatives in places (truncation at 1e-3 reached 3.6e-6 on a
  // large m1.in_proj element) while rounding at 1e-4 (~1e-11 absolute) reached 3.6e-6 on a
  // 1.4e-6 head element. Each step alone is a valid central difference.
  test::GradCheckOptions fine = opt;
  fine.rel_step = 1e-4;
  auto check = [&](const std::string& name, double* values, const double* analytic, std::size_t n,
                   const std::function<double()>& f) {
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    if (n > max_coords) {
      std::shuffle(idx.begin(), idx.end(), rng);
      idx.resize(max_coords);
    }
    double worst = 0.0, max_abs = 0.0;
    for (std::size_t i : idx) {
      const double a = analytic[i];
      auto rel_to = [&](double nd) {
        return std::abs(a - nd) / std::max(std::abs(a) + std::abs(nd), floor);
      };
      const double n_coarse = test::numeric_derivative(f, values[i], opt);
      const double n_fine = test::numeric_derivative(f, values[i], fine);
      const double num = rel_to(n_coarse) <= rel_to(n_fine) ? n_coarse : n_fine;
      const double rel = rel_to(num);
      if (rel > kMaxRelErr) {
        std::printf("    %s[%zu]: analytic %.12e numeric %.12e\n", name.c_str(), i, a, num);
      }
      worst = std::max(worst, rel);
      max_abs = std::max(max_abs, std::abs(a));
    }
    std::printf("  %-22s %5zu of %6zu  max rel err %.2e  max |grad| %.2e\n", name.c_str(),
                idx.size(), n, worst, max_abs);
    EXPECT_LE(worst, kMaxRelErr) << name;
    rep.worst[name] = worst;
    rep.overall = std::max(rep.overall, worst);
  };
  for (const ModelParamSpec& s : perception_param_specs(pb.cfg)) {
    if (s.name == "ple.edges") continue;  // constants: no gradient by definition
    check(s.name, pb.params.data() + s.offset, grads.data() + s.offset, s.size,
          s.group == kGroupHeads ? f_heads : f_trunk);
  }
  check("input x", pb.x.data(), d_x.data(), pb.x.size(), f_trunk);
  std::printf("  worst %.2e\n", rep.overall);
  return rep;
}

// Linear loss sum(w * logits): d_logits = w, lambda = 1.
CheckReport check_linear(Problem& pb, std::size_t max_coords, double floor, std::uint64_t seed) {
  const PerceptionLayout l = perception_layout(pb.cfg);
  std::vector<double> grads(l.total), d_x(pb.x.size());
  pb.forward();
  perception_backward(pb.cfg, pb.ctx, pb.params.data(), pb.x.data(), pb.stride, pb.dt_ptr(),
                      pb.loss_w.data(), static_cast<const double*>(nullptr), &pb.ws, grads.data(),
                      d_x.data());
  auto f = [&] { return pb.loss(); };
  return check_all(pb, f, f, grads, d_x, max_coords, floor, seed);
}

// Draws the tensors `pick` names uniformly in [-0.5, 0.5], so paths that start at zero (the skip
// and PLE weights, the heads' output projections) carry gradients in a check.
void move_off_init(Problem& pb, std::uint64_t seed,
                   const std::function<bool(const std::string&)>& pick) {
  std::mt19937_64 rng(seed);
  for (const ModelParamSpec& s : perception_param_specs(pb.cfg)) {
    if (!pick(s.name)) continue;
    for (std::size_t i = 0; i < s.size; ++i) {
      pb.params[s.offset + i] = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
    }
  }
}

TEST(Perception, ParamTableAndCount) {
  const PerceptionConfig cfg;
  ASSERT_TRUE(cfg.validate().ok());
  const PerceptionLayout l = perception_layout(cfg);
  const auto specs = perception_param_specs(cfg);
  std::size_t next = 0;
  std::map<std::string, std::size_t> per_group;
  for (const ModelParamSpec& s : specs) {
    EXPECT_EQ(s.offset, next) << s.name;  // specs tile the buffer in order
    next = s.offset + s.size;
    per_group[s.group] += s.size;
  }
  EXPECT_EQ(next, l.total);
  EXPECT_EQ(total_param_count(specs), l.total);
  std::printf("perception parameters at defaults: %zu (", l.total);
  for (const auto& [g, n] : per_group) std::printf(" %s %zu", g.c_str(), n);
  std::printf(" )\n");
  EXPECT_EQ(l.total, 259695u);  // docs/MODEL.md; "about 260 k" of DESIGN §3
  ASSERT_NE(find_param(specs, "head4.b_s"), nullptr);
  EXPECT_EQ(find_param(specs, "head4.b_s")->offset + 1, l.total);
  EXPECT_EQ(find_param(specs, "varsel.weight")->shape, (std::vector<int>{40, 40}));
  EXPECT_EQ(find_param(specs, "pool.q")->group, kGroupCfc);
  EXPECT_NE(find_param(specs, "m2.A_log"), nullptr);

  PerceptionConfig bad;
  bad.head_dim = 48;  // 256 % 48 != 0
  EXPECT_FALSE(bad.validate().ok());
  bad = PerceptionConfig{};
  bad.horizons = 0;
  EXPECT_FALSE(bad.validate().ok());
}

TEST(Perception, InitIsDeterministicAndMeanPooling) {
  const PerceptionConfig cfg;
  const PerceptionLayout l = perception_layout(cfg);
  std::vector<float> a(l.total), b(l.total), c(l.total);
  perception_init(cfg, a.data(), 5);
  perception_init(cfg, b.data(), 5);
  perception_init(cfg, c.data(), 6);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_NE(a, c);
  for (int i = 0; i < cfg.d_model; ++i) {
    EXPECT_EQ(a[l.pool_q + i], 0.0f);
    EXPECT_EQ(a[l.norm_a_w + i], 1.0f);
    EXPECT_EQ(a[l.norm_b_b + i], 0.0f);
  }
}

TEST(Perception, UniformGatesAreIdentity) {
  Problem pb(PerceptionConfig{}, 2, 6, 1.0, false, 3);
  const PerceptionLayout l = perception_layout(pb.cfg);
  const std::size_t f = static_cast<std::size_t>(pb.cfg.features);
  std::fill(pb.params.begin() + static_cast<std::ptrdiff_t>(l.varsel_w),
            pb.params.begin() + static_cast<std::ptrdiff_t>(l.varsel_b + f), 0.0);
  pb.forward();
  double max_diff = 0;
  for (std::size_t i = 0; i < pb.x.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(pb.ws.x_sel[i] - pb.x[i]));
  }
  EXPECT_LE(max_diff, 1e-14);
}

TEST(PerceptionGrad, TinyFullStride1) {
  Problem pb(tiny_config(), 2, 6, 1.0, false, 11);
  std::printf("perception grad check tiny (F5 D8 P4 N3 M4 H2) B=2 K=6 S=1, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 1);
}

TEST(PerceptionGrad, TinyFullStride4) {
  Problem pb(tiny_config(), 2, 6, 4.0, false, 12);
  std::printf("perception grad check tiny B=2 K=6 S=4, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 2);
}

TEST(PerceptionGrad, TinyFullPerPositionDt) {
  Problem pb(tiny_config(), 2, 6, 4.0, true, 13);
  std::printf("perception grad check tiny B=2 K=6 S=4, per-position CfC dt, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 3);
}

// The real sizes, a random subset of coordinates of every tensor (all of the small ones).
TEST(PerceptionGrad, RealSizesRandomSubsetStride4) {
  Problem pb(PerceptionConfig{}, 2, 6, 4.0, false, 14);
  std::printf("perception grad check defaults B=2 K=6 S=4, random subset\n");
  check_linear(pb, 10, 1e-8, 4);
}

TEST(PerceptionGrad, RealSizesRandomSubsetStride1PerPositionDt) {
  Problem pb(PerceptionConfig{}, 2, 6, 1.0, true, 15);
  std::printf("perception grad check defaults B=2 K=6 S=1 per-position dt, subset\n");
  check_linear(pb, 6, 1e-8, 5);
}

// Masked BCE under kendall-closed weighting with a controller state that gives lambda != 1:
// head j's parameters must get the gradient of total = sum_j w_j L_j (unscaled), the trunk and
// the input that of sum_j lambda_j w_j L_j (w_j = d total / d L_j, a constant).
TEST(PerceptionGrad, MaskedBceWithTrunkLambda) {
  Problem pb(tiny_config(), 2, 6, 4.0, false, 16);
  const int nh = pb.cfg.horizons;
  const auto r = static_cast<std::size_t>(pb.batch * pb.seq_len);
  std::mt19937_64 rng(17);
  std::vector<double> labels(r * nh), mask(r * nh);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<double>(rng() % 2);
    mask[i] = (rng() % 4 == 0) ? 0.0 : 1.0;
  }
  LossConfig lc;  // kendall-closed, lambda on
  ControllerState state(nh);
  state.ema = {0.4, 0.9};
  state.ema_initialized = true;
  state.zmax = 0.8;
  state.zmax_initialized = true;
  state.step = 10;

  pb.forward();
  std::vector<double> d_logits(r * nh, 0.0);
  const LossStepOutputs out =
      loss_step<double>(lc, state, mat(pb.ws.logits, r), mat(labels, r), mat(mask, r),
                        TensorView<const double>(), mat(d_logits, r), TensorView<double>(),
                        /*update_state=*/false);
  std::printf("lambda = [%.3f, %.3f], weight = [%.3f, %.3f]\n", out.lambda[0], out.lambda[1],
              out.weight[0], out.weight[1]);
  ASSERT_GT(std::abs(out.lambda[0] - out.lambda[1]), 0.1);  // the path is really exercised
  const std::vector<double> lambda = out.lambda;
  const std::vector<double> weight = out.weight;

  const PerceptionLayout l = perception_layout(pb.cfg);
  std::vector<double> grads(l.total), d_x(pb.x.size());
  perception_backward(pb.cfg, pb.ctx, pb.params.data(), pb.x.data(), pb.stride, pb.dt_ptr(),
                      d_logits.data(), lambda.data(), &pb.ws, grads.data(), d_x.data());

  std::vector<double> loss_h(static_cast<std::size_t>(nh));
  auto weighted = [&](bool scaled) {
    pb.forward();
    masked_bce_forward<double>(mat(pb.ws.logits, r), mat(labels, r), mat(mask, r), vec(loss_h));
    double t = 0;
    for (int j = 0; j < nh; ++j) t += (scaled ? lambda[j] : 1.0) * weight[j] * loss_h[j];
    return t;
  };
  std::printf("perception grad check tiny B=2 K=6 S=4, masked BCE, lambda path, all coords\n");
  check_all(
      pb, [&] { return weighted(true); }, [&] { return weighted(false); }, grads, d_x, 1u << 20,
      1e-8, 6);
}

TEST(Perception, FloatMatchesDouble) {
  const PerceptionConfig cfg;
  const int b = 4, k = 16;
  Problem pb(cfg, b, k, 4.0, false, 21);
  pb.forward();
  std::vector<float> pf(pb.params.begin(), pb.params.end()), xf(pb.x.begin(), pb.x.end());
  PerceptionWorkspace<float> wf;
  wf.resize(cfg, b, k);
  CpuContext ctx(2);
  perception_forward(cfg, ctx, pf.data(), xf.data(), 4.0f, static_cast<const float*>(nullptr), &wf);
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < wf.logits.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(wf.logits[i]) - pb.ws.logits[i]));
    max_abs = std::max(max_abs, std::abs(pb.ws.logits[i]));
  }
  std::printf("float vs double logits B=4 K=16: max abs diff %.2e (max |logit| %.2e)\n", max_diff,
              max_abs);
  EXPECT_LE(max_diff, 1e-4 * std::max(1.0, max_abs));
}

// Scoring computes the heads at the last position only: the same numbers as the full forward's
// rows k = K - 1 (with per-position time steps too), up to the rounding of GEMMs of another
// row count.
TEST(Perception, LastPositionForwardEqualsFullForward) {
  const PerceptionConfig cfg;
  const int b = 3, k = 12;
  Problem pb(cfg, b, k, 1.0, true, 41);
  pb.forward();
  const std::vector<double> full = pb.ws.logits;
  perception_forward_last(pb.cfg, pb.ctx, pb.params.data(), pb.x.data(), pb.stride, pb.dt_ptr(),
                          &pb.ws);
  const int nh = cfg.horizons;
  for (int i = 0; i < b; ++i) {
    for (int h = 0; h < nh; ++h) {
      const double want = full[static_cast<std::size_t>((i * k + k - 1) * nh + h)];
      EXPECT_NEAR(pb.ws.logits[static_cast<std::size_t>(i * nh + h)], want,
                  1e-12 * std::max(1.0, std::abs(want)))
          << "sequence " << i << " head " << h;
    }
  }
}

// The causal trunk (cfg.causal): s_{-1} = 0 instead of the window's pool. Every gradient against
// central differences (the pool's query gets exactly 0, as its finite difference).
TEST(PerceptionGrad, TinyFullCausal) {
  PerceptionConfig cfg = tiny_config();
  cfg.causal = true;
  Problem pb(cfg, 2, 6, 1.0, false, 43);
  std::printf("perception grad check tiny B=2 K=6 S=1 causal, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 5);
}

// The look-ahead the causal trunk removes: with DESIGN's pool as the CfC's start, changing the
// features of position j changes the logits of every earlier position (they read later
// positions, which hold their labels); with cfg.causal no logit before j moves by a single bit,
// and the last position's logits equal the last-position forward path (perception_forward_last)
// in both, as in LastPositionForwardEqualsFullForward.
TEST(Perception, CausalTrunkNeverReadsALaterPosition) {
  for (const bool causal : {false, true}) {
    PerceptionConfig cfg;
    cfg.causal = causal;
    const int b = 2, k = 10, j = 6;
    Problem pb(cfg, b, k, 1.0, false, 47);
    pb.forward();
    const std::vector<double> before = pb.ws.logits;
    for (int i = 0; i < b; ++i) {
      for (int f = 0; f < cfg.features; ++f)
        pb.x[static_cast<std::size_t>((i * k + j) * cfg.features + f)] += 0.5;
    }
    pb.forward();
    const int nh = cfg.horizons;
    int earlier_changed = 0, at_j_changed = 0;
    for (int i = 0; i < b; ++i) {
      for (int pos = 0; pos <= j; ++pos) {
        for (int h = 0; h < nh; ++h) {
          const auto e = static_cast<std::size_t>((i * k + pos) * nh + h);
          (pos < j ? earlier_changed : at_j_changed) += pb.ws.logits[e] != before[e];
        }
      }
    }
    EXPECT_EQ(at_j_changed, b * nh) << "causal " << causal;
    if (causal) {
      EXPECT_EQ(earlier_changed, 0);
    } else {
      EXPECT_EQ(earlier_changed, b * j * nh);  // the pool carries position j to every position
    }
    const std::vector<double> full = pb.ws.logits;
    perception_forward_last(pb.cfg, pb.ctx, pb.params.data(), pb.x.data(), pb.stride, pb.dt_ptr(),
                            &pb.ws);
    for (int i = 0; i < b; ++i) {
      for (int h = 0; h < nh; ++h) {
        const double want = full[static_cast<std::size_t>((i * k + k - 1) * nh + h)];
        EXPECT_NEAR(pb.ws.logits[static_cast<std::size_t>(i * nh + h)], want,
                    1e-12 * std::max(1.0, std::abs(want)));
      }
    }
  }
}

// The input skip path: every gradient (W_skip, the heads with w_m and w_s moved off their zero
// init, the trunk, d_x) against central differences.
TEST(PerceptionGrad, TinyFullWithInputSkip) {
  PerceptionConfig cfg = tiny_config();
  cfg.input_skip = true;
  Problem pb(cfg, 2, 6, 1.0, false, 17);
  move_off_init(pb, 23, [](const std::string& n) {
    return n == "skip.weight" || n.ends_with(".w_m") || n.ends_with(".w_s");
  });
  std::printf("perception grad check tiny B=2 K=6 S=1 with the input skip path, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 5);
}

// The snapshot heads: their gradients (w_m and w_s moved off their zero init, so every tensor
// carries one), the rest of the model and d_x against central differences.
TEST(PerceptionGrad, TinyFullWithSnapshotHeads) {
  PerceptionConfig cfg = tiny_config();
  cfg.input_skip = true;
  cfg.snapshot_heads = true;
  Problem pb(cfg, 2, 6, 1.0, false, 19);
  move_off_init(pb, 29, [](const std::string& n) {
    return n == "skip.weight" || n.ends_with(".w_m") || n.ends_with(".w_s") || n.ends_with(".b_m");
  });
  std::printf("perception grad check tiny B=2 K=6 S=1 with snapshot heads, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 5);
}

// The PLE path: W_ple (moved off its zero init), the rest of the model and d_x (through the
// encoding's derivative) against central differences.
TEST(PerceptionGrad, TinyFullWithPle) {
  PerceptionConfig cfg = tiny_config();
  cfg.input_skip = true;
  cfg.ple_bins = 4;
  Problem pb(cfg, 2, 6, 1.0, false, 31);
  move_off_init(pb, 37, [](const std::string& n) {
    return n == "skip.weight" || n == "ple.weight" || n.ends_with(".w_m") || n.ends_with(".w_s");
  });
  std::printf("perception grad check tiny B=2 K=6 S=1 with the PLE path, all coords\n");
  check_linear(pb, 1u << 20, 1e-8, 5);
}

// The PLE path starts at zero, so the untrained model's logits do not change when it is added;
// with W_ple set, each logit gains exactly enc(x) W_ple^T (the encoding by hand, full and
// last-position forwards). Layout: edges [F, K + 1] then W_ple [H, F K], appended.
TEST(Perception, PlePathAddsTheEncodedLinearMap) {
  PerceptionConfig plain;
  plain.input_skip = true;
  PerceptionConfig cfg = plain;
  cfg.ple_bins = 8;
  const PerceptionLayout lp = perception_layout(plain), l = perception_layout(cfg);
  EXPECT_EQ(l.ple_edges, lp.total);
  EXPECT_EQ(l.ple_w, lp.total + 40u * 9u);
  EXPECT_EQ(l.total, lp.total + 40u * 9u + 5u * 40u * 8u);
  const int b = 2, k = 7, f = cfg.features, nh = cfg.horizons, bins = cfg.ple_bins;
  std::vector<double> p(l.total);
  perception_init(cfg, p.data(), 3);
  std::vector<double> pplain(lp.total);
  perception_init(plain, pplain.data(), 3);
  EXPECT_TRUE(std::equal(pplain.begin(), pplain.end(), p.begin()));  // the rest is unchanged
  EXPECT_EQ(p[l.ple_edges], -3.0);
  EXPECT_EQ(p[l.ple_edges + 8], 3.0);
  std::mt19937_64 rng(4);
  const std::vector<double> x = random_vector(rng, static_cast<std::size_t>(b * k * f), -4.0, 4.0);
  CpuContext ctx(2);
  PerceptionWorkspace<double> ws, wsp;
  ws.resize(cfg, b, k);
  wsp.resize(plain, b, k);
  const double* no_dt = nullptr;
  perception_forward(cfg, ctx, p.data(), x.data(), 1.0, no_dt, &ws);
  perception_forward(plain, ctx, pplain.data(), x.data(), 1.0, no_dt, &wsp);
  EXPECT_EQ(ws.logits, wsp.logits);
  const std::vector<double> w =
      random_vector(rng, static_cast<std::size_t>(nh * f * bins), -1.0, 1.0);
  std::copy(w.begin(), w.end(), p.begin() + static_cast<std::ptrdiff_t>(l.ple_w));
  // The encoding of one value on the default edges -3 + 0.75 t, by hand.
  auto path = [&](int row, int j) {
    double z = 0.0;
    for (int i = 0; i < f; ++i) {
      const double v = x[static_cast<std::size_t>(row * f + i)];
      for (int t = 0; t < bins; ++t) {
        const double lo = -3.0 + 0.75 * t;
        const double e = std::min(std::max((v - lo) / 0.75, 0.0), 1.0);
        z += e * w[static_cast<std::size_t>((j * f + i) * bins + t)];
      }
    }
    return z;
  };
  perception_forward(cfg, ctx, p.data(), x.data(), 1.0, no_dt, &ws);
  for (int row = 0; row < b * k; ++row) {
    for (int j = 0; j < nh; ++j) {
      const auto at = static_cast<std::size_t>(row * nh + j);
      EXPECT_NEAR(ws.logits[at], wsp.logits[at] + path(row, j), 1e-12);
    }
  }
  perception_forward_last(cfg, ctx, p.data(), x.data(), 1.0, no_dt, &ws);
  for (int i = 0; i < b; ++i) {
    for (int j = 0; j < nh; ++j) {
      const auto at = static_cast<std::size_t>(i * nh + j);
      EXPECT_NEAR(
          ws.logits[at],
          wsp.logits[static_cast<std::size_t>((i * k + k - 1) * nh + j)] + path(i * k + k - 1, j),
          1e-12);
    }
  }
}

// Snapshot heads start silent: the untrained model's logits do not change when they are added
// (full and last-position forwards), and the layout appends H heads of input width F.
TEST(Perception, SnapshotHeadsStartSilent) {
  PerceptionConfig plain;
  plain.input_skip = true;
  PerceptionConfig cfg = plain;
  cfg.snapshot_heads = true;
  const PerceptionLayout lp = perception_layout(plain), l = perception_layout(cfg);
  const HeadLayout xl = head_layout(cfg.features, cfg.head_mid);
  EXPECT_EQ(xl.size, 64 * 40 + 64 + 64 * 64 + 64 + 64 + 1 + 64 + 1 + 40 + 1);
  EXPECT_EQ(l.xheads, lp.total);
  EXPECT_EQ(l.total, lp.total + 5u * static_cast<std::size_t>(xl.size));
  const int b = 2, k = 7, nh = cfg.horizons;
  std::vector<double> p(l.total);
  perception_init(cfg, p.data(), 3);
  std::vector<double> pp(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(lp.total));
  std::vector<double> pplain(lp.total);
  perception_init(plain, pplain.data(), 3);
  EXPECT_EQ(pp, pplain);  // the rest of the init is unchanged
  std::mt19937_64 rng(4);
  const std::vector<double> x =
      random_vector(rng, static_cast<std::size_t>(b * k * cfg.features), -2.0, 2.0);
  CpuContext ctx(2);
  PerceptionWorkspace<double> ws, wsp;
  ws.resize(cfg, b, k);
  wsp.resize(plain, b, k);
  perception_forward(cfg, ctx, p.data(), x.data(), 1.0, static_cast<const double*>(nullptr), &ws);
  perception_forward(plain, ctx, pplain.data(), x.data(), 1.0, static_cast<const double*>(nullptr),
                     &wsp);
  EXPECT_EQ(ws.logits, wsp.logits);
  perception_forward_last(cfg, ctx, p.data(), x.data(), 1.0, static_cast<const double*>(nullptr),
                          &ws);
  perception_forward_last(plain, ctx, pplain.data(), x.data(), 1.0,
                          static_cast<const double*>(nullptr), &wsp);
  for (int i = 0; i < b * nh; ++i) {
    EXPECT_EQ(ws.logits[static_cast<std::size_t>(i)], wsp.logits[static_cast<std::size_t>(i)]);
  }
}

// With the skip path the untrained model is exactly a logistic regression on each position's
// features: logits = x W_skip^T + b_s (w_m = w_s = 0 at init), in the full and last-position
// forwards; the layout adds H x F parameters after the heads.
TEST(Perception, UntrainedModelWithInputSkipIsTheLogistic) {
  PerceptionConfig cfg;
  cfg.input_skip = true;
  const PerceptionLayout l = perception_layout(cfg);
  EXPECT_EQ(l.total, 259695u + 5u * 40u);
  EXPECT_EQ(l.skip_w, 259695u);
  const int b = 2, k = 7, f = cfg.features, nh = cfg.horizons;
  std::vector<double> p(l.total);
  perception_init(cfg, p.data(), 3);
  std::mt19937_64 rng(4);
  const std::vector<double> w = random_vector(rng, static_cast<std::size_t>(nh * f), -1.0, 1.0);
  std::copy(w.begin(), w.end(), p.begin() + static_cast<std::ptrdiff_t>(l.skip_w));
  for (int j = 0; j < nh; ++j) {
    p[l.heads + static_cast<std::size_t>(j * l.head.size + l.head.bs)] = 0.25 * j - 0.5;
  }
  const std::vector<double> x =
      random_vector(rng, static_cast<std::size_t>(b * k * f), -2.0, 2.0);
  CpuContext ctx(2);
  PerceptionWorkspace<double> ws;
  ws.resize(cfg, b, k);
  perception_forward(cfg, ctx, p.data(), x.data(), 1.0, static_cast<const double*>(nullptr), &ws);
  auto logistic = [&](int row, int j) {
    double z = 0.25 * j - 0.5;
    for (int i = 0; i < f; ++i) {
      z += x[static_cast<std::size_t>(row * f + i)] * w[static_cast<std::size_t>(j * f + i)];
    }
    return z;
  };
  for (int row = 0; row < b * k; ++row) {
    for (int j = 0; j < nh; ++j) {
      EXPECT_NEAR(ws.logits[static_cast<std::size_t>(row * nh + j)], logistic(row, j), 1e-12);
    }
  }
  perception_forward_last(cfg, ctx, p.data(), x.data(), 1.0, static_cast<const double*>(nullptr),
                          &ws);
  for (int i = 0; i < b; ++i) {
    for (int j = 0; j < nh; ++j) {
      EXPECT_NEAR(ws.logits[static_cast<std::size_t>(i * nh + j)], logistic(i * k + k - 1, j),
                  1e-12);
    }
  }
}

// Two runs, and 1 vs 4 threads, give identical bytes of logits, gradients and d_x: DESIGN's
// model, and the demo's causal one with the input skip and the PLE path (non-zero weights), whose
// linear paths are threaded over rows (forward) and column slices (backward). The second pass on
// a context reuses its workers.
TEST(Perception, DeterministicBytes) {
  PerceptionConfig with_paths;
  with_paths.d_model = 32;
  with_paths.d_state = 8;
  with_paths.causal = true;
  with_paths.input_skip = true;
  with_paths.ple_bins = 8;
  for (const PerceptionConfig& cfg : {PerceptionConfig(), with_paths}) {
    const int b = 8, k = 32;
    const PerceptionLayout l = perception_layout(cfg);
    std::vector<float> params(l.total);
    perception_init(cfg, params.data(), 31);
    std::mt19937_64 rng(32);
    std::normal_distribution<float> n01;
    if (cfg.input_skip) {
      for (std::size_t i = l.skip_w; i < l.skip_w + static_cast<std::size_t>(cfg.horizons) * 40;
           ++i)
        params[i] = 0.1f * n01(rng);
    }
    for (std::size_t i = l.ple_w; i < l.total; ++i) params[i] = 0.1f * n01(rng);
    std::vector<float> x(static_cast<std::size_t>(b * k * cfg.features));
    for (float& v : x) v = n01(rng);
    std::vector<float> d_logits(static_cast<std::size_t>(b * k * cfg.horizons));
    for (float& v : d_logits) v = n01(rng);
    const std::vector<float> lambda = {1.0f, 1.5f, 2.0f, 1.0f, 1.25f};

    struct Run {
      std::vector<float> logits, grads, d_x;
    };
    auto run = [&](int threads) {
      CpuContext ctx(threads);
      PerceptionWorkspace<float> ws;
      ws.resize(cfg, b, k);
      Run out;
      out.grads.resize(l.total);
      out.d_x.resize(x.size());
      for (int pass = 0; pass < 2; ++pass) {
        perception_forward(cfg, ctx, params.data(), x.data(), 2.0f,
                           static_cast<const float*>(nullptr), &ws);
        out.logits = ws.logits;
        perception_backward(cfg, ctx, params.data(), x.data(), 2.0f,
                            static_cast<const float*>(nullptr), d_logits.data(), lambda.data(), &ws,
                            out.grads.data(), out.d_x.data());
      }
      return out;
    };
    auto same = [](const std::vector<float>& a, const std::vector<float>& c) {
      return a.size() == c.size() && std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0;
    };
    const Run a = run(4), b2 = run(4), c = run(1), d = run(2);
    for (const Run* o : {&b2, &c, &d}) {
      EXPECT_TRUE(same(a.logits, o->logits)) << "ple_bins " << cfg.ple_bins;
      EXPECT_TRUE(same(a.grads, o->grads)) << "ple_bins " << cfg.ple_bins;
      EXPECT_TRUE(same(a.d_x, o->d_x)) << "ple_bins " << cfg.ple_bins;
    }
  }
}

// Plain SGD on one fixed batch whose labels are a constant signal per sequence and horizon: the
// masked BCE (uniform weighting) must fall well below its starting value. stride: S.
void overfit(int b, float stride, int steps) {
  const PerceptionConfig cfg;
  const int k = 16;
  const float lr = 0.05f;
  const PerceptionLayout l = perception_layout(cfg);
  std::vector<float> params(l.total), grads(l.total);
  perception_init(cfg, params.data(), 41);
  std::mt19937_64 rng(42 + static_cast<std::uint64_t>(b));
  std::normal_distribution<float> n01;
  const auto r = static_cast<std::size_t>(b * k);
  std::vector<float> x(r * static_cast<std::size_t>(cfg.features));
  for (float& v : x) v = n01(rng);
  const auto nh = static_cast<std::size_t>(cfg.horizons);
  std::vector<float> labels(r * nh), mask(r * nh, 1.0f), d_logits(r * nh);
  for (std::size_t i = 0; i < r; ++i) {
    for (std::size_t j = 0; j < nh; ++j) {
      labels[i * nh + j] = static_cast<float>((i / static_cast<std::size_t>(k) + j) % 2);
    }
  }
  LossConfig lc;
  lc.weighting = HorizonWeighting::kUniform;
  lc.trunk_lambda = false;
  ControllerState state(cfg.horizons);
  CpuContext ctx(2);
  PerceptionWorkspace<float> ws;
  ws.resize(cfg, b, k);
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    perception_forward(cfg, ctx, params.data(), x.data(), stride,
                       static_cast<const float*>(nullptr), &ws);
    std::fill(d_logits.begin(), d_logits.end(), 0.0f);
    const LossStepOutputs out =
        loss_step<float>(lc, state, mat(ws.logits, r), mat(labels, r), mat(mask, r),
                         TensorView<const float>(), mat(d_logits, r), TensorView<float>());
    const double mean_bce = out.total / static_cast<double>(nh);
    if (step == 0) first = mean_bce;
    last = mean_bce;
    perception_backward(cfg, ctx, params.data(), x.data(), stride,
                        static_cast<const float*>(nullptr), d_logits.data(),
                        static_cast<const float*>(nullptr), &ws, grads.data(),
                        static_cast<float*>(nullptr));
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];
  }
  std::printf("overfit B=%d K=%d S=%.0f: mean BCE %.4f -> %.4f after %d SGD steps (lr %.2f)\n", b,
              k, static_cast<double>(stride), first, last, steps, static_cast<double>(lr));
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.3 * first);
}

TEST(Perception, OverfitB1) {
  overfit(1, 1.0f, 300);
}
TEST(Perception, OverfitB32) {
  overfit(32, 1.0f, 60);
}
TEST(Perception, OverfitB4Stride4) {
  overfit(4, 4.0f, 300);
}

double time_ms(const std::function<void()>& fn, int reps) {
  fn();  // warm-up: sizes the context scratch
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) fn();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
}

TEST(Perception, Timing) {
#ifdef FXT_SANITIZED
  GTEST_SKIP() << "timings under the sanitizers measure the sanitizers; the Release run prints them";
#endif
  const PerceptionConfig cfg;
  const PerceptionLayout l = perception_layout(cfg);
  std::vector<float> params(l.total), grads(l.total);
  perception_init(cfg, params.data(), 51);
  const float* no_dt = nullptr;
  for (int threads : {1, 2}) {
    for (int b : {32, 1}) {
      const int k = 64;
      CpuContext ctx(threads);
      std::mt19937_64 rng(52);
      std::normal_distribution<float> n01;
      std::vector<float> x(static_cast<std::size_t>(b * k * cfg.features));
      for (float& v : x) v = n01(rng);
      std::vector<float> d_logits(static_cast<std::size_t>(b * k * cfg.horizons), 1e-3f);
      PerceptionWorkspace<float> ws;
      ws.resize(cfg, b, k);
      const int reps = b == 1 ? 50 : 5;
      const double fwd = time_ms(
          [&] { perception_forward(cfg, ctx, params.data(), x.data(), 1.0f, no_dt, &ws); }, reps);
      const double fwd_bwd = time_ms(
          [&] {
            perception_forward(cfg, ctx, params.data(), x.data(), 1.0f, no_dt, &ws);
            perception_backward(cfg, ctx, params.data(), x.data(), 1.0f, no_dt, d_logits.data(),
                                no_dt, &ws, grads.data(), static_cast<float*>(nullptr));
          },
          reps);
      std::printf(
          "TIMING perception B=%d K=%d float, %d thread(s): forward %.2f ms, "
          "forward+backward %.2f ms\n",
          b, k, threads, fwd, fwd_bwd);
    }
  }
}

}  // namespace
}  // namespace fxt::model
