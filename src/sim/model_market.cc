#include "sim/model_market.h"

#include <algorithm>
#include <cmath>

#include "sim/quoting.h"

namespace fxt::sim {

const char* model_market_agent_name(ModelMarketAgent agent) {
  switch (agent) {
    case ModelMarketAgent::kInventory:
      return "inventory";
    case ModelMarketAgent::kSymmetric:
      return "symmetric";
  }
  return "unknown";
}

double standard_normal(Rng& rng) { return rng.normal(); }

void mean_and_std(const std::vector<double>& values, double* mean, double* std_dev) {
  const size_t n = values.size();
  double sum = 0;
  for (double v : values) sum += v;
  *mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double squares = 0;
  for (double v : values) squares += (v - *mean) * (v - *mean);
  *std_dev = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
}

ModelMarketFills model_market_fills(const ModelMarketParams& p, double bid_depth,
                                    double ask_depth, Rng& fill_rng) {
  const double arrival_prob = p.A * (p.horizon / static_cast<double>(p.steps));  // as A·Δt
  return model_fill_draws(arrival_prob, p.k, bid_depth, ask_depth, &fill_rng);
}

namespace {

// A seed for stream `stream` of path `path`: splitmix64 mixing keeps neighbouring
// (seed, path, stream) triples far apart in xoshiro's state space.
uint64_t stream_seed(uint64_t seed, uint64_t path, uint64_t stream) {
  uint64_t state = seed;
  uint64_t mixed = splitmix64(&state) ^ (path * 0x9E3779B97F4A7C15ULL);
  state = mixed;
  mixed = splitmix64(&state) ^ stream;
  state = mixed;
  return splitmix64(&state);
}

Status check_params(const ModelMarketParams& p, double gamma, int paths) {
  auto positive = [](double x) { return std::isfinite(x) && x > 0; };
  if (!std::isfinite(p.s0)) return InvalidInput("model market: s0 must be finite, got {}", p.s0);
  if (!positive(p.horizon))
    return InvalidInput("model market: horizon must be > 0, got {}", p.horizon);
  if (p.steps < 1) return InvalidInput("model market: steps must be >= 1, got {}", p.steps);
  if (!std::isfinite(p.sigma) || p.sigma < 0)
    return InvalidInput("model market: sigma must be >= 0, got {}", p.sigma);
  if (!positive(p.A)) return InvalidInput("model market: A must be > 0, got {}", p.A);
  if (!positive(p.k)) return InvalidInput("model market: k must be > 0, got {}", p.k);
  if (!std::isfinite(p.q0)) return InvalidInput("model market: q0 must be finite, got {}", p.q0);
  if (!positive(gamma)) return InvalidInput("model market: gamma must be > 0, got {}", gamma);
  if (paths < 1) return InvalidInput("model market: paths must be >= 1, got {}", paths);
  return Status::Ok();
}

ModelMarketPath simulate_path(const ModelMarketParams& p, ModelMarketAgent agent, double gamma,
                              Rng& mid_rng, Rng& fill_rng) {
  const double dt = p.horizon / static_cast<double>(p.steps);
  const double mid_step_sd = p.sigma * std::sqrt(dt);
  double mid = p.s0;
  double inventory = p.q0;
  double cash = 0;
  double spread_sum = 0;
  ModelMarketPath path;
  for (int i = 0; i < p.steps; ++i) {
    const double tau = p.horizon - static_cast<double>(i) * dt;
    Quote quote = avellaneda_stoikov_quote(mid, inventory, tau, gamma, p.sigma, p.k);
    if (agent == ModelMarketAgent::kSymmetric) {
      quote.reservation = mid;
      quote.bid = mid - quote.half_spread;
      quote.ask = mid + quote.half_spread;
    }
    spread_sum += quote.ask - quote.bid;
    // Fill checks against the quotes' distances from the current mid, bid then ask.
    const ModelMarketFills fills = model_market_fills(p, mid - quote.bid, quote.ask - mid, fill_rng);
    const bool bid_hit = fills.bid;
    const bool ask_hit = fills.ask;
    if (bid_hit) {
      inventory += 1;
      cash -= quote.bid;
      ++path.bid_fills;
    }
    if (ask_hit) {
      inventory -= 1;
      cash += quote.ask;
      ++path.ask_fills;
    }
    mid += mid_step_sd * standard_normal(mid_rng);  // then the mid moves
  }
  path.pnl = cash + inventory * mid;
  path.terminal_inventory = inventory;
  path.mean_spread = spread_sum / static_cast<double>(p.steps);
  return path;
}

}  // namespace

Result<ModelMarketSummary> simulate_model_market(const ModelMarketParams& params,
                                                 ModelMarketAgent agent, double gamma, int paths,
                                                 uint64_t seed) {
  FXT_RETURN_IF_ERROR(check_params(params, gamma, paths));
  ModelMarketSummary summary;
  summary.paths.reserve(static_cast<size_t>(paths));
  std::vector<double> pnl, inventory, spread;
  for (int p = 0; p < paths; ++p) {
    Rng mid_rng(stream_seed(seed, static_cast<uint64_t>(p), 0));
    Rng fill_rng(stream_seed(seed, static_cast<uint64_t>(p), 1));
    const ModelMarketPath path = simulate_path(params, agent, gamma, mid_rng, fill_rng);
    pnl.push_back(path.pnl);
    inventory.push_back(path.terminal_inventory);
    spread.push_back(path.mean_spread);
    summary.paths.push_back(path);
  }
  double spread_std = 0;
  mean_and_std(pnl, &summary.mean_pnl, &summary.std_pnl);
  mean_and_std(inventory, &summary.mean_terminal_inventory, &summary.std_terminal_inventory);
  mean_and_std(spread, &summary.mean_spread, &spread_std);
  return summary;
}

}  // namespace fxt::sim
