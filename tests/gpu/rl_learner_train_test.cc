// The GPU learner (rl/device_learner.h) against the CPU agent (rl/dqn.h): two updates on the same
// batch and weights (loss, mean Q, grad norm, every parameter after AdamW; plain, dueling,
// Munchausen, both; C51, QR-DQN and IQN heads), the fused acting kernel's Q values and greedy
// actions (plain and dueling head, C51, QR-DQN and IQN), Thompson exploration's actions and lane
// Rngs against DqnAgent::act lane by lane, uniform replay sampling frequencies,
// seeded CartPole runs that must reach a return threshold, and same seed → identical checkpoint
// bytes (plain, Munchausen, Munchausen + dueling + n-step, Thompson; C51, QR-DQN and IQN), and
// prioritised replay (the device sum tree against the CPU's SumTree; updates, IS weights and new
// priorities against the CPU buffer's; same-seed bytes; a CartPole run). Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "gpu_test_util.h"
#include "rl/cartpole.h"
#include "rl/device_trainer.h"
#include "rl/distributional.h"
#include "rl/dqn_schedule.h"
#include "rl/env_lane.h"
#include "rl/evaluate.h"
#include "rl/execution.h"
#include "rl/per_math.h"
#include "rl/replay.h"
#include "test_util.h"

namespace fxt::rl {
namespace {

EnvSpec spec_named(const char* name) {
  EnvSpec s;
  s.name = name;
  return s;
}

// A small C51 config on [−10, 10] (so that targets r + γz land inside and at both clips).
DqnConfig small_config(bool double_q) {
  DqnConfig c;
  c.support = {-10, 10, 51};
  c.hidden = {120, 84};
  c.double_q = double_q;
  c.lr = 1e-3;
  c.batch = 32;
  c.buffer_size = 64;
  c.seed = 5;
  return c;
}

// A small QR-DQN config: 32 quantiles (not the 51 atoms, so no size is taken from the support).
DqnConfig small_qr_config(bool double_q) {
  DqnConfig c = small_config(double_q);
  c.algo = Algo::kQrDqn;
  c.quantiles = 32;
  return c;
}

// A small IQN config: N = N' = 8 sampled τ, K = 32 policy τ, 64 cosine features (the defaults).
DqnConfig small_iqn_config(bool double_q) {
  DqnConfig c = small_config(double_q);
  c.algo = Algo::kIqn;
  return c;
}

// Two updates of the GPU learner and of DqnAgent::update on the same 64 random transitions
// (rewards in [−2, 2], every fourth one terminal; with nstep_discounts every fourth, from the
// second, carries an n-step discount γ³ instead of γ), the same weights and the CPU replay's own
// index draws (IQN: and the CPU's τ and τ' draws, fed to the learner's test hook): loss to 1e-5,
// mean Q and grad norm to 1e-4 relative, every parameter after AdamW within 2e-6 while they moved
// > 1.5·lr, the target untouched, the AdamW state through the CPU checkpoint layout. The env only
// sets the dimensions (d, A).
// Prioritised replay (cfg.per_alpha > 0, β = per_beta0 at step 0): the CPU buffer's B uniform
// draws are fed to the learner (update_on_draws), and its picks must be the CPU tree's leaves
// for them exactly, the IS weights the CPU's to 1e-5 relative (all 1 on the first update, whose
// leaves are all 1); after each update every leaf (max(loss_b, 1e-6)^α) within 1e-4 relative of
// the CPU buffer's, the total and the largest priority to 1e-5 relative, and every internal node
// exactly its children's sum.
void expect_update_matches_cpu(const DqnConfig& cfg, const char* env_name,
                               bool nstep_discounts = false) {
  const EnvSpec spec = spec_named(env_name);
  const int d = spec.make(1)->obs_dim(), A = spec.make(1)->num_actions(), n = cfg.buffer_size;
  ASSERT_TRUE(device_learner_supports(cfg).ok()) << device_learner_supports(cfg).message();
  DqnAgent agent(cfg, d, A);
  DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
  if (cfg.symmetric_policy) {  // both agents act and bootstrap on the env's mirror
    auto mirror = env_mirror_map(spec);
    ASSERT_TRUE(mirror.ok()) << mirror.status().message();
    agent.set_mirror(*mirror);
    ASSERT_TRUE(set_device_mirror(spec, &dc).ok());
  }
  const std::vector<float> before(agent.params().begin(), agent.params().end());
  const bool per = cfg.per_alpha > 0;
  ReplayBuffer replay(n, d, cfg.per_alpha);
  std::vector<float> obs = gpu::testing::random_vector(static_cast<size_t>(n * d), 1, -2, 2);
  std::vector<float> next = gpu::testing::random_vector(static_cast<size_t>(n * d), 2, -2, 2);
  std::vector<float> reward = gpu::testing::random_vector(static_cast<size_t>(n), 3, -2, 2);
  std::vector<float> discount(static_cast<size_t>(n));
  std::vector<int> action(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    action[k] = i % A;
    const double g3 = cfg.gamma * cfg.gamma * cfg.gamma;
    discount[k] = i % 4 == 3                      ? 0.0f
                  : nstep_discounts && i % 4 == 1 ? static_cast<float>(g3)
                                                  : static_cast<float>(cfg.gamma);
    replay.add({&obs[k * d], action[k], reward[k], &next[k * d], discount[k]});
  }
  gpu::Context ctx(0);
  auto env = make_device_env(spec, 1);
  DeviceC51Learner learner(dc, env.get(), ctx, before);
  learner.load_replay(obs, action, reward, next, discount);
  Rng rng(42);
  for (int u = 0; u < 2; ++u) {  // two steps: the second uses AdamW's moments
    Rng copy = rng;              // the CPU replay's uniform draws, replayed for the GPU
    const int B = cfg.batch;
    std::vector<int> idx(static_cast<size_t>(B));
    std::vector<double> units(static_cast<size_t>(B));  // prioritised: one u per row
    std::vector<float> want_w(static_cast<size_t>(B), 1.0f);
    if (per) {  // ReplayBuffer::sample's picks and weights, on the tree before the update
      const SumTree& tree = replay.tree();
      const double total = tree.total(), beta = cfg.beta_at(0);
      std::vector<double> w(static_cast<size_t>(B));
      double max_w = 0;
      for (int b = 0; b < B; ++b) {
        const size_t k = static_cast<size_t>(b);
        units[k] = copy.unit();
        idx[k] = tree.find(per_mass(total, B, b, units[k]));
        w[k] = per_is_weight(n, tree.get(idx[k]), total, beta);
        max_w = std::max(max_w, w[k]);
      }
      for (size_t k = 0; k < w.size(); ++k) want_w[k] = static_cast<float>(w[k] / max_w);
    } else {
      for (int& i : idx) i = static_cast<int>(copy.uniform(static_cast<uint64_t>(n)));
    }
    std::vector<float> taus, taus_next;  // IQN: update_iqn's next draws from the same Rng
    if (cfg.algo == Algo::kIqn) {
      taus.resize(static_cast<size_t>(cfg.batch * cfg.iqn_taus));
      taus_next.resize(taus.size());
      for (float& t : taus) t = static_cast<float>(copy.unit());
      for (float& t : taus_next) t = static_cast<float>(copy.unit());
    }
    const UpdateStats cpu = agent.update(&replay, per ? cfg.beta_at(0) : 1.0, rng);
    if (per) {
      learner.update_on_draws(units, taus, taus_next);
      EXPECT_EQ(learner.last_indices(), idx) << "update " << u;
      gpu::testing::expect_close(learner.last_weights(), want_w, 1e-5, "IS weights");
      if (u == 0) {
        EXPECT_EQ(want_w, std::vector<float>(want_w.size(), 1.0f));
      }
      const std::vector<double> tree = learner.sum_tree();
      const SumTree& ct = replay.tree();
      const int leaves = ct.capacity();
      ASSERT_EQ(tree.size(), 2 * static_cast<size_t>(leaves));
      int moved_leaves = 0;
      for (int i = 0; i < leaves; ++i) {
        const double want = ct.get(i), got = tree[static_cast<size_t>(leaves + i)];
        EXPECT_NEAR(got, want, 1e-4 * want) << "leaf " << i << ", update " << u;
        moved_leaves += want != 1.0;
      }
      EXPECT_GT(moved_leaves, B / 2);  // the sampled rows' priorities were rewritten
      std::vector<double> resummed = tree;
      sum_tree_rebuild(resummed.data(), leaves);
      EXPECT_EQ(resummed, tree) << "an internal node is not its children's sum";
      EXPECT_NEAR(tree[1], ct.total(), 1e-5 * ct.total());
      EXPECT_NEAR(learner.max_priority(), replay.max_priority(), 1e-5 * replay.max_priority());
      EXPECT_GT(replay.max_priority(), 1.0);
    } else {
      learner.update_on(idx, taus, taus_next);
    }
    const DeviceLearnerStats gpu = learner.stats();
    EXPECT_EQ(gpu.updates, u + 1);
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * std::abs(cpu.loss)) << "loss, update " << u;
    EXPECT_NEAR(gpu.mean_q, cpu.mean_q, 1e-4 * std::max(1.0, std::abs(cpu.mean_q)))
        << "mean Q, update " << u;
    EXPECT_NEAR(gpu.grad_norm, cpu.grad_norm, 1e-4 * cpu.grad_norm) << "grad norm, update " << u;
    EXPECT_GT(cpu.loss, per ? 0.3 : 1.0);  // prioritised: IS weights <= 1
    EXPECT_GT(cpu.grad_norm, 1e-3);
  }
  const std::vector<float> g = learner.online();
  const std::vector<float> c(agent.params().begin(), agent.params().end());
  ASSERT_EQ(g.size(), c.size());
  double worst = 0, moved = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double diff = std::abs(static_cast<double>(g[i]) - c[i]);
    if (diff > worst) worst = diff, worst_at = i;
    moved = std::max(moved, std::abs(static_cast<double>(c[i]) - before[i]));
  }
  std::string where;  // the ParamSpec holding the worst parameter
  const QNetwork<float> net(q_network_config(cfg, d, A));
  for (const auto& sp : net.specs())
    if (worst_at >= sp.offset && worst_at < sp.offset + sp.size)
      where = sp.name + "[" + std::to_string(worst_at - sp.offset) + "]";
  // Two Adam steps move a parameter by up to ~2·lr; a gradient difference Δg moves it by at
  // most lr·Δg/eps (eps = 0.01/128), so float-rounding gradients agree to far below lr.
  EXPECT_GT(moved, 1.5 * cfg.lr);
  EXPECT_LT(worst, 2e-6) << "largest |gpu − cpu| over " << g.size() << " parameters at " << where
                         << ": gpu " << g[worst_at] << ", cpu " << c[worst_at] << ", before "
                         << before[worst_at];
  EXPECT_EQ(learner.target(), before);  // no target update was asked for
  // The optimizer state converts into the CPU agent's checkpoint layout.
  DqnAgent copy(cfg, d, A);
  ASSERT_TRUE(copy_device_state(learner, &copy).ok());
  EXPECT_EQ(copy.updates(), 2);
  EXPECT_EQ(std::vector<float>(copy.params().begin(), copy.params().end()), g);
}

