#include "data/store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/civil_date.h"
#include "core/fault.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/temp_files.h"

namespace fxt {
namespace fs = std::filesystem;

namespace {

// The fixed set of column files. Widths are values per row.
struct ColumnSpec {
  const char* name;
  const char* dtype;
  int elem_bytes;
  int width;
  const char* table;  // "snapshots", "trades" or "events": which row count applies
};

constexpr ColumnSpec kColumns[] = {
    {"ts_ns", "i64", 8, 1, "snapshots"},
    {"ts_alt_ns", "i64", 8, 1, "snapshots"},
    {"bid_px", "i64", 8, kBookLevels, "snapshots"},
    {"ask_px", "i64", 8, kBookLevels, "snapshots"},
    {"bid_sz", "f64", 8, kBookLevels, "snapshots"},
    {"ask_sz", "f64", 8, kBookLevels, "snapshots"},
    {"bid_ct", "u32", 4, kBookLevels, "snapshots"},
    {"ask_ct", "u32", 4, kBookLevels, "snapshots"},
    {"flags", "u8", 1, 1, "snapshots"},
    {"trade_count", "u64", 8, 1, "snapshots"},
    {"signed_volume", "f64", 8, 1, "snapshots"},
    {"trade_ts_ns", "i64", 8, 1, "trades"},
    {"trade_px", "i64", 8, 1, "trades"},
    {"trade_sz", "f64", 8, 1, "trades"},
    {"trade_side", "i8", 1, 1, "trades"},
    {"trade_snapshot", "u64", 8, 1, "trades"},
    {"event_ts_ns", "i64", 8, 1, "events"},
    {"event_order_id", "u64", 8, 1, "events"},
    {"event_px", "i64", 8, 1, "events"},
    {"event_sz", "f64", 8, 1, "events"},
    {"event_action", "u8", 1, 1, "events"},
    {"event_side", "i8", 1, 1, "events"},
    {"event_flags", "u8", 1, 1, "events"},
    {"event_snapshot", "u64", 8, 1, "events"},
};
constexpr int kNumColumns = static_cast<int>(std::size(kColumns));

enum ColumnIndex {
  kTs,
  kTsAlt,
  kBidPx,
  kAskPx,
  kBidSz,
  kAskSz,
  kBidCt,
  kAskCt,
  kFlags,
  kTradeCount,
  kSignedVolume,
  kTradeTs,
  kTradePx,
  kTradeSz,
  kTradeSide,
  kTradeSnapshot,
  kEventTs,
  kEventOrderId,
  kEventPx,
  kEventSz,
  kEventAction,
  kEventSide,
  kEventFlags,
  kEventSnapshot,
};

std::string column_file(const std::string& dir, const char* name) {
  return dir + "/" + name + ".bin";
}

std::string utc_string(int64_t ts_ns) {
  return ts_ns <= 0 ? std::string() : utc_text(ts_ns, 9);
}

// Tick rule (DESIGN §2.3) between consecutive snapshots: the signed volume that the
// change of the top of book implies, and how many sides contributed. A lower bound.
std::pair<double, int> tick_rule(const Snapshot& prev, const Snapshot& cur) {
  double volume = 0;
  int trades = 0;
  if (prev.has_ask() && cur.ask_px[0] != kEmptyPx) {
    if (cur.ask_px[0] == prev.ask_px[0] && cur.ask_sz[0] < prev.ask_sz[0]) {
      volume += prev.ask_sz[0] - cur.ask_sz[0];
      ++trades;
    } else if (cur.ask_px[0] > prev.ask_px[0]) {
      volume += prev.ask_sz[0];
      ++trades;
    }
  }
  if (prev.has_bid() && cur.bid_px[0] != kEmptyPx) {
    if (cur.bid_px[0] == prev.bid_px[0] && cur.bid_sz[0] < prev.bid_sz[0]) {
      volume -= prev.bid_sz[0] - cur.bid_sz[0];
      ++trades;
    } else if (cur.bid_px[0] < prev.bid_px[0]) {
      volume -= prev.bid_sz[0];
      ++trades;
    }
  }
  return {volume, trades};
}

}  // namespace

// ---- writer -------------------------------------------------------------------

struct StoreWriter::Impl {
  std::string dir, tmp_dir;
  StoreInfo info;
  nlohmann::json source_stats = nlohmann::json::object();
  BufferedFileWriter columns[kNumColumns];
  // Tick-rule flow is written beside the trade-based flow; finish() keeps the one
  // that applies (trades when the source had any, else the tick rule).
  BufferedFileWriter rule_count, rule_volume;
  Status error;
  uint64_t n = 0, m = 0, e = 0;
  uint64_t cum_trades = 0, rule_cum_trades = 0;
  double cum_volume = 0, rule_cum_volume = 0;
  uint64_t pending_trades = 0;
  double pending_volume = 0;
  Snapshot prev;
  int64_t first_ts = 0, last_ts = 0;
  uint64_t crossed = 0, locked = 0, snapshot_run = 0, maybe_bad = 0, bad_ts = 0;
  uint64_t non_monotonic_ts = 0;
  int64_t min_level_gap = 0;  // smallest positive price difference between adjacent levels

