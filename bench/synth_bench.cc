// Synthetic-market throughput: the generator alone, the generator with the statistics
// collector, and the whole file path (DBN writer, plain and zstd). Counter "events/s".
#include <cstdio>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "data/synth.h"

namespace {

void BM_SynthGenerate(benchmark::State& state) {
  fxt::SynthConfig config;
  fxt::SynthMarket market(config);
  int64_t checksum = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) checksum += market.next().levels[0].bid_px;
  }
  benchmark::DoNotOptimize(checksum);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1024,
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SynthGenerate)->Unit(benchmark::kMicrosecond);

void BM_SynthGenerateWithStats(benchmark::State& state) {
  fxt::SynthConfig config;
  fxt::SynthMarket market(config);
  fxt::MarketStatsCollector collector(config.tick_px);
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) collector.observe(market.next());
  }
  uint64_t trades = collector.finish().trades;
  benchmark::DoNotOptimize(trades);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1024,
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SynthGenerateWithStats)->Unit(benchmark::kMicrosecond);

// The whole `fxt synth` path: both generator passes, the writer, the statistics.
// Arg 0: events; arg 1: 1 = zstd, 0 = plain DBN.
void BM_SynthToFile(benchmark::State& state) {
  fxt::SynthConfig config;
  config.events = static_cast<uint64_t>(state.range(0));
  const bool zstd = state.range(1) != 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            (zstd ? "fxt_synth_bench.dbn.zst" : "fxt_synth_bench.dbn"))
                               .string();
  fxt::SynthStats stats;
  for (auto _ : state) {
    fxt::Status st = fxt::synthesize_market(config, path, &stats, nullptr);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  std::error_code ec;
  state.counters["MB"] = static_cast<double>(std::filesystem::file_size(path, ec)) / 1e6;
  std::filesystem::remove(path, ec);
  state.counters["events/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * config.events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SynthToFile)
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