// The update-parity grid: expect_update_matches_cpu on the head's small config for every
// (dueling, Munchausen) pair, env and double-Q setting listed (in that nesting order), with
// n_step, 3-step discounts in the batch, prioritised replay (α = per_alpha, β0 = 0.4) and the
// symmetric policy as given.
struct UpdateCases {
  Algo algo = Algo::kC51;
  std::vector<std::pair<bool, bool>> dueling_munchausen = {{false, false}};
  std::vector<const char*> envs = {"cartpole", "execution"};  // 2 and 21 actions
  std::vector<bool> double_q = {false, true};
  int n_step = 1;
  bool nstep_discounts = false;
  double per_alpha = 0;
  bool symmetric = false;  // --symmetric-policy (an env with a mirror: market making)
};

void expect_updates_match_cpu(const UpdateCases& cases) {
  for (auto [dueling, munchausen] : cases.dueling_munchausen) {
    for (const char* env : cases.envs) {
      for (bool double_q : cases.double_q) {
        SCOPED_TRACE(std::string(algo_name(cases.algo)) + ", " + env +
                     (dueling ? ", dueling" : "") + (munchausen ? ", Munchausen" : "") +
                     (double_q ? ", double Q" : ", target argmax") +
                     (cases.symmetric ? ", symmetric policy" : ""));
        DqnConfig cfg = cases.algo == Algo::kQrDqn ? small_qr_config(double_q)
                        : cases.algo == Algo::kIqn ? small_iqn_config(double_q)
                                                   : small_config(double_q);
        cfg.dueling = dueling;
        cfg.munchausen = munchausen;
        cfg.n_step = cases.n_step;
        cfg.symmetric_policy = cases.symmetric;
        if (cases.per_alpha > 0) {
          cfg.per_alpha = cases.per_alpha;
          cfg.per_beta0 = 0.4;
        }
        expect_update_matches_cpu(cfg, env, cases.nstep_discounts);
      }
    }
  }
}

TEST(RlLearnerGpu, UpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.envs = {"cartpole"}});
}

// The dueling head: value and advantage streams, combined and split back by rl/dueling_head.h
// (with 21 actions the advantage mean has more to centre).
TEST(RlLearnerGpu, DuelingUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.dueling_munchausen = {{true, false}}});
}

// The Munchausen target: the π(a'|s')-weighted mixture over every next action with the bonus of
// ln π(a|s) (τ = 0.03, α = 0.9, l0 = −1). It reads no argmax, so both double-Q settings must give
// the CPU's update (which ignores the setting too).
TEST(RlLearnerGpu, MunchausenUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.dueling_munchausen = {{false, true}}});
}

TEST(RlLearnerGpu, DuelingMunchausenUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.dueling_munchausen = {{true, true}}});
}

// QR-DQN (32 quantiles, the quantile Huber loss with κ = 1 at τ̂_i = (2i + 1)/64): on 2 and 21
// actions, both double-Q settings (which pick a* by the online or the target net's quantile
// means), 3-step discounts γ³ next to 1-step ones and terminals in the batch.
TEST(RlLearnerGpu, QrDqnUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.algo = Algo::kQrDqn, .n_step = 3, .nstep_discounts = true});
}

// QR-DQN with the dueling head, Munchausen (the π(a'|s')/N-weighted targets of every action) and
// both: the same comparison.
TEST(RlLearnerGpu, QrDqnDuelingMunchausenUpdatesMatchCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.algo = Algo::kQrDqn,
                            .dueling_munchausen = {{true, false}, {false, true}, {true, true}},
                            .nstep_discounts = true});
}

// IQN (N = N' = 8 sampled τ fed from the CPU's draws, K = 32 policy τ that pick a* and the
// Munchausen policy, 64 cosine features): plain, dueling, Munchausen and both, on 2 and 21
// actions, both double-Q settings, 3-step discounts and terminals in the batch.
TEST(RlLearnerGpu, IqnUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu(
      {.algo = Algo::kIqn,
       .dueling_munchausen = {{false, false}, {true, false}, {false, true}, {true, true}},
       .nstep_discounts = true});
}

// Prioritised replay (α = 0.6, β0 = 0.4; rl/device_replay.h) with each head: C51 plain on 2 and 21
// actions and both double-Q settings, C51 with the dueling head and Munchausen, QR-DQN and IQN
// plain and with both (3-step discounts in their batches). expect_update_matches_cpu's bars
// plus its prioritised ones (picks exact, IS weights, leaves, total, largest priority).
TEST(RlLearnerGpu, PrioritisedUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_updates_match_cpu({.per_alpha = 0.6});
  expect_updates_match_cpu({.dueling_munchausen = {{true, true}},
                            .envs = {"cartpole"},
                            .double_q = {true},
                            .per_alpha = 0.6});
  for (Algo algo : {Algo::kQrDqn, Algo::kIqn})
    expect_updates_match_cpu({.algo = algo,
                              .dueling_munchausen = {{false, false}, {true, true}},
                              .envs = {"cartpole"},
                              .double_q = {true},
                              .nstep_discounts = true,
                              .per_alpha = 0.6});
}

// --symmetric-policy (market making's mirror: the inventory negated, bid and ask depths swapped;
// 2 observation entries, the mirror's action map on its quotes): the update also runs the nets at
// m(s') (and at m(s) with Munchausen); every value that picks a* or the Munchausen policy is
// ½[Q(s, a) + Q(m(s), m(a))], and the bootstrap of a' is the even mixture of Z(s', a') and
// Z(m(s'), m(a')) (C51 the probabilities averaged, QR-DQN both quantile sets at half weight).
// C51 and QR-DQN, plain, dueling, Munchausen and both, both double-Q settings, then C51 with all
// options and prioritised replay: expect_update_matches_cpu's bars against DqnAgent::update with
// the same mirror.
TEST(RlLearnerGpu, SymmetricPolicyUpdateMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  for (Algo algo : {Algo::kC51, Algo::kQrDqn})
    expect_updates_match_cpu(
        {.algo = algo,
         .dueling_munchausen = {{false, false}, {true, false}, {false, true}, {true, true}},
         .envs = {"mm"},
         .nstep_discounts = algo == Algo::kQrDqn,
         .symmetric = true});
  expect_updates_match_cpu({.dueling_munchausen = {{true, true}},
                            .envs = {"mm"},
                            .double_q = {true},
                            .per_alpha = 0.6,
                            .symmetric = true});
}

