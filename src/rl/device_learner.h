// The GPU learner of the C51, QR-DQN and IQN agents (DESIGN §8, docs/RL.md "GPU learner"): the
// online and target networks, the replay buffer, acting, the env and every update live in device
// memory, so training needs no host round trip except the reads of the metrics at a log interval.
//
// What it is: DqnAgent's C51, QR-DQN and IQN paths (rl/dqn.h) on the device, with the QNetwork
// layout (the same flat parameter buffer and ParamSpecs, so a checkpoint has the CPU agent's
// bytes format):
//   - acting: one fused kernel per env step, one block per lane, computes the lane's MLP forward
//     from the online parameters, each action's expected value (C51 Σ z_j softmax_j, QR-DQN the
//     mean of its quantiles), the greedy action and ε-greedy exploration from the lane's device
//     Rng (ε = linear_epsilon at the device step counter) or, with Thompson exploration while
//     ε > 0, the action whose sampled return is highest (DqnAgent::act's draws: C51 an atom from
//     each action's softmax, QR-DQN a random quantile, IQN the output at a random policy τ); it
//     also copies the lane's observation into its replay slot;
//   - the env: DeviceVecEnv::step on the action buffer (rl/device_env.h);
//   - store: next_obs, reward and discount (0 at a terminal, γ otherwise: 1-step returns; a
//     truncated episode still bootstraps) into the lane's replay slot; then one block advances
//     the ring position, the replay size, the step counter and the last-100 episode returns;
//   - update: uniform sampling with per-row device Rngs, the online forward at s and (double Q)
//     s', the target forward at s' (and at s for Munchausen), one block per sample for the C51
//     target (projection, c51_split of rl/dqn_schedule.h; with Munchausen the π(a'|s')-weighted
//     mixture of every action's shifted atoms, the policy terms of rl/dqn_schedule.h),
//     cross-entropy and its gradient (QR-DQN: one block per sample for the target quantiles
//     r + g·θ'_k of a* or, with Munchausen, of every action weighted π(a'|s')/N, the quantile
//     Huber loss and its gradient), the backward, the project's GPU AdamW (gpu/adamw.h:
//     global-norm clipping, the CPU AdamW's formula) at lr from device memory; target ←
//     polyak·online + (1 − polyak)·target as a separate step.
//   - the dueling head (optional): value and advantage streams from the torso output, combined
//     (and the gradient split back) by rl/dueling_head.h, in the acting kernel and the batch
//     forward/backward alike.
//   - IQN (cfg.iqn_embedding > 0): the sample kernel also draws each row's N τ and N τ' from its
//     Rng; the batch forward runs the torso on B rows, then cos(π·i·τ), the embedding + ReLU and
//     its product with the torso output ψ on B·N (or B·K) rows, then the head; the loss kernel is
//     the quantile Huber loss at the sampled τ against N' target quantiles at τ' of a* (picked by
//     the mean over the K policy τ) or, with Munchausen, of every a'; acting takes the mean over
//     the K policy τ (DqnAgent::iqn_q's order).
//   - prioritised replay (cfg.per_alpha > 0; rl/device_replay.h): a device sum tree over the
//     replay's slots with the CPU buffer's arithmetic (rl/per_math.h); stored rows get the largest
//     priority^α, the sample kernel's indices come from the tree (one u per row from its Rng,
//     stratified), every loss kernel scales row b's gradient by its IS weight w_b/B, and after
//     AdamW the sampled leaves become max(loss_b, 1e-6)^α.
// Each of "one env step", "one update", "k env steps" and "k env steps + one update" is captured
// once as a CUDA graph and replayed (k = train_frequency / num_envs when that divides).
//
//   - --mirror (DeviceLearnerConfig::mirror): every stored row is followed by its mirror image, so
//     a step stores 2 rows per lane.
//   - --symmetric-policy (DeviceLearnerConfig::symmetric_policy; C51 and QR-DQN, ε-greedy): the
//     acting kernel also runs the lane's forward at the mirrored observation and acts on the
//     averaged values (a tie with the mirror action: a coin from the lane's Rng); the update also
//     runs the nets at the mirrored batch, and the loss kernels pick and mix the bootstrap as
//     DqnAgent::update does.
//
// Deterministic: no floating-point atomics; every reduction has a fixed order; cuBLAS GEMMs are
// deterministic for a fixed handle, shape and stream; every draw from seeded device Rngs. The
// same config gives the same bytes on the same GPU. Thread-compatible: one owner drives it.
// C++17-clean (included by .cu files); defined only in CUDA builds (library fxt_rl_gpu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/random.h"
#include "gpu/adamw.h"
#include "gpu/runtime.h"
#include "rl/device_env.h"
#include "rl/dqn_schedule.h"  // MunchausenConfig

