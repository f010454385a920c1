// The backtest result files of DESIGN §7.4; formats in docs/MODEL_MARKET.md ("Result files").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/types.h"

namespace fxt::sim {

// Writes run_dir/{orders.csv, fills.csv, equity.csv, stats.json} atomically
// (BufferedFileWriter from core/file_util.h), creating run_dir. CSV headers documented in
// docs/MODEL_MARKET.md's results section; prices as decimals in currency.
Status write_backtest_results(const std::string& run_dir, const BacktestResult& result,
                              const nlohmann::json& stats);

}  // namespace fxt::sim
