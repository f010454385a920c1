#include "data/tardis.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include "core/text.h"
#include "data/decimal.h"
#include "data/line_reader.h"

namespace fxt {
namespace {

constexpr const char* kBookHeader =
    "exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount";
constexpr const char* kTradesHeader =
    "exchange,symbol,timestamp,local_timestamp,id,side,price,amount";

struct Row {
  std::vector<std::string> f;
  const std::string* path;
  uint64_t line;
};

Status bad(const std::string& path, uint64_t line, const std::string& what) {
  return InvalidInput("{}:{}: {}", path, line, what);
}

// Microseconds since the epoch -> ns.
Status micros(const std::string& path, uint64_t line, const std::string& text, const char* name,
              int64_t* ns) {
  int64_t us = 0;
  if (!parse_int64_fast(text, &us) || us < 0 || us > INT64_MAX / 1000) {
    return bad(path, line,
               fmt::format("{} '{}': expected microseconds since the epoch", name, text));
  }
  *ns = us * 1000;
  return Status::Ok();
}

Status price_and_amount(const std::string& path, uint64_t line, const std::string& px_text,
                        const std::string& amount_text, int64_t* px, double* amount) {
  if (!parse_decimal_fast(px_text, 9, px) || *px <= 0) {
    return bad(path, line, fmt::format("price '{}': expected a positive decimal", px_text));
  }
  char* end = nullptr;
  *amount = std::strtod(amount_text.c_str(), &end);
  if (amount_text.empty() || end != amount_text.c_str() + amount_text.size() || !(*amount >= 0) ||
      !std::isfinite(*amount)) {
    return bad(path, line, fmt::format("amount '{}': expected a decimal >= 0", amount_text));
  }
  return Status::Ok();
}

// One instrument per source: every row of the book and trades files names the exchange and
// symbol of the first row read. Tardis's grouped files (`..._PERPETUALS`, `..._OPTIONS`) hold
// many symbols; merged into one book they gave a store of garbage with exit 0.
struct Instrument {
  std::string path, exchange, symbol;
  uint64_t line = 0;
  Status check(const std::string& at, uint64_t at_line, const std::vector<std::string>& f) {
    if (line == 0) {
      path = at;
      line = at_line;
      exchange = f[0];
      symbol = f[1];
      return Status::Ok();
    }
    if (f[0] == exchange && f[1] == symbol) return Status::Ok();
    return bad(at, at_line,
               fmt::format("instrument '{} {}' differs from '{} {}' of {}:{} (one instrument "
                           "per source: split grouped Tardis files by symbol first)",
                           f[0], f[1], exchange, symbol, path, line));
  }
};

struct TradeRow {
  int64_t ts_ns, px;
  double sz;
  int8_t side;
};

Status read_trades(const std::string& path, TardisStats* stats, Instrument* instrument,
                   std::vector<TradeRow>* out) {
  bool header = false;
  const Status read = for_each_line(path, [&](std::string_view text, uint64_t line) -> Status {
    if (line == 1) {
      if (text != kTradesHeader) {
        return bad(path, 1, fmt::format("expected the Tardis trades header '{}'", kTradesHeader));
      }
      header = true;
      return Status::Ok();
    }
    if (text.empty()) return Status::Ok();
    const std::vector<std::string> f = split_fields(text, ',');
    if (f.size() != 8) return bad(path, line, fmt::format("{} fields, expected 8", f.size()));
    FXT_RETURN_IF_ERROR(instrument->check(path, line, f));
    TradeRow t{};
    FXT_RETURN_IF_ERROR(micros(path, line, f[2], "timestamp", &t.ts_ns));
    FXT_RETURN_IF_ERROR(price_and_amount(path, line, f[6], f[7], &t.px, &t.sz));
    if (f[5] == "buy") {
      t.side = 1;
    } else if (f[5] == "sell") {
      t.side = -1;
    } else if (f[5] == "unknown" || f[5].empty()) {
      t.side = 0;
    } else {
      return bad(path, line, fmt::format("side '{}': expected buy, sell or unknown", f[5]));
    }
    if (!out->empty() && t.ts_ns < out->back().ts_ns) {
      return bad(path, line, "timestamp goes backwards (expected trades in time order)");
    }
    out->push_back(t);
    ++stats->trades;
    return Status::Ok();
  });
  if (!read.ok()) return read;
  if (!header) {
    return InvalidInput("{}: empty file (expected the Tardis trades header '{}')", path,
                        kTradesHeader);
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json TardisStats::to_json() const {
  return {{"exchange", exchange},
          {"symbol", symbol},
          {"book_rows", book_rows},
          {"snapshot_rows", snapshot_rows},
          {"resets", resets},
          {"snapshots", snapshots},
          {"trades", trades},
          {"trades_after_last_snapshot", trades_after_last_snapshot},
          {"snapshots_crossed", snapshots_crossed}};
}

Status import_tardis(const std::string& book_csv, const std::string& trades_csv, BookSink* sink,
                     TardisStats* stats) {
  std::vector<TradeRow> trades;
  Instrument instrument;
  if (!trades_csv.empty()) {
    FXT_RETURN_IF_ERROR(read_trades(trades_csv, stats, &instrument, &trades));
  }
  size_t next_trade = 0;

  std::map<int64_t, double, std::greater<>> bids;
  std::map<int64_t, double> asks;
  // The pending message: rows of one timestamp, emitted when the timestamp changes.
  bool pending = false, pending_snapshot = false, in_snapshot = false;
  int64_t pending_ts = 0, pending_local = 0;
  auto emit = [&]() {
    // Trades at or before this snapshot's time go first (assigned to it).
    while (next_trade < trades.size() && trades[next_trade].ts_ns <= pending_ts) {
      const TradeRow& t = trades[next_trade++];
      sink->on_trade(Trade{t.ts_ns, t.px, t.sz, t.side});
    }
    Snapshot s;
    s.ts_ns = pending_ts;
    s.ts_alt_ns = pending_local;
    int i = 0;
    for (auto it = bids.begin(); it != bids.end() && i < kBookLevels; ++it, ++i) {
      s.bid_px[i] = it->first;
      s.bid_sz[i] = it->second;
    }
    i = 0;
    for (auto it = asks.begin(); it != asks.end() && i < kBookLevels; ++it, ++i) {
      s.ask_px[i] = it->first;
      s.ask_sz[i] = it->second;
    }
    if (pending_snapshot) s.flags |= kFlagSnapshotRun;
    s.mark_crossed_or_locked();
    if (s.flags & (kFlagCrossed | kFlagLocked)) ++stats->snapshots_crossed;
    sink->on_snapshot(s);
    ++stats->snapshots;
    pending = pending_snapshot = false;
  };
  auto on_line = [&](std::string_view text, uint64_t line) -> Status {
    if (line == 1) {
      if (text != kBookHeader) {
        return bad(book_csv, 1,
                   fmt::format("expected the Tardis incremental_book_L2 header '{}'", kBookHeader));
      }
      return Status::Ok();
    }
    if (text.empty()) return Status::Ok();
    const std::vector<std::string> f = split_fields(text, ',');
    if (f.size() != 8) return bad(book_csv, line, fmt::format("{} fields, expected 8", f.size()));
    int64_t ts = 0, local = 0, px = 0;
    double amount = 0;
    FXT_RETURN_IF_ERROR(micros(book_csv, line, f[2], "timestamp", &ts));
    FXT_RETURN_IF_ERROR(micros(book_csv, line, f[3], "local_timestamp", &local));
    FXT_RETURN_IF_ERROR(price_and_amount(book_csv, line, f[6], f[7], &px, &amount));
    if (f[4] != "true" && f[4] != "false") {
      return bad(book_csv, line, fmt::format("is_snapshot '{}': expected true or false", f[4]));
    }
    const bool snapshot = f[4] == "true";
    if (f[5] != "bid" && f[5] != "ask") {
      return bad(book_csv, line, fmt::format("side '{}': expected bid or ask", f[5]));
    }
    FXT_RETURN_IF_ERROR(instrument.check(book_csv, line, f));
    if (stats->symbol.empty()) {
      stats->exchange = f[0];
      stats->symbol = f[1];
    }
    if (pending && ts != pending_ts) {
      if (ts < pending_ts) {
        return bad(book_csv, line, "timestamp goes backwards (expected rows in time order)");
      }
      emit();
    }
    if (snapshot && !in_snapshot) {  // a new snapshot after updates: the book starts over
      if (stats->book_rows > 0) ++stats->resets;
      bids.clear();
      asks.clear();
    }
    in_snapshot = snapshot;
    if (f[5] == "bid") {
      if (amount == 0)
        bids.erase(px);
      else
        bids[px] = amount;
    } else {
      if (amount == 0)
        asks.erase(px);
      else
        asks[px] = amount;
    }
    ++stats->book_rows;
    if (snapshot) ++stats->snapshot_rows;
    pending = true;
    pending_snapshot = pending_snapshot || snapshot;
    pending_ts = ts;
    pending_local = local;
    return Status::Ok();
  };
  FXT_RETURN_IF_ERROR(for_each_line(book_csv, on_line));
  if (stats->book_rows == 0) {
    return InvalidInput("{}: no book rows (an empty file or a header alone): nothing to ingest",
                        book_csv);
  }
  if (pending) emit();
  for (; next_trade < trades.size(); ++next_trade) {
    const TradeRow& t = trades[next_trade];
    sink->on_trade(Trade{t.ts_ns, t.px, t.sz, t.side});
    ++stats->trades_after_last_snapshot;
  }
  return Status::Ok();
}

bool is_tardis_book_name(const std::string& path) {
  return std::filesystem::path(path).filename().string().find("_incremental_book_L2_") !=
         std::string::npos;
}

bool is_tardis_trades_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.find("_trades_") != std::string::npos &&
         (name.ends_with(".csv") || name.ends_with(".csv.gz"));
}

}  // namespace fxt
