// `fxt dump SRC`: every record of a DBN file or every row of a snapshot store as CSV or JSON
// lines, as Databento's `dbn` tool prints DBN (with --limit and a --start/--end time window).
//
// Prices are decimals in currency units (exact: 1e-9 fixed point printed as a decimal), an
// empty level (INT64_MAX or size 0) an empty CSV field / JSON null; times are ns since the
// epoch (UTC). The time filter uses the record's index time: ts_recv for DBN book and trade
// records (ts_event for the others), ts_ns for store rows. CSV needs one record layout: in a
// DBN file the records of the first kind seen are written and the others counted as skipped.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/status.h"

namespace fxt {

enum class DumpFormat { kCsv, kJsonLines };

struct DumpOptions {
  DumpFormat format = DumpFormat::kCsv;
  uint64_t limit = 0;                                      // at most this many records (0 = all)
  int64_t start_ns = std::numeric_limits<int64_t>::min();  // inclusive
  int64_t end_ns = std::numeric_limits<int64_t>::max();    // exclusive
  std::string table = "snapshots";                         // stores: snapshots, trades or events
  uint8_t dbn_fragment_version = 0;
};

struct DumpSummary {
  uint64_t written = 0;
  uint64_t skipped_other_kinds = 0;  // CSV of a DBN file: records of another layout
};

// Writes the dump of `src` (a store directory or a DBN file) to `out` ("-" = stdout; a file is
// written under a temporary name and renamed).
Result<DumpSummary> dump_source(const std::string& src, const DumpOptions& options,
                                const std::string& out);

// "2024-01-02T14:30:00Z", "2024-01-02T14:30:00.5Z", "2024-01-02" (midnight) or an integer of
// ns since the epoch -> ns since the epoch (UTC).
Result<int64_t> parse_utc_ns(const std::string& text);

}  // namespace fxt