// The device sum tree (rl/device_replay.cu) against the CPU's SumTree over 100 slots (128
// leaves), as the env steps of 8 lanes write it: (1) 30 steps (the ring wraps twice) give every
// slot the leaf 1^α and every node the CPU tree's bits exactly; (2) on random leaves (every
// seventh 0) set through the test hook, 3 more steps give their 24 slots max_priority^α (5^0.6:
// the device pow within 1e-14 relative of the host's), every internal node exactly its
// children's sum, the total within 1e-13 relative of the CPU tree's; (3) sum_tree_find on the
// device picks exactly the CPU SumTree's leaf (holding the device's leaves, so the same bits)
// for 2000 stratified masses, every prefix boundary, 0, the total and past it.
TEST(RlLearnerGpu, DeviceSumTreeMatchesCpuSumTree) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = small_config(true);
  cfg.per_alpha = 0.6;
  cfg.buffer_size = 100;
  cfg.num_envs = 8;
  cfg.eps_start = cfg.eps_end = 1;
  const int d = 4, A = 2, cap = cfg.buffer_size, N = cfg.num_envs;
  DqnAgent agent(cfg, d, A);
  gpu::Context ctx(0);
  auto env = make_device_env(spec_named("cartpole"), N);
  const std::vector<float> params(agent.params().begin(), agent.params().end());
  DeviceC51Learner learner(device_learner_config(cfg, d, A), env.get(), ctx, params);
  learner.reset(17);
  SumTree cpu(cap);
  const int leaves = cpu.capacity();
  ASSERT_EQ(leaves, 128);
  int next = 0;
  for (int t = 0; t < 30; ++t) {
    learner.env_step();
    for (int i = 0; i < N; ++i, next = (next + 1) % cap) cpu.set(next, std::pow(1.0, 0.6));
  }
  std::vector<double> tree = learner.sum_tree();
  ASSERT_EQ(tree.size(), 2 * static_cast<size_t>(leaves));
  std::vector<double> want(tree.size(), 0.0);
  for (int i = 0; i < leaves; ++i) want[static_cast<size_t>(leaves + i)] = cpu.get(i);
  sum_tree_rebuild(want.data(), leaves);  // the CPU tree's nodes (each its children's sum)
  EXPECT_EQ(want[1], cpu.total());
  for (size_t k = 1; k < tree.size(); ++k) EXPECT_EQ(tree[k], want[k]) << "node " << k;
  EXPECT_EQ(tree[1], 100.0);
  EXPECT_EQ(learner.max_priority(), 1.0);
  // (2) random leaves, then 3 env steps insert at the largest priority 5.
  Rng rng(9);
  std::vector<double> leaf(static_cast<size_t>(cap));
  for (int i = 0; i < cap; ++i) leaf[static_cast<size_t>(i)] = i % 7 == 3 ? 0.0 : 3 * rng.unit();
  learner.set_priorities(leaf, 5.0);
  cpu.assign(leaf);
  for (int t = 0; t < 3; ++t) {
    learner.env_step();
    for (int i = 0; i < N; ++i, next = (next + 1) % cap) cpu.set(next, std::pow(5.0, 0.6));
  }
  EXPECT_EQ(learner.stats().replay_next, next);
  tree = learner.sum_tree();
  for (int i = 0; i < leaves; ++i) {
    const double w = cpu.get(i), g = tree[static_cast<size_t>(leaves + i)];
    EXPECT_NEAR(g, w, 1e-14 * w) << "leaf " << i;
  }
  std::vector<double> resummed = tree;
  sum_tree_rebuild(resummed.data(), leaves);
  EXPECT_EQ(resummed, tree) << "an internal node is not its children's sum";
  EXPECT_NEAR(tree[1], cpu.total(), 1e-13 * cpu.total());
  EXPECT_EQ(learner.max_priority(), 5.0);
  // (3) the descent on the device's tree against the CPU SumTree holding the same leaves.
  SumTree same(cap);
  same.assign(std::span<const double>(tree.data() + leaves, static_cast<size_t>(cap)));
  ASSERT_EQ(same.total(), tree[1]);
  std::vector<double> masses;
  for (int k = 0; k < 2000; ++k) masses.push_back(per_mass(tree[1], 2000, k, rng.unit()));
  double prefix = 0;
  for (int i = 0; i < cap; ++i) {
    prefix += tree[static_cast<size_t>(leaves + i)];
    masses.push_back(prefix);
    masses.push_back(std::nextafter(prefix, 0.0));
  }
  for (double m : {0.0, tree[1], tree[1] * (1 + 1e-12), 2 * tree[1]}) masses.push_back(m);
  const std::vector<int> got = learner.find_leaves(masses);
  ASSERT_EQ(got.size(), masses.size());
  for (size_t k = 0; k < masses.size(); ++k)
    EXPECT_EQ(got[k], same.find(masses[k])) << "mass " << masses[k];
  EXPECT_EQ(got.back(), cap - 1);  // past the total: the last positive leaf (99 % 7 != 3)
}

// The fused acting kernel's q (C51: Σ z_j p_j; QR-DQN: the quantile mean; IQN: the mean over the
// K = 32 policy τ) and greedy actions on 64 lanes against DqnAgent::q_values, plain and dueling
// head.
void expect_acting_matches_cpu(Algo algo) {
  for (const char* name : {"cartpole", "execution"}) {
    for (bool dueling : {false, true}) {
      SCOPED_TRACE(std::string(name) + (dueling ? ", dueling" : ", plain head"));
      const EnvSpec spec = spec_named(name);
      DqnConfig cfg = small_config(true);
      cfg.algo = algo;
      cfg.quantiles = 32;
      cfg.dueling = dueling;
      cfg.support = spec.default_support();
      cfg.eps_start = cfg.eps_end = 0;  // greedy: the actions are the argmax of q
      cfg.num_envs = 64;
      auto cpu_env = spec.make(cfg.num_envs);
      const int d = cpu_env->obs_dim(), A = cpu_env->num_actions();
      DqnAgent agent(cfg, d, A);
      gpu::Context ctx(0);
      auto env = make_device_env(spec, cfg.num_envs);
      const std::vector<float> params(agent.params().begin(), agent.params().end());
      DeviceC51Learner learner(device_learner_config(cfg, d, A), env.get(), ctx, params);
      const uint64_t seed = 77;
      learner.reset(seed);
      learner.env_step();  // acts on the first observations of the seeded lanes
      std::vector<float> obs(static_cast<size_t>(cfg.num_envs * d));
      cpu_env->reset(seed, obs);  // the same starts (no transcendental involved)
      std::vector<float> q_cpu;
      agent.q_values(obs, cfg.num_envs, &q_cpu);
      const std::vector<float> q_gpu = learner.last_q();
      // |Δq| / max(|q|, 1): q = Σ z_j p_j sums atoms up to |z| = 100 whose float roundings
      // (Eigen's GEMM order vs the kernel's sequential dot products) do not scale with q itself.
      gpu::testing::expect_close(q_gpu, q_cpu, 1e-4, "q", 1.0);
      const std::vector<int> act = learner.last_actions();
      for (int i = 0; i < cfg.num_envs; ++i) {
        const float* q = &q_cpu[static_cast<size_t>(i * A)];
        int best = 0;
        for (int a = 1; a < A; ++a)
          if (q[a] > q[best]) best = a;
        float second = -1e30f;  // skip near-ties, where a rounding may pick the other action
        for (int a = 0; a < A; ++a)
          if (a != best) second = std::max(second, q[a]);
        if (q[best] - second > 1e-4f) {
          EXPECT_EQ(act[static_cast<size_t>(i)], best) << "lane " << i;
        }
      }
    }
  }
}

TEST(RlLearnerGpu, ActingQValuesMatchCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_acting_matches_cpu(Algo::kC51);
}

TEST(RlLearnerGpu, QrDqnActingQValuesMatchCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_acting_matches_cpu(Algo::kQrDqn);
}

TEST(RlLearnerGpu, IqnActingQValuesMatchCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_acting_matches_cpu(Algo::kIqn);
}

