// Gradient checks (double, central differences) of every op in model/ops.h, float-vs-double
// forward agreement, and bit-identical threaded runs. Prints the max relative errors.
#include <cstring>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "model/grad_check.h"
#include "model/ops.h"
#include "model/tensor.h"

namespace fxt::model {
namespace {

using test::check_gradient;
using test::GradCheckResult;
using Td = Tensor<double>;
using Tf = Tensor<float>;

constexpr double kTol = 1e-6;

// Max error per op, printed at the end of the program for the docs.
std::map<std::string, double>& max_errors() {
  static std::map<std::string, double> m;
  return m;
}
void report(const std::string& name, const GradCheckResult& r) {
  fmt::print("[grad] {:<28} {}\n", name, r.to_string());
  auto& e = max_errors()[name.substr(0, name.find('.'))];
  e = std::max(e, r.max_rel_error);
  EXPECT_LE(r.max_rel_error, kTol) << name;
}

Td random_tensor(Shape s, std::mt19937_64& gen, double lo = -1.0, double hi = 1.0) {
  Td t(s);
  test::fill_uniform(t.span(), gen, lo, hi);
  return t;
}
Tf to_float(const Td& t) {
  Tf f(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f[i] = static_cast<float>(t[i]);
  return f;
}
double max_abs_diff(const Tf& f, const Td& d) {
  double m = 0;
  for (int64_t i = 0; i < d.numel(); ++i) m = std::max(m, std::abs(double(f[i]) - d[i]));
  return m;
}
void report_float(const std::string& name, double diff, double tol = 1e-5) {
  fmt::print("[f32 ] {:<28} max |float - double| = {:.3e}\n", name, diff);
  EXPECT_LE(diff, tol) << name;
}

class OpsGradTest : public ::testing::Test {
 protected:
  std::mt19937_64 gen{20240611};
  CpuContext ctx{1};
};

TEST_F(OpsGradTest, Linear) {
  const int64_t rows = 7, n_in = 5, n_out = 4;
  Td x = random_tensor({rows, n_in}, gen), w = random_tensor({n_out, n_in}, gen);
  Td b = random_tensor({n_out}, gen), y({rows, n_out}), r = random_tensor({rows, n_out}, gen);
  auto f = [&] {
    linear_forward<double>(ctx, x, w, b, y);
    return test::dot(r.span(), y.span());
  };
  Td dx(x.shape()), dw(w.shape()), db(b.shape());
  f();
  linear_backward<double>(ctx, x, w, r, dx, dw, db);
  report("linear.dx", check_gradient(f, x.span(), dx.span()));
  report("linear.dw", check_gradient(f, w.span(), dw.span()));
  report("linear.db", check_gradient(f, b.span(), db.span()));

  Tf xf = to_float(x), wf = to_float(w), bf = to_float(b), yf(y.shape());
  linear_forward<float>(ctx, xf, wf, bf, yf);
  linear_forward<double>(ctx, x, w, b, y);
  report_float("linear", max_abs_diff(yf, y));
}

TEST_F(OpsGradTest, VariableSelection) {
  const int64_t rows = 6, nf = 7;
  Td x = random_tensor({2, 3, nf}, gen), w = random_tensor({nf, nf}, gen),
     b = random_tensor({nf}, gen);
  Td y(x.shape()), gates(x.shape()), r = random_tensor(x.shape(), gen);
  auto f = [&] {
    varsel_forward<double>(ctx, x, w, b, y, gates);
    return test::dot(r.span(), y.span());
  };
  Td dx(x.shape()), dw(w.shape()), db(b.shape());
  f();
  varsel_backward<double>(ctx, x, w, gates, r, dx, dw, db);
  report("varsel.dx", check_gradient(f, x.span(), dx.span()));
  report("varsel.dw", check_gradient(f, w.span(), dw.span()));
  report("varsel.db", check_gradient(f, b.span(), db.span()));
  (void)rows;

  Tf xf = to_float(x), wf = to_float(w), bf = to_float(b), yf(y.shape()), gf(y.shape());
  varsel_forward<float>(ctx, xf, wf, bf, yf, gf);
  f();
  report_float("varsel", max_abs_diff(yf, y));

  // Uniform gates (w = 0, b = 0) are the identity; the init has variance 1/F and zero bias.
  Td w0(w.shape()), b0(b.shape());
  varsel_forward<double>(ctx, x, w0, b0, y, gates);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(y[i], x[i], 1e-12);
  Td wi({40, 40}), bi({40});
  varsel_init<double>(wi, bi, 7);
  double var = 0;
  for (int64_t i = 0; i < wi.numel(); ++i) var += wi[i] * wi[i];
  var /= static_cast<double>(wi.numel());
  EXPECT_NEAR(var, 1.0 / 40, 0.2 / 40);
  for (int64_t i = 0; i < bi.numel(); ++i) EXPECT_EQ(bi[i], 0.0);
}

TEST_F(OpsGradTest, LayerNorm) {
  const int64_t rows = 5, c = 8;
  Td x = random_tensor({rows, c}, gen, -2, 2), w = random_tensor({c}, gen),
     b = random_tensor({c}, gen);
  Td y(x.shape()), mean({rows}), rstd({rows}), r = random_tensor(x.shape(), gen);
  auto f = [&] {
    layernorm_forward<double>(ctx, x, w, b, y, mean, rstd);
    return test::dot(r.span(), y.span());
  };
  Td dx(x.shape()), dw(w.shape()), db(b.shape());
  f();
  layernorm_backward<double>(ctx, x, w, mean, rstd, r, dx, dw, db);
  report("layernorm.dx", check_gradient(f, x.span(), dx.span()));
  report("layernorm.dw", check_gradient(f, w.span(), dw.span()));
  report("layernorm.db", check_gradient(f, b.span(), db.span()));

  Tf xf = to_float(x), wf = to_float(w), bf = to_float(b), yf(y.shape()), mf({rows}), rf({rows});
  layernorm_forward<float>(ctx, xf, wf, bf, yf, mf, rf);
  f();
  report_float("layernorm", max_abs_diff(yf, y));
}

TEST_F(OpsGradTest, RmsNormGated) {
  const int64_t rows = 5, c = 8;
  Td y = random_tensor({rows, c}, gen, -2, 2), z = random_tensor({rows, c}, gen, -3, 3);
  Td w = random_tensor({c}, gen), out(y.shape()), rstd({rows}), r = random_tensor(y.shape(), gen);
  auto f = [&] {
    rmsnorm_gated_forward<double>(ctx, y, z, w, out, rstd);
    return test::dot(r.span(), out.span());
  };
  Td dy(y.shape()), dz(z.shape()), dw(w.shape());
  f();
  rmsnorm_gated_backward<double>(ctx, y, z, w, rstd, r, dy, dz, dw);
  report("rmsnorm_gated.dy", check_gradient(f, y.span(), dy.span()));
  report("rmsnorm_gated.dz", check_gradient(f, z.span(), dz.span()));
  report("rmsnorm_gated.dw", check_gradient(f, w.span(), dw.span()));

  Tf yf = to_float(y), zf = to_float(z), wf = to_float(w), of(y.shape()), rf({rows});
  rmsnorm_gated_forward<float>(ctx, yf, zf, wf, of, rf);
  f();
  report_float("rmsnorm_gated", max_abs_diff(of, out));
}

TEST_F(OpsGradTest, Activations) {
  for (Activation a : {Activation::kSilu, Activation::kSoftplus, Activation::kGelu,
                       Activation::kSigmoid, Activation::kTanh}) {
    Td x = random_tensor({4, 6}, gen, -4, 4), y(x.shape()), r = random_tensor(x.shape(), gen);
    x[0] = 6.0;  // toward the saturated tails
    x[1] = -6.0;
    auto f = [&] {
      activation_forward<double>(a, x, y);
      return test::dot(r.span(), y.span());
    };
    Td dx(x.shape());
    activation_backward<double>(a, x, r, dx);
    report(fmt::format("{}.dx", activation_name(a)), check_gradient(f, x.span(), dx.span()));
    Tf xf = to_float(x), yf(x.shape());
    activation_forward<float>(a, xf, yf);
    f();
    report_float(activation_name(a), max_abs_diff(yf, y));
  }
  // The stable branches: no overflow or NaN far out, in float and double.
  for (double v : {-1000.0, 1000.0}) {
    for (double g : {silu_grad(v), softplus_grad(v), gelu_grad(v), double(silu_grad(float(v))),
                     double(softplus(float(v))), double(sigmoid(float(v)))}) {
      EXPECT_TRUE(std::isfinite(g)) << v;
    }
  }
  EXPECT_EQ(softplus(1000.0), 1000.0);
  EXPECT_EQ(sigmoid(-1000.0), 0.0);
  EXPECT_NEAR(gelu(1.0), 0.8413447460685429, 1e-15);
}

TEST_F(OpsGradTest, ResidualAdd) {
  Td a = random_tensor({3, 4}, gen), b = random_tensor({3, 4}, gen), out(a.shape());
  Td r = random_tensor(a.shape(), gen);
  auto f = [&] {
    add_forward<double>(a, b, out);
    return test::dot(r.span(), out.span());
  };
  Td da(a.shape()), db(b.shape());
  add_backward<double>(r, da, db);
  report("add.da", check_gradient(f, a.span(), da.span()));
  report("add.db", check_gradient(f, b.span(), db.span()));
}

TEST_F(OpsGradTest, AttentionPool) {
  const int64_t nb = 3, nk = 5, d = 6;
  Td h = random_tensor({nb, nk, d}, gen), q = random_tensor({d}, gen, -2, 2);
  Td c({nb, d}), attn({nb, nk}), r = random_tensor(c.shape(), gen);
  auto f = [&] {
    attn_pool_forward<double>(ctx, h, q, c, attn);
    return test::dot(r.span(), c.span());
  };
  Td dh(h.shape()), dq(q.shape());
  f();
  attn_pool_backward<double>(ctx, h, q, attn, r, dh, dq);
  report("attn_pool.dh", check_gradient(f, h.span(), dh.span()));
  report("attn_pool.dq", check_gradient(f, q.span(), dq.span()));

  Tf hf = to_float(h), qf = to_float(q), cf(c.shape()), af(attn.shape());
  attn_pool_forward<float>(ctx, hf, qf, cf, af);
  f();
  report_float("attn_pool", max_abs_diff(cf, c));

  // q = 0 is mean pooling.
  Td q0(q.shape());
  attn_pool_forward<double>(ctx, h, q0, c, attn);
  for (int64_t i = 0; i < d; ++i) {
    double m = 0;
    for (int64_t k = 0; k < nk; ++k) m += h.at(1, k, i) / nk;
    EXPECT_NEAR(c.at(1, i), m, 1e-12);
  }
}

TEST_F(OpsGradTest, GatedResidualHeads) {
  const int64_t nb = 2, nk = 3, d = 12, nh = 3;
  const HeadLayout l = head_layout(d);
  EXPECT_EQ(l.mid, kHeadMid);
  EXPECT_EQ(l.size, l.mid * d + l.mid * l.mid + 4 * l.mid + d + 3);
  const int64_t rows = nb * nk;
  Td s = random_tensor({nb, nk, d}, gen), p = random_tensor({nh, l.size}, gen, -0.5, 0.5);
  Td logits({nb, nk, nh}), z1({nh, rows, l.mid}), z2({nh, rows, l.mid});
  Td r = random_tensor(logits.shape(), gen), lambda = random_tensor({nh}, gen, 1.0, 2.0);
  auto f = [&] {
    head_forward<double>(ctx, l, s, p, logits, z1, z2);
    return test::dot(r.span(), logits.span());
  };
  // The trunk sees sum_h lambda_h r_h . logit_h.
  auto f_trunk = [&] {
    head_forward<double>(ctx, l, s, p, logits, z1, z2);
    double v = 0;
    for (int64_t i = 0; i < logits.numel(); ++i) v += lambda[i % nh] * r[i] * logits[i];
    return v;
  };
  Td ds(s.shape()), dp(p.shape());
  f();
  head_backward<double>(ctx, l, s, p, z1, z2, r, lambda, ds, dp);
  report("head.dparams", check_gradient(f, p.span(), dp.span()));
  report("head.ds_lambda", check_gradient(f_trunk, s.span(), ds.span()));
  // Without lambda the trunk gradient is the plain one.
  Td ds1(s.shape()), dp1(p.shape());
  f();  // the probes left perturbed activations in z1, z2
  head_backward<double>(ctx, l, s, p, z1, z2, r, In<double>(), ds1, dp1);
  report("head.ds", check_gradient(f, s.span(), ds1.span()));
  for (int64_t i = 0; i < dp.numel(); ++i) EXPECT_EQ(dp[i], dp1[i]);  // lambda never touches params

  Tf sf = to_float(s), pf = to_float(p), lf(logits.shape()), z1f(z1.shape()), z2f(z2.shape());
  head_forward<float>(ctx, l, sf, pf, lf, z1f, z2f);
  f();
  report_float("head", max_abs_diff(lf, logits));

  // Init: zero biases, Xavier bounds.
  Td pi({nh, l.size});
  head_init<double>(l, pi, 3);
  const double bound_w1 = std::sqrt(6.0 / double(d + l.mid));
  for (int64_t h = 0; h < nh; ++h) {
    for (int64_t j = 0; j < l.mid; ++j) {
      EXPECT_EQ(pi.at(h, l.b1 + j), 0.0);
      EXPECT_EQ(pi.at(h, l.b2 + j), 0.0);
    }
    EXPECT_EQ(pi.at(h, l.bg), 0.0);
    EXPECT_EQ(pi.at(h, l.bm), 0.0);
    EXPECT_EQ(pi.at(h, l.bs), 0.0);
    for (int64_t j = 0; j < l.mid * d; ++j) EXPECT_LE(std::abs(pi.at(h, l.w1 + j)), bound_w1);
  }
}

// Threaded runs: the same bits for any thread count and any run.
TEST_F(OpsGradTest, ThreadedRunsAreBitIdentical) {
  const int64_t nb = 8, nk = 64, d = 32, nh = 5, nf = 40;
  const int64_t rows = nb * nk;  // 512 rows -> 8 chunks
  const HeadLayout l = head_layout(d);
  Tf x({nb, nk, nf}), wv({nf, nf}), bv({nf}), s({nb, nk, d}), p({nh, l.size}), lnw({d}), lnb({d});
  Tf dl({nb, nk, nh}), lam({nh}), q({d}), dc({nb, d});
  std::mt19937_64 g(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (Tf* t : {&x, &wv, &bv, &s, &p, &lnw, &lnb, &dl, &q, &dc}) {
    for (float& v : t->span()) v = u(g);
  }
  for (float& v : lam.span()) v = 1.5f;

  struct Run {
    std::vector<Tf> out;
  };
  auto run = [&](int threads) {
    CpuContext c(threads);
    Run res;
    auto add = [&](Shape sh) -> Tf& { return res.out.emplace_back(sh); };
    res.out.reserve(20);
    Tf& y = add(x.shape());
    Tf& gates = add(x.shape());
    varsel_forward<float>(c, x, wv, bv, y, gates);
    Tf& dx = add(x.shape());
    Tf& dwv = add(wv.shape());
    Tf& dbv = add(bv.shape());
    varsel_backward<float>(c, x, wv, gates, y, dx, dwv, dbv);
    Tf& ln = add(s.shape());
    Tf& mean = add({rows});
    Tf& rstd = add({rows});
    layernorm_forward<float>(c, s, lnw, lnb, ln, mean, rstd);
    Tf& dln = add(s.shape());
    Tf& dlnw = add({d});
    Tf& dlnb = add({d});
    layernorm_backward<float>(c, s, lnw, mean, rstd, s, dln, dlnw, dlnb);
    Tf& logits = add(dl.shape());
    Tf& z1 = add({nh, rows, l.mid});
    Tf& z2 = add({nh, rows, l.mid});
    head_forward<float>(c, l, ln, p, logits, z1, z2);
    Tf& ds = add(s.shape());
    Tf& dp = add(p.shape());
    head_backward<float>(c, l, ln, p, z1, z2, dl, lam, ds, dp);
    Tf& pooled = add({nb, d});
    Tf& attn = add({nb, nk});
    attn_pool_forward<float>(c, s, q, pooled, attn);
    Tf& dh = add(s.shape());
    Tf& dq = add({d});
    attn_pool_backward<float>(c, s, q, attn, dc, dh, dq);
    return res;
  };
  const Run a = run(1), b = run(4), c = run(4), e = run(3);
  for (const Run* o : {&b, &c, &e}) {
    ASSERT_EQ(o->out.size(), a.out.size());
    for (size_t i = 0; i < a.out.size(); ++i) {
      EXPECT_EQ(0, std::memcmp(a.out[i].data(), o->out[i].data(),
                               sizeof(float) * static_cast<size_t>(a.out[i].numel())))
          << "tensor " << i;
    }
  }
}

TEST(OpsSummary, PrintMaxErrors) {
  for (const auto& [name, err] : max_errors()) fmt::print("[max ] {:<16} {:.3e}\n", name, err);
}

}  // namespace
}  // namespace fxt::model
