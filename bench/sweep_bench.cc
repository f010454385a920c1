// Sweep lanes throughput (DESIGN §7.5, docs/SWEEP.md): lane-events/s over a synthetic store
// (FXT_BENCH_EVENTS, default 200,000 book events) with `mm` lanes that differ in gamma and
// queue model. BM_CpuLanes: run_lanes (the CPU engine), Args (lanes, threads, group): group =
// the lanes a thread advances in lockstep (LaneOptions::group; 1: one lane at a time, as the
// engine ran before groups); the single lane, one thread row is the CPU simulator's rate; the
// target is N lanes on T threads at >= 0.8 x T x that rate. BM_GpuLanes (CUDA builds with a
// GPU): run_gpu_lanes on the device, Args (lanes, capture, max events): capture 0 = the lanes
// alone (final account and counters), 1 = the sweep's path (every fill, order and equity row
// back to the host and each lane's stats.json computed); max events > 0 replays only the
// stream's first rows (for the widest N, to bound the run; the counter says how many).
// Counter "lane-events/s".
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "data/ingest.h"
#include "data/synth.h"
#include "sim/engine.h"
#include "sim/gpu_lanes.h"
#include "sim/lanes.h"

namespace {

namespace fs = std::filesystem;

struct Fixture {
  fxt::sim::LaneMarket market;
  std::string error;
};

fxt::Status build(Fixture* f) {
  uint64_t events = 200'000;
  if (const char* e = std::getenv("FXT_BENCH_EVENTS")) events = std::strtoull(e, nullptr, 10);
  const fs::path dir = fs::temp_directory_path() / fmt::format("fxt_sweep_bench_{}", events);
  fs::create_directories(dir);
  const std::string store = (dir / "store").string();
  if (!fs::exists(store + "/meta.json")) {
    fxt::SynthConfig config;
    config.events = events;
    const std::string dbn = (dir / "synth.dbn.zst").string();
    FXT_RETURN_IF_ERROR(fxt::synthesize_market(config, dbn, nullptr));
    fxt::IngestJob job;
    job.format = fxt::SourceFormat::kDbn;
    job.files = {dbn};
    job.name = "store";
    std::error_code ec;
    fs::remove_all(store, ec);
    auto r = fxt::ingest_to_store(job, {}, fxt::IngestOptions{}, store);
    if (!r.ok()) return r.status();
  }
  FXT_ASSIGN_OR_RETURN(f->market, fxt::sim::open_lane_market({store}, {}, 0));
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

std::vector<fxt::sim::Lane> mm_lanes(size_t n) {
  static const char* kQueues[] = {"risk-averse", "power:2", "log"};
  std::vector<fxt::sim::Lane> lanes(n);
  for (size_t i = 0; i < n; ++i) {
    fxt::sim::Lane& l = lanes[i];
    l.strategy = "mm";
    l.params = {fmt::format("gamma={}", 0.0005 * static_cast<double>(1 + i % 8))};
    l.sim.queue = *fxt::sim::parse_queue_model(kQueues[i % 3]);
    l.sim.latency.feed_ns = 500'000;
    l.sim.latency.entry_ns = l.sim.latency.response_ns = 1'000'000;
    l.sim.fees.maker_bps = -0.2;
    l.sim.fees.taker_bps = 0.5;
  }
  return lanes;
}

void BM_CpuLanes(benchmark::State& state) {
  const Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const std::vector<fxt::sim::Lane> lanes = mm_lanes(static_cast<size_t>(state.range(0)));
  fxt::sim::LaneOptions options;
  options.threads = static_cast<int>(state.range(1));
  options.group = static_cast<size_t>(state.range(2));
  uint64_t lane_events = 0, fills = 0;
  for (auto _ : state) {
    auto r = fxt::sim::run_lanes(f.market, lanes, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    for (const fxt::sim::LaneOutcome& o : *r) {
      lane_events += o.events;
      fills += o.fills;
    }
  }
  state.counters["lane-events/s"] =
      benchmark::Counter(static_cast<double>(lane_events), benchmark::Counter::kIsRate);
  state.counters["fills/lane"] =
      static_cast<double>(fills) / static_cast<double>(lanes.size() * state.iterations());
}
BENCHMARK(BM_CpuLanes)
    ->Args({1, 1, 1})
    ->Args({2, 1, 1})
    ->Args({2, 1, 2})
    ->Args({2, 2, 1})
    ->Args({8, 1, 1})
    ->Args({8, 1, 8})
    ->Args({8, 2, 1})
    ->Args({8, 2, 4})
    ->Args({32, 2, 1})
    ->Args({32, 2, 8})
    ->Args({16, 16, 1})  // the wider hosts (the GPU machine: 16 cores)
    ->Args({64, 16, 1})
    ->Args({64, 16, 4})
    ->Args({128, 16, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The GPU lanes' code (sim/lane_engine.h) on host threads: Args (lanes, threads), counters
// only. The same lanes as BM_CpuLanes: the two engines' per-lane rates side by side.
void BM_LaneEngineOnHost(benchmark::State& state) {
  const Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const std::vector<fxt::sim::Lane> lanes = mm_lanes(static_cast<size_t>(state.range(0)));
  fxt::sim::GpuLaneOptions options;
  options.on_device = false;
  options.capture = false;
  options.threads = static_cast<int>(state.range(1));
  uint64_t lane_events = 0;
  double batch_seconds = 0;
  fxt::sim::GpuLaneReport report;
  for (auto _ : state) {
    auto r = fxt::sim::run_gpu_lanes(f.market, lanes, options, &report);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    for (const fxt::sim::LaneOutcome& o : *r) lane_events += o.events;
    batch_seconds += report.kernel_seconds;
  }
  state.counters["lane-events/s"] =
      benchmark::Counter(static_cast<double>(lane_events), benchmark::Counter::kIsRate);
  state.counters["batch-lane-events/s"] =
      batch_seconds > 0 ? static_cast<double>(lane_events) / batch_seconds : 0.0;
}
BENCHMARK(BM_LaneEngineOnHost)
    ->Args({1, 1})
    ->Args({8, 2})
    ->Args({64, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_GpuLanes(benchmark::State& state) {
  if (!fxt::sim::gpu_lanes_available()) {
    state.SkipWithError("no CUDA device (or a build without CUDA)");
    return;
  }
  const Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const size_t n = static_cast<size_t>(state.range(0));
  const bool capture = state.range(1) != 0;
  const uint64_t max_events = static_cast<uint64_t>(state.range(2));
  const std::vector<fxt::sim::Lane> lanes = mm_lanes(n);
  fxt::sim::GpuLaneOptions options;
  options.capture = capture;
  options.threads = 16;
  uint64_t lane_events = 0, fills = 0, events = 0;
  double kernel_seconds = 0;
  fxt::sim::GpuLaneReport report;
  for (auto _ : state) {
    auto r = fxt::sim::run_gpu_lanes(f.market, lanes, options, &report, {}, max_events);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    for (const fxt::sim::LaneOutcome& o : *r) {
      lane_events += o.events;
      fills += o.fills;
      events = o.events;
    }
    kernel_seconds += report.kernel_seconds;
  }
  // The batches alone (the stream built and uploaded once before them is left out).
  state.counters["batch-lane-events/s"] =
      kernel_seconds > 0 ? static_cast<double>(lane_events) / kernel_seconds : 0.0;
  state.counters["lane-events/s"] =
      benchmark::Counter(static_cast<double>(lane_events), benchmark::Counter::kIsRate);
  state.counters["fills/lane"] =
      static_cast<double>(fills) / static_cast<double>(lanes.size() * state.iterations());
  state.counters["events"] = static_cast<double>(events);
  state.counters["bytes/lane"] = static_cast<double>(report.bytes_per_lane);
  state.counters["batches"] = static_cast<double>(report.batches);
  state.counters["cpu_fallback"] = static_cast<double>(report.cpu_fallback_lanes);
}
BENCHMARK(BM_GpuLanes)
    ->Args({1024, 0, 0})  // the target: >= 1,000 parameter sets over the whole store
    ->Args({1, 0, 1'000'000})
    ->Args({64, 0, 1'000'000})
    ->Args({4096, 0, 1'000'000})
    ->Args({16384, 0, 1'000'000})
    ->Args({65536, 0, 1'000'000})
    ->Args({1024, 1, 2'000'000})  // the sweep's path: rows back and stats per lane
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
