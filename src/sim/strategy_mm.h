// The `mm` market-making strategy of DESIGN §7.3: Avellaneda–Stoikov or GLFT quotes
// (sim/quoting.h) around the mid, an optional skew from the model's signal, inventory limits,
// post-only quotes rounded to the tick (bid down, ask up) and requoted when a price moves by at
// least `requote_ticks`. docs/BACKTEST.md lists the parameters and their defaults.
//
// Units: the quoting formulas run in ticks (mid, sigma and spreads in ticks, gamma and k per
// tick) and in session time: t = 0 at the store's first snapshot, T = 1 at its last, so
// tau = T - t is the fraction of the session left, sigma is the mid's volatility in ticks per
// sqrt(session) and A the arrival intensity per session. When sigma or A is left at 0 they are
// estimated online from the snapshots and trades seen so far (realised variance of the mid and
// trade count, each divided by the session fraction elapsed). Inventory enters the formulas in
// units of order_qty.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/mm_rules.h"
#include "sim/strategy.h"
#include "sim/strategy_signal.h"

namespace fxt::sim {

// One store's session span (ns), for tau.
struct SessionSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

enum class QuoteModel : uint8_t { kAvellanedaStoikov, kGlft };

struct MarketMakerConfig {
  QuoteModel model = QuoteModel::kAvellanedaStoikov;
  double gamma = 0.001;      // risk aversion, per tick
  double k = 3.0;            // fill-intensity decay, per tick of distance
  double sigma = 0;          // ticks per sqrt(session); 0 = estimated online
  double arrival = 0;        // GLFT's A, per session; 0 = estimated online (trades seen)
  double order_qty = 1;      // units per quote
  double max_inventory = 5;  // units; a side whose fill would exceed it is not quoted
  double requote_ticks = 1;  // requote when the price moves by at least this many ticks
  double skew_ticks = 1;     // reservation shift skew_ticks·(2p − 1) when a signal is given
  int warmup = 100;          // snapshots seen before the first quote

  Status validate() const;
  nlohmann::json to_json() const;
  // The inverse of to_json (a strategy factory's config).
  static Result<MarketMakerConfig> from_json(const nlohmann::json& j);
};

// The decisions in device-ready form (sim/mm_rules.h): the config with its constant terms.
MmParams mm_params(const MarketMakerConfig& config);

class MarketMakerStrategy : public Strategy {
 public:
  // `signal` may be null (no skew); sessions[i] is store i's span.
  MarketMakerStrategy(const MarketMakerConfig& config, std::vector<SessionSpan> sessions,
                      std::shared_ptr<const SignalSeries> signal);

  void on_event(const MarketEvent& event, StrategyContext& ctx) override;

  // The quote for a mid (1e-9), inventory (units), tau, sigma (ticks/sqrt(session)), arrival
  // (per session) and signal p: formulas in ticks, bid rounded down and ask up to the tick,
  // kept one tick inside the opposite touch of `book` so post-only quotes do not cross.
  MarketMakerQuote quote(const Snapshot& book, int64_t tick_px, double inventory, double tau,
                         double sigma, double arrival, double p) const;

  double sigma_estimate() const;    // ticks per sqrt(session); 0 before any movement
  double arrival_estimate() const;  // per session

 private:
  MarketMakerConfig config_;
  MmParams params_;
  std::vector<SessionSpan> sessions_;
  std::shared_ptr<const SignalSeries> signal_;
  MmState state_;
};

}  // namespace fxt::sim
