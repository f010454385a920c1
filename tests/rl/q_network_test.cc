#include "rl/q_network.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "rl/dueling_head.h"

namespace fxt::rl {
namespace {

// Loss L = Σ c_i·out_i with fixed random c: dL/dout = c, so backward(c) must equal the finite
// differences of L in every parameter (double precision, central differences).
void gradient_check(bool dueling, bool iqn = false) {
  QNetworkConfig cfg;
  cfg.obs_dim = 3;
  cfg.num_actions = 3;
  cfg.num_outputs = iqn ? 1 : 4;
  cfg.hidden = {5, 6};
  cfg.dueling = dueling;
  cfg.iqn_embedding = iqn ? 7 : 0;
  QNetwork<double> net(cfg);
  std::vector<double> params(net.num_params());
  net.init(params, 42);
  const int batch = 4;
  Rng rng(7);
  std::vector<double> obs(static_cast<size_t>(batch * cfg.obs_dim));
  for (double& v : obs) v = rng.uniform_real(-1, 1);
  const int num_taus = iqn ? 3 : 1;
  std::vector<double> taus(static_cast<size_t>(batch * num_taus));
  for (double& t : taus) t = rng.unit();
  const size_t n_out =
      static_cast<size_t>(batch * cfg.num_actions * cfg.num_outputs * num_taus);
  std::vector<double> c(n_out), out(n_out);
  for (double& v : c) v = rng.uniform_real(-1, 1);
  model::CpuContext ctx(1);
  QNetwork<double>::Workspace ws;
  auto loss = [&](const std::vector<double>& p) {
    QNetwork<double>::Workspace w;
    if (iqn) {
      net.forward_iqn(ctx, p, obs, batch, taus, num_taus, out, &w);
    } else {
      net.forward(ctx, p, obs, batch, out, &w);
    }
    double l = 0;
    for (size_t i = 0; i < n_out; ++i) l += c[i] * out[i];
    return l;
  };
  std::vector<double> grads(net.num_params(), 0.0);
  if (iqn) {
    net.forward_iqn(ctx, params, obs, batch, taus, num_taus, out, &ws);
    net.backward_iqn(ctx, params, c, grads, &ws);
  } else {
    net.forward(ctx, params, obs, batch, out, &ws);
    net.backward(ctx, params, c, grads, &ws);
  }
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto pp = params, pm = params;
    pp[i] += 1e-6;
    pm[i] -= 1e-6;
    const double fd = (loss(pp) - loss(pm)) / 2e-6;
    worst = std::max(worst, std::abs(fd - grads[i]) / std::max(1.0, std::abs(fd)));
  }
  EXPECT_LT(worst, 1e-7) << (dueling ? "dueling" : "plain") << (iqn ? " iqn" : "");
}

TEST(QNetwork, GradientCheckPlain) { gradient_check(false); }
TEST(QNetwork, GradientCheckDueling) { gradient_check(true); }
TEST(QNetwork, GradientCheckIqn) { gradient_check(false, true); }
TEST(QNetwork, GradientCheckIqnDueling) { gradient_check(true, true); }

TEST(QNetwork, IqnEmbeddingByHand) {
  // obs (1, 2) -> torso W = I, b = 0 -> ψ = (1, 2). φ(τ) = ReLU(W_e·cos(π·i·τ) + b_e), i = 0..2,
  // W_e = [[1, 1, 1], [0, 2, 0]], b_e = (0, 0.5); head W = (3, 4), b = 0.1; Z = W·(ψ ⊙ φ) + b.
  //   τ = 0.5:  cos = (1, 0, −1):      φ = (0, 0.5)            Z = 4·2·0.5 + 0.1 = 4.1
  //   τ = 0.25: cos = (1, √½, 0):      φ = (1 + √½, 2√½ + 0.5) Z = 3(1 + √½) + 8(2√½ + 0.5) + 0.1
  QNetworkConfig cfg;
  cfg.obs_dim = 2;
  cfg.num_actions = 1;
  cfg.num_outputs = 1;
  cfg.hidden = {2};
  cfg.iqn_embedding = 3;
  QNetwork<double> net(cfg);
  ASSERT_EQ(net.num_params(), 17u);
  const std::vector<double> p = {1, 0, 0, 1, 0, 0,         // torso
                                 1, 1, 1, 0, 2, 0, 0, 0.5,  // embedding
                                 3, 4, 0.1};                // head
  const std::vector<double> obs = {1, 2}, taus = {0.5, 0.25};
  std::vector<double> out(2);
  model::CpuContext ctx(1);
  QNetwork<double>::Workspace ws;
  net.forward_iqn(ctx, p, obs, 1, taus, 2, out, &ws);
  const double r = std::sqrt(0.5);
  EXPECT_NEAR(out[0], 4.1, 1e-12);
  EXPECT_NEAR(out[1], 3 * (1 + r) + 8 * (2 * r + 0.5) + 0.1, 1e-12);
}

TEST(QNetwork, DuelingCombinesValueAndCentredAdvantage) {
  QNetworkConfig cfg;
  cfg.obs_dim = 2;
  cfg.num_actions = 3;
  cfg.num_outputs = 2;
  cfg.hidden = {};  // the head reads the observation directly
  cfg.dueling = true;
  QNetwork<double> net(cfg);
  ASSERT_EQ(net.num_params(), 2u * 2 + 2 + 6 * 2 + 6);
  // value W = [[1, 0], [0, 1]], b = 0; advantage W rows (a, k): row = (a + 1)·(1, 0), b = 0.
  std::vector<double> p(net.num_params(), 0.0);
  p[0] = 1;
  p[3] = 1;
  for (int row = 0; row < 6; ++row) p[6 + static_cast<size_t>(row) * 2] = row / 2 + 1;
  std::vector<double> obs = {2, 5}, out(6);
  model::CpuContext ctx(1);
  QNetwork<double>::Workspace ws;
  net.forward(ctx, p, obs, 1, out, &ws);
  // V = (2, 5); A[a] = (a + 1)·2 for both outputs, mean 4: out[a] = V + 2(a + 1) − 4.
  const double want[] = {0, 3, 2, 5, 4, 7};
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(out[i], want[i]) << i;
}

TEST(DuelingHead, BackwardIsTheAdjointAndInPlaceIsExact) {
  // The combination is linear in (v, adv), so its backward is the transpose:
  // ⟨d_out, combine(v, adv)⟩ = ⟨d_value, v⟩ + ⟨d_adv, adv⟩. The GPU learner runs both in place.
  const int A = 5, K = 7;
  Rng rng(3);
  std::vector<double> v(K), adv(A * K), g(A * K);
  for (double& x : v) x = rng.uniform_real(-1, 1);
  for (double& x : adv) x = rng.uniform_real(-1, 1);
  for (double& x : g) x = rng.uniform_real(-1, 1);
  std::vector<double> out(A * K), in_place = adv, dv(K), da(A * K), da_in_place = g, dv2(K);
  for (int k = 0; k < K; ++k) {
    dueling_combine(v.data(), adv.data(), A, K, k, out.data());
    dueling_combine(v.data(), in_place.data(), A, K, k, in_place.data());
    dueling_combine_backward(g.data(), A, K, k, dv.data(), da.data());
    dueling_combine_backward(da_in_place.data(), A, K, k, dv2.data(), da_in_place.data());
  }
  EXPECT_EQ(in_place, out);
  EXPECT_EQ(da_in_place, da);
  EXPECT_EQ(dv2, dv);
  double lhs = 0, rhs = 0;
  for (int e = 0; e < A * K; ++e) lhs += g[e] * out[e], rhs += da[e] * adv[e];
  for (int k = 0; k < K; ++k) rhs += dv[k] * v[k];
  EXPECT_NEAR(lhs, rhs, 1e-12);
  for (int k = 0; k < K; ++k) {  // the advantages are centred: Σ_a out[a] = A·v
    double sum = 0;
    for (int a = 0; a < A; ++a) sum += out[a * K + k];
    EXPECT_NEAR(sum, A * v[k], 1e-12);
  }
}

}  // namespace
}  // namespace fxt::rl