// Thompson exploration in the fused acting kernel against DqnAgent::act, lane by lane: 64 lanes
// (cartpole and execution, plain and dueling head) act once from the learner's seeded lane Rngs
// (lane i: Rng(lane_seed(seed, i, 11))), and the CPU agent acts on lane i's observation (n = 1)
// from a copy of the same Rng. ε = 1: every lane samples (C51 one unit() per action for its atom,
// QR-DQN one uniform(K) quantile, IQN one uniform(K) policy τ), and the lane Rngs must end in the
// CPU's state exactly (the draw count does not depend on the values); the actions must be equal
// except near a tie, replayed here from the CPU's outputs: C51 a draw u within 1e-5 of a
// cumulative probability (float softmax roundings may move the drawn atom), QR-DQN and IQN a
// sampled best within 1e-4·max(1, |v|) of the runner-up. ε = 0: greedy (near-ties skipped as in
// expect_acting_matches_cpu) and no draw at all.
void expect_thompson_acting_matches_cpu(Algo algo) {
  int compared = 0, explored = 0, lanes = 0;
  for (double eps : {1.0, 0.0}) {
    for (const char* name : {"cartpole", "execution"}) {
      for (bool dueling : {false, true}) {
        SCOPED_TRACE(std::string(name) + (dueling ? ", dueling" : ", plain head") + ", eps " +
                     std::to_string(eps));
        const EnvSpec spec = spec_named(name);
        DqnConfig cfg = small_config(true);
        cfg.algo = algo;
        cfg.quantiles = 32;
        cfg.dueling = dueling;
        cfg.support = spec.default_support();
        cfg.exploration = Exploration::kThompson;
        cfg.eps_start = cfg.eps_end = eps;
        cfg.num_envs = 64;
        ASSERT_TRUE(device_learner_supports(cfg).ok()) << device_learner_supports(cfg).message();
        auto cpu_env = spec.make(cfg.num_envs);
        const int d = cpu_env->obs_dim(), A = cpu_env->num_actions();
        DqnAgent agent(cfg, d, A);
        gpu::Context ctx(0);
        auto env = make_device_env(spec, cfg.num_envs);
        const std::vector<float> params(agent.params().begin(), agent.params().end());
        DeviceC51Learner learner(device_learner_config(cfg, d, A), env.get(), ctx, params);
        const uint64_t seed = 77;
        learner.reset(seed);
        learner.env_step();
        std::vector<float> obs(static_cast<size_t>(cfg.num_envs * d));
        cpu_env->reset(seed, obs);
        const std::vector<int> act = learner.last_actions();
        const std::vector<Rng> rngs = learner.act_rngs();
        ASSERT_EQ(rngs.size(), static_cast<size_t>(cfg.num_envs));
        // The CPU outputs of one lane, to replay the draws (DqnAgent::act's own forward).
        const QNetwork<float> net(q_network_config(cfg, d, A));
        model::CpuContext cpu_ctx(1);
        QNetwork<float>::Workspace ws;
        const int K = algo == Algo::kIqn ? cfg.iqn_policy_taus : cfg.num_outputs();
        std::vector<float> taus(static_cast<size_t>(K)), out(static_cast<size_t>(A * K));
        for (int k = 0; k < K; ++k)
          taus[static_cast<size_t>(k)] = (static_cast<float>(k) + 0.5f) / static_cast<float>(K);
        for (int i = 0; i < cfg.num_envs; ++i) {
          const std::span<const float> o(&obs[static_cast<size_t>(i * d)], static_cast<size_t>(d));
          Rng cpu_rng(lane_seed(cfg.seed, static_cast<uint64_t>(i), 11));
          Rng replay = cpu_rng;
          std::vector<int> a_cpu;
          agent.act(o, 1, eps, cpu_rng, &a_cpu);
          Rng g = rngs[static_cast<size_t>(i)], c = cpu_rng;
          for (int t = 0; t < 4; ++t) EXPECT_EQ(g.next(), c.next()) << "lane " << i << " Rng";
          ++lanes;
          if (eps == 0) {
            std::vector<float> q;
            agent.q_values(o, 1, &q);
            int best = 0;
            float second = -1e30f;
            for (int a = 1; a < A; ++a)
              if (q[static_cast<size_t>(a)] > q[static_cast<size_t>(best)]) best = a;
            for (int a = 0; a < A; ++a)
              if (a != best) second = std::max(second, q[static_cast<size_t>(a)]);
            EXPECT_EQ(a_cpu[0], best);
            if (q[static_cast<size_t>(best)] - second > 1e-4f) {
              EXPECT_EQ(act[static_cast<size_t>(i)], best) << "lane " << i;
              ++compared;
            }
            continue;
          }
          if (algo == Algo::kIqn)
            net.forward_iqn(cpu_ctx, agent.params(), o, 1, taus, K, out, &ws);  // [K, A]
          else
            net.forward(cpu_ctx, agent.params(), o, 1, out, &ws);  // [A, K]
          std::vector<float> v(static_cast<size_t>(A));
          bool near = false;
          for (int a = 0; a < A; ++a) {
            const float* row = &out[static_cast<size_t>(a * K)];
            if (algo == Algo::kC51) {
              const double u = replay.unit();
              const int j = c51_sample_index<float>(row, K, u);
              v[static_cast<size_t>(a)] = static_cast<float>(cfg.support.atom(j));
              std::vector<float> p(static_cast<size_t>(K));
              softmax_row<float>({row, static_cast<size_t>(K)}, p);
              double cum = 0;
              for (int k = 0; k + 1 < K; ++k) {
                cum += p[static_cast<size_t>(k)];
                near = near || std::abs(u - cum) < 1e-5;
              }
            } else if (algo == Algo::kIqn) {
              const size_t k = replay.uniform(static_cast<uint64_t>(K));
              v[static_cast<size_t>(a)] = out[k * static_cast<size_t>(A) + static_cast<size_t>(a)];
            } else {
              v[static_cast<size_t>(a)] = row[replay.uniform(static_cast<uint64_t>(K))];
            }
          }
          int best = 0;
          for (int a = 1; a < A; ++a)
            if (v[static_cast<size_t>(a)] > v[static_cast<size_t>(best)]) best = a;
          EXPECT_EQ(a_cpu[0], best) << "lane " << i << ": the replayed draws are not act's";
          if (algo != Algo::kC51)
            for (int a = 0; a < A; ++a)
              if (a != best && v[static_cast<size_t>(best)] - v[static_cast<size_t>(a)] <=
                                   1e-4f * std::max(1.0f, std::abs(v[static_cast<size_t>(best)])))
                near = true;
          std::vector<float> q;
          agent.q_values(o, 1, &q);
          int greedy = 0;
          for (int a = 1; a < A; ++a)
            if (q[static_cast<size_t>(a)] > q[static_cast<size_t>(greedy)]) greedy = a;
          explored += best != greedy;
          if (near) continue;
          EXPECT_EQ(act[static_cast<size_t>(i)], best) << "lane " << i;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, lanes * 3 / 4);  // few lanes skipped as near-ties
  EXPECT_GT(explored, 0);              // some sampled actions are not the greedy one
}

TEST(RlLearnerGpu, ThompsonActingMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_thompson_acting_matches_cpu(Algo::kC51);
}

TEST(RlLearnerGpu, QrDqnThompsonActingMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_thompson_acting_matches_cpu(Algo::kQrDqn);
}

TEST(RlLearnerGpu, IqnThompsonActingMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_thompson_acting_matches_cpu(Algo::kIqn);
}

TEST(RlLearnerGpu, UniformReplaySamplingFrequencies) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = small_config(false);
  cfg.batch = 128;
  cfg.buffer_size = 200;
  const int size = 50, d = 4, A = 2;  // half-full buffer: draws must stay below the size
  DqnAgent agent(cfg, d, A);
  gpu::Context ctx(0);
  auto env = make_device_env(spec_named("cartpole"), 1);
  const std::vector<float> params(agent.params().begin(), agent.params().end());
  DeviceC51Learner learner(device_learner_config(cfg, d, A), env.get(), ctx, params);
  std::vector<float> obs(static_cast<size_t>(size * d), 0.1f), rew(static_cast<size_t>(size), 1.0f);
  std::vector<float> disc(static_cast<size_t>(size), 0.99f);
  learner.load_replay(obs, std::vector<int>(static_cast<size_t>(size), 0), rew, obs, disc);
  std::vector<double> count(static_cast<size_t>(size), 0);
  const int updates = 400;
  for (int u = 0; u < updates; ++u) {
    learner.update();
    for (int i : learner.last_indices()) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, size);
      count[static_cast<size_t>(i)] += 1;
    }
  }
  const double expected = static_cast<double>(updates) * cfg.batch / size;  // 1024
  double chi2 = 0;
  for (double c : count) chi2 += (c - expected) * (c - expected) / expected;
  // 49 degrees of freedom: P(χ² > 85.4) = 0.001.
  EXPECT_LT(chi2, 85.4);
  EXPECT_GT(chi2, 20.0);  // P(χ² < 20) < 1e-4: not suspiciously even either
}

DqnConfig cartpole_config(uint64_t seed) {
  DqnConfig c;
  c.support = {-100, 100, 101};
  c.hidden = {64, 64};
  c.double_q = true;
  c.lr = 1e-3;
  c.batch = 128;
  c.buffer_size = 20000;
  c.learning_starts = 1000;
  c.train_frequency = 2;
  c.target_update = 500;
  c.exploration_fraction = 0.2;
  c.total_steps = 150000;  // the CPU path with this config reached 476 at 50 k steps (seed 1)
  c.seed = seed;
  return c;
}

TrainOptions cartpole_options(const std::string& dir) {
  TrainOptions o;
  o.out_dir = dir;
  o.log_every = 10000;
  o.eval_every = 5000;
  o.eval_episodes = 10;
  o.stop_return = 200;
  return o;
}

void expect_cartpole_reaches_threshold(const DqnConfig& cfg, const std::string& tag) {
  DqnAgent agent(cfg, 4, 2);
  const std::string dir = test::scratch_dir() + "/gpu_cartpole" + tag;
  auto r = train_dqn_device(spec_named("cartpole"), cartpole_options(dir), &agent);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->last_eval_mean, 200) << "after " << r->env_steps << " steps";
  EXPECT_GT(r->reached_stop_return_at, 0);
  EXPECT_EQ(r->updates, (r->env_steps - cfg.learning_starts) / cfg.train_frequency + 1);
  // The checkpoint loads and plays on the CPU.
  auto loaded = read_agent_checkpoint(dir + "/checkpoint.fxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->agent->updates(), r->updates);
  const EvalResult cpu = evaluate_agent(loaded->agent.get(), loaded->spec, 10, 0x5eed);
  // Not the same episodes bit for bit (CUDA's cos/sin and the GEMMs' rounding can flip a
  // near-tie), but the same policy: far above a random policy's ~20.
  EXPECT_GE(cpu.mean, 100) << "GPU's greedy evaluation " << r->last_eval_mean;
}

