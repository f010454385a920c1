// Backtest replay throughput (DESIGN §7): events/s of run_backtest over a ~1M-event synthetic
// store with no strategy, and with the `signal` strategy reading precomputed predictions
// (deterministic pseudo-probabilities) with market and passive entry; and the predictions CSV
// reader's rows/s. The store and CSV are built once under the temp directory and reused
// (FXT_BENCH_EVENTS overrides the 1,000,000 events). Counter "events/s" per core.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "core/file_util.h"
#include "core/random.h"
#include "data/ingest.h"
#include "data/store.h"
#include "data/synth.h"
#include "sim/engine.h"
#include "sim/strategy_signal.h"

namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string store_dir, predictions;
  std::shared_ptr<const fxt::sim::SignalSeries> series;
  std::string error;
};

// p = 0.5 + 0.17·sin(2π i / 20000) + U(−0.005, 0.005): p sweeps through all eight levels every
// 20,000 snapshots (flickering near each threshold), so the strategy trades throughout the replay.
fxt::Status write_predictions(const fxt::StoreReader& store, const std::string& path) {
  FXT_ASSIGN_OR_RETURN(fxt::BufferedFileWriter w, fxt::BufferedFileWriter::create(path));
  FXT_RETURN_IF_ERROR(w.write("ts_ns,p_h100\n"));
  fxt::Rng rng(7);
  std::string line;
  for (uint64_t i = 0; i < store.size(); ++i) {
    const double p = 0.5 + 0.17 * std::sin(2 * M_PI * static_cast<double>(i) / 20000.0) +
                     0.01 * (rng.unit() - 0.5);
    line = fmt::format("{},{:.6f}\n", store.ts_ns[i], p);
    FXT_RETURN_IF_ERROR(w.write(line));
  }
  return w.commit();
}

fxt::Status build(Fixture* f) {
  uint64_t events = 1'000'000;
  if (const char* e = std::getenv("FXT_BENCH_EVENTS")) events = std::strtoull(e, nullptr, 10);
  const fs::path dir = fs::temp_directory_path() / fmt::format("fxt_backtest_bench_{}", events);
  fs::create_directories(dir);
  f->store_dir = (dir / "store").string();
  f->predictions = (dir / "predictions.csv").string();
  if (!fs::exists(f->store_dir + "/meta.json")) {
    fxt::SynthConfig config;
    config.events = events;
    const std::string dbn = (dir / "synth.dbn.zst").string();
    FXT_RETURN_IF_ERROR(fxt::synthesize_market(config, dbn, nullptr));
    fxt::IngestJob job;
    job.format = fxt::SourceFormat::kDbn;
    job.files = {dbn};
    job.name = "store";
    std::error_code ec;
    fs::remove_all(f->store_dir, ec);
    auto r = fxt::ingest_to_store(job, {}, fxt::IngestOptions{}, f->store_dir);
    if (!r.ok()) return r.status();
    fs::remove(f->predictions, ec);
  }
  FXT_ASSIGN_OR_RETURN(fxt::StoreReader store, fxt::StoreReader::open(f->store_dir));
  if (!fs::exists(f->predictions)) FXT_RETURN_IF_ERROR(write_predictions(store, f->predictions));
  auto series = std::make_shared<fxt::sim::SignalSeries>();
  FXT_ASSIGN_OR_RETURN(std::vector<float> p,
                       fxt::sim::load_predictions(f->predictions, 100, store, &series->horizon));
  series->per_store.push_back(std::move(p));
  f->series = std::move(series);
  return fxt::Status::Ok();
}

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    fxt::Status st = build(&x);
    if (!st.ok()) x.error = st.message();
    return x;
  }();
  return f;
}

// Arg: 0 = no strategy (the market alone), 1 = signal with market entry, 2 = passive entry.
void BM_BacktestReplay(benchmark::State& state) {
  const Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  fxt::sim::SimConfig config;
  config.latency.feed_ns = 1'000'000;
  config.latency.entry_ns = 2'000'000;
  config.latency.response_ns = 2'000'000;
  fxt::sim::SignalConfig sc;
  sc.passive = state.range(0) == 2;
  uint64_t events = 0, fills = 0;
  for (auto _ : state) {
    std::unique_ptr<fxt::sim::Strategy> strategy;
    if (state.range(0) > 0) strategy = std::make_unique<fxt::sim::SignalStrategy>(sc, f.series);
    auto r = fxt::sim::run_backtest({f.store_dir}, config, strategy.get());
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    events += r->events;
    fills = r->fills.size();
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events / state.iterations());
  state.counters["fills"] = static_cast<double>(fills);
}
BENCHMARK(BM_BacktestReplay)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadPredictions(benchmark::State& state) {
  const Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  auto store = fxt::StoreReader::open(f.store_dir, false);
  if (!store.ok()) {
    state.SkipWithError(store.status().message().c_str());
    return;
  }
  uint64_t rows = 0;
  for (auto _ : state) {
    auto p = fxt::sim::load_predictions(f.predictions, 100, *store);
    if (!p.ok()) {
      state.SkipWithError(p.status().message().c_str());
      return;
    }
    rows += p->size();
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LoadPredictions)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
