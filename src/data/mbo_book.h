// The order-by-order (MBO) replay book: rebuilds a per-order limit order book from
// Databento MBO records and emits MBP-10 snapshots to a BookSink (DESIGN §2.1).
//
// Every resting order keeps its id, side, price, size and FIFO place in its price
// level, so the simulator can ask for exact queue position on L3 data. Actions follow
// Databento: add, cancel (reduce by the message's size), modify (priority lost on a
// price change or size increase, kept on a size decrease), clear; trade and fill
// records do not change the book (the cancels that follow do). docs/MBO.md has the
// full semantics and the decisions taken on odd input (unknown ids, oversize cancels).
//
// Emission: one Snapshot after each event whose flags carry F_LAST, and one at the
// end of a run of F_SNAPSHOT records (some real files open with runs that never set
// F_LAST). Before each snapshot the sink has received, in source order, an OrderEvent
// for every record folded into it and a Trade for every 'T' record. Crossed and locked
// books are kept and flagged, never repaired.
//
// One book is one instrument. Not thread-safe; a book is owned by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/book.h"
#include "data/dbn.h"

namespace fxt {

// Counters over everything applied so far. "Ignored" records change nothing in the book
// but are still forwarded to the sink as OrderEvents.
struct MboStats {
  uint64_t events = 0;                  // MBO records applied (every action)
  uint64_t snapshots = 0;               // snapshots emitted
  uint64_t snapshot_run_snapshots = 0;  // of which carry kFlagSnapshotRun

  uint64_t adds = 0;
  uint64_t cancels = 0;
  uint64_t modifies = 0;
  uint64_t clears = 0;
  uint64_t trades = 0;           // 'T' records (each also became a Trade)
  uint64_t fills = 0;            // 'F' records
  uint64_t nones = 0;            // 'N' records
  uint64_t unknown_actions = 0;  // any other action byte: ignored

  uint64_t unknown_order_ids = 0;   // cancel_unknown_ids + modify_unknown_ids
  uint64_t cancel_unknown_ids = 0;  // cancel of an id not resting: ignored
  uint64_t modify_unknown_ids = 0;  // modify of an id not resting: treated as an add
  uint64_t oversize_cancels = 0;    // cancel larger than the remaining size: order removed
  uint64_t duplicate_add_ids = 0;   // add of an id already resting: the old order is replaced
  uint64_t ignored_adds = 0;        // add with side 'N', size 0 or an undefined price
  uint64_t removing_modifies = 0;   // modify to size 0 or an undefined price: order removed

  uint64_t crossed_snapshots = 0;         // emitted with kFlagCrossed (best bid > best ask)
  uint64_t locked_snapshots = 0;          // emitted with kFlagLocked (best bid == best ask)
  uint64_t maybe_bad_book_snapshots = 0;  // emitted with kFlagMaybeBadBook
  uint64_t bad_ts_snapshots = 0;          // emitted with kFlagBadTimestamp
  uint64_t unterminated_events = 0;       // finish() found records with no F_LAST after them

  uint64_t orders_resting = 0;  // orders in the book now (at the end, after finish())
  uint64_t max_orders_resting = 0;
  uint32_t max_bid_levels = 0;  // most bid price levels ever resting at once
  uint32_t max_ask_levels = 0;

  // Filled by replay_mbo_file only.
  uint64_t other_records = 0;             // non-MBO records skipped
  uint64_t other_instrument_records = 0;  // MBO records of other instruments skipped
};

// Where an order stands in its price level's FIFO queue.
struct QueuePosition {
  int8_t side = 0;            // +1 bid, -1 ask
  int64_t px = 0;             // 1e-9 units
  uint32_t size = 0;          // the order's remaining size
  uint64_t size_ahead = 0;    // total size of the orders in front of it
  uint32_t orders_ahead = 0;  // number of orders in front of it
  uint64_t level_size = 0;    // the whole level, this order included
  uint32_t level_orders = 0;
};

struct RestingOrder {
  uint64_t order_id = 0;
  uint32_t size = 0;
};

// Where a resting order is (queue_position without the walk over the orders ahead).
struct OrderPlace {
  int8_t side = 0;  // +1 bid, -1 ask
  int64_t px = 0;
  uint32_t size = 0;
};

// The MBO record equivalent of a stored order event (size rounded to the record's integer),
// without F_LAST/F_SNAPSHOT flags: a book fed these never emits snapshots. The simulator's
// books (sim/exchange.cc, sim/lane_l3.cc) apply stored order events through it.
dbn::MboMsg mbo_record(const OrderEvent& e);

class MboBook {
 public:
  // `sink` may be null (book and stats only); it must outlive the book.
  explicit MboBook(BookSink* sink);

  MboBook(const MboBook&) = delete;
  MboBook& operator=(const MboBook&) = delete;

  // Folds one MBO record into the book; may emit a snapshot (see the file comment).
  void apply(const dbn::MboMsg& m);
  // End of input: emits the pending snapshot, if any records were folded since the last.
  void finish();

  const MboStats& stats() const { return stats_; }

