// The normalised market-data vocabulary every source is turned into.
//
// Prices are int64 fixed point in 1e-9 units (DBN's convention); kEmptyPx marks
// an empty level. Sizes are float64 so fractional (crypto) quantities fit.
// Sources push Snapshots, Trades and (for order-by-order data) OrderEvents into
// a BookSink in source order; the snapshot store is the main sink.
#pragma once

#include <cstdint>
#include <limits>

namespace fxt {

constexpr int kBookLevels = 10;
constexpr int64_t kEmptyPx = std::numeric_limits<int64_t>::max();
constexpr double kPxScale = 1e-9;  // one price unit in currency

// Per-snapshot flags (store column `flags`).
enum SnapshotFlags : uint8_t {
  kFlagCrossed = 1,        // best bid > best ask
  kFlagLocked = 2,         // best bid == best ask
  kFlagSnapshotRun = 4,    // emitted from a venue's book snapshot (replay start)
  kFlagMaybeBadBook = 8,   // source said so, or a sequence gap was detected before it
  kFlagBadTimestamp = 16,  // the source marked the timestamp unreliable
};

struct Snapshot {
  int64_t ts_ns = 0;  // exchange time, ns since the UNIX epoch (UTC)
  // The source's second clock, for feed-latency studies: DBN ts_event (venue time;
  // ts_ns holds ts_recv, as DESIGN §2.3 asks), Binance local receive ns; 0 when none.
  int64_t ts_alt_ns = 0;
  int64_t bid_px[kBookLevels];
  int64_t ask_px[kBookLevels];
  double bid_sz[kBookLevels];
  double ask_sz[kBookLevels];
  uint32_t bid_ct[kBookLevels];  // order counts, 0 when unknown
  uint32_t ask_ct[kBookLevels];
  uint8_t flags = 0;

  Snapshot() { clear_levels(); }
  void clear_levels() {
    for (int i = 0; i < kBookLevels; ++i) {
      bid_px[i] = ask_px[i] = kEmptyPx;
      bid_sz[i] = ask_sz[i] = 0.0;
      bid_ct[i] = ask_ct[i] = 0;
    }
  }
  bool has_bid() const { return bid_px[0] != kEmptyPx && bid_sz[0] > 0; }
  bool has_ask() const { return ask_px[0] != kEmptyPx && ask_sz[0] > 0; }
  // Sets kFlagCrossed / kFlagLocked from the top of book.
  void mark_crossed_or_locked() {
    flags &= static_cast<uint8_t>(~(kFlagCrossed | kFlagLocked));
    if (has_bid() && has_ask()) {
      if (bid_px[0] > ask_px[0])
        flags |= kFlagCrossed;
      else if (bid_px[0] == ask_px[0])
        flags |= kFlagLocked;
    }
  }
};

// Aggressor side: +1 buyer-initiated, -1 seller-initiated, 0 unknown.
struct Trade {
  int64_t ts_ns = 0;
  int64_t px = 0;
  double sz = 0;
  int8_t side = 0;
};

// One order-by-order event (MBO), kept so the simulator can replay exact FIFO queues.
// action: 'A' add, 'C' cancel (size = amount removed), 'M' modify, 'R' clear,
// 'T' trade, 'F' fill, 'N' none. side: +1 bid, -1 ask, 0 none.
struct OrderEvent {
  int64_t ts_ns = 0;
  uint64_t order_id = 0;
  int64_t px = 0;
  double sz = 0;
  char action = 'N';
  int8_t side = 0;
  uint8_t flags = 0;  // the source's flags (DBN F_LAST = 128, ...)
};

// Receives a source's normalised stream in source order.
// A trade belongs to the first snapshot emitted at or after it (DESIGN §2.3);
// an order event belongs to the first snapshot emitted at or after it as well.
class BookSink {
 public:
  virtual ~BookSink() = default;
  virtual void on_snapshot(const Snapshot& s) = 0;
  virtual void on_trade(const Trade& t) = 0;
  virtual void on_order_event(const OrderEvent& e) { (void)e; }
};

}  // namespace fxt
