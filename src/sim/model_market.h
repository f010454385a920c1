// The model-based market of the market-making literature (Avellaneda & Stoikov 2008, §4):
// an arithmetic Brownian mid, Poisson order arrivals whose chance of hitting a quote decays
// as exp(−k·δ) with the quote's distance δ from the mid, unit order sizes. It is the
// reference the quoting code is checked against; conventions in docs/MODEL_MARKET.md.
//
// One step of length Δt = T/steps, at time t = i·Δt (τ = T − t):
//   1. the agent quotes bid and ask from the current mid s, inventory q and τ;
//   2. bid side: with probability A·Δt·exp(−k·(s − bid)) a sell order hits our bid
//      (q += 1, cash −= bid); ask side likewise with exp(−k·(ask − s)) (q −= 1,
//      cash += ask); the two sides are drawn independently, both may fill in one step;
//   3. the mid moves: s += σ·sqrt(Δt)·Z, Z ~ N(0,1).
// PnL = cash + q·s_T (marked at the final mid). Probabilities above 1 are clipped to 1.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "sim/fill_rules.h"  // ModelMarketFills, model_fill_draws

namespace fxt::sim {

struct ModelMarketParams {
  double s0 = 100;     // initial mid (currency)
  double horizon = 1;  // T
  int steps = 200;     // Δt = T / steps
  double sigma = 2;    // mid volatility per unit time (currency / sqrt(time))
  double A = 140;      // order arrival intensity per side per unit time
  double k = 1.5;      // fill-probability decay per currency unit of distance
  double q0 = 0;       // initial inventory
};

enum class ModelMarketAgent : uint8_t {
  kInventory,  // Avellaneda–Stoikov: reservation price ± half spread
  kSymmetric,  // the same half spread around the mid (the paper's comparison)
};
const char* model_market_agent_name(ModelMarketAgent agent);  // "inventory", "symmetric"

struct ModelMarketPath {
  double pnl = 0;                 // cash + terminal inventory × final mid
  double terminal_inventory = 0;  // q_T
  double mean_spread = 0;         // time average of the quoted total bid–ask spread
  int bid_fills = 0;
  int ask_fills = 0;
};

struct ModelMarketSummary {
  std::vector<ModelMarketPath> paths;
  double mean_pnl = 0;
  double std_pnl = 0;  // sample standard deviation (n − 1)
  double mean_terminal_inventory = 0;
  double std_terminal_inventory = 0;
  double mean_spread = 0;  // mean over paths of ModelMarketPath::mean_spread
};

// Simulates `paths` independent paths with the AS quote of risk aversion gamma (the
// symmetric agent uses the same half spread around the mid). Path p draws its mid moves
// from Rng(mix(seed, p, 0)) and its fill draws from Rng(mix(seed, p, 1)), so both agents
// see the same mid paths for the same seed. Bad parameters give InvalidInput.
Result<ModelMarketSummary> simulate_model_market(const ModelMarketParams& params,
                                                 ModelMarketAgent agent, double gamma, int paths,
                                                 uint64_t seed);

// One fill check of the model market for quotes at distances bid_depth = s − bid and
// ask_depth = ask − s from the mid (the step's item 2): each side fills with probability
// min(1, A·Δt·exp(−k·depth)), drawn bid then ask from fill_rng; a negative depth never occurs
// in the AS agent and is clipped to probability 1 like any other. A side quoted at infinity
// (std::numeric_limits<double>::infinity()) never fills but still consumes its draw.
// model_fill_draws with arrival_prob = A·Δt.
ModelMarketFills model_market_fills(const ModelMarketParams& params, double bid_depth,
                                    double ask_depth, Rng& fill_rng);

// A standard normal draw by the Marsaglia polar method on rng.unit() (two uniforms in
// (−1, 1)², rejected outside the unit disc; one of the pair is returned, the other dropped
// so the stream position depends only on the number of calls and rejections).
// Rng::normal, kept under this name for the simulator's callers.
double standard_normal(Rng& rng);

// Mean and sample standard deviation (n − 1; 0 for fewer than two values).
void mean_and_std(const std::vector<double>& values, double* mean, double* std_dev);

}  // namespace fxt::sim
