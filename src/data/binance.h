// Binance depth-capture replay: rebuilds the full-depth book from a raw websocket
// capture and emits MBP-10 snapshots and trades to a BookSink.
//
// Input (hftbacktest's collector format, gzip or plain text): one message per line,
//   <local receive ns> <json>
// where the json is a REST depth snapshot {"lastUpdateId","bids","asks"} (USD-M adds
// "E","T") or a combined-stream message {"stream": "...@depth@100ms" | "...@depth@0ms"
// | "...@bookTicker" | "...@trade", "data": {...}}. A bare stream payload (no
// "stream"/"data" wrapper, dispatched on "e") is accepted too; other streams are
// counted and ignored.
//
// Book rules (docs/BINANCE_LOBSTER.md): diffs before the first snapshot are
// buffered; spot drops u <= lastUpdateId, the first applied diff has
// U <= lastUpdateId+1 <= u and every later one U == previous u + 1; USD-M drops
// u < lastUpdateId, the first applied has U <= lastUpdateId <= u and every later
// one pu == previous u. A broken rule is a gap: counted, logged, and every later
// snapshot carries kFlagMaybeBadBook until a later REST snapshot resyncs the book.
// Prices and quantities are kept exactly (int64, 1e-9 units); sizes become double
// only in the emitted Snapshot.
//
// bookTicker messages are the correctness check: a ticker whose u equals an applied
// diff's final u must equal the rebuilt best bid/ask (price and quantity) exactly.
// The update-id-aligned check generalises it: each ticker is set against the book
// after the last applied diff (or the REST snapshot) whose final u <= the ticker's u.
// When the ticker's u is that state's final u, or lies between it and the next diff's
// first id U, the state is the book at the ticker's u and must match exactly; when it
// lies inside the next diff's U..u, the state it describes is inside a bundle and
// never materialised, so it is only compared with the bundle's end state, apart.
//
// Not thread-safe; one replayer per capture.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "data/book.h"

namespace fxt {

enum class BinanceMarket { kAuto, kSpot, kUsdm };
const char* binance_market_name(BinanceMarket m);  // "auto", "spot", "usdm"
// Parses "auto" / "spot" / "usdm" (also "futures", "um").
Result<BinanceMarket> parse_binance_market(std::string_view name);

struct BinanceOptions {
  // kAuto: decided by the first message that tells (a diff with or without "pu",
  // a REST snapshot with or without "E"). Messages contradicting the decided
  // market are rejected.
  BinanceMarket market = BinanceMarket::kAuto;
  // Gaps logged one by one before a single "further gaps not logged" line.
  int max_gaps_logged = 10;
};

struct BinanceStats {
  BinanceMarket market = BinanceMarket::kAuto;  // as decided
  std::string symbol;                           // "BTCUSDT", from "s" or the stream name
  uint64_t lines = 0;                           // non-blank lines fed
  uint64_t rest_snapshots = 0;                  // REST depth snapshot lines
  uint64_t resyncs = 0;                         // snapshots that re-initialised a gapped book
  uint64_t snapshots_ignored = 0;               // later snapshots while the book was in sync
  uint64_t diffs = 0;                           // diff-depth messages seen
  uint64_t diffs_applied = 0;
  uint64_t diffs_dropped = 0;         // stale (already in the REST snapshot)
  uint64_t diffs_buffered = 0;        // arrived before the first snapshot
  uint64_t diffs_lost = 0;            // buffered past the cap, or never applied
  uint64_t price_levels_updated = 0;  // [price, qty] entries applied
  uint64_t gaps = 0;
  std::string first_gap;  // "line N: ..." of the first gap
  uint64_t trades = 0;
  uint64_t snapshots_emitted = 0;
  uint64_t snapshots_crossed = 0;    // emitted with kFlagCrossed or kFlagLocked
  uint64_t snapshots_maybe_bad = 0;  // emitted with kFlagMaybeBadBook
  uint64_t other_messages = 0;       // streams we do not use
  // bookTicker check.
  uint64_t tickers = 0;
  uint64_t tickers_before_book = 0;  // arrived before the first snapshot: not compared
  // Arrival-order comparison (not a correctness measure: the ticker stream runs ahead
  // of the diff stream, so the book is usually a bundle behind the ticker).
  uint64_t tickers_compared = 0;  // compared with the book state when they arrived
  uint64_t tickers_agree = 0;     // ... and matched it exactly
  uint64_t tickers_agree_px = 0;  // ... and matched its best prices (sizes may differ)
  uint64_t tickers_exact_u = 0;   // u equal to an applied diff's final u
  uint64_t tickers_exact_u_matched = 0;
  uint64_t tickers_exact_u_early = 0;  // exact-u tickers that arrived before their diff
  std::string first_exact_u_mismatch;  // "line N: ..." of the first exact-u mismatch
  // Update-id-aligned check (docs/BINANCE_LOBSTER.md). Every ticker lands in exactly one
  // of boundary / inside / before_book / too_old / unresolved. A "state" is the book
  // after the REST snapshot (final u = lastUpdateId) or after an applied diff.
  uint64_t aligned_boundary = 0;          // the book at the ticker's u is known: at_final + between
  uint64_t aligned_boundary_matched = 0;  // ... and equals the ticker exactly
  uint64_t aligned_at_final = 0;          // u == a state's final u (snapshot or diff)
  uint64_t aligned_at_final_matched = 0;
  uint64_t aligned_between = 0;  // a state's final u < u < the next applied diff's U
  uint64_t aligned_between_matched = 0;
  uint64_t aligned_inside = 0;           // U <= u < u_d of an applied diff: not observable
  uint64_t aligned_inside_agree = 0;     // ... equal to that diff's end state anyway
  uint64_t aligned_inside_agree_px = 0;  // ... its best prices only
  uint64_t aligned_late = 0;             // resolved on arrival: their state was already built
  uint64_t aligned_before_book = 0;      // u < lastUpdateId of the snapshot the book came from
  uint64_t aligned_too_old = 0;          // their state has left the ring of recent tops
  uint64_t aligned_unresolved = 0;       // no applied diff reached u (end of capture, overflow)
  std::string first_aligned_mismatch;    // "line N: ..." of the first boundary mismatch
  int64_t first_ts_ns = 0;               // event time of the first / last emitted snapshot
  int64_t last_ts_ns = 0;
  double seconds = 0;  // wall time of replay_binance_capture