  void write(int col, const void* data, size_t bytes) {
    if (!error.ok()) return;
    Status s = columns[col].write(data, bytes);
    if (!s.ok()) error = s;
  }
  void note_gap(int64_t a, int64_t b) {
    if (a == kEmptyPx || b == kEmptyPx) return;
    int64_t d = b > a ? b - a : a - b;
    if (d > 0 && (min_level_gap == 0 || d < min_level_gap)) min_level_gap = d;
  }
};

StoreWriter::StoreWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StoreWriter::~StoreWriter() {
  if (impl_ && !impl_->tmp_dir.empty()) {
    // Not finished: the temporary directory is removed so nothing half-written remains.
    std::error_code ec;
    for (auto& c : impl_->columns) c = BufferedFileWriter();
    impl_->rule_count = BufferedFileWriter();
    impl_->rule_volume = BufferedFileWriter();
    fs::remove_all(impl_->tmp_dir, ec);
    unregister_temp_path(impl_->tmp_dir);
  }
}
StoreWriter::StoreWriter(StoreWriter&&) noexcept = default;
StoreWriter& StoreWriter::operator=(StoreWriter&&) noexcept = default;

Result<StoreWriter> StoreWriter::create(const std::string& dir, StoreInfo info) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    return UsageError(
        "{}: already exists; stores are immutable (choose another --out or remove it)", dir);
  }
  fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) return IoError("{}: cannot create directory: {}", parent.string(), ec.message());
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->tmp_dir = temp_name(dir);
  remove_stale_temps(dir);  // a killed ingest's directory (core/temp_files.h)
  register_temp_path(impl->tmp_dir);
  impl->info = std::move(info);
  fs::remove_all(impl->tmp_dir, ec);
  fs::create_directories(impl->tmp_dir, ec);
  if (ec) return IoError("{}: cannot create directory: {}", impl->tmp_dir, ec.message());
  for (int i = 0; i < kNumColumns; ++i) {
    FXT_ASSIGN_OR_RETURN(impl->columns[i],
                         BufferedFileWriter::create(column_file(impl->tmp_dir, kColumns[i].name),
                                                    /*atomic=*/false));
  }
  FXT_ASSIGN_OR_RETURN(impl->rule_count,
                       BufferedFileWriter::create(impl->tmp_dir + "/.rule_count", false));
  FXT_ASSIGN_OR_RETURN(impl->rule_volume,
                       BufferedFileWriter::create(impl->tmp_dir + "/.rule_volume", false));
  return StoreWriter(std::move(impl));
}

nlohmann::json& StoreWriter::source_stats() {
  return impl_->source_stats;
}
StoreInfo& StoreWriter::info() {
  return impl_->info;
}
uint64_t StoreWriter::snapshot_count() const {
  return impl_->n;
}

