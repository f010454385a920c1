// `fxt backtest` as a library (DESIGN §7.3–7.4): the strategy registry (a strategy from its
// name and `key=value` parameters, every one defaulted), the latency / fee / duration
// grammars, predictions loading (from `fxt predict` CSVs or computed from a checkpoint), and the
// run over one or several queue models with the model-risk band. docs/BACKTEST.md is the guide.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/strategy.h"
#include "sim/strategy_mm.h"
#include "sim/strategy_signal.h"
#include "sim/types.h"

namespace fxt::sim {

// "250ns", "10us", "1.5ms", "2s", or "0". Negative durations are rejected.
Result<int64_t> parse_duration_ns(const std::string& text);

// "feed=1ms,entry=2ms,response=2ms" (any subset; the rest stay 0).
Result<LatencyConfig> parse_latency(const std::string& text);

// "maker=-0.2bps,taker=0.5bps", per unit "maker=0.25/unit", or both for one side
// ("taker=0.5bps+0.1/unit"). Unnamed sides stay 0.
Result<FeeSchedule> parse_fees(const std::string& text);

// A comma list of queue models ("risk-averse,power:2,log"); duplicates rejected.
Result<std::vector<QueueModel>> parse_queue_models(const std::string& text);

// A queue model's name as a directory name: "power:2" -> "power-2".
std::string queue_model_dir_name(const QueueModel& m);

// Strategy parameters: `key=value` strings (from repeated --param flags or a config file's
// `param = [...]` list). Each strategy reads the keys it knows; any other key is an error.
class StrategyParams {
 public:
  static Result<StrategyParams> parse(const std::vector<std::string>& items);

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  // Each getter leaves *out unchanged when the key is absent; a value of the wrong kind is a
  // usage error naming the key.
  Status get(const std::string& key, double* out);
  Status get(const std::string& key, int* out);
  Status get_duration(const std::string& key, int64_t* out);
  Status get_choice(const std::string& key, const std::vector<std::string>& choices,
                    std::string* out);
  // After the getters: an error naming the first key no getter asked for.
  Status check_all_used(const std::string& strategy) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
};

// What a strategy may need besides its parameters.
struct StrategyInputs {
  std::vector<SessionSpan> sessions;           // per store, first and last snapshot times
  std::shared_ptr<const SignalSeries> signal;  // null when no predictions were given
  // The stores' lot size: 1 when every displayed size is a whole number (futures, shares,
  // DBN sources), 0 when some are fractional (crypto). The default `lot` of twap and ac.
  double lot_size = 0;
};

// A configured strategy: `make` builds a fresh instance (one per queue-model run).
struct StrategyFactory {
  std::string name;
  nlohmann::json config;  // every parameter, defaults included
  std::function<std::unique_ptr<Strategy>()> make;
};

// StrategyInputs::lot_size of these stores: 1 when every displayed size is whole, else 0.
double stores_lot_size(const std::vector<StoreReader>& stores);

// The stats.json object of one run (fxt backtest and every sweep lane alike): compute_stats,
// the latency and fees the run assumed (`assumed_costs`), and the strategy's own report.
nlohmann::json run_stats(const BacktestResult& result, const SimConfig& sim,
                         const Strategy& strategy);

const std::vector<std::string>& strategy_names();  // "signal", "mm", "twap", "ac"
// Builds the factory; `signal` requires inputs.signal; `mm` uses it for its skew when present.
Result<StrategyFactory> make_strategy_factory(const std::string& name, StrategyParams params,
                                              const StrategyInputs& inputs);

struct BacktestSpec {
  std::vector<std::string> stores;
  std::string strategy = "signal";
  std::vector<std::string> params;       // key=value
  std::string checkpoint;                // signal source: computed in-process ...
  std::vector<std::string> predictions;  // ... or read, one CSV per store
  int horizon = 0;                       // 0 = the first horizon column
  SimConfig sim;
  bool multiplier_given = false;         // false: the store's contract_multiplier (1 when unknown)
  std::vector<QueueModel> queue_models;  // empty = sim.queue alone
  std::string out_dir;
  int threads = 1;  // threads for predictions and for queue-model runs side by side
};

struct QueueModelRun {
  QueueModel model;
  std::string name;  // queue_model_name
  std::string dir;   // where its result files went
  nlohmann::json stats;
};

struct BacktestOutcome {
  std::vector<QueueModelRun> runs;
  nlohmann::json band;      // model_risk_band when there are several runs, else null
  nlohmann::json run_info;  // what went into RUN_DIR/run.json
  uint64_t events = 0;      // events replayed per run
  double wall_seconds = 0;
};

// Validates the spec, loads or computes predictions, runs the strategy once per queue model
// and writes RUN_DIR/{orders,fills,equity}.csv + stats.json (several models: one
// subdirectory each, and RUN_DIR/stats.json with every model's stats and the band) and
// RUN_DIR/run.json. `command_line` is recorded in run.json.
Result<BacktestOutcome> run_backtest_spec(const BacktestSpec& spec,
                                          const std::string& command_line);

}  // namespace fxt::sim
