// Replay throughput of the simulator (DESIGN §7.1): a ~1M-event synthetic store (synth ->
// DBN mbp-10 -> ingest) replayed with no strategy, with a strategy that does nothing, and
// with one that keeps a bid at the touch (L2 queue work on every event).
// items_per_second = market events (snapshots + trades) per second.
#include <cstdio>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "data/ingest.h"
#include "data/store.h"
#include "data/synth.h"
#include "sim/engine.h"

namespace {
namespace fs = std::filesystem;

// Builds the store once per process; removed at exit.
const std::string& bench_store() {
  static std::string dir = [] {
    const fs::path root =
        fs::temp_directory_path() / ("fxt_replay_bench_" + std::to_string(::getpid()));
    fs::create_directories(root);
    fxt::SynthConfig config;
    config.events = 1'000'000;
    const std::string dbn = (root / "synth.dbn").string();
    fxt::Status st = fxt::synthesize_market(config, dbn, nullptr, nullptr);
    if (!st.ok()) {
      std::fprintf(stderr, "synth: %s\n", st.message().c_str());
      std::exit(1);
    }
    std::vector<std::string> defs;
    auto jobs = fxt::plan_ingest({dbn}, fxt::IngestOptions{}, &defs);
    if (!jobs.ok() || jobs->empty()) {
      std::fprintf(stderr, "plan: %s\n", jobs.status().message().c_str());
      std::exit(1);
    }
    const std::string store = (root / "store").string();
    auto r = fxt::ingest_to_store(jobs->front(), defs, fxt::IngestOptions{}, store);
    if (!r.ok()) {
      std::fprintf(stderr, "ingest: %s\n", r.status().message().c_str());
      std::exit(1);
    }
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("fxt_replay_bench_" + std::to_string(::getpid())),
                     ec);
    });
    return store;
  }();
  return dir;
}

class Idle : public fxt::sim::Strategy {
 public:
  void on_event(const fxt::sim::MarketEvent& e, fxt::sim::StrategyContext& ctx) override {
    (void)ctx;
    seen += e.book->bid_px[0] != fxt::kEmptyPx;
  }
  uint64_t seen = 0;
};

// One lot bid at the touch, requoted when the touch moves.
class TouchBid : public fxt::sim::Strategy {
 public:
  void on_event(const fxt::sim::MarketEvent& e, fxt::sim::StrategyContext& c) override {
    if (e.kind != fxt::sim::EventKind::kSnapshot || !e.book->has_bid()) return;
    if (c.open_orders().empty()) {
      fxt::sim::OrderRequest r;
      r.side = fxt::sim::Side::kBuy;
      r.px = e.book->bid_px[0];
      r.qty = 1;
      c.submit(r);
    } else if (const auto& o = c.open_orders().front();
               o.acknowledged && o.px != e.book->bid_px[0]) {
      c.modify(o.order_id, e.book->bid_px[0], o.qty);
    }
  }
};

void run(benchmark::State& state, fxt::sim::Strategy* (*make)()) {
  const std::string& store = bench_store();
  fxt::sim::SimConfig config;
  config.latency.entry_ns = 50'000;
  config.latency.response_ns = 50'000;
  uint64_t events = 0;
  size_t fills = 0;
  for (auto _ : state) {
    fxt::sim::Strategy* s = make();
    auto r = fxt::sim::run_backtest({store}, config, s);
    delete s;
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    events += r->events;
    fills = r->fills.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["events"] = static_cast<double>(events / state.iterations());
  state.counters["fills"] = static_cast<double>(fills);
}

void BM_ReplayNoStrategy(benchmark::State& state) {
  run(state, []() -> fxt::sim::Strategy* { return nullptr; });
}
void BM_ReplayIdleStrategy(benchmark::State& state) {
  run(state, []() -> fxt::sim::Strategy* { return new Idle; });
}
void BM_ReplayTouchBid(benchmark::State& state) {
  run(state, []() -> fxt::sim::Strategy* { return new TouchBid; });
}
BENCHMARK(BM_ReplayNoStrategy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayIdleStrategy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayTouchBid)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