void StoreWriter::on_snapshot(const Snapshot& s) {
  Impl& w = *impl_;
  w.write(kTs, &s.ts_ns, 8);
  w.write(kTsAlt, &s.ts_alt_ns, 8);
  w.write(kBidPx, s.bid_px, sizeof s.bid_px);
  w.write(kAskPx, s.ask_px, sizeof s.ask_px);
  w.write(kBidSz, s.bid_sz, sizeof s.bid_sz);
  w.write(kAskSz, s.ask_sz, sizeof s.ask_sz);
  w.write(kBidCt, s.bid_ct, sizeof s.bid_ct);
  w.write(kAskCt, s.ask_ct, sizeof s.ask_ct);
  w.write(kFlags, &s.flags, 1);

  w.cum_trades += w.pending_trades;
  w.cum_volume += w.pending_volume;
  w.pending_trades = 0;
  w.pending_volume = 0;
  w.write(kTradeCount, &w.cum_trades, 8);
  w.write(kSignedVolume, &w.cum_volume, 8);

  if (w.n > 0) {
    auto [volume, trades] = tick_rule(w.prev, s);
    w.rule_cum_volume += volume;
    w.rule_cum_trades += static_cast<uint64_t>(trades);
  }
  if (w.error.ok()) {
    Status st = w.rule_count.write(&w.rule_cum_trades, 8);
    if (st.ok()) st = w.rule_volume.write(&w.rule_cum_volume, 8);
    if (!st.ok()) w.error = st;
  }

  if (s.bid_sz[0] > 0 && s.ask_sz[0] > 0) w.note_gap(s.bid_px[0], s.ask_px[0]);
  for (int i = 0; i + 1 < kBookLevels; ++i) {
    if (s.bid_sz[i] > 0 && s.bid_sz[i + 1] > 0) w.note_gap(s.bid_px[i], s.bid_px[i + 1]);
    if (s.ask_sz[i] > 0 && s.ask_sz[i + 1] > 0) w.note_gap(s.ask_px[i], s.ask_px[i + 1]);
  }
  if (w.n == 0) w.first_ts = s.ts_ns;
  if (w.n > 0 && s.ts_ns < w.last_ts) ++w.non_monotonic_ts;
  w.last_ts = s.ts_ns;
  if (s.flags & kFlagCrossed) ++w.crossed;
  if (s.flags & kFlagLocked) ++w.locked;
  if (s.flags & kFlagSnapshotRun) ++w.snapshot_run;
  if (s.flags & kFlagMaybeBadBook) ++w.maybe_bad;
  if (s.flags & kFlagBadTimestamp) ++w.bad_ts;
  w.prev = s;
  ++w.n;
  if (w.n % 1024 == 0) fault_point("store.snapshots");  // a kill mid-ingest (tests)
}

void StoreWriter::on_trade(const Trade& t) {
  Impl& w = *impl_;
  w.write(kTradeTs, &t.ts_ns, 8);
  w.write(kTradePx, &t.px, 8);
  w.write(kTradeSz, &t.sz, 8);
  w.write(kTradeSide, &t.side, 1);
  w.write(kTradeSnapshot, &w.n, 8);  // assigned to the next snapshot emitted
  ++w.pending_trades;
  w.pending_volume += t.side * t.sz;
  ++w.m;
}

void StoreWriter::on_order_event(const OrderEvent& e) {
  Impl& w = *impl_;
  auto action = static_cast<uint8_t>(e.action);
  w.write(kEventTs, &e.ts_ns, 8);
  w.write(kEventOrderId, &e.order_id, 8);
  w.write(kEventPx, &e.px, 8);
  w.write(kEventSz, &e.sz, 8);
  w.write(kEventAction, &action, 1);
  w.write(kEventSide, &e.side, 1);
  w.write(kEventFlags, &e.flags, 1);
  w.write(kEventSnapshot, &w.n, 8);
  ++w.e;
}