namespace fxt::rl {

// One dense layer of the network in the flat parameter buffer: weight [out, in] at w_offset,
// bias [out] at b_offset (QNetwork's spec order: torso layers then the head).
struct DeviceLayer {
  size_t w_offset = 0, b_offset = 0;
  int in = 0, out = 0;
};

// DqnConfig's fields that the GPU learner reads (built from a validated DqnConfig by
// device_learner_config() in rl/device_trainer.h), plus the network's layout.
struct DeviceLearnerConfig {
  int obs_dim = 4, num_actions = 2;
  // QR-DQN head: `atoms` is then the number N of quantiles per action (DqnConfig::quantiles),
  // atom_values is empty and v_min/v_max unused.
  bool quantile = false;
  int atoms = 51;  // outputs per action (C51 atoms or QR-DQN quantiles)
  double v_min = -100, v_max = 100;
  std::vector<float> atom_values;  // C51: float(Support::atom(j)), j < atoms: the CPU's atom values
  std::vector<DeviceLayer> layers;  // torso ... head; ReLU after every layer but the last
  // Dueling: layers.back() is the advantage stream [A·atoms outputs] and `value` the value
  // stream [atoms outputs], both reading the torso output; out = V + A − mean_a A.
  bool dueling = false;
  DeviceLayer value;
  // IQN head (iqn_embedding = E > 0; atoms 1, atom_values empty): layers are the torso then the
  // head, and `embed` (iqn.embed: in E, out the torso's width H) sits between them: the head
  // reads ψ(s) ⊙ ReLU(embed(cos(π·i·τ))) per sampled τ. N = N' = iqn_taus sampled τ per sample
  // for the update, K = iqn_policy_taus evenly spaced (k + ½)/K for acting and the bootstrap's
  // argmax / Munchausen policy.
  int iqn_embedding = 0, iqn_taus = 8, iqn_policy_taus = 32;
  DeviceLayer embed;
  size_t num_params = 0;
  std::vector<gpu::AdamSegment> segments;  // AdamW segments (one per ParamSpec)
  bool double_q = true;  // unused with Munchausen (its target is a mixture over every a')
  bool munchausen = false;
  MunchausenConfig mdqn;
  double gamma = 0.99;
  // n-step returns: each lane stores, at step t, the transition that started at step t − n + 1
  // (its n rewards, or fewer when its episode ended), so the replay takes one row per lane and
  // step as with n = 1, (n − 1) steps late (TrainSchedule::set_replay_lag).
  int n_step = 1;
  double lr = 2.5e-4, adam_eps = 0.01 / 128, max_grad_norm = 10;
  int batch = 128, buffer_size = 10000;
  // Prioritised replay: alpha 0 uniform; > 0 the exponent, β from per_beta0 annealed to 1 at
  // total_steps (per_beta of rl/per_math.h at the device step counter).
  double per_alpha = 0, per_beta0 = 0.4;
  double polyak = 1.0;
  double eps_start = 1, eps_end = 0.05, exploration_fraction = 0.5;
  // The env's mirror m (set_device_mirror; an env whose mirror flips signs of observation
  // entries, market making): m(obs) = obs ⊙ mirror_sign [obs_dim, ±1], m(a) = mirror_action[a]
  // [num_actions]. Empty: none; required by either flag below.
  std::vector<float> mirror_sign;
  std::vector<int> mirror_action;
  // --mirror: each stored transition is followed by its mirror image (obs, next_obs and action
  // mirrored, the same reward and discount; the CPU trainer's store order: slots next + 2i and
  // next + 2i + 1 for lane i).
  bool mirror = false;
  // --symmetric-policy (C51 and QR-DQN, ε-greedy): acting and every value that picks the bootstrap
  // use ½[Q(s, a) + Q(m(s), m(a))], the bootstrap distribution of a' is the even mixture of
  // Z(s', a') and Z(m(s'), m(a')), and a greedy tie of an action with its mirror image is broken
  // by a fair coin from the lane's Rng (DqnAgent::q_values, act and update).
  bool symmetric_policy = false;
  // Thompson exploration: while ε > 0 each lane acts on one return sampled from each action's
  // distribution (DqnAgent::act's draws from the lane's Rng) instead of the ε coin.
  bool thompson = false;
  int64_t total_steps = 500000;
  int num_envs = 1;
  int train_frequency = 10;
  uint64_t seed = 1;
};

// The counters and the last update's statistics, in device memory; read back on demand.
struct DeviceLearnerStats {
  long long env_steps;      // env steps over all lanes
  long long episodes;       // finished training episodes
  long long updates;        // gradient steps
  int replay_size, replay_next;
  int recent_count, recent_next;  // ring of the last 100 episode returns
  double loss, mean_q, grad_norm;  // the last update's (loss: Σ_b w_b·loss_b / B, w_b the IS
                                   // weight, 1 with uniform replay)
};
constexpr int kRecentEpisodes = 100;

// The C51, QR-DQN (cfg.quantile) or IQN (cfg.iqn_embedding > 0) learner; the name predates the
// other heads.
class DeviceC51Learner {
 public:
  // env: the training env (num_envs lanes, the config's obs_dim/num_actions), owned by the caller
  // and outliving the learner. params: the initial online parameters (host, num_params); the
  // target starts equal. Allocates everything and captures the graphs; asserts sizes.
  DeviceC51Learner(const DeviceLearnerConfig& cfg, DeviceVecEnv* env, const gpu::Context& ctx,
                   const std::vector<float>& params);
  ~DeviceC51Learner();
  DeviceC51Learner(const DeviceC51Learner&) = delete;
  DeviceC51Learner& operator=(const DeviceC51Learner&) = delete;

