#include "rl/distributional.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "rl/dqn_schedule.h"

namespace fxt::rl {
namespace {

// Support {0, 1, 2, 3, 4}.
const Support kFive{0, 4, 5};

TEST(C51Projection, SplitsMassBetweenNeighbours) {
  // Tz = 0.5 + z: 0.5, 1.5, 2.5, 3.5, 4.5 -> clipped to 4 (b = 4, l = u = 4).
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4, 0.0};
  std::vector<double> m(5, 0.0);
  c51_project_add<double>(kFive, 0.5, 1.0, p, 1.0, m);
  const double want[] = {0.05, 0.15, 0.25, 0.35, 0.2};
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(m[static_cast<size_t>(j)], want[j], 1e-15) << j;
}

TEST(C51Projection, AtomOnTheGridKeepsItsMass) {
  // Tz = 1 + z lands exactly on atoms (l = u): the mass must stay, not vanish.
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.25, 0.15};
  std::vector<double> m(5, 0.0);
  c51_project_add<double>(kFive, 1.0, 1.0, p, 1.0, m);
  const double want[] = {0.0, 0.1, 0.2, 0.3, 0.4};  // the top two pile on v_max
  double sum = 0;
  for (int j = 0; j < 5; ++j) {
    EXPECT_NEAR(m[static_cast<size_t>(j)], want[j], 1e-15) << j;
    sum += m[static_cast<size_t>(j)];
  }
  EXPECT_NEAR(sum, 1.0, 1e-15);
}

TEST(C51Projection, TerminalPutsEverythingAtTheReward) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.25, 0.15};
  std::vector<double> m(5, 0.0);
  c51_project_add<double>(kFive, 2.25, 0.0, p, 1.0, m);  // g = 0: every atom maps to r = 2.25
  EXPECT_NEAR(m[2], 0.75, 1e-15);
  EXPECT_NEAR(m[3], 0.25, 1e-15);
  EXPECT_EQ(m[0] + m[1] + m[4], 0.0);
}

// c51_split is the one projection rule of the CPU agent and the GPU learner's kernel.
TEST(C51Split, HandValuesOnTheFiveAtomSupport) {
  // 0.5 + 1·2 = 2.5: half to atom 2, half to atom 3.
  C51Split<float> s = c51_split<float>(0.5f, 1.0f, 2.0f, 0.0f, 4.0f, 1.0f, 5);
  EXPECT_EQ(s.l, 2);
  EXPECT_EQ(s.u, 3);
  EXPECT_EQ(s.wl, 0.5f);
  EXPECT_EQ(s.wu, 0.5f);
  // 0.25 + 0.5·3 = 1.75: a quarter to atom 1, three quarters to atom 2.
  s = c51_split<float>(0.25f, 0.5f, 3.0f, 0.0f, 4.0f, 1.0f, 5);
  EXPECT_EQ(s.l, 1);
  EXPECT_EQ(s.u, 2);
  EXPECT_EQ(s.wl, 0.25f);
  EXPECT_EQ(s.wu, 0.75f);
  // On an atom (l = u): the whole mass stays there.
  s = c51_split<float>(1.0f, 1.0f, 2.0f, 0.0f, 4.0f, 1.0f, 5);
  EXPECT_EQ(s.l, 3);
  EXPECT_EQ(s.u, 3);
  EXPECT_EQ(s.wl, 1.0f);
  EXPECT_EQ(s.wu, 0.0f);
  // Clipped at both ends of the support.
  s = c51_split<float>(9.0f, 1.0f, 2.0f, 0.0f, 4.0f, 1.0f, 5);
  EXPECT_EQ(s.l, 4);
  EXPECT_EQ(s.wl, 1.0f);
  s = c51_split<float>(-9.0f, 1.0f, 2.0f, 0.0f, 4.0f, 1.0f, 5);
  EXPECT_EQ(s.l, 0);
  EXPECT_EQ(s.u, 0);
}