Status StoreWriter::finish() {
  Impl& w = *impl_;
  FXT_RETURN_IF_ERROR(w.error);
  const bool use_tick_rule = w.m == 0 && !w.info.has_trades;

  nlohmann::json columns = nlohmann::json::object();
  for (int i = 0; i < kNumColumns; ++i) {
    const ColumnSpec& c = kColumns[i];
    FXT_RETURN_IF_ERROR(w.columns[i].commit());
    uint64_t rows = std::string_view(c.table) == "snapshots" ? w.n
                    : std::string_view(c.table) == "trades"  ? w.m
                                                             : w.e;
    columns[c.name] = {{"dtype", c.dtype},
                       {"width", c.width},
                       {"rows", rows},
                       {"bytes", w.columns[i].bytes_written()},
                       {"crc32", w.columns[i].crc32()}};
  }
  FXT_RETURN_IF_ERROR(w.rule_count.commit());
  FXT_RETURN_IF_ERROR(w.rule_volume.commit());
  if (use_tick_rule) {
    fs::rename(w.tmp_dir + "/.rule_count", column_file(w.tmp_dir, "trade_count"));
    fs::rename(w.tmp_dir + "/.rule_volume", column_file(w.tmp_dir, "signed_volume"));
    columns["trade_count"]["crc32"] = w.rule_count.crc32();
    columns["signed_volume"]["crc32"] = w.rule_volume.crc32();
  } else {
    fs::remove(w.tmp_dir + "/.rule_count");
    fs::remove(w.tmp_dir + "/.rule_volume");
  }

  StoreInfo& info = w.info;
  int64_t tick = info.tick_px;
  std::string tick_source = info.tick_source;
  if (tick <= 0) {
    tick = w.min_level_gap;
    tick_source = "inferred";
  } else if (tick_source == "flag" && w.min_level_gap % tick != 0) {
    // A tick given by the user must divide the price grid the book lives on.
    return InvalidInput("{}: --tick {}: price levels {} apart are not multiples of it", w.dir,
                        static_cast<double>(tick) * kPxScale,
                        static_cast<double>(w.min_level_gap) * kPxScale);
  }
  auto now = std::chrono::system_clock::now().time_since_epoch();
  nlohmann::json meta = {
      {"format", "foxhunt-store"},
      {"schema_version", kStoreSchemaVersion},
      {"created_utc",
       utc_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())},
      {"source", {{"path", info.source_path}, {"format", info.source_format}}},
      {"instrument",
       {{"symbol", info.symbol},
        {"instrument_id", info.instrument_id},
        {"tick_px", tick},
        {"tick_size", static_cast<double>(tick) / 1e9},
        {"tick_source", tick_source},
        {"currency", info.currency},
        {"contract_multiplier", info.contract_multiplier}}},
      {"price_scale", kPxScale},
      {"levels", kBookLevels},
      {"counts",
       {{"snapshots", w.n},
        {"trades", w.m},
        {"order_events", w.e},
        {"crossed", w.crossed},
        {"locked", w.locked},
        {"snapshot_run", w.snapshot_run},
        {"maybe_bad_book", w.maybe_bad},
        {"bad_timestamp", w.bad_ts},
        {"non_monotonic_ts", w.non_monotonic_ts}}},
      {"time",
       {{"first_ts_ns", w.first_ts},
        {"last_ts_ns", w.last_ts},
        {"first_utc", utc_string(w.first_ts)},
        {"last_utc", utc_string(w.last_ts)}}},
      {"trade_flow", use_tick_rule ? "tick-rule" : "trades"},
      {"columns", columns},
      {"source_stats", w.source_stats},
  };
  if (!info.extra.empty()) meta["extra"] = info.extra;
  // meta.json is written last: its presence marks the column files complete.
  FXT_RETURN_IF_ERROR(write_file_atomic(w.tmp_dir + "/meta.json", meta.dump(2) + "\n"));
  FXT_RETURN_IF_ERROR(fsync_dir(w.tmp_dir));
  fault_point("store.before_rename");
  std::error_code ec;
  fs::rename(w.tmp_dir, w.dir, ec);
  if (ec) return IoError("{}: cannot rename {} into place: {}", w.dir, w.tmp_dir, ec.message());
  unregister_temp_path(w.tmp_dir);
  w.tmp_dir.clear();
  fs::path parent = fs::absolute(w.dir).parent_path();
  return fsync_dir(parent.string());
}

// ---- reader -------------------------------------------------------------------

