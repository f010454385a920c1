#include "sim/lanes.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/progress.h"
#include "sim/account.h"
#include "sim/engine.h"
#include "sim/stats.h"
#include "sim/strategy_signal.h"

namespace fxt::sim {

Result<std::shared_ptr<const SignalSeries>> load_signal_series(
    const std::vector<std::string>& prediction_files, int horizon,
    const std::vector<StoreReader>& stores) {
  if (prediction_files.size() != stores.size()) {
    return UsageError("--predictions: {} files for {} stores (one per store, in order)",
                      prediction_files.size(), stores.size());
  }
  auto series = std::make_shared<SignalSeries>();
  for (size_t i = 0; i < stores.size(); ++i) {
    int chosen = 0;
    FXT_ASSIGN_OR_RETURN(std::vector<float> p,
                         load_predictions(prediction_files[i], horizon, stores[i], &chosen));
    if (i > 0 && chosen != series->horizon) {
      return InvalidInput("{}:1: first horizon column is p_h{}, but {} used p_h{} (give --horizon)",
                          prediction_files[i], chosen, prediction_files[0], series->horizon);
    }
    series->horizon = chosen;
    series->per_store.push_back(std::move(p));
  }
  return std::shared_ptr<const SignalSeries>(std::move(series));
}

Result<LaneMarket> open_lane_market(const std::vector<std::string>& store_dirs,
                                    const std::vector<std::string>& prediction_files, int horizon) {
  LaneMarket m;
  m.store_dirs = store_dirs;
  FXT_ASSIGN_OR_RETURN(m.stores, open_backtest_stores(store_dirs));
  m.exact_queues = true;
  for (const StoreReader& r : m.stores) {
    m.inputs.sessions.push_back({r.ts_ns[0], r.ts_ns[r.size() - 1]});
    m.events += r.size() + r.trade_count();
    m.exact_queues = m.exact_queues && r.event_count() > 0;
  }
  m.inputs.lot_size = stores_lot_size(m.stores);
  const auto& inst = m.stores.front().meta().value("instrument", nlohmann::json::object());
  const double multiplier = inst.value("contract_multiplier", 1.0);
  m.instrument.multiplier = multiplier > 0 ? multiplier : 1.0;
  if (m.stores.front().tick_px() > 0) m.instrument.tick_px = m.stores.front().tick_px();
  if (!prediction_files.empty()) {
    FXT_ASSIGN_OR_RETURN(m.inputs.signal, load_signal_series(prediction_files, horizon, m.stores));
  }
  return m;
}

LaneOutcome lane_outcome(const BacktestResult& r, const SimConfig& sim, const Strategy& strategy) {
  LaneOutcome o;
  o.stats = run_stats(r, sim, strategy);
  Account account(r.instrument.multiplier);
  for (const Fill& f : r.fills) account.apply_fill(f.side, f.px, f.qty, f.fee);
  o.position = account.position();
  o.cash = account.cash();
  o.fees = account.fees();
  o.fills = r.fills.size();
  o.orders = r.orders.size();
  o.events = r.events;
  return o;
}

Result<std::vector<LaneOutcome>> run_lanes(const LaneMarket& market, const std::vector<Lane>& lanes,
                                           const LaneOptions& options, const LaneSink& sink) {
  if (options.threads < 1) return UsageError("--threads must be >= 1");
  if (options.group < 1) return UsageError("lane group must be >= 1");
  if (options.window_rows < 1) return UsageError("lane window must be >= 1 row");
  // Every lane's strategy is built (and its parameters checked) before anything runs.
  std::vector<StrategyFactory> factories;
  factories.reserve(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    Result<StrategyParams> params = StrategyParams::parse(lanes[i].params);
    Result<StrategyFactory> f =
        params.ok()
            ? make_strategy_factory(lanes[i].strategy, std::move(params).value(), market.inputs)
            : Result<StrategyFactory>(params.status());
    if (!f.ok())
      return Status(f.status().code(), fmt::format("lane {}: {}", i, f.status().message()));
    factories.push_back(std::move(f).value());
  }

  std::vector<LaneOutcome> outcomes(lanes.size());
  std::vector<Status> statuses(lanes.size());
  std::mutex progress_mutex;
  // Lanes [first, last) in lockstep: each advances window_rows market rows in turn, so that
  // the window's rows come from cache for all but the first lane.
  auto run_group = [&](size_t first, size_t last) {
    const size_t n = last - first;
    std::vector<std::unique_ptr<Strategy>> strategies(n);
    std::vector<std::optional<BacktestRun>> runs(n);
    auto guarded = [&](size_t k, auto&& step) {
      try {
        step();
      } catch (const std::exception& e) {
        statuses[first + k] = InternalError("lane {}: {}", first + k, e.what());
        runs[k].reset();
      }
    };
    std::vector<size_t> live;  // the k of the runs still replaying, in lane order
    for (size_t k = 0; k < n; ++k) {
      guarded(k, [&] {
        const size_t i = first + k;
        strategies[k] = factories[i].make();
        Result<BacktestRun> run =
            BacktestRun::start(market.stores, lanes[i].sim, strategies[k].get());
        if (!run.ok()) {
          statuses[i] =
              Status(run.status().code(), fmt::format("lane {}: {}", i, run.status().message()));
          return;
        }
        runs[k].emplace(std::move(run).value());
        live.push_back(k);
      });
    }
    // Each round every live run advances to the window's end; a run leaves when
    // its replay ends (or throws: guarded drops it).
    for (uint64_t rows = options.window_rows; !live.empty(); rows += options.window_rows) {
      std::erase_if(live, [&](size_t k) {
        bool more = false;
        guarded(k, [&] { more = runs[k]->advance(rows); });
        return !more;
      });
    }
    for (size_t k = 0; k < n; ++k) {
      if (!runs[k]) continue;
      guarded(k, [&] {
        const size_t i = first + k;
        const BacktestResult r = runs[k]->finish();
        outcomes[i] = lane_outcome(r, lanes[i].sim, *strategies[k]);
        if (sink) statuses[i] = sink(i, r);
        if (options.progress != nullptr) {
          std::lock_guard<std::mutex> lock(progress_mutex);
          options.progress->advance(r.events);
        }
      });
      runs[k].reset();
    }
  };

  const size_t batch = options.batch == 0 ? lanes.size() : options.batch;
  for (size_t begin = 0; begin < lanes.size(); begin += batch) {
    const size_t end = std::min(lanes.size(), begin + batch);
    // As many groups as threads at least, so that no thread idles while another holds more
    // than one group's lanes.
    const size_t n_threads = std::min(end - begin, static_cast<size_t>(options.threads));
    const size_t group = std::max<size_t>(1, std::min(options.group, (end - begin) / n_threads));
    std::atomic<size_t> next{begin};
    auto worker = [&] {
      for (size_t i = next.fetch_add(group); i < end; i = next.fetch_add(group))
        run_group(i, std::min(end, i + group));
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    for (size_t i = begin; i < end; ++i) FXT_RETURN_IF_ERROR(statuses[i]);
  }
  return outcomes;
}

}  // namespace fxt::sim