TEST(RlLearnerGpu, SeededCartPoleRunReachesTheThreshold) {
  FXT_SKIP_WITHOUT_GPU();
  expect_cartpole_reaches_threshold(cartpole_config(1), "");
}

// The same with the QR-DQN head (32 quantiles); on the CPU this config reached the threshold at
// 20 k, 25 k and 5 k steps (seeds 1, 2, 3; 314.8, 248.0, 239.5).
TEST(RlLearnerGpu, SeededCartPoleRunReachesTheThresholdQrDqn) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(1);
  cfg.algo = Algo::kQrDqn;
  cfg.quantiles = 32;
  expect_cartpole_reaches_threshold(cfg, "_qrdqn");
}

// The same with the IQN head (N = N' = 8, K = 32, 64 cosine features).
TEST(RlLearnerGpu, SeededCartPoleRunReachesTheThresholdIqn) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(1);
  cfg.algo = Algo::kIqn;
  expect_cartpole_reaches_threshold(cfg, "_iqn");
}

// The same with prioritised replay (α = 0.6, β0 = 0.4, the C51 head): the device tree, the
// stratified draws from the per-row Rngs and the IS-weighted loss must still learn CartPole.
TEST(RlLearnerGpu, SeededCartPoleRunReachesTheThresholdPrioritised) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(1);
  cfg.per_alpha = 0.6;
  cfg.per_beta0 = 0.4;
  expect_cartpole_reaches_threshold(cfg, "_per");
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Three seeded GPU runs of `base` (6000 steps on 2 lanes of env_name, CartPole unless given, one
// update per 4 env steps:
// chunks of k = 2 env steps and single steps around the log and target boundaries; Polyak 0.5)
// with seeds 7, 7 and 8: the first two must write identical checkpoint bytes, the third other
// bytes. The checkpoint loads into a CPU agent (fxt rl eval's path) and plays.
void expect_same_seed_same_bytes(const DqnConfig& base, const std::string& tag,
                                 const char* env_name = "cartpole") {
  const EnvSpec spec = spec_named(env_name);
  auto probe = spec.make(1);
  std::string bytes[3];
  for (int run = 0; run < 3; ++run) {
    DqnConfig cfg = base;
    cfg.seed = run < 2 ? 7 : 8;
    cfg.total_steps = 6000;
    cfg.num_envs = 2;
    cfg.train_frequency = 4;
    cfg.polyak = 0.5;  // the Polyak kernel
    DqnAgent agent(cfg, probe->obs_dim(), probe->num_actions());
    TrainOptions o =
        cartpole_options(test::scratch_dir() + "/gpu_same_seed_" + tag + std::to_string(run));
    o.stop_return = std::nan("");
    o.eval_every = 0;
    auto r = train_dqn_device(spec, o, &agent);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->env_steps, 6000);
    EXPECT_EQ(r->updates, (6000 - 1000) / 4 + 1);
    bytes[run] = file_bytes(o.out_dir + "/checkpoint.fxt");
    ASSERT_GT(bytes[run].size(), 1000u);
    if (run > 0) continue;
    auto loaded = read_agent_checkpoint(o.out_dir + "/checkpoint.fxt");
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->agent->config().algo, base.algo);
    EXPECT_EQ(loaded->agent->config().dueling, base.dueling);
    EXPECT_EQ(loaded->agent->config().munchausen, base.munchausen);
    EXPECT_EQ(loaded->agent->updates(), r->updates);
    const EvalResult cpu = evaluate_agent(loaded->agent.get(), loaded->spec, 2, 0x5eed);
    EXPECT_TRUE(std::isfinite(cpu.mean));
  }
  EXPECT_TRUE(bytes[0] == bytes[1]) << "same seed, different checkpoint bytes";
  EXPECT_FALSE(bytes[0] == bytes[2]) << "another seed gave the same bytes";
}

TEST(RlLearnerGpu, SameSeedSameCheckpointBytes) {
  FXT_SKIP_WITHOUT_GPU();
  expect_same_seed_same_bytes(cartpole_config(7), "plain");
}

TEST(RlLearnerGpu, SameSeedSameCheckpointBytesMunchausen) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(7);
  cfg.munchausen = true;
  expect_same_seed_same_bytes(cfg, "munchausen");
  cfg.dueling = true;
  cfg.n_step = 3;  // and with the dueling head and 3-step returns
  expect_same_seed_same_bytes(cfg, "munchausen_dueling");
}

TEST(RlLearnerGpu, SameSeedSameCheckpointBytesQrDqn) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(7);
  cfg.algo = Algo::kQrDqn;
  cfg.quantiles = 32;
  expect_same_seed_same_bytes(cfg, "qrdqn");
  cfg.munchausen = true;
  cfg.dueling = true;
  cfg.n_step = 3;  // and with Munchausen, the dueling head and 3-step returns
  expect_same_seed_same_bytes(cfg, "qrdqn_munchausen_dueling");
}

// IQN: the τ and τ' come from the per-row sampling Rngs after each row's index.
TEST(RlLearnerGpu, SameSeedSameCheckpointBytesIqn) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(7);
  cfg.algo = Algo::kIqn;
  expect_same_seed_same_bytes(cfg, "iqn");
  cfg.munchausen = true;
  cfg.dueling = true;
  cfg.n_step = 3;  // and with Munchausen, the dueling head and 3-step returns
  expect_same_seed_same_bytes(cfg, "iqn_munchausen_dueling");
}

// Thompson exploration (ε from 1 to 0.05: every training step samples): C51 plain, QR-DQN, and
// IQN with the dueling head (the IQN draws come before the τ loop).
TEST(RlLearnerGpu, SameSeedSameCheckpointBytesThompson) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(7);
  cfg.exploration = Exploration::kThompson;
  expect_same_seed_same_bytes(cfg, "thompson");
  cfg.algo = Algo::kQrDqn;
  cfg.quantiles = 32;
  expect_same_seed_same_bytes(cfg, "thompson_qrdqn");
  cfg.algo = Algo::kIqn;
  cfg.dueling = true;
  expect_same_seed_same_bytes(cfg, "thompson_iqn_dueling");
}

// Prioritised replay: the tree's inserts, stratified draws, IS weights and priority updates run
// inside the graphs; C51 plain, then IQN with Munchausen, the dueling head and 3-step returns
// (the n-step insert path; each row's u then its τ from the row's Rng).
TEST(RlLearnerGpu, SameSeedSameCheckpointBytesPrioritised) {
  FXT_SKIP_WITHOUT_GPU();
  DqnConfig cfg = cartpole_config(7);
  cfg.per_alpha = 0.6;
  expect_same_seed_same_bytes(cfg, "per");
  cfg.algo = Algo::kIqn;
  cfg.munchausen = true;
  cfg.dueling = true;
  cfg.n_step = 3;
  expect_same_seed_same_bytes(cfg, "per_iqn_munchausen_dueling");
}

// --symmetric-policy on market making (the mirror's forwards in acting and in the update, the tie
// coin from the lane Rngs): C51 plain, then QR-DQN with Munchausen, the dueling head, double Q
// off and --mirror (each stored row followed by its mirror image). The checkpoint keeps the flag
// and plays on the CPU (fxt rl eval rebuilds the mirror from the env).
TEST(RlLearnerGpu, SameSeedSameCheckpointBytesSymmetricPolicy) {
  FXT_SKIP_WITHOUT_GPU();
  const EnvSpec spec = spec_named("mm");
  DqnConfig cfg = cartpole_config(7);
  cfg.support = spec.default_support();
  cfg.symmetric_policy = true;
  expect_same_seed_same_bytes(cfg, "symmetric", "mm");
  cfg.algo = Algo::kQrDqn;
  cfg.quantiles = 32;
  cfg.munchausen = true;
  cfg.dueling = true;
  cfg.double_q = false;
  cfg.mirror = true;
  expect_same_seed_same_bytes(cfg, "symmetric_qrdqn_munchausen_dueling_mirror", "mm");
}

// The symmetric policy's greedy evaluation on the device (the tie coin from each eval lane's own
// Rng, seeded from the eval seed): the same seed gives the same returns, and the episodes end.
TEST(RlLearnerGpu, SymmetricPolicyEvaluationIsSeeded) {
  FXT_SKIP_WITHOUT_GPU();
  const EnvSpec spec = spec_named("mm");
  DqnConfig cfg = small_config(true);
  cfg.support = spec.default_support();
  cfg.symmetric_policy = true;
  auto probe = spec.make(1);
  const int d = probe->obs_dim(), A = probe->num_actions();
  DqnAgent agent(cfg, d, A);
  gpu::Context ctx(0);
  auto env = make_device_env(spec, 1);
  auto eval_env = make_device_env(spec, 16);
  DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
  ASSERT_TRUE(set_device_mirror(spec, &dc).ok());
  const std::vector<float> params(agent.params().begin(), agent.params().end());
  DeviceC51Learner learner(dc, env.get(), ctx, params);
  const std::vector<double> a = learner.evaluate(eval_env.get(), 5),
                            b = learner.evaluate(eval_env.get(), 5);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a, b);
  for (double r : a) EXPECT_TRUE(std::isfinite(r));
}

