// The snapshot store: one directory per instrument-day or source file.
//
//   meta.json            source, instrument, tick size, counts, time span, column checksums
//   <column>.bin         fixed-width little-endian columns, memory-mapped on read
//
// Snapshot columns (n rows): ts_ns, ts_alt_ns (i64), bid_px, ask_px (i64 x10),
// bid_sz, ask_sz (f64 x10), bid_ct, ask_ct (u32 x10), flags (u8), trade_count
// (u64, cumulative trades assigned up to and including the row), signed_volume
// (f64, cumulative aggressor-signed volume, from trades or the tick rule).
// Trades table (m rows): trade_ts_ns, trade_px (i64), trade_sz (f64), trade_side
// (i8), trade_snapshot (u64: the row it was assigned to; n for trades after the
// last snapshot). Order events (MBO stores): event_ts_ns, event_order_id,
// event_px (i64/u64), event_sz (f64), event_action, event_side, event_flags (i8/u8),
// event_snapshot (u64).
//
// StoreWriter is a BookSink. It streams columns into "<dir>.tmp-<pid>/" and
// finish() writes meta.json last and renames the directory into place, so a
// killed ingest never leaves a store that looks whole. A store is immutable once
// written. StoreReader maps the columns, checks sizes against meta.json and
// verifies every column's CRC32 on open.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "core/status.h"
#include "data/book.h"

namespace fxt {

constexpr int kStoreSchemaVersion = 1;

// What we know about the instrument and source, recorded in meta.json.
struct StoreInfo {
  std::string source_path;    // the file(s) this store was built from
  std::string source_format;  // "dbn-mbp10", "dbn-mbo", "binance-usdm", "lobster", ...
  std::string symbol;
  uint32_t instrument_id = 0;
  int64_t tick_px = 0;      // tick size in 1e-9 units; 0: infer from the book
  std::string tick_source;  // "definition", "inferred", "source"
  std::string currency;
  double contract_multiplier = 1.0;
  bool has_trades = false;  // false: signed volume comes from the tick rule (§2.3)
  nlohmann::json extra = nlohmann::json::object();  // source-specific counters (gaps, ...)
};

class StoreWriter : public BookSink {
 public:
  ~StoreWriter() override;
  StoreWriter(StoreWriter&&) noexcept;
  StoreWriter& operator=(StoreWriter&&) noexcept;

  // Fails if `dir` already exists (stores are immutable).
  static Result<StoreWriter> create(const std::string& dir, StoreInfo info);

  void on_snapshot(const Snapshot& s) override;
  void on_trade(const Trade& t) override;
  void on_order_event(const OrderEvent& e) override;

  // Source-specific facts to record under meta.json "source_stats".
  nlohmann::json& source_stats();
  StoreInfo& info();

  // Writes meta.json and renames the directory into place. The first I/O error
  // seen while streaming is returned here.
  Status finish();
  uint64_t snapshot_count() const;

 private:
  struct Impl;
  explicit StoreWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A typed, bounds-known view of one mapped column.
template <typename T>
struct Column {
  const T* data = nullptr;
  uint64_t rows = 0;
  int width = 1;  // values per row
  const T* row(uint64_t i) const { return data + i * static_cast<uint64_t>(width); }
  T operator[](uint64_t i) const { return data[i]; }
};

// How StoreReader::open(dir) treats column checksums in this process. kOnce (the default)
// verifies every column's CRC32 the first time a store is opened and skips the pass when the
// same directory with the same meta.json is opened again; kNever is `fxt --no-verify`.
// Thread-safe.
enum class StoreVerification { kOnce, kNever };
void set_store_verification(StoreVerification mode);
StoreVerification store_verification();

class StoreReader {
 public:
  // Opens under the process's verification policy (set_store_verification below): every
  // command that reads a store goes through this, so a corrupt column is refused alike by
  // inspect, train, eval, predict, cv and backtest.
  static Result<StoreReader> open(const std::string& dir);
  // verify_checksums = false skips the CRC pass (sizes are still checked); for a store this
  // process has just written.
  static Result<StoreReader> open(const std::string& dir, bool verify_checksums);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& meta() const { return meta_; }
  uint64_t size() const { return n_; }         // snapshots
  uint64_t trade_count() const { return m_; }  // trades table rows
  uint64_t event_count() const { return e_; }  // order events (0 unless MBO)
  int64_t tick_px() const { return tick_px_; }

  // Random access to one snapshot (copies ~400 bytes; columns are faster for scans).
  Snapshot snapshot(uint64_t i) const;
  Trade trade(uint64_t j) const;
  OrderEvent order_event(uint64_t k) const;

  Column<int64_t> ts_ns, ts_alt_ns, bid_px, ask_px;
  Column<double> bid_sz, ask_sz, signed_volume;
  Column<uint32_t> bid_ct, ask_ct;
  Column<uint8_t> flags;
  Column<uint64_t> cum_trade_count;
  Column<int64_t> trade_ts_ns, trade_px;
  Column<double> trade_sz;
  Column<int8_t> trade_side;
  Column<uint64_t> trade_snapshot;
  Column<int64_t> event_ts_ns, event_px;
  Column<uint64_t> event_order_id, event_snapshot;
  Column<double> event_sz;
  Column<uint8_t> event_action, event_flags;
  Column<int8_t> event_side;

 private:
  std::string dir_;
  nlohmann::json meta_;
  uint64_t n_ = 0, m_ = 0, e_ = 0;
  int64_t tick_px_ = 0;
  std::vector<std::shared_ptr<MappedFile>> files_;
};

}  // namespace fxt
