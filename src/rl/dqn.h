// The distributional DQN agent (DESIGN §8), CPU reference: a QNetwork with a C51 or QR-DQN head,
// n-step returns (through NStepAccumulator), double Q, dueling, prioritised replay, the
// Munchausen target, a target network (hard copy or Polyak averaging), ε-greedy or
// distribution-sampling exploration, and the project's AdamW. docs/RL.md has every formula.
//
// Deterministic: one thread, every random draw from Rngs seeded by the config's seed, so the same
// config gives the same parameters bit for bit (and the same checkpoint bytes).
// Thread-compatible: one training loop owns an agent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/random.h"
#include "core/status.h"
#include "model/tensor.h"
#include "rl/distributional.h"
#include "rl/q_network.h"
#include "rl/replay.h"
#include "rl/vec_env.h"  // lane_seed
#include "train/checkpoint.h"
#include "train/optimizer.h"

namespace fxt::rl {

enum class Algo : uint8_t { kC51, kQrDqn, kIqn };
enum class Exploration : uint8_t { kEpsilonGreedy, kThompson };
const char* algo_name(Algo a);                // "c51", "qrdqn", "iqn"
const char* exploration_name(Exploration e);  // "egreedy", "thompson"

struct DqnConfig {
  Algo algo = Algo::kC51;
  Support support;         // C51 atoms and their range
  int quantiles = 51;      // QR-DQN outputs per action
  int iqn_taus = 8;        // IQN: sampled τ per state for the prediction (N) and the target (N')
  int iqn_policy_taus = 32;  // IQN: K evenly spaced τ = (k + ½)/K estimate Q for acting
  int iqn_embedding = 64;  // IQN: cosine features
  std::vector<int> hidden = {120, 84};
  bool dueling = false;
  bool double_q = true;    // a* = argmax of the online net at s' (else the target net)
  int n_step = 1;
  double gamma = 0.99;
  double lr = 2.5e-4;
  double adam_eps = 0.01 / 128;
  double max_grad_norm = 10;  // <= 0: no clipping
  int batch = 128;
  int buffer_size = 10000;
  int64_t learning_starts = 10000;  // env steps before the first update
  int train_frequency = 10;         // env steps per update
  int target_update = 500;          // env steps between target updates
  double polyak = 1.0;              // target ← polyak·online + (1 − polyak)·target; 1 = hard copy
  double per_alpha = 0;             // 0: uniform replay; > 0: prioritised with this exponent
  double per_beta0 = 0.4;           // IS exponent, annealed linearly to 1 at total_steps
  bool munchausen = false;
  MunchausenConfig mdqn;
  // Also store every transition's mirror image (VecEnv::mirror; refused for envs without one).
  bool mirror = false;
  // Act, and pick the bootstrap policy or argmax, on the symmetrised values
  // ½[Q(s, a) + Q(m(s), m(a))] under the env's mirror m (VecEnv::mirror; the agent needs
  // set_mirror before use). C51 and QR-DQN, ε-greedy only.
  bool symmetric_policy = false;
  Exploration exploration = Exploration::kEpsilonGreedy;
  double eps_start = 1, eps_end = 0.05, exploration_fraction = 0.5;
  int64_t total_steps = 500000;  // env steps over all lanes
  int num_envs = 1;
  uint64_t seed = 1;

  // Every field in range (a one-line message naming the flag on failure).
  Status validate() const;
  int num_outputs() const {
    return algo == Algo::kC51 ? support.atoms : algo == Algo::kQrDqn ? quantiles : 1;
  }
  double epsilon_at(int64_t step) const;
  double beta_at(int64_t step) const;
  nlohmann::json to_json() const;
  static Result<DqnConfig> from_json(const nlohmann::json& j);
};

// The agent's network layout (torso, head, dueling, IQN embedding) for an env's dimensions.
QNetworkConfig q_network_config(const DqnConfig& cfg, int obs_dim, int num_actions);

// An env's mirror symmetry as the agent uses it (--symmetric-policy): obs maps one observation
// row in place, action[a] = m(a) (an involution).
struct MirrorMap {
  std::function<void(std::span<float>)> obs;
  std::vector<int> action;
};

struct UpdateStats {
  double loss = 0;    // IS-weighted mean over the batch
  double mean_q = 0;  // mean expected value of the taken actions
  double grad_norm = 0;
};

class DqnAgent {
 public:
  // cfg must validate (asserted).
  DqnAgent(const DqnConfig& cfg, int obs_dim, int num_actions);

  const DqnConfig& config() const { return cfg_; }
  int num_actions() const { return num_actions_; }
  int64_t updates() const { return adam_.step_count(); }

  // The mirror symmetric_policy acts on (required before act/update when it is set).
  void set_mirror(MirrorMap m);
  bool has_mirror() const { return static_cast<bool>(mirror_.obs); }

  // Expected action values q [n, A] of the online network; with symmetric_policy the
  // symmetrised ½[Q(s, a) + Q(m(s), m(a))].
  void q_values(std::span<const float> obs, int n, std::vector<float>* q);
  // Greedy actions; with probability epsilon a uniform action instead (ε-greedy), or with
  // Thompson exploration an action whose sampled return is highest. With symmetric_policy a
  // greedy action tied with its mirror image (a state that is its own mirror) is either, by a
  // fair coin.
  void act(std::span<const float> obs, int n, double epsilon, Rng& rng, std::vector<int>* actions);

  // One gradient step on a replay batch; writes the new priorities back when prioritised.
  UpdateStats update(ReplayBuffer* replay, double beta, Rng& rng);
  // target ← polyak·online + (1 − polyak)·target.
  void update_target();

  // Parameters (online under their spec names, target under "target/<name>"), the AdamW state and
  // the config; deterministic bytes for the same state.
  void save(Checkpoint* ckpt) const;
  // Restores parameters and optimizer state from a checkpoint saved with the same config layout.
  Status load(const Checkpoint& ckpt);

  std::span<const float> params() const { return params_; }

 private:
  void forward(const std::vector<float>& p, std::span<const float> obs, int n,
               std::vector<float>* out, QNetwork<float>::Workspace* ws);
  // IQN: expected values q [n, A] from the K evenly spaced τ (out_k [n, K, A] kept).
  void iqn_q(const std::vector<float>& p, std::span<const float> obs, int n,
             std::vector<float>* out_k, std::vector<float>* q);
  UpdateStats update_iqn(ReplayBuffer* replay, double beta, Rng& rng);
  float expected_value(const float* row) const;  // one action's output row -> E[Z]
  // The n observation rows of obs under the mirror, into out.
  void mirror_rows(std::span<const float> obs, int n, std::vector<float>* out) const;
  // q [A] of one state's output rows [A, K] (and, with symmetric_policy, its mirror's rows).
  void row_values(const float* rows, const float* mirror_rows, float* q) const;
  DqnConfig cfg_;
  int obs_dim_, num_actions_;
  QNetwork<float> net_;
  std::vector<float> params_, target_, grads_;
  AdamW adam_;
  model::CpuContext ctx_{1};
  QNetwork<float>::Workspace ws_train_, ws_aux_;
  std::vector<float> out_, out_next_online_, out_next_target_, out_cur_target_, d_out_;
  std::vector<float> taus_, taus_next_, taus_policy_, scratch_;
  MirrorMap mirror_;
  std::vector<float> obs_m_, next_obs_m_, out_m_, out_next_target_m_, out_next_online_m_,
      out_cur_target_m_;
  ReplayBatch batch_;
};

}  // namespace fxt::rl
