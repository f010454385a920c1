// Backtest statistics (DESIGN §7.4) and the model-risk band over several queue models.
// The exact formulas are in docs/MODEL_MARKET.md ("Statistics").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/types.h"

namespace fxt::sim {

// DESIGN §7.4 statistics as JSON: total_pnl, daily_pnl [{date "YYYY-MM-DD" (UTC), pnl}],
// sharpe_daily_annualised (sqrt(252)), sharpe_per_trade, sortino (daily, annualised),
// max_drawdown (currency, >= 0), return_over_drawdown, trades (fills count) and
// round_trips, turnover (traded notional), volume, fill_ratio (filled qty / ordered qty
// over orders), maker_share, taker_share (by filled qty), fees, mean_holding_ns
// (FIFO-matched position lots), orders, events, final_position. Undefined ratios (e.g. one
// day, zero variance) are JSON null, never NaN/Inf. A run spanning less than 2 days has no
// daily Sharpe or Sortino; `sharpe_bars` gives its Sharpe on intraday bars instead ({bar,
// bar_ns, bars, bars_per_day, per_bar, annualised}); `sharpe_annualised` and `sharpe_basis`
// ("daily" or "<bar> bars") are the one that applies.
nlohmann::json compute_stats(const BacktestResult& result);

// The model-risk band over several queue models' stats (DESIGN §7.4): for each numeric key
// of interest (total_pnl, sharpe_daily_annualised, max_drawdown, fill_ratio, trades, fees)
// the min, max, spread (max − min) and per-model values. Keys that are null in a model's
// stats are reported as null in that model's value and left out of min/max (all null:
// min, max and spread null).
nlohmann::json model_risk_band(const std::vector<std::string>& model_names,
                               const std::vector<nlohmann::json>& stats);

}  // namespace fxt::sim