  // ---- queries on the current book ----------------------------------------------
  // O(level length). nullopt when the order is not resting.
  std::optional<QueuePosition> queue_position(uint64_t order_id) const;
  // O(1). nullopt when the order is not resting.
  std::optional<OrderPlace> order_place(uint64_t order_id) const;
  // Total size resting at (side, px); 0 when there is no such level.
  uint64_t level_size(int8_t side, int64_t px) const;
  // Orders resting at (side, px), front of the queue first; replaces *out's contents.
  // side: +1 bid, -1 ask. Returns the number of orders (0 when no such level).
  size_t level_orders(int8_t side, int64_t px, std::vector<RestingOrder>* out) const;
  // The top kBookLevels levels per side, with crossed/locked flags; ts and other flags 0.
  void fill_levels(Snapshot* out) const;

  size_t orders_resting() const { return live_orders_; }
  // Price levels resting on a side (+1 bid, -1 ask; 0 for any other side).
  size_t level_count(int8_t side) const {
    return side > 0 ? bids_.size() : side < 0 ? asks_.size() : 0;
  }
  int64_t best_bid_px() const;  // kEmptyPx when the side is empty
  int64_t best_ask_px() const;

 private:
  static constexpr int32_t kNil = -1;

  struct Order {
    uint64_t id;
    int64_t px;
    uint32_t size;
    int8_t side;    // +1 bid, -1 ask
    int32_t level;  // index into levels_
    int32_t prev;   // FIFO neighbours within the level (kNil at the ends)
    int32_t next;   // doubles as the free-list link while the slot is free
  };
  struct Level {
    int64_t px;
    uint64_t size;   // sum of the orders' sizes
    uint32_t count;  // number of orders
    int32_t head;    // front of the FIFO queue; the free-list link while the slot is free
    int32_t tail;
  };
  // One entry per price level of a side, sorted by key ascending with the best price at
  // the back (key = px for bids, -px for asks): activity near the touch moves little.
  struct LevelKey {
    int64_t key;
    int32_t level;
  };

  // Open-addressing map order_id -> order slot: linear probing, power-of-two capacity,
  // load <= 1/2, backward-shift deletion (no tombstones).
  class OrderIndex {
   public:
    OrderIndex();
    int32_t find(uint64_t id) const;
    void insert(uint64_t id, int32_t slot);  // id must be absent
    void erase(uint64_t id);                 // id must be present
    void clear();

   private:
    struct Entry {
      uint64_t id;
      int32_t slot;  // kNil when the entry is empty
    };
    size_t home(uint64_t id) const {
      return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    void grow();
    std::vector<Entry> table_;
    size_t mask_ = 0;
    int shift_ = 64;
    size_t size_ = 0;
  };

  void fold(const dbn::MboMsg& m);
  void emit();
  void on_add(const dbn::MboMsg& m, int8_t side);
  void on_cancel(const dbn::MboMsg& m);
  void on_modify(const dbn::MboMsg& m, int8_t side);
  void clear_book();

  // Creates an order at the back of its level's queue. size > 0, px defined.
  void add_order(uint64_t id, int8_t side, int64_t px, uint32_t size);
  // Unlinks the order from its level (dropping the level when it empties); the slot
  // and index entry stay.
  void unlink(int32_t slot);
  // Links the order at the back of the level for (side, px), creating the level.
  void link_back(int32_t slot);
  void remove_order(int32_t slot);  // unlink + free the slot + erase from the index
  int32_t find_level(int8_t side, int64_t px) const;  // kNil when absent

  BookSink* sink_;
  MboStats stats_;

  std::vector<Order> orders_;
  int32_t free_order_ = kNil;
  size_t live_orders_ = 0;
  std::vector<Level> levels_;
  int32_t free_level_ = kNil;
  std::vector<LevelKey> bids_;
  std::vector<LevelKey> asks_;
  OrderIndex index_;

  // The event being accumulated since the last snapshot.
  uint64_t pending_ = 0;           // records folded since the last snapshot
  bool pending_in_run_ = false;    // the last folded record carried F_SNAPSHOT
  bool pending_run_seen_ = false;  // some folded record carried F_SNAPSHOT
  uint8_t pending_flags_ = 0;      // kFlagMaybeBadBook / kFlagBadTimestamp seen
  int64_t last_ts_recv_ = 0;
  int64_t last_ts_event_ = 0;
  Snapshot snap_;
};

// Options for replay_mbo_file.
struct MboReplayOptions {
  // 0: the file must hold a single instrument (a second one is an InvalidInput error);
  // otherwise only that instrument's records are replayed, the others counted and skipped.
  uint32_t instrument_id = 0;
  // For a `.dbn.frag` input (records only): its DBN version, as dbn::ReaderOptions.
  uint8_t dbn_fragment_version = 0;
};

// Streams every MBO record (rtype 0xA0) of a DBN file through an MboBook into `sink`,
// then calls finish(). Other record types are skipped and counted. `stats` may be null.
Status replay_mbo_file(const std::string& path, BookSink* sink, MboStats* stats,
                       const MboReplayOptions& options = {});

}  // namespace fxt
