// Market making in the model market of src/sim/model_market (Avellaneda–Stoikov 2008; defaults
// σ = 2, A = 140, k = 1.5, T = 1 in 200 steps), as a vectorised environment.
//
// One step of Δt: the agent posts bid and ask at depths δ_b, δ_a from the mid s; each side fills
// by sim::model_market_fills (probability min(1, A·Δt·e^{−k·δ}), the model market's own fill
// draw); then s += σ·sqrt(Δt)·Z. Inventory is bounded to [−max_inventory, max_inventory]: at a
// bound the side that would cross it is not quoted (every agent, learned or closed-form).
//   reward = δ_b·1{bid fill} + δ_a·1{ask fill} + q'·(s' − s) − φ·q'²·Δt   (= Δ(cash + q·s) −
//   penalty) and on the last step also − α·q_T².  φ = α = 0 is the pure-PnL reward.
// The sum of rewards is the Cartea–Jaimungal criterion PnL − φ∫q² dt − α·q_T².
//
// Observation: (t/T, q/max_inventory). Actions: a = i_b·num_depths + i_a, depth(i) on an even grid
// from min_depth to max_depth. Lane i draws its mid moves from stream 0 and its fills from stream
// 1 of lane_seed(seed, i, ·), the construction of sim::simulate_model_market's path seeds, so lane
// i follows that function's path i and every agent sees the same randomness (paired comparisons).
// The per-lane arithmetic is rl/market_making_lane.h, shared with the GPU lanes
// (rl/device_env.h).
//
// Closed-form references: the AS quote (sim::avellaneda_stoikov_quote) and the Cartea–Jaimungal
// agent with running penalty (CJP 2015 §10.2): ω(t) = exp(M·(T − t))·z with M tridiagonal,
// M_qq = −φ·k·q², M_{q,q±1} = A·e^{−1}, z_q = e^{−α·k·q²}, h(t, q) = ln(ω_q(t))/k and depths
// δ_b = 1/k + h(t, q) − h(t, q + 1), δ_a = 1/k + h(t, q) − h(t, q − 1).
#pragma once

#include <vector>

#include "core/status.h"
#include "rl/market_making_lane.h"
#include "rl/vec_env.h"
#include "sim/model_market.h"

namespace fxt::rl {

struct MarketMakingParams {
  sim::ModelMarketParams market;  // s0 100, T 1, 200 steps, σ 2, A 140, k 1.5
  double phi = 0.5;               // running inventory penalty per unit time
  double alpha = 0.5;             // terminal inventory penalty
  int max_inventory = 20;
  int num_depths = 8;
  double min_depth = 0.25, max_depth = 2.0;
  // Train on E[reward | q, depths] (rl/market_making_lane.h) instead of the drawn reward: the
  // same expected criterion for every policy (q'·(s' − s) has mean 0, the fills' expectation is
  // closed-form), far less variance. Evaluation always scores the drawn reward (rl/evaluate.cc).
  bool expected_reward = false;

  Status validate() const;
};

// What a lane's step needs (p must validate): A·Δt, Δt and σ·sqrt(Δt) computed here, once.
MarketMakingDynamics market_making_dynamics(const MarketMakingParams& p);

class MarketMakingEnv final : public VecEnv {
 public:
  MarketMakingEnv(const MarketMakingParams& p, int num_envs);  // p must validate (asserted)

  std::string name() const override { return "mm"; }
  int num_envs() const override { return static_cast<int>(lanes_.size()); }
  int obs_dim() const override { return 2; }
  int num_actions() const override { return p_.num_depths * p_.num_depths; }
  void reset(uint64_t seed, std::span<float> obs) override;
  void step(std::span<const int> actions, StepResult* out) override;
  void reset_finished(const StepResult& last, std::span<float> obs) override;
  // Per lane: q, S; the step index, the mid stream's and the fill stream's four words each.
  LaneRecord save_lanes() const override;
  bool restore_lanes(const LaneRecord& record) override;
  // q → −q with bid and ask swapped: fills, penalties and (with the mid path mirrored) the
  // inventory's mark-to-market are the same.
  bool mirror(std::span<float> obs, int* action) const override;

  // The same step with any depths (closed-form agents quote off the grid).
  void step_depths(std::span<const double> bid_depth, std::span<const double> ask_depth,
                   StepResult* out);

  const MarketMakingParams& params() const { return p_; }
  double inventory(int i) const { return lanes_[static_cast<size_t>(i)].q; }
  double mid(int i) const { return lanes_[static_cast<size_t>(i)].s; }
  int step_index(int i) const { return lanes_[static_cast<size_t>(i)].k; }
  // Every lane's state (the GPU lanes' parity reference).
  const std::vector<MarketMakingLane>& lanes() const { return lanes_; }

 private:
  // Lane i's next observation, reward and flags into out.
  void write_step(const LaneStep& r, size_t i, StepResult* out) const;
  MarketMakingParams p_;
  MarketMakingDynamics d_;
  std::vector<MarketMakingLane> lanes_;
};

// A closed-form quoting agent: the depths for every lane's current state.
class MarketMakingAgent {
 public:
  virtual ~MarketMakingAgent() = default;
  virtual void depths(const MarketMakingEnv& env, std::vector<double>* bid,
                      std::vector<double>* ask) const = 0;
};

// Avellaneda–Stoikov with risk aversion gamma.
class AvellanedaStoikovAgent final : public MarketMakingAgent {
 public:
  explicit AvellanedaStoikovAgent(double gamma) : gamma_(gamma) {}
  void depths(const MarketMakingEnv& env, std::vector<double>* bid,
              std::vector<double>* ask) const override;

 private:
  double gamma_;
};

// Cartea–Jaimungal with the env's φ and α; h(t_i, q) precomputed for every step i.
class CarteaJaimungalAgent final : public MarketMakingAgent {
 public:
  explicit CarteaJaimungalAgent(const MarketMakingParams& p);
  void depths(const MarketMakingEnv& env, std::vector<double>* bid,
              std::vector<double>* ask) const override;
  // h(t_i, q) for step i in [0, steps] and |q| <= max_inventory.
  double h(int step, int q) const;
  // The whole table, h[i·(2Q + 1) + q + Q] (the device agent's input).
  const std::vector<double>& table() const { return h_; }

 private:
  // Lane i's next observation, reward and flags into out.
  void write_step(const LaneStep& r, size_t i, StepResult* out) const;
  MarketMakingParams p_;
  std::vector<double> h_;  // [(steps + 1), 2·Q + 1]
};

}  // namespace fxt::rl
