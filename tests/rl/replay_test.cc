#include "rl/replay.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "rl/dqn.h"
#include "rl/per_math.h"

namespace fxt::rl {
namespace {

TEST(SumTree, TotalsAndPrefixSearch) {
  SumTree t(5);  // rounded up to 8 leaves
  EXPECT_EQ(t.capacity(), 8);
  const double p[] = {1, 0, 3, 2, 4};
  for (int i = 0; i < 5; ++i) t.set(i, p[i]);
  EXPECT_DOUBLE_EQ(t.total(), 10);
  EXPECT_EQ(t.find(0.0), 0);
  EXPECT_EQ(t.find(0.999), 0);
  EXPECT_EQ(t.find(1.0), 2);  // leaf 1 has no mass
  EXPECT_EQ(t.find(3.999), 2);
  EXPECT_EQ(t.find(4.0), 3);
  EXPECT_EQ(t.find(6.0), 4);
  EXPECT_EQ(t.find(10.0), 4);  // at the total: the last positive leaf
  t.set(2, 0.5);
  EXPECT_DOUBLE_EQ(t.total(), 7.5);
}

TEST(PerMath, TreeDescentIsThePrefixScan) {
  // rl/per_math.h's shared rules (the GPU learner's device tree runs the same functions): on 100
  // random leaves (every fifth 0) the descent picks the leaf whose prefix range holds the mass,
  // for masses away from the boundaries (the tree's sums round differently from a running sum).
  const int leaves = sum_tree_leaves(100);
  EXPECT_EQ(leaves, 128);
  EXPECT_EQ(sum_tree_leaves(1), 1);
  EXPECT_EQ(sum_tree_leaves(64), 64);
  std::vector<double> tree(2 * static_cast<size_t>(leaves), 0.0);
  Rng rng(3);
  for (int i = 0; i < 100; ++i)
    tree[static_cast<size_t>(leaves + i)] = i % 5 == 0 ? 0.0 : 0.1 + 3 * rng.unit();
  sum_tree_rebuild(tree.data(), leaves);
  SumTree cpu(100);
  cpu.assign(std::span<const double>(tree.data() + leaves, 100));
  EXPECT_EQ(cpu.total(), tree[1]);  // the same bits
  std::vector<double> prefix(101, 0.0);
  for (int i = 0; i < 100; ++i)
    prefix[static_cast<size_t>(i + 1)] =
        prefix[static_cast<size_t>(i)] + tree[static_cast<size_t>(leaves + i)];
  for (int k = 0; k < 2000; ++k) {
    const double mass = per_mass(tree[1], 2000, k, rng.unit());
    int want = 0;
    while (want < 99 && prefix[static_cast<size_t>(want + 1)] <= mass) ++want;
    const double lo = prefix[static_cast<size_t>(want)], hi = prefix[static_cast<size_t>(want + 1)];
    if (mass - lo < 1e-9 || hi - mass < 1e-9) continue;  // too close to a boundary to tell
    EXPECT_EQ(sum_tree_find(tree.data(), leaves, mass), want) << "mass " << mass;
    EXPECT_EQ(cpu.find(mass), want);
  }
  EXPECT_EQ(sum_tree_find(tree.data(), leaves, tree[1] * 2), 99);  // past the total: last positive
}

TEST(PerMath, PriorityWeightAndBeta) {
  EXPECT_EQ(per_priority(0.0f), 1e-6);
  EXPECT_EQ(per_priority(-1.0f), 1e-6);
  EXPECT_EQ(per_priority(2.5f), 2.5);
  EXPECT_TRUE(std::isnan(per_priority(std::numeric_limits<float>::quiet_NaN())));  // std::max's
  EXPECT_DOUBLE_EQ(per_leaf(4.0, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(per_is_weight(10, 1.0, 5.0, 1.0), 0.5);  // (10·0.2)^−1
  EXPECT_DOUBLE_EQ(per_mass(8.0, 4, 2, 0.5), 5.0);          // (2 + ½)·8/4
  DqnConfig c;
  c.per_beta0 = 0.4;
  c.total_steps = 1000;
  for (int64_t step : {0, 1, 250, 999, 1000, 5000})
    EXPECT_EQ(c.beta_at(step), per_beta(0.4, 1000, step)) << step;
  EXPECT_DOUBLE_EQ(per_beta(0.4, 1000, 500), 0.7);
  EXPECT_EQ(per_beta(0.4, 1000, 5000), 1.0);
}

TEST(ReplayBuffer, PrioritisedSamplingFrequenciesAndWeights) {
  // Priorities 1..4 with α = 1: P = i/10. 40k stratified draws within 1% of P; IS weights
  // (N·P)^−β / max: with β = 1 they are min P / P.
  const int n = 4;
  ReplayBuffer buf(n, 1, 1.0);
  float o = 0;
  for (int i = 0; i < n; ++i) buf.add({&o, i, 0.0f, &o, 0.0f});
  std::vector<int> idx = {0, 1, 2, 3};
  std::vector<float> pr = {1, 2, 3, 4};
  buf.update_priorities(idx, pr);
  Rng rng(3);
  ReplayBatch b;
  std::vector<int> counts(n, 0);
  const int rounds = 1000, batch = 40;
  for (int r = 0; r < rounds; ++r) {
    buf.sample(batch, 1.0, rng, &b);
    for (int k = 0; k < batch; ++k) {
      ++counts[static_cast<size_t>(b.index[static_cast<size_t>(k)])];
      EXPECT_EQ(b.action[static_cast<size_t>(k)], b.index[static_cast<size_t>(k)]);
    }
  }
  for (int i = 0; i < n; ++i)
    EXPECT_NEAR(counts[static_cast<size_t>(i)] / double(rounds * batch), (i + 1) / 10.0, 0.01) << i;
  buf.sample(batch, 1.0, rng, &b);
  for (int k = 0; k < batch; ++k) {
    const double p = (b.index[static_cast<size_t>(k)] + 1) / 10.0;
    EXPECT_NEAR(b.weight[static_cast<size_t>(k)], 0.1 / p, 1e-6);
  }
}

TEST(ReplayBuffer, UniformIsUniformAndRingOverwrites) {
  ReplayBuffer buf(3, 2, 0.0);
  float o[5][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}};
  for (int i = 0; i < 5; ++i) buf.add({o[i], i, float(i), o[i], 0.5f});
  EXPECT_EQ(buf.size(), 3);  // holds 3, 4, 2 (slots 0, 1, 2)
  Rng rng(1);
  ReplayBatch b;
  std::vector<int> counts(5, 0);
  for (int r = 0; r < 3000; ++r) {
    buf.sample(10, 0.4, rng, &b);
    for (int k = 0; k < 10; ++k) {
      const int a = b.action[static_cast<size_t>(k)];
      ++counts[static_cast<size_t>(a)];
      EXPECT_EQ(b.obs[static_cast<size_t>(2 * k)], float(a));
      EXPECT_EQ(b.weight[static_cast<size_t>(k)], 1.0f);
    }
  }
  EXPECT_EQ(counts[0] + counts[1], 0);
  for (int a = 2; a < 5; ++a) EXPECT_NEAR(counts[static_cast<size_t>(a)] / 30000.0, 1 / 3.0, 0.01);
}

TEST(NStep, ReturnsAndDiscountsByHand) {
  // n = 3, γ = 0.5, one lane: rewards 1, 2, 4, 8 then termination at step 4.
  NStepAccumulator acc(1, 1, 3, 0.5);
  std::vector<Transition> got;
  std::vector<float> firsts;
  float s[6] = {0, 1, 2, 3, 4, 5};
  auto emit = [&](const Transition& t) {
    got.push_back(t);
    firsts.push_back(t.obs[0]);
  };
  acc.push(0, &s[0], 0, 1, &s[1], false, false, emit);
  acc.push(0, &s[1], 1, 2, &s[2], false, false, emit);
  EXPECT_TRUE(got.empty());
  acc.push(0, &s[2], 0, 4, &s[3], false, false, emit);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FLOAT_EQ(got[0].reward, 1 + 0.5f * 2 + 0.25f * 4);  // 3
  EXPECT_FLOAT_EQ(got[0].discount, 0.125f);
  EXPECT_EQ(got[0].next_obs[0], 3.0f);
  acc.push(0, &s[3], 1, 8, &s[4], true, false, emit);  // terminal: flush 3 pending
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(firsts[1], 1.0f);
  EXPECT_FLOAT_EQ(got[1].reward, 2 + 0.5f * 4 + 0.25f * 8);
  EXPECT_EQ(got[1].action, 1);
  EXPECT_FLOAT_EQ(got[2].reward, 4 + 0.5f * 8);
  EXPECT_FLOAT_EQ(got[3].reward, 8);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(got[i].discount, 0.0f);
  // Truncation bootstraps: a 2-step window cut by a time limit keeps γ^k.
  acc.push(0, &s[0], 0, 1, &s[1], false, false, emit);
  acc.push(0, &s[1], 0, 1, &s[2], false, true, emit);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_FLOAT_EQ(got[4].discount, 0.25f);
  EXPECT_FLOAT_EQ(got[5].discount, 0.5f);
}

}  // namespace
}  // namespace fxt::rl