std::vector<float> device_copy(const float* p, size_t n) {
  std::vector<float> h(n);
  FXT_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}
std::vector<uint8_t> device_copy(const uint8_t* p, size_t n) {
  std::vector<uint8_t> h(n);
  FXT_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
  return h;
}

// --symmetric-policy in the fused acting kernel against DqnAgent::act, lane by lane: 64
// market-making lanes (plain and dueling head) act greedily (ε = 0) for three env steps from their
// seeded lane Rngs, and the CPU agent (the same mirror) acts on each lane's observation (n = 1)
// from its own copy of the lane's Rng. The q values must be DqnAgent::q_values' averaged ones to
// 1e-4; the first step's states are their own mirrors (inventory 0), so a lane whose best action
// is not its own mirror ties it with its mirror image and flips the coin (rng.unit() < 0.5). The
// lane Rngs must end in the CPU's state exactly and the actions must be equal, except on lanes
// where another action is within 1e-4 of the best (a rounding there may pick another branch; such
// a lane's CPU Rng is then set to the device's for the next step). Each head must flip coins: at
// initialisation the greedy action is nearly the same on every lane, and at many seeds it is its
// own mirror (equal bid and ask depths: 8 of the 64 actions, and their values are not averaged
// with another's, so they more often hold the maximum), which flips no coin at all. Seed 31 (the
// weights and the lane Rngs) flips coins with both heads of C51 and QR-DQN: the CPU agent alone
// draws 334 (C51) and 331 (QR-DQN) over the 384 lane steps, none skipped as a near-tie.
void expect_symmetric_acting_matches_cpu(Algo algo) {
  const EnvSpec spec = spec_named("mm");
  auto mirror = env_mirror_map(spec);
  ASSERT_TRUE(mirror.ok()) << mirror.status().message();
  int compared = 0, lanes = 0;
  for (bool dueling : {false, true}) {
    SCOPED_TRACE(dueling ? "dueling" : "plain head");
    int coins = 0;  // this head's lanes that broke a mirror tie by the coin
    DqnConfig cfg = small_config(true);
    cfg.seed = 31;  // a greedy action that is not its own mirror, with either head and algo
    cfg.algo = algo;
    cfg.quantiles = 32;
    cfg.dueling = dueling;
    cfg.support = spec.default_support();
    cfg.symmetric_policy = true;
    cfg.eps_start = cfg.eps_end = 0;  // greedy: the coin is the only draw
    cfg.num_envs = 64;
    ASSERT_TRUE(cfg.validate().ok());
    ASSERT_TRUE(device_learner_supports(cfg).ok()) << device_learner_supports(cfg).message();
    const int N = cfg.num_envs;
    auto cpu_env = spec.make(N);
    const int d = cpu_env->obs_dim(), A = cpu_env->num_actions();
    DqnAgent agent(cfg, d, A);
    agent.set_mirror(*mirror);
    gpu::Context ctx(0);
    auto env = make_device_env(spec, N);
    DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
    ASSERT_TRUE(set_device_mirror(spec, &dc).ok());
    const std::vector<float> params(agent.params().begin(), agent.params().end());
    DeviceC51Learner learner(dc, env.get(), ctx, params);
    const uint64_t seed = 77;
    learner.reset(seed);
    std::vector<float> obs(static_cast<size_t>(N * d));
    cpu_env->reset(seed, obs);  // the first step's observations
    std::vector<Rng> cpu_rngs;
    for (int i = 0; i < N; ++i)
      cpu_rngs.emplace_back(lane_seed(cfg.seed, static_cast<uint64_t>(i), 11));
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("env step " + std::to_string(step));
      if (step > 0) obs = device_copy(env->obs(), obs.size());  // the device lanes' next states
      learner.env_step();
      std::vector<float> q_cpu;
      agent.q_values(obs, N, &q_cpu);
      gpu::testing::expect_close(learner.last_q(), q_cpu, 1e-4, "q", 1.0);
      const std::vector<int> act = learner.last_actions();
      const std::vector<Rng> rngs = learner.act_rngs();
      ASSERT_EQ(rngs.size(), static_cast<size_t>(N));
      for (int i = 0; i < N; ++i) {
        const size_t si = static_cast<size_t>(i);
        const std::span<const float> o(&obs[si * static_cast<size_t>(d)], static_cast<size_t>(d));
        std::vector<int> a_cpu;
        agent.act(o, 1, 0.0, cpu_rngs[si], &a_cpu);
        const float* q = &q_cpu[si * static_cast<size_t>(A)];
        int best = 0;
        for (int a = 1; a < A; ++a)
          if (q[a] > q[best]) best = a;
        const int mb = mirror->action[static_cast<size_t>(best)];
        bool near = false;  // another action (not an exact mirror tie) within 1e-4 of the best
        for (int a = 0; a < A; ++a)
          if (a != best && !(a == mb && q[a] == q[best]) &&
              q[best] - q[a] <= 1e-4f * std::max(1.0f, std::abs(q[best])))
            near = true;
        ++lanes;
        if (near) {
          cpu_rngs[si] = rngs[si];
          continue;
        }
        coins += mb != best && q[mb] == q[best];
        Rng g = rngs[si], c = cpu_rngs[si];
        for (int t = 0; t < 4; ++t) EXPECT_EQ(g.next(), c.next()) << "lane " << i << " Rng";
        EXPECT_EQ(act[si], a_cpu[0]) << "lane " << i;
        ++compared;
      }
    }
    EXPECT_GT(coins, 0);  // some lanes broke a mirror tie by the coin
  }
  EXPECT_GT(compared, lanes * 3 / 4);  // few lanes skipped as near-ties
}

TEST(RlLearnerGpu, SymmetricPolicyActingMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_symmetric_acting_matches_cpu(Algo::kC51);
}

TEST(RlLearnerGpu, QrDqnSymmetricPolicyActingMatchesCpuAgent) {
  FXT_SKIP_WITHOUT_GPU();
  expect_symmetric_acting_matches_cpu(Algo::kQrDqn);
}

TEST(RlLearnerGpu, NStepReplayHoldsTheCpuAccumulatorsTransitions) {
  // 3-step returns on 8 CartPole lanes acting uniformly at random (episodes of ~20 steps, so
  // many windows are cut by a terminal): every env step's obs, action, reward, flags and
  // next_obs are read back and fed to the CPU's NStepAccumulator; lane i's k-th transition
  // there (the one that started at step k) must be the GPU replay's row k·N + i, stored at step
  // k + 2 — the same obs, action, next_obs and discount, the return to float rounding.
  FXT_SKIP_WITHOUT_GPU();
  const EnvSpec spec = spec_named("cartpole");
  DqnConfig cfg = small_config(true);
  cfg.support = spec.default_support();
  cfg.eps_start = cfg.eps_end = 1;  // uniform actions
  cfg.num_envs = 8;
  cfg.n_step = 3;
  cfg.gamma = 0.9;
  cfg.buffer_size = 4096;
  ASSERT_TRUE(device_learner_supports(cfg).ok());
  const int N = cfg.num_envs, d = 4, A = 2, T = 120;
  DqnAgent agent(cfg, d, A);
  gpu::Context ctx(0);
  auto env = make_device_env(spec, N);
  const std::vector<float> params(agent.params().begin(), agent.params().end());
  DeviceC51Learner learner(device_learner_config(cfg, d, A), env.get(), ctx, params);
  learner.reset(91);
  NStepAccumulator acc(N, d, cfg.n_step, cfg.gamma);
  struct Row {
    std::vector<float> obs, next;
    int action;
    float reward, discount;
  };
  std::vector<std::vector<Row>> cpu(static_cast<size_t>(N));
  int terminals = 0;
  for (int t = 0; t < T; ++t) {
    ctx.sync();
    const std::vector<float> obs = device_copy(env->obs(), static_cast<size_t>(N * d));
    learner.env_step();
    ctx.sync();
    const std::vector<int> act = learner.last_actions();
    const std::vector<float> rew = device_copy(env->reward(), static_cast<size_t>(N));
    const std::vector<float> next = device_copy(env->next_obs(), static_cast<size_t>(N * d));
    const std::vector<uint8_t> term = device_copy(env->terminated(), static_cast<size_t>(N));
    const std::vector<uint8_t> trunc = device_copy(env->truncated(), static_cast<size_t>(N));
    for (int i = 0; i < N; ++i) {
      const size_t k = static_cast<size_t>(i);
      terminals += term[k];
      acc.push(i, &obs[k * d], act[k], rew[k], &next[k * d], term[k] != 0, trunc[k] != 0,
               [&](const Transition& tr) {
                 cpu[k].push_back({std::vector<float>(tr.obs, tr.obs + d),
                                   std::vector<float>(tr.next_obs, tr.next_obs + d), tr.action,
                                   tr.reward, tr.discount});
               });
    }
  }
  EXPECT_GT(terminals, 20);  // the cut windows are exercised
  const DeviceLearnerStats st = learner.stats();
  EXPECT_EQ(st.env_steps, static_cast<long long>(T) * N);
  ASSERT_EQ(st.replay_size, (T - cfg.n_step + 1) * N);  // one row per lane and step, 2 late
  const DeviceC51Learner::ReplayRows gpu_rows = learner.replay();
  int cut = 0;
  for (int i = 0; i < N; ++i) {
    const auto& lane = cpu[static_cast<size_t>(i)];
    ASSERT_GE(lane.size(), static_cast<size_t>(T - cfg.n_step + 1)) << "lane " << i;
    for (int k = 0; k + cfg.n_step - 1 < T; ++k) {
      SCOPED_TRACE("lane " + std::to_string(i) + ", started at step " + std::to_string(k));
      const Row& want = lane[static_cast<size_t>(k)];
      const size_t slot = static_cast<size_t>(k * N + i);
      for (int j = 0; j < d; ++j) {
        EXPECT_EQ(gpu_rows.obs[slot * d + j], want.obs[static_cast<size_t>(j)]);
        EXPECT_EQ(gpu_rows.next_obs[slot * d + j], want.next[static_cast<size_t>(j)]);
      }
      EXPECT_EQ(gpu_rows.action[slot], want.action);
      EXPECT_NEAR(gpu_rows.reward[slot], want.reward,
                  1e-6f * std::max(1.0f, std::abs(want.reward)));
      EXPECT_EQ(gpu_rows.discount[slot], want.discount);
      cut += want.discount != static_cast<float>(0.9 * 0.9 * 0.9);
    }
  }
  EXPECT_GT(cut, 20);  // transitions shortened by a terminal were compared
}

