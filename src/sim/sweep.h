// `fxt backtest --sweep` as a library (DESIGN §7.5, docs/SWEEP.md): a grid of parameter sets
// run as lanes over one market, one results table (sweep.csv, sweep.json: every lane's
// parameters and stats) with the Pareto front of Sharpe (higher), max drawdown (lower) and
// turnover (lower), and the full result files of the best K lanes by Sharpe written
// through the single-run path (run_backtest_spec).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/lanes.h"
#include "sim/types.h"

namespace fxt::sim {

struct SweepSpec {
  std::string grid_path;
  std::vector<std::string> stores;
  std::string strategy = "signal";       // when the grid names none
  std::vector<std::string> predictions;  // one CSV per store (signal, mm skew)
  int horizon = 0;
  SimConfig sim;                  // the command's flags: every lane starts from these
  bool multiplier_given = false;  // false: the store's contract multiplier
  std::string device = "cpu";     // "cpu" or "cuda" (sim/gpu_lanes.h: mm lanes under L2 queues)
  int threads = 1;
  size_t batch = 0;  // lanes per batch (0: all)
  int top = 0;       // write the full results of the best `top` lanes by Sharpe
  std::string out_dir;
};

struct SweepOutcome {
  size_t lanes = 0;
  uint64_t events_per_lane = 0;
  double wall_seconds = 0;     // the lanes alone (not the grid, the market or --top)
  std::vector<size_t> pareto;  // lane indices on the front, by descending Sharpe
  std::vector<size_t> top;     // the best lanes by Sharpe, best first
  std::vector<LaneOutcome> outcomes;
};

// Lane indices not dominated on (Sharpe ↑, max drawdown ↓, turnover ↓); a null Sharpe counts
// as the worst, a null drawdown or turnover as the worst. Sorted by descending Sharpe.
std::vector<size_t> pareto_front(const std::vector<nlohmann::json>& stats);
// The best k lanes by Sharpe (nulls last), ties by total_pnl then lane index.
std::vector<size_t> best_lanes(const std::vector<nlohmann::json>& stats, size_t k);

// Runs the sweep and writes out_dir/sweep.csv, out_dir/sweep.json and, with top > 0,
// out_dir/top/lane-<i>/ (the files of `fxt backtest`).
Result<SweepOutcome> run_sweep(const SweepSpec& spec, const std::string& command_line);

}  // namespace fxt::sim