namespace {
template <typename T>
Status bind_column(const std::string& dir, const nlohmann::json& meta, const ColumnSpec& spec,
                   uint64_t rows, bool verify, Column<T>* out,
                   std::vector<std::shared_ptr<MappedFile>>* files) {
  const std::string path = column_file(dir, spec.name);
  if (!meta["columns"].contains(spec.name)) {
    return InvalidInput("{}/meta.json: column '{}' is missing from 'columns'", dir, spec.name);
  }
  const auto& c = meta["columns"][spec.name];
  FXT_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  uint64_t expected = rows * static_cast<uint64_t>(spec.width) * sizeof(T);
  if (f.size() != expected) {
    return InvalidInput(
        "{}: size {} bytes, expected {} ({} rows x {} x {} bytes): truncated or "
        "corrupt store",
        path, f.size(), expected, rows, spec.width, sizeof(T));
  }
  if (verify) {
    uint32_t crc = crc32_update(0, f.data(), f.size());
    uint32_t want = c.value("crc32", 0u);
    if (crc != want) {
      return InvalidInput("{}: CRC32 {:08x} does not match meta.json's {:08x}: corrupt store", path,
                          crc, want);
    }
  }
  auto shared = std::make_shared<MappedFile>(std::move(f));
  out->data = reinterpret_cast<const T*>(shared->data());
  out->rows = rows;
  out->width = spec.width;
  files->push_back(std::move(shared));
  return Status::Ok();
}
}  // namespace

namespace {
std::atomic<StoreVerification> g_verification{StoreVerification::kOnce};
std::mutex g_verified_mu;
std::set<std::string> g_verified;  // verified_key() of the stores verified and settled

// The directory, its meta.json and every file's size and modification time: a column
// rewritten in place after the first open is verified again. `settled` is false when a file
// changed within the last 2 s: file times tick coarsely, so such a store is not remembered as
// verified (git's "racily clean" rule).
std::string verified_key(const std::string& dir, bool* settled) {
  std::error_code ec;
  std::string key = fs::absolute(fs::path(dir), ec).lexically_normal().string();
  auto text = read_file(dir + "/meta.json");
  if (!text.ok()) return std::string();
  const auto recent = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  *settled = true;
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto size = it->file_size(ec);
    const auto mtime = it->last_write_time(ec);
    if (mtime > recent) *settled = false;
    files.push_back(fmt::format("{} {} {}", it->path().filename().string(), size,
                                mtime.time_since_epoch().count()));
  }
  if (ec) return std::string();
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) key += "\n" + f;
  return key + "\n" + text.value();
}
}  // namespace

void set_store_verification(StoreVerification mode) { g_verification = mode; }
StoreVerification store_verification() { return g_verification; }

Result<StoreReader> StoreReader::open(const std::string& dir) {
  if (g_verification == StoreVerification::kNever) return open(dir, false);
  bool settled = false;
  const std::string key = verified_key(dir, &settled);
  {
    std::lock_guard<std::mutex> lock(g_verified_mu);
    if (!key.empty() && g_verified.count(key) != 0) return open(dir, false);
  }
  FXT_ASSIGN_OR_RETURN(StoreReader r, open(dir, true));
  if (!key.empty() && settled) {
    std::lock_guard<std::mutex> lock(g_verified_mu);
    g_verified.insert(key);
  }
  return r;
}