TEST(LinearEpsilon, CleanRlScheduleByHand) {
  // 1 -> 0.05 over 0.5 · 500k = 250k steps, then flat.
  EXPECT_EQ(linear_epsilon(1, 0.05, 0.5, 500000, 0), 1.0);
  EXPECT_NEAR(linear_epsilon(1, 0.05, 0.5, 500000, 125000), 0.525, 1e-15);
  EXPECT_NEAR(linear_epsilon(1, 0.05, 0.5, 500000, 250000), 0.05, 1e-15);
  EXPECT_NEAR(linear_epsilon(1, 0.05, 0.5, 500000, 400000), 0.05, 1e-15);
}

// Thompson exploration's C51 draw (DqnAgent::act and the GPU acting kernel): the atom whose
// cumulative softmax interval [c_{j−1}, c_j) holds u; past the rounded total, the last atom.
TEST(C51SampleIndex, WalksTheCumulativeProbabilities) {
  const std::vector<float> even = {0.5f, 0.5f, 0.5f, 0.5f};  // p = 1/4 each
  EXPECT_EQ(c51_sample_index<float>(even.data(), 4, 0.0), 0);
  EXPECT_EQ(c51_sample_index<float>(even.data(), 4, 0.3), 1);
  EXPECT_EQ(c51_sample_index<float>(even.data(), 4, 0.5), 2);  // on a boundary: the next atom
  EXPECT_EQ(c51_sample_index<float>(even.data(), 4, 0.74), 2);
  EXPECT_EQ(c51_sample_index<float>(even.data(), 4, 0.9999999), 3);
  const std::vector<float> skew = {0.0f, std::log(3.0f)};  // p = {1/4, 3/4}
  EXPECT_EQ(c51_sample_index<float>(skew.data(), 2, 0.24), 0);
  EXPECT_EQ(c51_sample_index<float>(skew.data(), 2, 0.26), 1);
  const std::vector<float> sharp = {-50.0f, 0.0f, -50.0f};  // nearly all mass on atom 1
  EXPECT_EQ(c51_sample_index<float>(sharp.data(), 3, 0.5), 1);
  EXPECT_EQ(c51_sample_index<float>(sharp.data(), 3, 1.0 - 1e-12), 1);
}

TEST(C51Loss, GradientMatchesFiniteDifferences) {
  const std::vector<double> logits = {0.3, -1.2, 0.8, 0.1, -0.4};
  const std::vector<double> m = {0.1, 0.0, 0.5, 0.3, 0.1};
  std::vector<double> d(5);
  const double loss = c51_loss<double>(logits, m, 1.0, d);
  // −Σ m log softmax: by hand with log-sum-exp.
  double z = 0;
  for (double v : logits) z += std::exp(v);
  double want = 0;
  for (size_t j = 0; j < 5; ++j) want -= m[j] * (logits[j] - std::log(z));
  EXPECT_NEAR(loss, want, 1e-14);
  std::vector<double> scratch(5);
  for (size_t j = 0; j < 5; ++j) {
    auto lp = logits, lm = logits;
    lp[j] += 1e-6;
    lm[j] -= 1e-6;
    const double fd = (c51_loss<double>(lp, m, 1.0, scratch) - c51_loss<double>(lm, m, 1.0, scratch)) / 2e-6;
    EXPECT_NEAR(d[j], fd, 1e-8) << j;
  }
}

