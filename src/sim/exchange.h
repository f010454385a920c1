// The simulated exchange (DESIGN §7.2): our orders against the historical book.
//
// The historical book is never changed by our orders. Marketable orders walk the displayed
// levels of the opposite side (one Fill per level, taker); the displayed size we took at a
// level is remembered until that level refreshes (its displayed size changes or it leaves
// the displayed book), so the same size is never taken twice. Resting orders keep a queue
// position (sim/queue.h: an L2 estimate, or exact FIFO on L3 sessions) and fill as maker at
// their limit price: partially by traded volume beyond the queue ahead, fully when a trade
// prints through the price or the opposite touch (net of liquidity we took) reaches it.
//
// The engine feeds market data (on_trade, on_book, on_order_event) and order messages as
// they arrive (on_*_arrival) in exchange-time order; the exchange keeps the account and the
// result rows and queues its messages to the strategy in outbox().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/book.h"
#include "data/mbo_book.h"
#include "sim/account.h"
#include "sim/queue.h"
#include "sim/types.h"

namespace fxt::sim {

// One displayed book: pointers to kBookLevels prices/sizes per side (a store row or a
// Snapshot), not a copy. Sides: +1 bids (best first, descending), -1 asks (ascending).
struct BookView {
  const int64_t* bid_px = nullptr;
  const int64_t* ask_px = nullptr;
  const double* bid_sz = nullptr;
  const double* ask_sz = nullptr;
  uint8_t flags = 0;

  static BookView of(const Snapshot& s) {
    return {s.bid_px, s.ask_px, s.bid_sz, s.ask_sz, s.flags};
  }
  bool valid() const { return bid_px != nullptr; }
  const int64_t* px(int side) const { return side > 0 ? bid_px : ask_px; }
  const double* sz(int side) const { return side > 0 ? bid_sz : ask_sz; }
  // Displayed size at `px` on `side`. *known = false when px is beyond the displayed depth
  // (all kBookLevels levels shown and px worse than the last): the size is unknown.
  double size_at(int side, int64_t px, bool* known) const;
};

// A message to the strategy, delivered response latency after act_ns.
struct Outgoing {
  int64_t act_ns = 0;
  bool is_fill = false;
  Fill fill;
  Ack ack;
  bool final = false;  // the order reached its final state with this message
  int64_t new_px = 0;  // kModified: the order's price and total size now
  double new_qty = 0;
};

class Exchange {
 public:
  // instrument: the effective one (tick from the store). result: where orders, fills and
  // equity rows go; must outlive the exchange.
  Exchange(const SimConfig& config, const Instrument& instrument, BacktestResult* result);

  // Registers an order the strategy has just sent (state pending). Returns its id (>= 1).
  uint64_t register_order(const OrderRequest& request, int64_t sent_ns, int64_t arrive_ns);
  void on_order_arrival(uint64_t id, int64_t t);
  void on_cancel_arrival(uint64_t id, int64_t t);
  void on_modify_arrival(uint64_t id, int64_t px, double qty, int64_t t);

  // A new session (store) starts: the book, the liquidity memory and the L3 book reset;
  // orders still resting rejoin the back of their level at the session's first snapshot.
  void begin_session(bool l3);
  void on_trade(const Trade& trade, int64_t t);
  void on_book(const BookView& view, int64_t t);
  void on_order_event(const OrderEvent& e, int64_t t);  // L3 sessions only

  void sample_equity(int64_t t);
  bool has_resting() const { return !resting_.empty(); }
  bool idle() const { return resting_.empty() && memory_.empty(); }
  const Account& account() const { return account_; }
  double mid() const { return mid_; }
  std::vector<Outgoing>& outbox() { return outbox_; }
  // The size ahead of a resting order (L2 estimate or L3 FIFO); -1 when not resting.
  double queue_ahead(uint64_t id) const;

 private:
  struct LiveOrder {
    OrderType type = OrderType::kLimit;
    Side side = Side::kBuy;
    int64_t px = 0;
    double qty = 0;
    double filled = 0;
    double notional_filled = 0;  // Σ px·1e-9·q, for the average fill price
    bool resting = false;
    bool l3 = false;      // queue kept as L3 FIFO
    bool rejoin = false;  // rejoin the queue at the next book (new session)
    L2Queue l2;
    L3Queue l3q;
  };
  struct Taken {  // liquidity memory: displayed size we took at one level
    int side;
    int64_t px;
    double displayed;  // the level's displayed size when we took from it
    double taken;
  };

  LiveOrder& live(uint64_t id) { return live_[id - 1]; }
  OrderRecord& record(uint64_t id) { return result_->orders[id - 1]; }
  double remaining(const LiveOrder& o) const { return o.qty - o.filled; }

  Status validate(const LiveOrder& o) const;
  double taken_at(int side, int64_t px) const;
  // Liquidity on the opposite side of `side` at prices up to `limit` (inclusive), net of
  // what we took; has_limit = false: all displayed levels.
  double available(Side side, bool has_limit, int64_t limit) const;
  int64_t best_available(int side) const;  // px of the first level with size left; kEmptyPx
  bool would_cross(Side side, int64_t px) const;
  // Walks the opposite levels taking up to `want`; one taker fill per level.
  void take(uint64_t id, bool has_limit, int64_t limit, double want, int64_t t);
  void fill(uint64_t id, int64_t px, double qty, bool maker, int64_t t);
  void join_queue(uint64_t id);   // start_queue + append to resting_
  void start_queue(uint64_t id);  // queue position at the back of the level, as of now
  void leave_queue(uint64_t id);
  void finish_order(uint64_t id, OrderState state, int64_t t, const std::string& reason);
  void send_ack(uint64_t id, AckKind kind, int64_t t, std::string reason, bool final);
  void prune_resting();

  SimConfig config_;
  Instrument instrument_;
  BacktestResult* result_;
  Account account_;
  std::vector<LiveOrder> live_;    // index id - 1, parallel to result_->orders
  std::vector<uint64_t> resting_;  // ids of resting orders, in the order they joined
  std::vector<Taken> memory_;
  std::vector<Outgoing> outbox_;
  BookView book_;
  double mid_ = 0;  // last valid mid, currency per unit
  bool l3_session_ = false;
  std::unique_ptr<MboBook> mbo_;                    // L3 sessions: the order-by-order book
  std::unordered_map<uint64_t, uint32_t> tracked_;  // historical ids ahead of our orders
  std::vector<RestingOrder> level_buffer_;
};

}  // namespace fxt::sim
