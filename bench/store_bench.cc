// Snapshot store throughput: writing, sequential column scans and random access.
// The scan's ceiling is memory bandwidth over the bytes touched (reported as MB/s).
#include <unistd.h>

#include <filesystem>
#include <random>

#include <benchmark/benchmark.h>

#include "data/store.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kRows = 1'000'000;

Snapshot random_snapshot(std::mt19937_64& rng, int64_t ts) {
  Snapshot s;
  s.ts_ns = ts;
  int64_t bid = 5'000'000'000'000 + static_cast<int64_t>(rng() % 100) * 250'000'000;
  for (int i = 0; i < kBookLevels; ++i) {
    s.bid_px[i] = bid - int64_t{i} * 250'000'000;
    s.ask_px[i] = bid + int64_t{i + 1} * 250'000'000;
    s.bid_sz[i] = static_cast<double>(1 + rng() % 50);
    s.ask_sz[i] = static_cast<double>(1 + rng() % 50);
    s.bid_ct[i] = s.ask_ct[i] = 3;
  }
  return s;
}

const std::string& store_dir() {
  static std::string dir = [] {
    std::string d =
        (fs::temp_directory_path() / ("fxt-store-bench-" + std::to_string(::getpid()))).string();
    auto w = StoreWriter::create(d, StoreInfo{});
    std::mt19937_64 rng(1);
    for (uint64_t i = 0; i < kRows; ++i) {
      if (i % 10 == 0) w->on_trade({static_cast<int64_t>(i), 5'000'000'000'000, 1.0, 1});
      w->on_snapshot(random_snapshot(rng, static_cast<int64_t>(i) * 1000));
    }
    if (!w->finish().ok()) std::abort();
    std::atexit([] { fs::remove_all(store_dir()); });
    return d;
  }();
  return dir;
}

void BM_StoreWrite(benchmark::State& state) {
  std::mt19937_64 rng(2);
  std::vector<Snapshot> rows;
  for (int i = 0; i < 100'000; ++i) rows.push_back(random_snapshot(rng, i));
  int round = 0;
  const std::string base = store_dir();  // built before timing starts
  for (auto _ : state) {
    std::string d = base + "-w" + std::to_string(round++);
    auto w = StoreWriter::create(d, StoreInfo{});
    for (const auto& s : rows) w->on_snapshot(s);
    if (!w->finish().ok()) state.SkipWithError("finish failed");
    state.PauseTiming();
    fs::remove_all(d);
    state.ResumeTiming();
  }
  state.counters["snapshots/s"] =
      benchmark::Counter(static_cast<double>(rows.size()) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StoreWrite)->Unit(benchmark::kMillisecond);

// Open with CRC verification of every column (what `fxt inspect` and training do).
void BM_StoreOpenVerified(benchmark::State& state) {
  const std::string& d = store_dir();
  for (auto _ : state) {
    auto r = StoreReader::open(d, true);
    bool ok = r.ok();
    benchmark::DoNotOptimize(ok);
  }
  state.counters["snapshots/s"] =
      benchmark::Counter(static_cast<double>(kRows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StoreOpenVerified)->Unit(benchmark::kMillisecond);

// A sequential scan touching the top of book and the flow columns of every snapshot.
void BM_StoreScanTopOfBook(benchmark::State& state) {
  auto r = StoreReader::open(store_dir(), false);
  for (auto _ : state) {
    double acc = 0;
    for (uint64_t i = 0; i < r->size(); ++i) {
      acc += static_cast<double>(r->ask_px.row(i)[0] - r->bid_px.row(i)[0]) * r->bid_sz.row(i)[0] +
             r->signed_volume[i];
    }
    benchmark::DoNotOptimize(acc);
  }
  state.counters["snapshots/s"] =
      benchmark::Counter(static_cast<double>(kRows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StoreScanTopOfBook)->Unit(benchmark::kMillisecond);

// Full snapshots (all 10 levels, ~400 bytes each) in order, and at random positions.
void BM_StoreScanFullSnapshots(benchmark::State& state) {
  auto r = StoreReader::open(store_dir(), false);
  const bool random = state.range(0) != 0;
  std::mt19937_64 rng(3);
  for (auto _ : state) {
    double acc = 0;
    for (uint64_t i = 0; i < r->size(); ++i) {
      uint64_t k = random ? rng() % r->size() : i;
      Snapshot s = r->snapshot(k);
      acc += s.bid_sz[9] + s.ask_sz[9];
    }
    benchmark::DoNotOptimize(acc);
  }
  state.counters["snapshots/s"] =
      benchmark::Counter(static_cast<double>(kRows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.SetLabel(random ? "random access" : "sequential");
}
BENCHMARK(BM_StoreScanFullSnapshots)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fxt

BENCHMARK_MAIN();