TEST(QuantileHuber, HandValues) {
  // theta = {0, 1} at τ̂ = {0.25, 0.75}; targets {0.5, 3} weighted 1/2 each (κ = 1):
  // i=0: u=0.5 -> 0.25·0.125, u=3 -> 0.25·2.5; i=1: u=−0.5 -> 0.25·0.125, u=2 -> 0.75·1.5.
  const std::vector<double> theta = {0, 1}, targets = {0.5, 3}, w = {0.5, 0.5};
  std::vector<double> d(2);
  const double loss = quantile_huber_loss<double>(theta, targets, w, 1.0, d);
  EXPECT_NEAR(loss, 0.90625, 1e-15);
  EXPECT_NEAR(d[0], -0.1875, 1e-15);  // −(0.5·0.25·0.5 + 0.5·0.25·1)
  EXPECT_NEAR(d[1], -0.3125, 1e-15);  // −(0.5·0.25·(−0.5) + 0.5·0.75·1)
  std::vector<double> scratch(2);
  for (size_t i = 0; i < 2; ++i) {
    auto tp = theta, tm = theta;
    tp[i] += 1e-6;
    tm[i] -= 1e-6;
    const double fd = (quantile_huber_loss<double>(tp, targets, w, 1.0, scratch) -
                       quantile_huber_loss<double>(tm, targets, w, 1.0, scratch)) /
                      2e-6;
    EXPECT_NEAR(d[i], fd, 1e-8) << i;
  }
}

TEST(QuantileHuber, SampledFractionsByHand) {
  // IQN form: τ = (0.1, 0.9) given; θ = (0, 0), one target 2 (weight 1): Huber(2) = 1.5;
  // loss 0.1·1.5 + 0.9·1.5 = 1.5, dθ_i = −τ_i·1.
  const std::vector<double> theta = {0, 0}, taus = {0.1, 0.9}, targets = {2}, w = {1};
  std::vector<double> d(2);
  EXPECT_NEAR(quantile_huber_loss_at<double>(theta, taus, targets, w, 1.0, d), 1.5, 1e-15);
  EXPECT_NEAR(d[0], -0.1, 1e-15);
  EXPECT_NEAR(d[1], -0.9, 1e-15);
}

// Many targets (M = 4096: QR-DQN + Munchausen + --symmetric-policy on 64 actions, 2·64·32) against
// 32 quantiles: the float loss (summed per quantile, then over the quantiles) within 2e-6
// relative of the double one (2.3e-7 off). One running float sum over all 131072 terms is 1.9e-5
// off on this data, more than the GPU learner's loss check allows (1e-5).
TEST(QuantileHuber, LongTargetSumsStayAccurate) {
  const size_t N = 32, M = 4096;
  Rng rng(3);
  std::vector<float> theta(N), targets(M), w(M);
  for (float& x : theta) x = static_cast<float>(rng.uniform_real(-2, 2));
  for (float& x : targets) x = static_cast<float>(rng.uniform_real(-3, 5));
  double sum_w = 0;
  for (float& x : w) {
    x = static_cast<float>(rng.uniform_real(0.5, 1.5));
    sum_w += x;
  }
  for (float& x : w) x = static_cast<float>(x / sum_w);
  std::vector<float> d(N);
  const float loss = quantile_huber_loss<float>(theta, targets, w, 1.0f, d);
  const std::vector<double> theta_d(theta.begin(), theta.end()),
      targets_d(targets.begin(), targets.end()), w_d(w.begin(), w.end());
  std::vector<double> d_d(N);
  const double want = quantile_huber_loss<double>(theta_d, targets_d, w_d, 1.0, d_d);
  EXPECT_GT(want, 10.0);
  EXPECT_NEAR(loss, want, 2e-6 * want);
  for (size_t i = 0; i < N; ++i) EXPECT_NEAR(d[i], d_d[i], 1e-5) << i;
}

TEST(Munchausen, LogPolicyIsAStableLogSoftmax) {
  const std::vector<double> q = {1000.0, 1000.0 + std::log(3.0) * 0.03};
  std::vector<double> lp(2);
  log_policy<double>(q, 0.03, lp);  // π ∝ (1, 3)
  EXPECT_NEAR(lp[0], std::log(0.25), 1e-9);
  EXPECT_NEAR(lp[1], std::log(0.75), 1e-9);
}

