// Lanes (DESIGN §7.5): many independent backtests of one market at once, one per parameter
// set. A lane owns its strategy (name + key=value parameters), its SimConfig (queue model,
// latency, fees, multiplier) and everything a backtest accumulates (orders, queue positions,
// latency state, position, cash, fees); the market all lanes read is opened once
// (LaneMarket: the stores and the predictions, shared read-only).
//
// CPU path: a lane is exactly one run of the replay engine (sim/engine.h run_backtest_on) over
// the shared stores, so a lane's fills, position, cash, fees and stats are those of a single
// `fxt backtest` with the same parameters by construction; lanes run side by side on
// `threads` threads in batches of `batch` lanes. A thread takes `group` lanes at a time and
// advances them in lockstep, `window_rows` market rows each in turn (sim/engine.h
// BacktestRun), so that a window of the stores is read from memory once per group and then
// from cache, rather than once per lane. Results depend only on the lanes, never on threads,
// batch, group or window.
//
// Thread-safety: run_lanes may call the sink from several threads at once (one lane each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "data/store.h"
#include "sim/backtest.h"
#include "sim/types.h"

namespace fxt {
class Progress;
}

namespace fxt::sim {

// One parameter set.
struct Lane {
  std::string strategy = "signal";  // signal, mm, twap, ac
  std::vector<std::string> params;  // key=value, as --param
  SimConfig sim;
};

// What every lane reads: opened once.
struct LaneMarket {
  std::vector<std::string> store_dirs;
  std::vector<StoreReader> stores;
  StrategyInputs inputs;      // sessions, and the predictions when given
  Instrument instrument;      // tick from the store; multiplier from its meta (1 when unknown)
  bool exact_queues = false;  // every store carries MBO order events (L3 FIFO unless --l2)
  uint64_t events = 0;        // market events one lane replays (snapshots + trades)
};

// Opens the stores (checked as run_backtest does) and reads one predictions CSV per store
// (empty: none; horizon 0 = the first p_h column).
Result<LaneMarket> open_lane_market(const std::vector<std::string>& store_dirs,
                                    const std::vector<std::string>& prediction_files, int horizon);

// Reads one predictions CSV per store into one series; every file must resolve to the same
// horizon column.
Result<std::shared_ptr<const SignalSeries>> load_signal_series(
    const std::vector<std::string>& prediction_files, int horizon,
    const std::vector<StoreReader>& stores);

// A lane's headline numbers (stats.json of its run plus the account at the end).
struct LaneOutcome {
  nlohmann::json stats;
  double position = 0;
  double cash = 0;
  double fees = 0;
  uint64_t fills = 0;
  uint64_t orders = 0;
  uint64_t events = 0;
};

// The outcome of one finished lane (stats.json via run_stats, the account from the fills).
LaneOutcome lane_outcome(const BacktestResult& result, const SimConfig& sim,
                         const Strategy& strategy);

struct LaneOptions {
  int threads = 1;
  size_t batch = 0;              // lanes per batch (0: all at once); bounds the lanes in flight
  size_t group = 8;              // lanes a thread advances together (1: one lane at a time)
  uint64_t window_rows = 512;    // market rows each lane of a group advances per turn
  Progress* progress = nullptr;  // advanced by each finished lane's events (any thread)
};

// Called with each lane's full result before it is dropped (e.g. to compare or to write it).
using LaneSink = std::function<Status(size_t lane, const BacktestResult& result)>;

// Checks every lane's strategy and parameters first (a bad lane fails before any runs, with
// "lane <i>: ..."), then runs them. Outcomes are in lane order.
Result<std::vector<LaneOutcome>> run_lanes(const LaneMarket& market, const std::vector<Lane>& lanes,
                                           const LaneOptions& options, const LaneSink& sink = {});

}  // namespace fxt::sim
