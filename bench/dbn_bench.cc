// DBN decode throughput: plain (memory-mapped, zero copy) and zstd-compressed MBP-10,
// each next to its ceiling: a memcpy of the same mapped bytes, and libzstd decompressing the
// same file into a discarded buffer (what `zstd -dc > /dev/null` does).
//
// The input is generated once (2M MBP-10 records of a random-walk book, written with
// dbn::Writer) into $TMPDIR or /tmp and reused by later runs. FXT_BENCH_FILE=<path> decodes
// that file instead (any DBN container the reader takes); the paths used are printed first so
// scripts can time `zstd -dc` on the very same file.
#include <zstd.h>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "data/dbn.h"

namespace {

using namespace fxt;

constexpr int64_t kRecords = 2'000'000;

struct Inputs {
  std::string plain;  // empty when FXT_BENCH_FILE names a compressed file
  std::string zst;
  std::string custom;  // FXT_BENCH_FILE
};

void die(const Status& s) {
  fmt::print(stderr, "dbn_bench: {}\n", s.message());
  std::exit(1);
}

// A plausible MBP-10 stream: a random-walk mid, ten levels each side, varying sizes and
// counts, mostly single-level updates, ~1 us apart.
Status generate(const std::string& path, bool zstd) {
  dbn::Metadata md;
  md.dataset = "GLBX.MDP3";
  md.schema = dbn::Schema::kMbp10;
  md.start = 1609160400000000000ull;
  md.end = md.start + 3600ull * 1000000000ull;
  md.stype_in = 1;
  md.stype_out = 0;
  md.symbols = {"ESH1"};
  auto w = dbn::Writer::create(path, md, dbn::WriterOptions{zstd, 3, 3});
  if (!w.ok()) return w.status();
  std::mt19937_64 rng(7);
  dbn::Mbp10Msg m{};
  const int64_t tick = 250000000;
  int64_t mid_ticks = 14890;  // 3722.50
  uint64_t ts = md.start;
  uint32_t seq = 1170000;
  for (int64_t i = 0; i < kRecords; ++i) {
    uint64_t r = rng();
    if (r % 16 == 0) mid_ticks += (r >> 8) % 2 ? 1 : -1;
    ts += 200 + (r >> 16) % 2000;
    dbn::init_header(&m, dbn::kRTypeMbp10, 1, 5482, ts);
    for (int l = 0; l < 10; ++l) {
      uint64_t q = rng();
      m.levels[l].bid_px = (mid_ticks - 1 - l) * tick;
      m.levels[l].ask_px = (mid_ticks + l) * tick;
      m.levels[l].bid_sz = static_cast<uint32_t>(1 + q % 60);
      m.levels[l].ask_sz = static_cast<uint32_t>(1 + (q >> 8) % 60);
      m.levels[l].bid_ct = static_cast<uint32_t>(1 + (q >> 16) % 25);
      m.levels[l].ask_ct = static_cast<uint32_t>(1 + (q >> 24) % 25);
    }
    int depth = static_cast<int>((r >> 32) % 10);
    bool bid = (r >> 40) % 2 != 0;
    m.depth = static_cast<uint8_t>(depth);
    m.side = bid ? 'B' : 'A';
    m.action = "ACM"[(r >> 41) % 3];
    m.price = bid ? m.levels[depth].bid_px : m.levels[depth].ask_px;
    m.size = static_cast<uint32_t>(1 + (r >> 44) % 10);
    m.flags = dbn::kFLast;
    m.ts_recv = ts + 150000 + (r >> 48) % 100000;
    m.ts_in_delta = static_cast<int32_t>(15000 + (r >> 50) % 10000);
    m.sequence = seq++;
    Status s = w->write(&m);
    if (!s.ok()) return s;
  }
  return w->close();
}

const Inputs& inputs() {
  static const Inputs in = [] {
    Inputs i;
    if (const char* f = std::getenv("FXT_BENCH_FILE"); f != nullptr && *f != '\0') {
      i.custom = f;
      fmt::print("dbn_bench: FXT_BENCH_FILE {}\n", i.custom);
      return i;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    i.plain = dir + "/fxt-dbn-bench-mbp10-2m.dbn";
    i.zst = i.plain + ".zst";
    for (const std::string* p : {&i.plain, &i.zst}) {
      std::error_code ec;
      if (!std::filesystem::exists(*p, ec)) {
        fmt::print("dbn_bench: generating {}\n", *p);
        Status s = generate(*p, p == &i.zst);
        if (!s.ok()) die(s);
      }
    }
    fmt::print("dbn_bench: plain file {}\ndbn_bench: zstd file {}\n", i.plain, i.zst);
    return i;
  }();
  return in;
}

void report(benchmark::State& state, int64_t records, int64_t bytes) {
  state.SetBytesProcessed(bytes * static_cast<int64_t>(state.iterations()));
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(records) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["records"] = static_cast<double>(records);
}

// Decodes a whole file and reads the fields a book builder would.
void decode(benchmark::State& state, const std::string& path) {
  int64_t records = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto r = dbn::Reader::open(path);
    if (!r.ok()) die(r.status());
    dbn::RecordRef rec;
    int64_t n = 0;
    int64_t sum = 0;
    while (r->next(&rec)) {
      ++n;
      sum += static_cast<int64_t>(rec.header->ts_event);
      if (rec.rtype() == dbn::kRTypeMbp10) {
        const auto& m = rec.as<dbn::Mbp10Msg>();
        sum += m.price + m.levels[0].bid_px + m.levels[9].ask_sz;
      }
    }
    if (!r->status().ok()) die(r->status());
    benchmark::DoNotOptimize(sum);
    records = n;
    bytes = r->bytes_consumed();
  }
  report(state, records, static_cast<int64_t>(bytes));
}

void BM_DecodePlain(benchmark::State& state) {
  decode(state, inputs().plain);
}

void BM_DecodeZstd(benchmark::State& state) {
  decode(state, inputs().zst);
}

void BM_DecodeFile(benchmark::State& state) {
  decode(state, inputs().custom);
}

// Ceiling for plain decoding: map the file and memcpy every byte through a 1 MiB buffer.
void BM_MemcpyCeiling(benchmark::State& state) {
  std::vector<uint8_t> buf(1 << 20);
  size_t size = 0;
  for (auto _ : state) {
    auto f = MappedFile::open(inputs().plain);
    if (!f.ok()) die(f.status());
    size = f->size();
    for (size_t off = 0; off < size; off += buf.size()) {
      size_t n = std::min(buf.size(), size - off);
      std::memcpy(buf.data(), f->data() + off, n);
      benchmark::ClobberMemory();
    }
  }
  report(state, kRecords, static_cast<int64_t>(size));
}

// Ceiling for zstd decoding: libzstd streaming the same file into a discarded 4 MiB buffer.
void zstd_only(benchmark::State& state, const std::string& path, int64_t records) {
  std::vector<uint8_t> buf(4 << 20);
  uint64_t out_bytes = 0;
  for (auto _ : state) {
    auto f = MappedFile::open(path);
    if (!f.ok()) die(f.status());
    ZSTD_DCtx* d = ZSTD_createDCtx();
    ZSTD_inBuffer in{f->data(), f->size(), 0};
    out_bytes = 0;
    while (in.pos < in.size) {
      ZSTD_outBuffer out{buf.data(), buf.size(), 0};
      size_t r = ZSTD_decompressStream(d, &out, &in);
      if (ZSTD_isError(r)) die(InvalidInput("{}: {}", path, ZSTD_getErrorName(r)));
      out_bytes += out.pos;
      benchmark::ClobberMemory();
    }
    ZSTD_freeDCtx(d);
  }
  report(state, records, static_cast<int64_t>(out_bytes));
}

void BM_ZstdDecompressOnly(benchmark::State& state) {
  zstd_only(state, inputs().zst, kRecords);
}

int64_t count_records(const std::string& path) {
  auto r = dbn::Reader::open(path);
  if (!r.ok()) die(r.status());
  dbn::RecordRef rec;
  int64_t n = 0;
  while (r->next(&rec)) ++n;
  if (!r->status().ok()) die(r->status());
  return n;
}

void register_all() {
  const Inputs& in = inputs();
  if (!in.custom.empty()) {
    benchmark::RegisterBenchmark("BM_DecodeFile", BM_DecodeFile)
        ->Unit(benchmark::kMillisecond)
        ->MinWarmUpTime(0.5)
        ->MinTime(2.0);
    uint32_t magic = 0;
    if (auto f = MappedFile::open(in.custom); f.ok() && f->size() >= 4) {
      std::memcpy(&magic, f->data(), 4);
    }
    if (magic == 0xFD2FB528) {
      int64_t n = count_records(in.custom);
      benchmark::RegisterBenchmark("BM_ZstdDecompressOnly",
                                   [n](benchmark::State& s) { zstd_only(s, inputs().custom, n); })
          ->Unit(benchmark::kMillisecond)
          ->MinWarmUpTime(0.5)
          ->MinTime(2.0);
    }
    return;
  }
  benchmark::RegisterBenchmark("BM_MemcpyCeiling", BM_MemcpyCeiling)
      ->Unit(benchmark::kMillisecond)
      ->MinWarmUpTime(0.5)
      ->MinTime(2.0);
  benchmark::RegisterBenchmark("BM_DecodePlain", BM_DecodePlain)
      ->Unit(benchmark::kMillisecond)
      ->MinWarmUpTime(0.5)
      ->MinTime(2.0);
  benchmark::RegisterBenchmark("BM_ZstdDecompressOnly", BM_ZstdDecompressOnly)
      ->Unit(benchmark::kMillisecond)
      ->MinWarmUpTime(0.5)
      ->MinTime(2.0);
  benchmark::RegisterBenchmark("BM_DecodeZstd", BM_DecodeZstd)
      ->Unit(benchmark::kMillisecond)
      ->MinWarmUpTime(0.5)
      ->MinTime(2.0);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