  double agreement_rate() const {
    return tickers_compared == 0
               ? 0.0
               : static_cast<double>(tickers_agree) / static_cast<double>(tickers_compared);
  }
  double exact_u_match_rate() const {
    return tickers_exact_u == 0 ? 0.0
                                : static_cast<double>(tickers_exact_u_matched) /
                                      static_cast<double>(tickers_exact_u);
  }
  double aligned_boundary_rate() const {
    return aligned_boundary == 0 ? 0.0
                                 : static_cast<double>(aligned_boundary_matched) /
                                       static_cast<double>(aligned_boundary);
  }
  double aligned_inside_rate() const {
    return aligned_inside == 0
               ? 0.0
               : static_cast<double>(aligned_inside_agree) / static_cast<double>(aligned_inside);
  }
  nlohmann::json to_json() const;
};

// Best bid / ask of the rebuilt book, exact.
struct BinanceTop {
  int64_t bid_px = kEmptyPx, bid_qty = 0, ask_px = kEmptyPx, ask_qty = 0;
  bool operator==(const BinanceTop&) const = default;
};

// Full-depth book of one instrument: price -> quantity, both int64 1e-9 units.
class BinanceBook {
 public:
  void clear();
  // qty == 0 removes the level.
  void set_bid(int64_t px, int64_t qty);
  void set_ask(int64_t px, int64_t qty);
  BinanceTop top() const;
  // Top kBookLevels of each side into `s` (sizes as double), counts 0.
  void fill(Snapshot* s) const;
  size_t bid_levels() const { return bids_.size(); }
  size_t ask_levels() const { return asks_.size(); }
  const std::map<int64_t, int64_t, std::greater<>>& bids() const { return bids_; }
  const std::map<int64_t, int64_t>& asks() const { return asks_; }

 private:
  std::map<int64_t, int64_t, std::greater<>> bids_;  // best (highest) first
  std::map<int64_t, int64_t> asks_;                  // best (lowest) first
};

// Line-at-a-time replayer. feed_line() parses the whole line before touching any
// state, so a malformed line returns kInvalidInput and leaves the replayer as it
// was: callers (the fuzzer, tests) may keep feeding. finish() resolves what is
// still pending and fails when the capture never had a REST snapshot.
class BinanceReplayer {
 public:
  // `source` names the input in messages ("<source>: line N: ...").
  BinanceReplayer(std::string source, const BinanceOptions& options, BookSink* sink);
  ~BinanceReplayer();
  BinanceReplayer(const BinanceReplayer&) = delete;
  BinanceReplayer& operator=(const BinanceReplayer&) = delete;

  // `line` without its newline; line_no is 1-based, for messages only.
  Status feed_line(std::string_view line, uint64_t line_no);
  Status finish();

  const BinanceStats& stats() const;
  const BinanceBook& book() const;
  bool synced() const;  // a REST snapshot has been applied and no gap since

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Replays a whole capture (gzip or plain text). stats may be null.
Status replay_binance_capture(const std::string& path, const BinanceOptions& options,
                              BookSink* sink, BinanceStats* stats);

}  // namespace fxt
