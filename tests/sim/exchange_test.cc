// The exchange driven directly (no engine): displayed-depth lookups, queue positions,
// liquidity memory and the messages it queues for the strategy.
#include "sim/exchange.h"

#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace fxt::sim {
namespace {
using namespace fxt::sim::test;

Snapshot full_book() {
  Levels bids, asks;
  for (int i = 0; i < kBookLevels; ++i) {
    bids.push_back({99 - 2 * i, 10.0 + i});  // 99, 97, ..., 81
    asks.push_back({100 + i, 5.0});
  }
  return book(1000, bids, asks);
}

TEST(BookView, SizeAtKnowsTheDisplayedDepth) {
  const Snapshot s = full_book();
  const BookView v = BookView::of(s);
  bool known = false;
  EXPECT_DOUBLE_EQ(v.size_at(+1, px(97), &known), 11);
  EXPECT_TRUE(known);
  EXPECT_DOUBLE_EQ(v.size_at(+1, px(98), &known), 0);  // a gap inside the shown range
  EXPECT_TRUE(known);
  EXPECT_DOUBLE_EQ(v.size_at(+1, px(80), &known), 0);  // below the 10th level: unknown
  EXPECT_FALSE(known);
  EXPECT_DOUBLE_EQ(v.size_at(-1, px(109), &known), 5);
  EXPECT_TRUE(known);
  EXPECT_DOUBLE_EQ(v.size_at(-1, px(110), &known), 0);
  EXPECT_FALSE(known);
  const Snapshot thin = book(1, {{99, 1}}, {{100, 1}});
  EXPECT_DOUBLE_EQ(BookView::of(thin).size_at(+1, px(50), &known), 0);  // every level shown
  EXPECT_TRUE(known);
}

struct Fixture {
  BacktestResult result;
  SimConfig config;
  Instrument instrument{kTick, 1};
  Exchange ex{config, instrument, &result};
};

TEST(Exchange, QueuePositionAndMessages) {
  Fixture f;
  const Snapshot s = full_book();
  f.ex.on_book(BookView::of(s), 1000);
  EXPECT_DOUBLE_EQ(f.ex.mid(), 99.5);
  const uint64_t id = f.ex.register_order(order(Side::kBuy, OrderType::kLimit, 97, 2), 900, 1000);
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(f.result.orders[0].state, OrderState::kPending);
  f.ex.on_order_arrival(id, 1000);
  EXPECT_DOUBLE_EQ(f.ex.queue_ahead(id), 11);
  ASSERT_EQ(f.ex.outbox().size(), 1u);
  EXPECT_EQ(f.ex.outbox()[0].ack.kind, AckKind::kAccepted);
  EXPECT_FALSE(f.ex.outbox()[0].final);
  f.ex.outbox().clear();
  // A trade at 97 of 9: 2 ahead. Buyer-initiated trades at our bid price do not count.
  f.ex.on_trade(Trade{1100, px(97), 9, -1}, 1100);
  EXPECT_DOUBLE_EQ(f.ex.queue_ahead(id), 2);
  f.ex.on_trade(Trade{1100, px(97), 5, +1}, 1100);
  EXPECT_DOUBLE_EQ(f.ex.queue_ahead(id), 2);
  f.ex.on_trade(Trade{1200, px(97), 3, 0}, 1200);  // unknown aggressor: counts
  ASSERT_EQ(f.result.fills.size(), 1u);
  EXPECT_DOUBLE_EQ(f.result.fills[0].qty, 1);
  EXPECT_DOUBLE_EQ(f.ex.queue_ahead(id), 0);
  ASSERT_EQ(f.ex.outbox().size(), 1u);
  EXPECT_TRUE(f.ex.outbox()[0].is_fill);
  EXPECT_FALSE(f.ex.outbox()[0].final);
  f.ex.outbox().clear();
  f.ex.on_cancel_arrival(id, 1300);
  EXPECT_EQ(f.result.orders[0].state, OrderState::kCanceled);
  EXPECT_DOUBLE_EQ(f.ex.queue_ahead(id), -1);
  ASSERT_EQ(f.ex.outbox().size(), 1u);
  EXPECT_EQ(f.ex.outbox()[0].ack.kind, AckKind::kCanceled);
  EXPECT_TRUE(f.ex.outbox()[0].final);
  EXPECT_FALSE(f.ex.has_resting());
}

TEST(Exchange, TwoOrdersAtOneLevelShareATradeOnce) {
  Fixture f;
  const Snapshot s = book(1000, {{99, 4}}, {{100, 5}});
  f.ex.on_book(BookView::of(s), 1000);
  const uint64_t a = f.ex.register_order(order(Side::kBuy, OrderType::kLimit, 99, 3), 0, 1000);
  f.ex.on_order_arrival(a, 1000);
  const uint64_t b = f.ex.register_order(order(Side::kBuy, OrderType::kLimit, 99, 3), 0, 1000);
  f.ex.on_order_arrival(b, 1000);
  // Both think 4 are ahead; a trade of 6 leaves 2 beyond the queue: order a takes them,
  // order b gets nothing more from the same volume.
  f.ex.on_trade(Trade{1100, px(99), 6, -1}, 1100);
  ASSERT_EQ(f.result.fills.size(), 1u);
  EXPECT_EQ(f.result.fills[0].order_id, a);
  EXPECT_DOUBLE_EQ(f.result.fills[0].qty, 2);
}

TEST(Exchange, RejectsBadOrders) {
  Fixture f;
  const Snapshot s = book(1000, {{99, 4}}, {{100, 5}});
  f.ex.on_book(BookView::of(s), 1000);
  OrderRequest off_tick = order(Side::kBuy, OrderType::kLimit, 99, 1);
  off_tick.px += 1;
  const uint64_t a = f.ex.register_order(off_tick, 0, 1000);
  f.ex.on_order_arrival(a, 1000);
  EXPECT_EQ(f.result.orders[0].state, OrderState::kRejected);
  EXPECT_NE(f.result.orders[0].reason.find("tick"), std::string::npos);
  const uint64_t b = f.ex.register_order(order(Side::kSell, OrderType::kMarket, 0, 0), 0, 1000);
  f.ex.on_order_arrival(b, 1000);
  EXPECT_EQ(f.result.orders[1].state, OrderState::kRejected);
  EXPECT_EQ(f.result.orders[1].reason, "size must be > 0");
  const uint64_t c = f.ex.register_order(order(Side::kBuy, OrderType::kLimit, 98, 1), 0, 1000);
  f.ex.on_order_arrival(c, 1000);
  f.ex.outbox().clear();
  f.ex.on_modify_arrival(c, px(98), 0.5, 1100);  // shrink: fine
  f.ex.on_modify_arrival(c, px(98), 0, 1100);    // to nothing: rejected
  ASSERT_EQ(f.ex.outbox().size(), 2u);
  EXPECT_EQ(f.ex.outbox()[0].ack.kind, AckKind::kModified);
  EXPECT_DOUBLE_EQ(f.ex.outbox()[0].new_qty, 0.5);
  EXPECT_EQ(f.ex.outbox()[1].ack.kind, AckKind::kRejected);
  EXPECT_EQ(f.result.orders[2].state, OrderState::kOpen);
  EXPECT_DOUBLE_EQ(f.result.orders[2].qty, 0.5);
}

TEST(Exchange, MemoryRefreshesWhenTheLevelChanges) {
  Fixture f;
  const Snapshot s1 = book(1000, {{99, 4}}, {{100, 5}, {101, 5}});
  f.ex.on_book(BookView::of(s1), 1000);
  const uint64_t a = f.ex.register_order(order(Side::kBuy, OrderType::kMarket, 0, 3), 0, 1000);
  f.ex.on_order_arrival(a, 1000);
  EXPECT_FALSE(f.ex.idle());  // 3 of the 100 level remembered
  const uint64_t b = f.ex.register_order(order(Side::kBuy, OrderType::kMarket, 0, 3), 0, 1000);
  f.ex.on_order_arrival(b, 1000);
  ASSERT_EQ(f.result.fills.size(), 3u);  // 3@100, then 2@100 + 1@101
  EXPECT_DOUBLE_EQ(f.result.fills[1].qty, 2);
  EXPECT_EQ(f.result.fills[2].px, px(101));
  // The 100 level disappears and comes back with 5: fresh liquidity; 101 unchanged.
  const Snapshot s2 = book(1100, {{99, 4}}, {{101, 5}});
  f.ex.on_book(BookView::of(s2), 1100);
  const Snapshot s3 = book(1200, {{99, 4}}, {{100, 5}, {101, 5}});
  f.ex.on_book(BookView::of(s3), 1200);
  const uint64_t c = f.ex.register_order(order(Side::kBuy, OrderType::kIoc, 101, 10), 0, 1200);
  f.ex.on_order_arrival(c, 1200);
  ASSERT_EQ(f.result.fills.size(), 5u);
  EXPECT_DOUBLE_EQ(f.result.fills[3].qty, 5);  // 5@100
  EXPECT_DOUBLE_EQ(f.result.fills[4].qty, 4);  // 101 still has 1 of its 5 taken
  EXPECT_EQ(f.result.orders[2].state, OrderState::kExpired);
}

}  // namespace
}  // namespace fxt::sim