TEST(Munchausen, HandComputedTarget) {
  // Support {−1, 0, 1}; τ = 1, α = 0.5, l0 = −1; r = 0.2, γ^n = 0.5, ln π(a|s) = ln 0.25.
  // Next-state distributions: action 0 all at 0, action 1 half at ±1: q' = (0, 0), π' = (½, ½).
  // Bonus 0.5·clip(ln 0.25, −1, 0) = −0.5; shift = 0.2 − 0.5 + 0.5·ln 2 = 0.0465736.
  // a'=0: 0.0465736 (mass ½) -> atoms 0/1 get ½·0.9534264, ½·0.0465736.
  // a'=1: −0.4534264 and 0.5465736 (¼ each) -> (0.1133566, 0.1366434) and (0.1133566, 0.1366434).
  const Support s{-1, 1, 3};
  const MunchausenConfig mc{1.0, 0.5, -1.0};
  const std::vector<double> q_next = {0, 0};
  const std::vector<double> p_next = {0, 1, 0, 0.5, 0, 0.5};
  std::vector<double> m(3);
  c51_munchausen_target<double>(s, mc, 0.2, 0.5, std::log(0.25), q_next, p_next, m);
  const double shift = 0.2 - 0.5 + 0.5 * std::log(2.0);
  EXPECT_NEAR(shift, 0.0465736, 1e-7);
  EXPECT_NEAR(m[0], 0.1133566, 1e-7);
  EXPECT_NEAR(m[1], 0.7267132, 1e-7);
  EXPECT_NEAR(m[2], 0.1599302, 1e-7);
  EXPECT_NEAR(m[0] + m[1] + m[2], 1.0, 1e-14);
}

TEST(Munchausen, PolicyTermsByHand) {
  // The FXT_HD terms the CPU target and the GPU learner's kernel share (rl/dqn_schedule.h).
  const MunchausenConfig mc;  // τ = 0.03, α = 0.9, l0 = −1
  EXPECT_NEAR(munchausen_bonus<double>(mc, -10.0), 0.9 * -0.3, 1e-15);   // inside the clip
  EXPECT_NEAR(munchausen_bonus<double>(mc, -100.0), 0.9 * -1.0, 1e-15);  // clipped at l0
  EXPECT_EQ(munchausen_bonus<double>(mc, 0.0), 0.0);                     // greedy: no bonus
  // r + bonus − g·τ·ln π(a'|s'): 0.5 − 0.27 − 0.9·0.03·(−2).
  EXPECT_NEAR(munchausen_shift<double>(mc, 0.5, -0.27, 0.9, -2.0), 0.5 - 0.27 + 0.054, 1e-15);
  // log_policy_row may write over its input (the GPU kernel does): the same values.
  std::vector<float> q = {0.31f, -0.2f, 0.305f, 0.0f}, lp(4);
  log_policy_row<float>(q.data(), 4, mc.tau, lp.data());
  log_policy_row<float>(q.data(), 4, mc.tau, q.data());
  EXPECT_EQ(q, lp);
  double total = 0;
  for (float v : lp) total += std::exp(static_cast<double>(v));
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST(Munchausen, TerminalKeepsOnlyRewardAndBonus) {
  const Support s{-1, 1, 3};
  const MunchausenConfig mc;  // τ = 0.03, α = 0.9, l0 = −1
  const std::vector<double> q_next = {0.3, -0.2};
  const std::vector<double> p_next = {0.2, 0.3, 0.5, 0.6, 0.3, 0.1};
  std::vector<double> m(3);
  // ln π(a|s) = −10: τ·ln π = −0.3 (inside the clip), bonus −0.27; target 0.5 − 0.27 = 0.23.
  c51_munchausen_target<double>(s, mc, 0.5, 0.0, -10.0, q_next, p_next, m);
  EXPECT_NEAR(m[0], 0.0, 1e-15);
  EXPECT_NEAR(m[1], 0.77, 1e-12);
  EXPECT_NEAR(m[2], 0.23, 1e-12);
}

}  // namespace
}  // namespace fxt::rl