// --mirror: 8 market-making lanes, 4 env steps (ε = 1: random actions from the lane Rngs), 1-step
// and 3-step returns, uniform and prioritised. The mirror learner's replay row 2j is the plain
// learner's row j bit for bit (same seed: the same actions and env paths), and row 2j + 1 is the
// CPU trainer's mirror of row 2j (env_mirror_map: MarketMakingEnv::mirror on obs and next_obs,
// the action mirrored; the same reward and discount); twice the plain replay's size;
// prioritised: exactly the written leaves positive.
TEST(RlLearnerGpu, MirrorReplayHoldsEachTransitionAndItsMirror) {
  FXT_SKIP_WITHOUT_GPU();
  const EnvSpec spec = spec_named("mm");
  auto probe = spec.make(1);
  const int d = probe->obs_dim(), A = probe->num_actions(), N = 8, steps = 4;
  auto mirror = env_mirror_map(spec);
  ASSERT_TRUE(mirror.ok()) << mirror.status().message();
  for (int n_step : {1, 3}) {
    for (double alpha : {0.0, 0.6}) {
      SCOPED_TRACE("n_step " + std::to_string(n_step) + ", alpha " + std::to_string(alpha));
      DqnConfig cfg = small_config(true);
      cfg.support = spec.default_support();
      cfg.num_envs = N;
      cfg.buffer_size = 64;
      cfg.n_step = n_step;
      cfg.per_alpha = alpha;
      cfg.eps_start = cfg.eps_end = 1;
      DqnConfig mcfg = cfg;
      mcfg.mirror = true;
      ASSERT_TRUE(device_learner_supports(mcfg).ok()) << device_learner_supports(mcfg).message();
      DqnAgent agent(cfg, d, A);
      const std::vector<float> params(agent.params().begin(), agent.params().end());
      gpu::Context ctx(0);
      auto env_p = make_device_env(spec, N);
      auto env_m = make_device_env(spec, N);
      DeviceLearnerConfig mc = device_learner_config(mcfg, d, A);
      ASSERT_TRUE(set_device_mirror(spec, &mc).ok());
      DeviceC51Learner plain(device_learner_config(cfg, d, A), env_p.get(), ctx, params);
      DeviceC51Learner mirrored(mc, env_m.get(), ctx, params);
      plain.reset(77);
      mirrored.reset(77);
      for (int s = 0; s < steps; ++s) {
        plain.env_step();
        mirrored.env_step();
      }
      const int rows = plain.stats().replay_size;
      ASSERT_EQ(rows, N * (steps - (n_step - 1)));
      ASSERT_EQ(mirrored.stats().replay_size, 2 * rows);
      const DeviceC51Learner::ReplayRows P = plain.replay(), M = mirrored.replay();
      auto row = [&](const std::vector<float>& v, int i) {
        const auto at = v.begin() + static_cast<std::ptrdiff_t>(i) * d;
        return std::vector<float>(at, at + d);
      };
      int asymmetric = 0;  // rows whose action is not its own mirror
      for (int j = 0; j < rows; ++j) {
        const int t = 2 * j, m = 2 * j + 1;
        const size_t st = static_cast<size_t>(t), sm = static_cast<size_t>(m);
        const size_t sj = static_cast<size_t>(j);
        EXPECT_EQ(row(M.obs, t), row(P.obs, j)) << "row " << j;
        EXPECT_EQ(row(M.next_obs, t), row(P.next_obs, j)) << "row " << j;
        EXPECT_EQ(M.action[st], P.action[sj]) << "row " << j;
        EXPECT_EQ(M.reward[st], P.reward[sj]) << "row " << j;
        EXPECT_EQ(M.discount[st], P.discount[sj]) << "row " << j;
        std::vector<float> o = row(M.obs, t), nx = row(M.next_obs, t);
        mirror->obs(o);
        mirror->obs(nx);
        EXPECT_EQ(row(M.obs, m), o) << "mirror of row " << j;
        EXPECT_EQ(row(M.next_obs, m), nx) << "mirror of row " << j;
        EXPECT_EQ(M.action[sm], mirror->action[static_cast<size_t>(M.action[st])]) << j;
        EXPECT_EQ(M.reward[sm], M.reward[st]) << "mirror of row " << j;
        EXPECT_EQ(M.discount[sm], M.discount[st]) << "mirror of row " << j;
        asymmetric += M.action[sm] != M.action[st];
      }
      EXPECT_GT(asymmetric, 0);
      if (alpha > 0) {
        const std::vector<double> tree = mirrored.sum_tree();
        const size_t leaves = tree.size() / 2;
        for (size_t i = 0; i < leaves; ++i) {
          if (i < static_cast<size_t>(2 * rows)) {
            EXPECT_GT(tree[leaves + i], 0.0) << "leaf " << i;
          } else {
            EXPECT_EQ(tree[leaves + i], 0.0) << "leaf " << i;
          }
        }
      }
    }
  }
}

// --mirror through train_dqn_device on market making (2 lanes, 3000 steps, one update per 4 env
// steps): the schedule's updates, and the same seed gives the same checkpoint bytes.
TEST(RlLearnerGpu, MirrorRunOnMarketMakingIsDeterministic) {
  FXT_SKIP_WITHOUT_GPU();
  const EnvSpec spec = spec_named("mm");
  auto probe = spec.make(1);
  std::string bytes[2];
  for (int run = 0; run < 2; ++run) {
    DqnConfig cfg = cartpole_config(7);
    cfg.support = spec.default_support();
    cfg.mirror = true;
    cfg.total_steps = 3000;
    cfg.num_envs = 2;
    cfg.train_frequency = 4;
    DqnAgent agent(cfg, probe->obs_dim(), probe->num_actions());
    TrainOptions o = cartpole_options(test::scratch_dir() + "/gpu_mirror_mm" + std::to_string(run));
    o.stop_return = std::nan("");
    o.eval_every = 0;
    auto r = train_dqn_device(spec, o, &agent);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->env_steps, 3000);
    EXPECT_EQ(r->updates, (3000 - 1000) / 4 + 1);
    bytes[run] = file_bytes(o.out_dir + "/checkpoint.fxt");
    ASSERT_GT(bytes[run].size(), 1000u);
  }
  EXPECT_TRUE(bytes[0] == bytes[1]) << "same seed, different checkpoint bytes";
}

TEST(RlLearnerGpu, DeviceMirrorIsTheEnvsSignFlip) {
  // No GPU needed: market making negates the inventory entry and swaps bid and ask depths.
  DeviceLearnerConfig d;
  const EnvSpec spec = spec_named("mm");
  auto env = spec.make(1);
  d.obs_dim = env->obs_dim();
  d.num_actions = env->num_actions();
  ASSERT_TRUE(set_device_mirror(spec, &d).ok());
  std::vector<float> want_sign(static_cast<size_t>(d.obs_dim), 1.0f);
  want_sign[1] = -1.0f;
  EXPECT_EQ(d.mirror_sign, want_sign);
  auto m = env_mirror_map(spec);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(d.mirror_action, m->action);
  DeviceLearnerConfig c;
  c.obs_dim = 4;
  c.num_actions = 2;
  EXPECT_FALSE(set_device_mirror(spec_named("cartpole"), &c).ok());  // no mirror
}

