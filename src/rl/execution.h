// Optimal execution with speed control (Cartea, Jaimungal & Penalva 2015, ch. 6.5; mbt_gym's
// trading-with-speed dynamics): liquidate q0 shares over [0, T] in `steps` steps of Δt.
//
// One step from (t, q, S) with trading (selling) speed ν >= 0, shares per unit time:
//   q' = q − ν·Δt;   S' = S − b·ν·Δt + σ·sqrt(Δt)·Z   (permanent impact b, Brownian mid)
//   cash += ν·Δt·(S − k·ν)                            (temporary impact k on the fill price)
//   reward = Δcash + (q'S' − qS) − φ·∫q(u)² du        (mark-to-market, running penalty)
//          = −k·ν²·Δt + q'·(S' − S) − φ·Δt·(q² − q·ν·Δt + ν²·Δt²/3)   (q is linear in the step)
//   and on the last step also − α·q_T² (terminal penalty; the rest is marked at S_T).
// The sum of rewards is the criterion X_T + q_T·S_T − α·q_T² − φ∫q² dt − q0·S0.
//
// The closed form (continuous time, CJP eq. 6.31): ν*(t, q) = v(T − t)·q with
//   v(τ) = γ·((α'+c)·e^{γτ} + (α'−c)·e^{−γτ}) / ((α'+c)·e^{γτ} − (α'−c)·e^{−γτ}),
//   γ = sqrt(φ/k), c = sqrt(k·φ), α' = α − b/2   (φ = 0: v(τ) = v_T / (1 + v_T·τ), v_T = α'/k);
// the optimal inventory q*(t) = q0·((α'+c)e^{γτ} − (α'−c)e^{−γτ}) / ((α'+c)e^{γT} − (α'−c)e^{−γT})
// and value −(k·v(T) + b/2)·q0². α → ∞ gives Almgren–Chriss (v = γ·coth(γτ)), φ → 0 and α → ∞
// TWAP (v = 1/τ).
//
// Observation: (t/T, q/q0). Actions: speeds j·max_speed/(num_speeds − 1), j = 0..num_speeds−1.
// Lane i's mid noise comes from its own stream, one normal per step whatever the action, so
// every policy sees the same mid paths for the same seed (paired comparisons). The per-lane
// arithmetic is rl/execution_lane.h, shared with the GPU lanes (rl/device_env.h).
#pragma once

#include <vector>

#include "core/status.h"
#include "rl/execution_lane.h"
#include "rl/vec_env.h"

namespace fxt::rl {

struct ExecutionParams {
  double horizon = 1;      // T
  int steps = 20;          // Δt = T / steps
  double q0 = 1;           // shares to sell
  double s0 = 10;          // initial mid (currency)
  double sigma = 0.2;      // mid volatility (currency / sqrt(time))
  double temp_impact = 1;  // k: fill price S − k·ν
  double perm_impact = 0.1;  // b: mid drift −b·ν
  double phi = 5;          // running inventory penalty
  double alpha = 10;       // terminal inventory penalty
  int num_speeds = 21;     // action grid size
  double max_speed = 4;    // fastest speed on the grid (shares per unit time)

  // Finite, positive horizon, steps >= 1, q0 > 0, sigma, b, φ >= 0, k > 0, α >= b/2,
  // num_speeds >= 2, max_speed > 0.
  Status validate() const;
  double dt() const { return horizon / steps; }
};

// What a lane's step needs (p must validate): Δt and σ·sqrt(Δt) computed here, once.
ExecutionDynamics execution_dynamics(const ExecutionParams& p);

// v(τ) of the closed form: the optimal speed per share held with τ time left.
double execution_speed_factor(const ExecutionParams& p, double tau);
// q*(t) of the closed form.
double execution_optimal_inventory(const ExecutionParams& p, double t);
// The continuous-time optimal value of the criterion (sum of rewards), −(k·v(T) + b/2)·q0².
double execution_optimal_value(const ExecutionParams& p);

class ExecutionEnv final : public VecEnv {
 public:
  // p must validate (asserted).
  ExecutionEnv(const ExecutionParams& p, int num_envs);

  std::string name() const override { return "execution"; }
  int num_envs() const override { return static_cast<int>(lanes_.size()); }
  int obs_dim() const override { return 2; }
  int num_actions() const override { return p_.num_speeds; }
  void reset(uint64_t seed, std::span<float> obs) override;
  void step(std::span<const int> actions, StepResult* out) override;
  void reset_finished(const StepResult& last, std::span<float> obs) override;
  // Per lane: q, S; the step index and the mid stream's four words.
  LaneRecord save_lanes() const override;
  bool restore_lanes(const LaneRecord& record) override;

  // The same step with any speeds (the closed-form agent trades off the grid).
  void step_speeds(std::span<const double> speeds, StepResult* out);
  // The closed-form agent's speeds for the current states: v(T − t)·q, at least 0.
  void optimal_speeds(std::vector<double>* speeds) const;

  const ExecutionParams& params() const { return p_; }
  double inventory(int i) const { return lanes_[static_cast<size_t>(i)].q; }
  int step_index(int i) const { return lanes_[static_cast<size_t>(i)].k; }
  // Every lane's state (the GPU lanes' parity reference).
  const std::vector<ExecutionLane>& lanes() const { return lanes_; }

 private:
  // Lane i's next observation, reward and flags into out.
  void write_step(const LaneStep& r, size_t i, StepResult* out) const;
  ExecutionParams p_;
  ExecutionDynamics d_;
  std::vector<ExecutionLane> lanes_;
};

}  // namespace fxt::rl