  const DeviceLearnerConfig& config() const { return cfg_; }

  // Seeds the env (env_seed), the acting and sampling Rngs (from the config's seed) and clears the
  // replay buffer and counters. Synchronous.
  void reset(uint64_t env_seed);

  // Enqueue (graph replays on ctx's stream): one env step of every lane (act, env step, store);
  // k = chunk_steps() env steps; k env steps then one update; one update; one target update.
  void env_step();
  void env_chunk();
  void env_chunk_update();
  void update();
  void update_target();
  int chunk_steps() const { return chunk_; }  // 0: no chunk graphs (num_envs ∤ train_frequency)

  // Synchronous host copies.
  DeviceLearnerStats stats() const;
  double recent_return_mean() const;  // mean of the last ≤ 100 training episodes (NaN if none)
  std::vector<float> online() const;
  std::vector<float> target() const;
  gpu::AdamWHostState adam_state() const;
  // The actions and expected values q [N, A] the last env step acted on.
  std::vector<int> last_actions() const;
  std::vector<float> last_q() const;
  // Tests: the lanes' acting Rngs (lane i seeded Rng(lane_seed(seed, i, 11)) by reset).
  std::vector<Rng> act_rngs() const;

  // Greedy evaluation on the device: `episodes` lanes of eval_env (episodes lanes, reset with
  // seed), one episode each, as evaluate_agent does on the CPU; returns per-episode returns
  // (summed in double). Synchronous.
  std::vector<double> evaluate(DeviceVecEnv* eval_env, uint64_t seed);

  // Tests: replaces the replay content with `size` host transitions (obs/next_obs [size, d]) and
  // runs one update on the given batch rows (no sampling). Synchronous.
  void load_replay(const std::vector<float>& obs, const std::vector<int>& action,
                   const std::vector<float>& reward, const std::vector<float>& next_obs,
                   const std::vector<float>& discount);
  // IQN: taus and taus_next [batch, N] are the update's sampled τ and τ' (the CPU agent draws
  // them from its own Rng after the batch; here they replace the device draws).
  void update_on(const std::vector<int>& indices, const std::vector<float>& taus = {},
                 const std::vector<float>& taus_next = {});
  // Prioritised replay (tests): one update with row b's uniform draw units[b] (the CPU buffer's
  // rng.unit() for row b) in place of the device draw; IQN τ as update_on.
  void update_on_draws(const std::vector<double>& units, const std::vector<float>& taus = {},
                       const std::vector<float>& taus_next = {});
  // Tests: the replay indices the last update sampled (and, prioritised, their IS weights).
  std::vector<int> last_indices() const;
  std::vector<float> last_weights() const;
  // Prioritised replay (tests; synchronous): the sum tree [2·leaves] (tree[1] the root, leaf i at
  // leaves + i), the largest priority, the leaves set (priority^α; the sums rebuilt), and the
  // leaf sum_tree_find picks on the device for each mass. load_replay gives its rows the leaf
  // max_priority^α (ReplayBuffer::add's) and every other leaf 0.
  std::vector<double> sum_tree() const;
  double max_priority() const;
  void set_priorities(const std::vector<double>& leaves, double max_priority);
  std::vector<int> find_leaves(const std::vector<double>& masses) const;
  // Tests: the replay's rows (all `buffer_size` slots; stats().replay_size of them written).
  struct ReplayRows {
    std::vector<float> obs, reward, next_obs, discount;
    std::vector<int> action;
  };
  ReplayRows replay() const;

 private:
  struct Impl;
  void enqueue_env_step();
  void enqueue_update(bool sample);
  void enqueue_target_update();
  void forward(const float* params, const float* x, int rows, float* out, bool keep);
  // IQN: obs x [rows, d] at n_tau fractions per row (taus [rows, n_tau]) -> out [rows, n_tau, A];
  // keep: the activations the backward reads (rows = batch, n_tau = N).
  void forward_iqn(const float* params, const float* x, int rows, const float* taus, int n_tau,
                   float* out, bool keep);
  // IQN: q [batch, A] = the mean over the K policy τ at x (DqnAgent::iqn_q's order).
  void iqn_q(const float* params, const float* x, float* q);
  void enqueue_update_iqn();  // enqueue_update's IQN rest, after the sample
  void upload_taus(const std::vector<float>& taus, const std::vector<float>& taus_next);
  void finish_update();             // AdamW, the stats, the new priorities
  const float* is_weights() const;  // the IS weights [batch]; null with uniform replay
  void backward_iqn();
  void backward_layers(int top, const float* dy);  // layers top … 0 into the gradients
  DeviceLearnerConfig cfg_;
  DeviceVecEnv* env_;
  const gpu::Context& ctx_;
  int chunk_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fxt::rl
