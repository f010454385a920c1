// Tardis.dev CSV datasets → the book sink: `incremental_book_L2` (price-level updates) with
// the matching `trades` file (https://docs.tardis.dev/downloadable-csv-files).
//
// incremental_book_L2 columns: exchange,symbol,timestamp,local_timestamp,is_snapshot,side,
// price,amount. `timestamp` is the exchange time and `local_timestamp` the receive time, in
// microseconds since the epoch; `amount` is the level's new total size (0 removes it). A run
// of is_snapshot=true rows following updates starts a new book (Tardis's reset rule). Rows
// of one timestamp are one venue message: the MBP-10 snapshot is emitted after the last row
// of each timestamp (snapshot rows: flagged kFlagSnapshotRun).
//
// trades columns: exchange,symbol,timestamp,local_timestamp,id,side,price,amount; side is the
// aggressor (buy / sell / unknown). Trades are merged in time order: a trade goes to the first
// snapshot whose timestamp is at or after its own (DESIGN §2.3). Sizes stay fractional.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "data/book.h"

namespace fxt {

struct TardisStats {
  std::string exchange, symbol;
  uint64_t book_rows = 0, snapshot_rows = 0, resets = 0, snapshots = 0;
  uint64_t trades = 0, trades_after_last_snapshot = 0;
  uint64_t snapshots_crossed = 0;  // crossed or locked
  nlohmann::json to_json() const;
};

// `trades_csv` may be empty (no trades: the store infers flow by the tick rule). Both files may
// be gzip-compressed. Errors name the file, the line and what was expected.
Status import_tardis(const std::string& book_csv, const std::string& trades_csv, BookSink* sink,
                     TardisStats* stats);

// True when a file name is a Tardis.dev incremental_book_L2 or trades CSV
// ("binance-futures_incremental_book_L2_2020-09-01_BTCUSDT.csv.gz").
bool is_tardis_book_name(const std::string& path);
bool is_tardis_trades_name(const std::string& path);

}  // namespace fxt
