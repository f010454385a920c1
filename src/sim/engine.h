// The replay engine (DESIGN §7.1–7.2): replays one or more stores in exchange-time order
// through the simulated exchange and a strategy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/strategy.h"
#include "sim/types.h"

namespace fxt {
class StoreReader;
}

namespace fxt::sim {

// "risk-averse", "power:<n>" (n > 0), "log".
Result<QueueModel> parse_queue_model(const std::string& text);
std::string queue_model_name(const QueueModel& m);

// Replays store_dirs (one instrument; sessions replayed in time order, overlapping stores
// rejected) with the strategy. A null strategy replays the market alone (benchmarks).
Result<BacktestResult> run_backtest(const std::vector<std::string>& store_dirs,
                                    const SimConfig& config, Strategy* strategy);

// run_backtest in two steps, so that many runs share the stores (sim/lanes.h): open and check
// the stores once, then replay them any number of times. The stores are only read: runs on
// several threads may share them.
Result<std::vector<StoreReader>> open_backtest_stores(const std::vector<std::string>& store_dirs);
Result<BacktestResult> run_backtest_on(const std::vector<StoreReader>& stores,
                                       const SimConfig& config, Strategy* strategy);

// run_backtest_on in steps, so that several replays of the same stores can advance side by
// side (sim/lanes.h runs a thread's lanes in lockstep over windows of market rows, each window
// read from memory once for all of them while it is in cache). Stepping changes nothing:
// run_backtest_on is start then finish, and a result never depends on where it paused.
class BacktestRun {
 public:
  // The stores, config and strategy must outlive the run.
  static Result<BacktestRun> start(const std::vector<StoreReader>& stores, const SimConfig& config,
                                   Strategy* strategy);
  // Replays everything before market row `rows` (order events, trades and snapshots,
  // counted over all stores from 0) and returns true; false once the replay has ended (the
  // strategy's on_end called).
  bool advance(uint64_t rows);
  // Replays what is left and returns the result; the run is spent.
  BacktestResult finish();

  BacktestRun(BacktestRun&&) noexcept;
  BacktestRun& operator=(BacktestRun&&) noexcept;
  ~BacktestRun();

 private:
  BacktestRun();
  struct State;
  std::unique_ptr<State> state_;
};

// One store's rows in the replay order (the engine's own cursor): per snapshot, its order
// events (l3; each 'T' event followed by its trade), its remaining trades, then the snapshot.
// `ts` is the row's own time (the engine makes exchange time monotone: max with the last).
enum class MarketRowKind : uint8_t { kOrderEvent, kTrade, kSnapshot };
void walk_market_rows(
    const StoreReader& r, bool l3,
    const std::function<void(MarketRowKind kind, uint64_t index, int64_t ts)>& fn);

}  // namespace fxt::sim
