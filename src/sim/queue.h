// Queue position of one of our resting orders (DESIGN §7.2).
//
// L2 (aggregated depth only): an estimate. Joining: size ahead = the displayed size at our
// price. A trade at our price eats the queue from the front. Between two snapshots the
// level's change net of the trades already applied is either growth (new orders join
// behind us) or a decrease: cancels, split ahead/behind by the queue model with
// p = share of the decrease behind us:
//   risk-averse  p = 1 (nothing ahead of us ever cancels)
//   power:n      p = back^n / (back^n + front^n)
//   log          p = ln(1+back) / (ln(1+back) + ln(1+front))
// where front = size ahead, back = the level's size behind us (before the decrease, after
// the trades). p = 1 when front = back = 0.
//
// L3 (order-by-order data): exact FIFO. Joining: behind every order resting at our price
// at that moment. Only those orders' cancels and priority-losing modifies shrink the size
// ahead; a trade at our price consumes it from the front until the cancels that follow
// the trade (how MBO feeds report fills) catch up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/book.h"
#include "sim/fill_rules.h"
#include "sim/types.h"

namespace fxt::sim {

// queue_share_behind (p above) and L2Queue, the L2 estimate of one order: sim/fill_rules.h.

// L3 FIFO for one order: the specific orders ahead of us.
struct L3Queue {
  struct Ahead {
    uint64_t order_id;
    double size;
  };
  std::vector<Ahead> ahead;   // front first
  double ahead_size = 0;      // sum of ahead[].size
  double pending_traded = 0;  // traded against the orders ahead, not yet removed by their cancels

  void join(std::vector<Ahead> orders);
  double effective_ahead() const { return fifo_effective_ahead(ahead_size, pending_traded); }
  // A trade of `size` at our price. Returns the volume beyond the queue ahead.
  double on_trade(double size);
  // An MBO event for an order we track (order_id must be in `ahead`), our level's price `px`.
  // Returns true when the order stopped being ahead of us.
  bool on_event(const OrderEvent& e, int64_t px);
  void clear() {
    ahead.clear();
    ahead_size = 0;
    pending_traded = 0;
  }
  void reduce(double amount);
};

}  // namespace fxt::sim