TEST(RlLearnerGpu, RefusesWhatItDoesNotHave) {
  // No GPU needed: the check is on the config.
  DqnConfig cfg = cartpole_config(1);
  EXPECT_TRUE(device_learner_supports(cfg).ok());
  cfg.n_step = 3;
  cfg.dueling = true;
  cfg.munchausen = true;
  cfg.double_q = false;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // n-step, dueling, Munchausen: supported
  auto refused = [](void (*set)(DqnConfig*), const char* word) {
    DqnConfig c = cartpole_config(1);
    set(&c);
    const Status s = device_learner_supports(c);
    EXPECT_FALSE(s.ok()) << word;
    EXPECT_NE(s.message().find(word), std::string::npos) << s.message();
  };
  cfg.algo = Algo::kQrDqn;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // QR-DQN with all of them: supported
  cfg.algo = Algo::kIqn;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // and IQN
  cfg.per_alpha = 0.6;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // and prioritised replay
  cfg.exploration = Exploration::kThompson;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // and Thompson exploration
  cfg.mirror = true;
  EXPECT_TRUE(device_learner_supports(cfg).ok());  // and --mirror (the env is checked later)
  refused(
      [](DqnConfig* c) {
        c->mirror = true;
        c->num_envs = c->buffer_size / 2 + 1;  // two rows per lane and step
      },
      "two with --mirror");
  DqnConfig sym = cartpole_config(1);
  sym.symmetric_policy = true;
  EXPECT_TRUE(device_learner_supports(sym).ok());  // the symmetric policy (C51, QR-DQN)
  sym.algo = Algo::kQrDqn;
  EXPECT_TRUE(device_learner_supports(sym).ok());
  refused(  // the CPU agent's own refusals (DqnConfig::validate)
      [](DqnConfig* c) {
        c->symmetric_policy = true;
        c->algo = Algo::kIqn;
      },
      "C51 or QR-DQN only");
  refused(
      [](DqnConfig* c) {
        c->symmetric_policy = true;
        c->exploration = Exploration::kThompson;
      },
      "epsilon-greedy");
  refused([](DqnConfig* c) { c->hidden = {8, 8, 8, 8, 8, 8, 8, 8}; }, "7 layers");
  refused([](DqnConfig* c) { c->num_envs = c->buffer_size + 1; }, "--buffer-size");
}

TEST(RlLearnerGpu, DuelingLayoutIsTheNetworksSpecs) {
  // No GPU needed: the learner's layers (torso, advantage head) and value stream are the CPU
  // network's ParamSpecs, so the flat buffer is the checkpoint's.
  DqnConfig cfg = small_config(true);
  cfg.dueling = true;
  const int d = 4, A = 3;
  const DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
  const QNetwork<float> net(q_network_config(cfg, d, A));
  const auto& specs = net.specs();
  ASSERT_EQ(specs.size(), 8u);  // torso.0, torso.1, head.value, head.adv: (weight, bias) each
  ASSERT_TRUE(dc.dueling);
  ASSERT_EQ(dc.layers.size(), 3u);
  EXPECT_EQ(dc.layers[0].w_offset, specs[0].offset);
  EXPECT_EQ(dc.layers[1].b_offset, specs[3].offset);
  EXPECT_EQ(specs[4].name, "head.value.weight");
  EXPECT_EQ(dc.value.w_offset, specs[4].offset);
  EXPECT_EQ(dc.value.b_offset, specs[5].offset);
  EXPECT_EQ(dc.value.in, 84);
  EXPECT_EQ(dc.value.out, 51);
  EXPECT_EQ(specs[6].name, "head.adv.weight");
  EXPECT_EQ(dc.layers[2].w_offset, specs[6].offset);
  EXPECT_EQ(dc.layers[2].b_offset, specs[7].offset);
  EXPECT_EQ(dc.layers[2].in, 84);
  EXPECT_EQ(dc.layers[2].out, A * 51);
  EXPECT_EQ(dc.num_params, net.num_params());
}

TEST(RlLearnerGpu, QrDqnLayoutIsTheNetworksSpecs) {
  // No GPU needed: with the QR-DQN head the learner's outputs per action are the quantiles (not
  // the support's atoms, which it does not read), in the CPU network's layout.
  for (bool dueling : {false, true}) {
    DqnConfig cfg = small_qr_config(true);
    cfg.dueling = dueling;
    const int d = 4, A = 3;
    const DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
    const QNetwork<float> net(q_network_config(cfg, d, A));
    EXPECT_TRUE(dc.quantile);
    EXPECT_EQ(dc.atoms, 32);
    EXPECT_TRUE(dc.atom_values.empty());
    ASSERT_EQ(dc.layers.size(), 3u);
    EXPECT_EQ(dc.layers.back().out, A * 32);
    EXPECT_EQ(dc.layers.back().w_offset, net.specs()[net.specs().size() - 2].offset);
    EXPECT_EQ(dc.dueling, dueling);
    if (dueling) {
      EXPECT_EQ(dc.value.out, 32);
    }
    EXPECT_EQ(dc.num_params, net.num_params());
  }
  // C51 keeps its atoms and their values.
  const DeviceLearnerConfig c51 = device_learner_config(small_config(true), 4, 3);
  EXPECT_FALSE(c51.quantile);
  EXPECT_EQ(c51.atoms, 51);
  EXPECT_EQ(c51.atom_values.size(), 51u);
}

TEST(RlLearnerGpu, IqnUpdateDrawsTheBatchThenTheTaus) {
  // No GPU needed: IqnUpdateMatchesCpuAgent replays DqnAgent::update's draws for the GPU (B
  // indices, then B·N τ, then B·N τ' from the one Rng); after the update the agent's Rng must
  // stand exactly where that replay ends, and the batch loss be in the range the test asserts.
  for (bool munchausen : {false, true}) {
    DqnConfig cfg = small_iqn_config(true);
    cfg.munchausen = munchausen;
    const int d = 4, A = 2, n = cfg.buffer_size;
    DqnAgent agent(cfg, d, A);
    ReplayBuffer replay(n, d, 0.0);
    const std::vector<float> obs =
        gpu::testing::random_vector(static_cast<size_t>(n * d), 1, -2, 2);
    const std::vector<float> rew = gpu::testing::random_vector(static_cast<size_t>(n), 3, -2, 2);
    for (int i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      replay.add({&obs[k * d], i % A, rew[k], &obs[k * d], 0.99f});
    }
    Rng rng(42);
    Rng copy = rng;
    for (int b = 0; b < cfg.batch; ++b) copy.uniform(static_cast<uint64_t>(n));
    for (int t = 0; t < 2 * cfg.batch * cfg.iqn_taus; ++t) copy.unit();
    const UpdateStats st = agent.update(&replay, 1.0, rng);
    EXPECT_EQ(rng.next(), copy.next());
    EXPECT_GT(st.loss, 1.0);
    EXPECT_GT(st.grad_norm, 1e-3);
  }
}

TEST(RlLearnerGpu, IqnLayoutIsTheNetworksSpecs) {
  // No GPU needed: with the IQN head the embedding layer (iqn.embed) sits apart from the torso
  // and the head (one output per action), in the CPU network's layout.
  for (bool dueling : {false, true}) {
    DqnConfig cfg = small_iqn_config(true);
    cfg.dueling = dueling;
    cfg.iqn_taus = 6;
    cfg.iqn_policy_taus = 20;
    cfg.iqn_embedding = 48;
    const int d = 4, A = 3;
    const DeviceLearnerConfig dc = device_learner_config(cfg, d, A);
    const QNetwork<float> net(q_network_config(cfg, d, A));
    const auto& specs = net.specs();
    ASSERT_EQ(specs.size(), dueling ? 10u : 8u);
    EXPECT_FALSE(dc.quantile);
    EXPECT_EQ(dc.atoms, 1);
    EXPECT_TRUE(dc.atom_values.empty());
    EXPECT_EQ(dc.iqn_embedding, 48);
    EXPECT_EQ(dc.iqn_taus, 6);
    EXPECT_EQ(dc.iqn_policy_taus, 20);
    EXPECT_EQ(specs[4].name, "iqn.embed.weight");
    EXPECT_EQ(dc.embed.w_offset, specs[4].offset);
    EXPECT_EQ(dc.embed.b_offset, specs[5].offset);
    EXPECT_EQ(dc.embed.in, 48);
    EXPECT_EQ(dc.embed.out, 84);
    ASSERT_EQ(dc.layers.size(), 3u);  // torso.0, torso.1, the head
    EXPECT_EQ(dc.layers[1].b_offset, specs[3].offset);
    EXPECT_EQ(dc.layers[2].w_offset, specs[specs.size() - 2].offset);
    EXPECT_EQ(dc.layers[2].b_offset, specs[specs.size() - 1].offset);
    EXPECT_EQ(dc.layers[2].in, 84);
    EXPECT_EQ(dc.layers[2].out, A);
    EXPECT_EQ(dc.dueling, dueling);
    if (dueling) {
      EXPECT_EQ(specs[6].name, "head.value.weight");
      EXPECT_EQ(dc.value.w_offset, specs[6].offset);
      EXPECT_EQ(dc.value.out, 1);
      EXPECT_EQ(dc.value.in, 84);
    }
    EXPECT_EQ(dc.num_params, net.num_params());
  }
}

}  // namespace
}  // namespace fxt::rl