Result<StoreReader> StoreReader::open(const std::string& dir, bool verify_checksums) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (fs::exists(dir, ec)) return InvalidInput("{}: not a store directory", dir);
    return NotFound("{}: no such store", dir);
  }
  const std::string meta_path = dir + "/meta.json";
  if (!fs::exists(meta_path, ec)) {
    return InvalidInput("{}: incomplete store (no meta.json): it was not finished; ingest it again",
                        dir);
  }
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(meta_path));
  StoreReader r;
  r.dir_ = dir;
  r.meta_ = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (r.meta_.is_discarded() || !r.meta_.is_object()) {
    return InvalidInput("{}: not valid JSON", meta_path);
  }
  if (r.meta_.value("format", "") != "foxhunt-store") {
    return InvalidInput("{}: 'format' is not \"foxhunt-store\"", meta_path);
  }
  int version = r.meta_.value("schema_version", 0);
  if (version != kStoreSchemaVersion) {
    return InvalidInput("{}: schema_version {}, this build reads version {}", meta_path, version,
                        kStoreSchemaVersion);
  }
  try {
    const auto& counts = r.meta_.at("counts");
    r.n_ = counts.at("snapshots").get<uint64_t>();
    r.m_ = counts.at("trades").get<uint64_t>();
    r.e_ = counts.at("order_events").get<uint64_t>();
    r.tick_px_ = r.meta_.at("instrument").at("tick_px").get<int64_t>();
    if (!r.meta_.at("columns").is_object()) throw std::runtime_error("columns");
  } catch (const std::exception&) {
    return InvalidInput("{}: missing or mistyped 'counts', 'instrument.tick_px' or 'columns'",
                        meta_path);
  }
  const uint64_t n = r.n_, m = r.m_, e = r.e_;
  const auto& M = r.meta_;
  auto& F = r.files_;
  const bool v = verify_checksums;
#define FXT_BIND(idx, member, rows) \
  FXT_RETURN_IF_ERROR(bind_column(dir, M, kColumns[idx], rows, v, &r.member, &F))
  FXT_BIND(kTs, ts_ns, n);
  FXT_BIND(kTsAlt, ts_alt_ns, n);
  FXT_BIND(kBidPx, bid_px, n);
  FXT_BIND(kAskPx, ask_px, n);
  FXT_BIND(kBidSz, bid_sz, n);
  FXT_BIND(kAskSz, ask_sz, n);
  FXT_BIND(kBidCt, bid_ct, n);
  FXT_BIND(kAskCt, ask_ct, n);
  FXT_BIND(kFlags, flags, n);
  FXT_BIND(kTradeCount, cum_trade_count, n);
  FXT_BIND(kSignedVolume, signed_volume, n);
  FXT_BIND(kTradeTs, trade_ts_ns, m);
  FXT_BIND(kTradePx, trade_px, m);
  FXT_BIND(kTradeSz, trade_sz, m);
  FXT_BIND(kTradeSide, trade_side, m);
  FXT_BIND(kTradeSnapshot, trade_snapshot, m);
  FXT_BIND(kEventTs, event_ts_ns, e);
  FXT_BIND(kEventOrderId, event_order_id, e);
  FXT_BIND(kEventPx, event_px, e);
  FXT_BIND(kEventSz, event_sz, e);
  FXT_BIND(kEventAction, event_action, e);
  FXT_BIND(kEventSide, event_side, e);
  FXT_BIND(kEventFlags, event_flags, e);
  FXT_BIND(kEventSnapshot, event_snapshot, e);
#undef FXT_BIND
  return r;
}

Snapshot StoreReader::snapshot(uint64_t i) const {
  Snapshot s;
  s.ts_ns = ts_ns[i];
  s.ts_alt_ns = ts_alt_ns[i];
  std::memcpy(s.bid_px, bid_px.row(i), sizeof s.bid_px);
  std::memcpy(s.ask_px, ask_px.row(i), sizeof s.ask_px);
  std::memcpy(s.bid_sz, bid_sz.row(i), sizeof s.bid_sz);
  std::memcpy(s.ask_sz, ask_sz.row(i), sizeof s.ask_sz);
  std::memcpy(s.bid_ct, bid_ct.row(i), sizeof s.bid_ct);
  std::memcpy(s.ask_ct, ask_ct.row(i), sizeof s.ask_ct);
  s.flags = flags[i];
  return s;
}

Trade StoreReader::trade(uint64_t j) const {
  return Trade{trade_ts_ns[j], trade_px[j], trade_sz[j], trade_side[j]};
}

OrderEvent StoreReader::order_event(uint64_t k) const {
  OrderEvent e;
  e.ts_ns = event_ts_ns[k];
  e.order_id = event_order_id[k];
  e.px = event_px[k];
  e.sz = event_sz[k];
  e.action = static_cast<char>(event_action[k]);
  e.side = event_side[k];
  e.flags = event_flags[k];
  return e;
}

}  // namespace fxt
