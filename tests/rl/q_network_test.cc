#include "rl/q_network.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace fxt::rl {
namespace {

// Loss L = Σ c_i·out_i with fixed random c: dL/dout = c, so backward(c) must equal the finite
// differences of L in every parameter (double precision, central differences).
void gradient_check(bool dueling) {
  QNetworkConfig cfg;
  cfg.obs_dim = 3;
  cfg.num_actions = 3;
  cfg.num_outputs = 4;
  cfg.hidden = {5, 6};
  cfg.dueling = dueling;
  QNetwork<double> net(cfg);
  std::vector<double> params(net.num_params());
  net.init(params, 42);
  const int batch = 4;
  Rng rng(7);
  std::vector<double> obs(static_cast<size_t>(batch * cfg.obs_dim));
  for (double& v : obs) v = rng.uniform_real(-1, 1);
  const size_t n_out = static_cast<size_t>(batch * cfg.num_actions * cfg.num_outputs);
  std::vector<double> c(n_out), out(n_out);
  for (double& v : c) v = rng.uniform_real(-1, 1);
  model::CpuContext ctx(1);
  QNetwork<double>::Workspace ws;
  auto loss = [&](const std::vector<double>& p) {
    QNetwork<double>::Workspace w;
    net.forward(ctx, p, obs, batch, out, &w);
    double l = 0;
    for (size_t i = 0; i < n_out; ++i) l += c[i] * out[i];
    return l;
  };
  net.forward(ctx, params, obs, batch, out, &ws);
  std::vector<double> grads(net.num_params(), 0.0);
  net.backward(ctx, params, c, grads, &ws);
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto pp = params, pm = params;
    pp[i] += 1e-6;
    pm[i] -= 1e-6;
    const double fd = (loss(pp) - loss(pm)) / 2e-6;
    worst = std::max(worst, std::abs(fd - grads[i]) / std::max(1.0, std::abs(fd)));
  }
  EXPECT_LT(worst, 1e-7) << (dueling ? "dueling" : "plain");
}

TEST(QNetwork, GradientCheckPlain) { gradient_check(false); }
TEST(QNetwork, GradientCheckDueling) { gradient_check(true); }

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

}  // namespace
}  // namespace fxt::rl
