// MBO replay speed: records already decoded in memory, replayed through MboBook into a
// no-op sink (snapshot building included). Target: >= 5 M events/s on one core.
//   BM_ReplayEsFile   the real ES MBO day 2023-12-25 (68,792 records; skipped if absent)
//   BM_ReplaySynthetic a generated stream around a moving mid, F_LAST on every record
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "data/mbo_book.h"

namespace fxt {
namespace {

class NullSink : public BookSink {
 public:
  // Non-const copies: newer Google Benchmark deprecates DoNotOptimize on const values.
  void on_snapshot(const Snapshot& s) override { sink(s.bid_px[0]); }
  void on_trade(const Trade& t) override { sink(t.px); }
  void on_order_event(const OrderEvent& e) override { sink(e.px); }

 private:
  static void sink(int64_t v) { benchmark::DoNotOptimize(v); }
};

std::vector<dbn::MboMsg> load_mbo(const std::string& path) {
  std::vector<dbn::MboMsg> out;
  auto reader = dbn::Reader::open(path);
  if (!reader.ok()) return out;
  dbn::RecordRef rec;
  while (reader->next(&rec)) {
    if (rec.rtype() == dbn::kRTypeMbo) out.push_back(rec.as<dbn::MboMsg>());
  }
  return out;
}

// Adds at a geometric distance from a random-walk mid, cancels and modifies of random
// live orders, and trades (T, F, then the cancel of the filled order) at the touch.
std::vector<dbn::MboMsg> synthetic_stream(size_t n) {
  std::mt19937_64 rng(42);
  std::geometric_distribution<int> depth(0.15);
  std::vector<dbn::MboMsg> out;
  out.reserve(n);
  struct Live {
    uint64_t id;
    int64_t px;
    uint32_t size;
    char side;
  };
  std::vector<Live> live;
  const int64_t tick = 250'000'000;
  int64_t mid_ticks = 20'000;  // mid between bid (mid - 1) and ask (mid)
  uint64_t next_id = 1, ts = 1'700'000'000'000'000'000;
  auto push = [&](char action, char side, uint64_t id, int64_t px, uint32_t size, uint8_t flags) {
    dbn::MboMsg m{};
    dbn::init_header(&m, dbn::kRTypeMbo, 1, 1, ts);
    m.order_id = id;
    m.price = px;
    m.size = size;
    m.flags = flags;
    m.action = action;
    m.side = side;
    m.ts_recv = ts + 1000;
    out.push_back(m);
    ts += 1000;
  };
  while (out.size() < n) {
    if (rng() % 64 == 0) mid_ticks += rng() % 2 ? 1 : -1;
    int op = static_cast<int>(rng() % 100);
    if (op < 45 || live.size() < 2000) {
      char side = rng() % 2 ? 'B' : 'A';
      int d = depth(rng);
      int64_t px = (side == 'B' ? mid_ticks - 1 - d : mid_ticks + d) * tick;
      uint32_t size = 1 + static_cast<uint32_t>(rng() % 10);
      push('A', side, next_id, px, size, dbn::kFLast);
      live.push_back({next_id++, px, size, side});
    } else {
      size_t k = rng() % live.size();
      Live& o = live[k];
      if (op < 85) {
        push('C', o.side, o.id, o.px, o.size, dbn::kFLast);
        live[k] = live.back();
        live.pop_back();
      } else if (op < 95) {
        uint32_t size = 1 + static_cast<uint32_t>(rng() % 10);
        push('M', o.side, o.id, o.px, size, dbn::kFLast);
        o.size = size;
      } else {
        // A trade against this order: aggressor on the other side.
        push('T', o.side == 'B' ? 'A' : 'B', 0, o.px, o.size, 0);
        push('F', o.side, o.id, o.px, o.size, 0);
        push('C', o.side, o.id, o.px, o.size, dbn::kFLast);
        live[k] = live.back();
        live.pop_back();
      }
    }
  }
  return out;
}

void replay(benchmark::State& state, const std::vector<dbn::MboMsg>& msgs) {
  NullSink sink;
  uint64_t snapshots = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto book = std::make_unique<MboBook>(&sink);
    state.ResumeTiming();
    for (const dbn::MboMsg& m : msgs) book->apply(m);
    book->finish();
    snapshots += book->stats().snapshots;
    state.PauseTiming();
    book.reset();
    state.ResumeTiming();
  }
  const double events = static_cast<double>(msgs.size()) * static_cast<double>(state.iterations());
  state.counters["events/s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["snapshots/s"] =
      benchmark::Counter(static_cast<double>(snapshots), benchmark::Counter::kIsRate);
}

void BM_ReplayEsFile(benchmark::State& state) {
  static const std::vector<dbn::MboMsg> msgs =
      load_mbo(std::string(FXT_SHARED_DATA) +
               "/nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231225.mbo.dbn.zst");
  if (msgs.empty()) {
    state.SkipWithError("ES MBO file absent or unreadable");
    return;
  }
  replay(state, msgs);
}
BENCHMARK(BM_ReplayEsFile)->Unit(benchmark::kMillisecond);

void BM_ReplaySynthetic(benchmark::State& state) {
  static const std::vector<dbn::MboMsg> msgs = synthetic_stream(2'000'000);
  replay(state, msgs);
}
BENCHMARK(BM_ReplaySynthetic)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fxt

BENCHMARK_MAIN();
