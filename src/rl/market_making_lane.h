// One market-making lane (rl/market_making.h) as FXT_HD functions, shared by MarketMakingEnv and
// its GPU lanes: the model market's fill draw, the mid move and the reward. Fill probabilities
// go through exp and the mid move through a normal draw (log): on the device these may differ
// from glibc's in the last bit; everything else is + − × ÷ and comparisons on doubles.
// C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include "core/host_device.h"
#include "core/random.h"
#include "rl/env_lane.h"
#include "sim/fill_rules.h"  // model_fill_draws: the model market's own fill check

namespace fxt::rl {

// MarketMakingParams reduced to what a step needs, with A·Δt, Δt and σ·sqrt(Δt) computed once on
// the host (market_making_dynamics() in rl/market_making.h).
struct MarketMakingDynamics {
  double arrival_prob = 0;  // A·Δt, computed as sim::model_market_fills does (model_fill_draws)
  double k = 0;             // fill-probability decay per currency unit of depth
  double dt = 0;            // T / steps
  double mid_sd = 0;        // σ·sqrt(Δt)
  double phi = 0, alpha = 0;
  double max_inventory = 0;
  double s0 = 0, q0 = 0;
  int steps = 0;
  int num_depths = 0;
  double min_depth = 0, max_depth = 0;
  // Training reward: E[reward | q, depths] instead of the draw (MarketMakingParams::
  // expected_reward); the state still moves by the drawn fills and mid.
  bool expected_reward = false;
  // Depth of grid point i: min_depth + (max_depth − min_depth)·i/(num_depths − 1).
  FXT_HD double depth(int i) const {
    return min_depth + (max_depth - min_depth) * i / (num_depths - 1);
  }
  // Action a quotes bid depth(a / num_depths) and ask depth(a % num_depths).
  FXT_HD int num_actions() const { return num_depths * num_depths; }
};

struct MarketMakingLane {
  static constexpr int kObsDim = 2;
  double q = 0, s = 0;  // inventory (units), mid (currency)
  int k = 0;            // steps taken in this episode
  Rng mid_rng{0};       // lane_seed(seed, lane, 0): sim::simulate_model_market's path streams
  Rng fill_rng{0};      // lane_seed(seed, lane, 1)
};

// Seeds lane i of an env reset with `seed`: the streams of sim::simulate_model_market's path i.
FXT_HD inline void market_making_seed(MarketMakingLane* lane, uint64_t seed, uint64_t i) {
  lane->mid_rng = Rng(lane_seed(seed, i, 0));
  lane->fill_rng = Rng(lane_seed(seed, i, 1));
}

FXT_HD inline void market_making_start(const MarketMakingDynamics& d, MarketMakingLane* lane) {
  lane->q = d.q0;
  lane->s = d.s0;
  lane->k = 0;
}

// Observation (t/T, q/max_inventory).
FXT_HD inline void market_making_obs(const MarketMakingDynamics& d, const MarketMakingLane& lane,
                                     float* obs) {
  obs[0] = static_cast<float>(lane.k) / static_cast<float>(d.steps);
  obs[1] = static_cast<float>(lane.q / d.max_inventory);
}

// The expected reward of quoting depths db, da (HUGE_VAL: that side not quoted) at inventory q,
// over the two independent fill draws and the mid move: the spread captured, δ·P(fill) per side
// (sim::model_fill_prob, the law model_fill_draws draws from); q'·(s' − s) has mean 0; and the
// penalties on E[q'²] = (q + p_b − p_a)² + p_b(1 − p_b) + p_a(1 − p_a).
FXT_HD inline double market_making_expected_reward(const MarketMakingDynamics& d, double q,
                                                   double db, double da, bool last_step) {
  const double pb = sim::model_fill_prob(d.arrival_prob, d.k, db);
  const double pa = sim::model_fill_prob(d.arrival_prob, d.k, da);
  double reward = 0;
  if (pb > 0) reward += db * pb;  // an unquoted side (infinite depth) has pb = 0 and adds nothing
  if (pa > 0) reward += da * pa;
  const double mean_q = q + pb - pa;
  const double q_sq = mean_q * mean_q + pb * (1 - pb) + pa * (1 - pa);
  reward -= d.phi * q_sq * d.dt;
  if (last_step) reward -= d.alpha * q_sq;
  return reward;
}

// One step quoting at depths (any values: the closed-form agents quote off the grid). At an
// inventory bound the side that would cross it is not quoted (infinite depth).
//   reward = δ_b·1{bid} + δ_a·1{ask} + q'·(s' − s) − φ·q'²·Δt, and − α·q_T² on the last step;
//   with d.expected_reward, its expectation given q and the depths
//   (market_making_expected_reward): the same expected criterion for every policy, without the
//   noise of the fill and mid draws.
FXT_HD inline LaneStep market_making_step(const MarketMakingDynamics& d, MarketMakingLane* lane,
                                          double bid_depth, double ask_depth) {
  const double db = lane->q >= d.max_inventory ? HUGE_VAL : bid_depth;
  const double da = lane->q <= -d.max_inventory ? HUGE_VAL : ask_depth;
  const bool last_step = lane->k + 1 >= d.steps;
  LaneStep r;
  if (d.expected_reward) r.reward = market_making_expected_reward(d, lane->q, db, da, last_step);
  const sim::ModelMarketFills fills = sim::model_fill_draws(d.arrival_prob, d.k, db, da,
                                                            &lane->fill_rng);
  double realized = 0;
  if (fills.bid) lane->q += 1, realized += db;
  if (fills.ask) lane->q -= 1, realized += da;
  const double ds = d.mid_sd * lane->mid_rng.normal();
  lane->s += ds;
  realized += lane->q * ds - d.phi * lane->q * lane->q * d.dt;
  ++lane->k;
  r.terminated = lane->k >= d.steps;
  if (r.terminated) realized -= d.alpha * lane->q * lane->q;
  if (!d.expected_reward) r.reward = realized;
  return r;
}

// The step of grid action `action`: bid depth(action / num_depths), ask depth(action % num_depths).
FXT_HD inline LaneStep market_making_step_action(const MarketMakingDynamics& d,
                                                 MarketMakingLane* lane, int action) {
  return market_making_step(d, lane, d.depth(action / d.num_depths),
                            d.depth(action % d.num_depths));
}

}  // namespace fxt::rl
