// Sweep grids (DESIGN §7.5, docs/SWEEP.md): which parameter sets `fxt backtest --sweep` runs.
//
//   strategy = "mm"            # optional; else --strategy
//   [fixed]                    # one value for every lane
//   latency = "entry=1ms,response=1ms"
//   [grid]                     # Cartesian product of these lists, last key fastest
//   gamma = [0.01, 0.05, 0.1]
//   queue = ["risk-averse", "power:2", "log"]
//   [[lane]]                   # explicit lanes, after the product, each over [fixed]
//   gamma = 0.5
//
// A small TOML subset (strings, numbers, booleans, one-level arrays, [table] and [[lane]]),
// read by this file rather than by CLI11's config reader because a grid's errors must name
// the line, and value types (a string vs a number) matter. Keys: the simulator's (queue,
// latency, feed_latency, entry_latency, response_latency, fees, maker_bps, taker_bps,
// maker_per_unit, taker_per_unit, multiplier, l2) and otherwise the strategy's --param keys.
// Errors: "file:line: ...".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/backtest.h"
#include "sim/lanes.h"

namespace fxt::sim {

struct GridValue {
  enum Kind : uint8_t { kString, kNumber, kBool };
  Kind kind = kString;
  std::string text;  // a string's contents, a number as written, "true"/"false"
  int line = 0;
};

// One lane of the grid: its values by key, before they are checked against a strategy.
struct GridLane {
  std::map<std::string, GridValue> values;
  int line = 0;  // where the lane comes from ([grid] or its [[lane]] header)
};

struct SweepGrid {
  std::string path;
  std::string strategy;           // "" when the file names none
  std::vector<std::string> keys;  // every key in file order: the results table's columns
  std::vector<std::string> axes;  // the [grid] keys, in file order
  std::vector<GridLane> lanes;    // product first (last key varying fastest), then [[lane]]s
};

// Parses a grid file's text; `path` names it in errors. Bad syntax, an empty list, a key
// given twice, an unknown table, no lanes at all, or more than max_lanes lanes: InvalidInput
// "path:line: ...".
Result<SweepGrid> parse_sweep_grid(const std::string& path, const std::string& text,
                                   size_t max_lanes = 1'000'000);
Result<SweepGrid> load_sweep_grid(const std::string& path);

// The lanes of a grid over `base` (the command's simulator flags, the market's instrument):
// simulator keys set the lane's SimConfig, the rest become its --param list; every lane's
// strategy is built against `inputs` here so a bad value fails before the sweep, naming
// the file and the line of the key at fault.
Result<std::vector<Lane>> grid_lanes(const SweepGrid& grid, const std::string& strategy,
                                     const SimConfig& base, const StrategyInputs& inputs);

}  // namespace fxt::sim
