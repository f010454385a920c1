// LOBSTER import: a message + orderbook CSV pair -> Snapshots, Trades and OrderEvents.
//
// Message file, one row per event: time (seconds after midnight, New York local
// time, up to 9 decimals), type (1 add, 2 partial cancel, 3 delete, 4 visible
// execution, 5 hidden execution, 6 cross, 7 trading halt), order id, size, price
// (dollars x 10000), direction (1 buy / -1 sell limit order). Orderbook file, the
// same number of rows: per level ask_px, ask_sz, bid_px, bid_sz, the book after the
// same-row message. Empty levels carry dummy prices (9999999999 ask, -9999999999
// bid) and size 0; they become kEmptyPx / 0. The level count comes from the column
// count (4 per level); levels past kBookLevels are validated and dropped.
//
// Each row pair emits, in this order: an OrderEvent (types 1-5), a Trade (types
// 4, 5: aggressor = -direction, since an executed buy limit order means a seller
// hit it; type 6: aggressor unknown, 0), then the Snapshot. Timestamps are UTC:
// the trading day (from the file name, TICKER_YYYY-MM-DD_..., or the options) plus
// the local time, minus the New York UTC offset (US DST rules) or a given offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/civil_date.h"
#include "core/status.h"
#include "data/book.h"

namespace fxt {

struct LobsterOptions {
  std::string date;  // YYYY-MM-DD; empty: the first YYYY-MM-DD in the message file's name
  // Local time minus UTC in minutes (-240 = EDT); unset: New York time with US DST rules.
  std::optional<int> utc_offset_minutes;
};

struct LobsterStats {
  std::string symbol;          // the file name up to its first '_' ("AAPL")
  std::string date;            // the trading day used
  int levels = 0;              // levels per orderbook row in the file
  int utc_offset_minutes = 0;  // of the first row
  uint64_t rows = 0;
  uint64_t snapshots = 0;
  uint64_t adds = 0, partial_cancels = 0, deletes = 0;
  uint64_t visible_executions = 0, hidden_executions = 0, crosses = 0;
  uint64_t halt_messages = 0;  // type 7: trading halt (price -1), quote (0) or resume (1)
  uint64_t trades = 0;         // types 4, 5 and 6
  uint64_t buyer_initiated = 0, seller_initiated = 0;
  uint64_t order_events = 0;
  uint64_t snapshots_crossed = 0;  // crossed or locked
  int64_t first_ts_ns = 0, last_ts_ns = 0;
  double seconds = 0;  // wall time of the import

  nlohmann::json to_json() const;
};

Status import_lobster(const std::string& message_csv, const std::string& orderbook_csv,
                      const LobsterOptions& options, BookSink* sink, LobsterStats* stats);

// ---- calendar helpers (exposed for tests) ----

// "YYYY-MM-DD" -> days since the epoch; checks the month and the day of the month.
Result<int64_t> parse_iso_date(std::string_view text);

// New York's UTC offset in minutes (-300 EST, -240 EDT) at a local time of day on a
// date. US rules since 2007: EDT from the second Sunday in March, 02:00 local, to
// the first Sunday in November, 02:00 local (1987-2006: first Sunday in April to
// the last Sunday in October). The repeated hour 01:00-02:00 in November is read
// as EDT, its first occurrence.
int new_york_utc_offset_minutes(int64_t year, unsigned month, unsigned day,
                                int64_t local_ns_of_day);

}  // namespace fxt
