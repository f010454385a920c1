// The `twap` and `ac` execution baselines of DESIGN §7.3: trade `qty` units (sell =
// liquidate, buy = acquire) over a time window split into `slices` equal intervals, following
// the holdings schedule of sim/schedule.h (TWAP: a straight line; Almgren–Chriss: a sinh
// curve, front-loaded for urgency > 0). At the start of interval j the strategy sends one child
// order for what the schedule says should be done by the end of that interval, less what has
// filled and what is still working, so shortfalls roll into the next child. Children are market
// orders, or marketable limit IOC orders `limit_ticks` through the opposite touch. With a lot
// size, every child is a whole number of lots (what is due rounds down; the rest rolls on).
//
// The strategy measures its execution against two benchmarks (report()): the arrival price,
// the mid of the first book it sees in the window (implementation shortfall, Perold 1988), and
// the market's VWAP over the window (the prints it sees, ours excluded: the book is historical).
// Both in basis points, positive = a cost: side · (average fill − benchmark) / benchmark.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/exec_rules.h"
#include "sim/strategy.h"

namespace fxt::sim {

struct ExecutionConfig {
  Side side = Side::kSell;
  double qty = 10;          // units to trade, > 0
  int64_t start_ns = 0;     // window start, as an offset from the first session's start
  int64_t duration_ns = 0;  // window length; 0 = to the end of the last session
  int slices = 10;          // equal intervals (child orders)
  bool limit = false;       // false: market children; true: marketable limit IOC
  double limit_ticks = 1;   // IOC price: this many ticks through the opposite touch
  double lot = 0;           // > 0: children are whole multiples of lot (qty must be one)
  // Almgren–Chriss only: urgency κ·T of the window (0 = TWAP). When risk_aversion > 0 it is
  // derived instead: κ̃ = almgren_chriss_discrete_kappa(sigma, eta, risk_aversion, τ) with τ
  // the slice length in seconds, urgency = κ̃ · window seconds.
  double urgency = 2;
  double sigma = 0;          // currency per sqrt(second)
  double eta = 0;            // currency·second per unit²
  double risk_aversion = 0;  // per currency

  Status validate(bool almgren_chriss) const;
  nlohmann::json to_json(bool almgren_chriss) const;
};

// Remaining holdings at the slice boundaries (slices + 1 values, qty ... 0) of the TWAP
// (almgren_chriss = false) or Almgren–Chriss schedule of `config` over window_ns.
std::vector<double> execution_holdings(const ExecutionConfig& config, bool almgren_chriss,
                                       int64_t window_ns);

// The decisions are sim/exec_rules.h's (shared with the GPU lanes); this class adapts them to
// the engine's StrategyContext and writes the report.
class ExecutionStrategy : public Strategy {
 public:
  // The window is [window_start_ns, window_end_ns] in exchange time (the strategy's clock).
  ExecutionStrategy(const ExecutionConfig& config, bool almgren_chriss, int64_t window_start_ns,
                    int64_t window_end_ns);

  void on_event(const MarketEvent& event, StrategyContext& ctx) override;
  void on_fill(const Fill& fill, StrategyContext& ctx) override;
  nlohmann::json report() const override;

  const std::vector<double>& holdings() const { return holdings_; }
  double executed() const { return state_.executed; }
  // Takes the state a GPU lane left, so that report() is that lane's report.
  void set_state(const ExecState& state) { state_ = state; }

 private:
  ExecutionConfig config_;
  int64_t start_ns_ = 0, end_ns_ = 0;
  std::vector<double> holdings_;
  ExecState state_;
};

// The config and window as exec_rules.h's parameters; through_px = llround(limit_ticks) · tick.
ExecParams exec_params(const ExecutionConfig& config, int64_t window_start_ns,
                       int64_t window_end_ns, int64_t tick_px);

}  // namespace fxt::sim
