// The replay engine end to end on hand-built stores: order types, fills, latency, fees,
// liquidity memory, multi-store sessions. Every expected number is computed by hand in the
// comments.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "data/ingest.h"
#include "sim/account.h"
#include "sim_test_util.h"

namespace fxt::sim {
namespace {
using namespace fxt::sim::test;

// Book: bid 99 x10; asks 100 x5, 101 x5, 102 x10.
std::vector<Row> simple_market() {
  return {S(book(1000, {{99, 10}}, {{100, 5}, {101, 5}, {102, 10}})),
          S(book(2000, {{99, 10}}, {{100, 5}, {101, 5}, {102, 10}})),
          S(book(3000, {{99, 10}}, {{100, 5}, {101, 5}, {102, 10}}))};
}

TEST(Engine, MarketOrderWalksTwoLevels) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 7)); });
  SimConfig cfg;
  BacktestResult r = run_ok({store}, cfg, &s);
  ASSERT_EQ(r.fills.size(), 2u);
  EXPECT_EQ(r.fills[0].px, px(100));
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 5);
  EXPECT_EQ(r.fills[1].px, px(101));
  EXPECT_DOUBLE_EQ(r.fills[1].qty, 2);
  EXPECT_FALSE(r.fills[0].maker);
  ASSERT_EQ(r.orders.size(), 1u);
  EXPECT_EQ(r.orders[0].state, OrderState::kFilled);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 7);
  // VWAP (5·100 + 2·101) / 7 = 702 / 7.
  EXPECT_NEAR(r.orders[0].avg_fill_px, 702.0 / 7.0, 1e-9);
  EXPECT_EQ(r.instrument.tick_px, kTick);
  EXPECT_EQ(r.events, 3u);
  // Position 7, cash −702; equity at mid 99.5: −702 + 7·99.5 = −5.5.
  EXPECT_DOUBLE_EQ(r.equity.back().position, 7);
  EXPECT_DOUBLE_EQ(r.equity.back().cash, -702);
  EXPECT_DOUBLE_EQ(r.equity.back().equity, -5.5);
  EXPECT_DOUBLE_EQ(s.end_position, 7);
  EXPECT_DOUBLE_EQ(s.end_cash, -702);
  expect_conservation(r);
}

TEST(Engine, MarketOrderPartialWhenDepthRunsOut) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 25)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // 5@100 + 5@101 + 10@102 = 20 filled, 5 expired.
  ASSERT_EQ(r.fills.size(), 3u);
  EXPECT_EQ(r.fills[2].px, px(102));
  EXPECT_DOUBLE_EQ(r.fills[2].qty, 10);
  EXPECT_EQ(r.orders[0].state, OrderState::kExpired);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 20);
  EXPECT_NEAR(r.orders[0].avg_fill_px, (500.0 + 505.0 + 1020.0) / 20.0, 1e-9);
  ASSERT_EQ(s.acks.size(), 2u);
  EXPECT_EQ(s.acks[0].kind, AckKind::kAccepted);
  EXPECT_EQ(s.acks[1].kind, AckKind::kDone);
  EXPECT_TRUE(s.end_open.empty());
  expect_conservation(r);
}

TEST(Engine, LimitCrossesPartlyThenRestsThenFillsWhenTouchCrosses) {
  std::vector<Row> rows = simple_market();
  // At 3000 the 101 ask refreshes (5 -> 3): the resting bid at 101 is crossed.
  rows[2] = S(book(3000, {{99, 10}}, {{101, 3}, {102, 10}}));
  const std::string store = write_store(rows);
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 101, 12)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // Takes 5@100 and 5@101, rests 2 at 101; at 2000 the book is unchanged (both levels are
  // remembered as taken, best available ask 102 > 101); at 3000 the ask at 101 crosses it.
  ASSERT_EQ(r.fills.size(), 3u);
  EXPECT_FALSE(r.fills[0].maker);
  EXPECT_FALSE(r.fills[1].maker);
  EXPECT_TRUE(r.fills[2].maker);
  EXPECT_EQ(r.fills[2].px, px(101));
  EXPECT_DOUBLE_EQ(r.fills[2].qty, 2);
  EXPECT_EQ(r.fills[2].ts_ns, 3000);
  EXPECT_EQ(r.orders[0].state, OrderState::kFilled);
  EXPECT_EQ(r.orders[0].done_ns, 3000);
  EXPECT_NEAR(r.orders[0].avg_fill_px, (500.0 + 505.0 + 202.0) / 12.0, 1e-9);
  expect_conservation(r);
}

TEST(Engine, LimitRestsOpenAtEnd) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 101, 12)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  ASSERT_EQ(r.fills.size(), 2u);
  EXPECT_EQ(r.orders[0].state, OrderState::kOpen);
  EXPECT_EQ(r.orders[0].done_ns, 0);
  ASSERT_EQ(s.end_open.size(), 1u);
  EXPECT_DOUBLE_EQ(s.end_open[0].filled_qty, 10);
  EXPECT_TRUE(s.end_open[0].acknowledged);
}

TEST(Engine, PostOnlyRejectedIfItWouldCross) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) {
    c.submit(order(Side::kBuy, OrderType::kPostOnly, 100, 1));  // would take the 100 ask
    c.submit(order(Side::kBuy, OrderType::kPostOnly, 99, 1));   // joins the bid
    c.submit(order(Side::kSell, OrderType::kPostOnly, 99, 1));  // would hit the 99 bid
  });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  EXPECT_TRUE(r.fills.empty());
  EXPECT_EQ(r.orders[0].state, OrderState::kRejected);
  EXPECT_EQ(r.orders[0].reason, "post-only would cross");
  EXPECT_EQ(r.orders[1].state, OrderState::kOpen);
  EXPECT_EQ(r.orders[2].state, OrderState::kRejected);
  ASSERT_EQ(s.acks.size(), 3u);
  EXPECT_EQ(s.acks[0].kind, AckKind::kRejected);
  EXPECT_EQ(s.acks[0].reason, "post-only would cross");
  EXPECT_EQ(s.acks[1].kind, AckKind::kAccepted);
  ASSERT_EQ(s.end_open.size(), 1u);
  EXPECT_EQ(s.end_open[0].order_id, 2u);
}

TEST(Engine, IocRemainderExpires) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kIoc, 100, 8)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 5);
  EXPECT_EQ(r.orders[0].state, OrderState::kExpired);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 5);
  ASSERT_EQ(s.acks.size(), 2u);
  EXPECT_EQ(s.acks[1].kind, AckKind::kDone);
  EXPECT_TRUE(s.end_open.empty());
}

TEST(Engine, FokAllOrNothing) {
  const std::string store = write_store(simple_market());
  Script s;
  s.at(1000, [](StrategyContext& c) {
    c.submit(order(Side::kBuy, OrderType::kFok, 101, 11));  // only 10 up to 101: nothing
    c.submit(order(Side::kBuy, OrderType::kFok, 101, 10));  // exactly 10: all
  });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  EXPECT_EQ(r.orders[0].state, OrderState::kExpired);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 0);
  EXPECT_EQ(r.orders[0].reason, "fok: not enough liquidity");
  EXPECT_EQ(r.orders[1].state, OrderState::kFilled);
  ASSERT_EQ(r.fills.size(), 2u);
  EXPECT_EQ(r.fills[0].order_id, 2u);
  EXPECT_EQ(r.fills[0].px, px(100));
  EXPECT_EQ(r.fills[1].px, px(101));
  EXPECT_NEAR(r.orders[1].avg_fill_px, 100.5, 1e-9);
}

TEST(Engine, CancelAndCancelOfAFinishedOrder) {
  const std::string store = write_store(simple_market());
  Script s;
  uint64_t id = 0;
  s.at(1000,
       [&](StrategyContext& c) { id = c.submit(order(Side::kBuy, OrderType::kLimit, 98, 3)); });
  s.at(2000, [&](StrategyContext& c) {
    EXPECT_EQ(c.open_orders().size(), 1u);
    c.cancel(id);
    c.cancel(id);  // second cancel: the order is no longer open
    c.cancel(77);  // never ours
  });
  SimConfig cfg;
  cfg.latency.entry_ns = 100;
  cfg.latency.response_ns = 50;
  BacktestResult r = run_ok({store}, cfg, &s);
  EXPECT_EQ(r.orders[0].state, OrderState::kCanceled);
  EXPECT_EQ(r.orders[0].arrive_ns, 1100);
  EXPECT_EQ(r.orders[0].done_ns, 2100);
  ASSERT_EQ(s.acks.size(), 4u);
  EXPECT_EQ(s.acks[0].kind, AckKind::kAccepted);
  EXPECT_EQ(s.acks[0].ts_ns, 1150);
  EXPECT_EQ(s.acks[1].kind, AckKind::kCanceled);
  EXPECT_EQ(s.acks[1].ts_ns, 2150);
  EXPECT_EQ(s.acks[2].kind, AckKind::kRejected);
  EXPECT_EQ(s.acks[2].reason, "cancel: order not open");
  EXPECT_EQ(s.acks[3].kind, AckKind::kRejected);
  EXPECT_EQ(s.acks[3].order_id, 77u);
  EXPECT_EQ(s.acks[3].reason, "cancel: unknown order");
  EXPECT_TRUE(s.end_open.empty());
}

// Bid 99 shows 10 when we join; 4 more join behind before the modify.
std::vector<Row> modify_market(double second_trade) {
  return {S(book(1000, {{99, 10}}, {{100, 5}})),
          S(book(2000, {{99, 14}}, {{100, 5}})),
          T(trade(2500, 99, 11, -1)),
          S(book(2500, {{99, 3}}, {{100, 5}})),
          T(trade(2700, 99, second_trade, -1)),
          S(book(2700, {{99, 3 - second_trade}}, {{100, 5}})),
          S(book(4000, {{98, 1}}, {{100, 5}}))};
}

TEST(Engine, ModifySizeDecreaseKeepsPriority) {
  const std::string store = write_store(modify_market(2));
  Script s;
  uint64_t id = 0;
  s.at(1000,
       [&](StrategyContext& c) { id = c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2)); });
  s.at(2000, [&](StrategyContext& c) { c.modify(id, px(99), 1); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // Ahead 10 kept; the trade of 11 at 2500 reaches us with 1: filled.
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].ts_ns, 2500);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 1);
  EXPECT_TRUE(r.fills[0].maker);
  EXPECT_EQ(r.orders[0].state, OrderState::kFilled);
  EXPECT_DOUBLE_EQ(r.orders[0].qty, 1);
  ASSERT_GE(s.acks.size(), 2u);
  EXPECT_EQ(s.acks[1].kind, AckKind::kModified);
}

TEST(Engine, ModifySizeIncreaseLosesPriority) {
  const std::string store = write_store(modify_market(2));
  Script s;
  uint64_t id = 0;
  s.at(1000,
       [&](StrategyContext& c) { id = c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2)); });
  s.at(2000, [&](StrategyContext& c) { c.modify(id, px(99), 3); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // Rejoins behind the 14 shown at 2000: the trade of 11 leaves 3 ahead, the trade of 2 at
  // 2700 leaves 1 ahead: nothing reaches us, and at 4000 the level is gone without a
  // trade-through (best bid 98, ask 100): the order stays open.
  EXPECT_TRUE(r.fills.empty());
  EXPECT_EQ(r.orders[0].state, OrderState::kOpen);
  EXPECT_DOUBLE_EQ(r.orders[0].qty, 3);
  ASSERT_EQ(s.end_open.size(), 1u);
  EXPECT_DOUBLE_EQ(s.end_open[0].qty, 3);
}

TEST(Engine, ModifyIncreaseThenTradeBeyondQueue) {
  const std::string store = write_store(modify_market(5));
  Script s;
  uint64_t id = 0;
  s.at(1000,
       [&](StrategyContext& c) { id = c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2)); });
  s.at(2000, [&](StrategyContext& c) { c.modify(id, px(99), 3); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // Ahead 14 -> 3 after the trade of 11 -> the trade of 5 at 2700 gives us 2 of our 3.
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].ts_ns, 2700);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 2);
  EXPECT_EQ(r.orders[0].state, OrderState::kOpen);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 2);
}

TEST(Engine, ModifyPriceChangeRejoinsAtNewPrice) {
  const std::string store = write_store(modify_market(2));
  Script s;
  uint64_t id = 0;
  s.at(1000,
       [&](StrategyContext& c) { id = c.submit(order(Side::kBuy, OrderType::kLimit, 98, 2)); });
  s.at(2000, [&](StrategyContext& c) { c.modify(id, px(100), 2); });  // crosses the 100 ask
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].px, px(100));
  EXPECT_FALSE(r.fills[0].maker);
  EXPECT_EQ(r.orders[0].px, px(100));
  EXPECT_EQ(r.orders[0].state, OrderState::kFilled);
}

TEST(Engine, OrderSentBeforeAPriceMoveFillsAtTheLaterPrice) {
  const std::string store = write_store({S(book(1000, {{99, 10}}, {{100, 5}, {101, 5}})),
                                         S(book(1200, {{101, 10}}, {{102, 5}, {103, 5}})),
                                         S(book(1550, {{101, 10}}, {{102, 5}, {103, 5}})),
                                         S(book(2000, {{101, 10}}, {{102, 5}, {103, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 3)); });
  s.at(1550, [](StrategyContext& c) {
    // Filled at the exchange at 1500, but the strategy learns it only at 1600.
    EXPECT_DOUBLE_EQ(c.position(), 0);
    ASSERT_EQ(c.open_orders().size(), 1u);
    EXPECT_FALSE(c.open_orders()[0].acknowledged);
  });
  s.at(2000, [](StrategyContext& c) {
    EXPECT_DOUBLE_EQ(c.position(), 3);
    EXPECT_DOUBLE_EQ(c.cash(), -306);
    EXPECT_TRUE(c.open_orders().empty());
  });
  SimConfig cfg;
  cfg.latency.entry_ns = 500;
  cfg.latency.response_ns = 100;
  BacktestResult r = run_ok({store}, cfg, &s);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].px, px(102));
  EXPECT_EQ(r.fills[0].ts_ns, 1500);
  EXPECT_EQ(r.orders[0].sent_ns, 1000);
  EXPECT_EQ(r.orders[0].arrive_ns, 1500);
  ASSERT_EQ(s.fill_seen_ns.size(), 1u);
  EXPECT_EQ(s.fill_seen_ns[0], 1600);  // response latency after the exchange filled it
  ASSERT_EQ(s.acks.size(), 1u);
  EXPECT_EQ(s.acks[0].ts_ns, 1600);
}

TEST(Engine, FeedLatencyStrategySeesTheBookLate) {
  const std::string store =
      write_store({S(book(1000, {{99, 10}}, {{100, 5}})), S(book(1200, {{104, 10}}, {{105, 5}})),
                   S(book(5000, {{104, 10}}, {{105, 5}}))});
  Script s;
  int64_t seen_ask = 0;
  s.at(1300, [&](StrategyContext& c) {
    seen_ask = c.book().ask_px[0];
    EXPECT_EQ(c.now_ns(), 1300);
    c.submit(order(Side::kBuy, OrderType::kMarket, 0, 1));
  });
  SimConfig cfg;
  cfg.latency.feed_ns = 300;
  BacktestResult r = run_ok({store}, cfg, &s);
  ASSERT_EQ(s.events.size(), 3u);
  EXPECT_EQ(s.events[0].ts_ns, 1000);
  EXPECT_EQ(s.events[0].seen_ns, 1300);
  EXPECT_EQ(s.events[1].seen_ns, 1500);
  EXPECT_EQ(s.events[2].seen_ns, 5300);
  EXPECT_EQ(seen_ask, px(100));  // the strategy still sees the 1000 book at 1300
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].px, px(105));  // the exchange moved at 1200
  EXPECT_EQ(r.fills[0].ts_ns, 1300);
}

TEST(Engine, LatencyFileInterpolatesEntryAndResponse) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string file = dir + "/lat.csv";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fputs("ts_ns,entry_ns,response_ns\n0,100,10\n2000,300,30\n", f);
    std::fclose(f);
  }
  const std::string store =
      write_store({S(book(1000, {{99, 10}}, {{100, 5}})), S(book(3000, {{99, 10}}, {{100, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 90, 1)); });
  SimConfig cfg;
  cfg.latency.file = file;
  cfg.latency.entry_ns = 999'999;  // ignored when a file is given
  BacktestResult r = run_ok({store}, cfg, &s);
  // Sent at 1000: entry = 100 + (300 − 100)·1000/2000 = 200 -> arrives 1200. The ack leaves
  // at 1200: response = 10 + 20·1200/2000 = 22 -> received at 1222.
  EXPECT_EQ(r.orders[0].arrive_ns, 1200);
  ASSERT_EQ(s.acks.size(), 1u);
  EXPECT_EQ(s.acks[0].ts_ns, 1222);
}

TEST(Engine, FeesRebatesAndMultiplier) {
  const std::string store =
      write_store({S(book(1000, {{99, 10}}, {{100, 5}, {101, 5}})), T(trade(1500, 99, 12, -1)),
                   S(book(1500, {{99, 3}}, {{100, 5}, {101, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) {
    c.submit(order(Side::kBuy, OrderType::kMarket, 0, 7));
    c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2));
  });
  SimConfig cfg;
  cfg.instrument.multiplier = 50;
  cfg.fees.taker_bps = 1;
  cfg.fees.taker_per_unit = 0.25;
  cfg.fees.maker_bps = -0.5;
  cfg.fees.maker_per_unit = -0.1;
  BacktestResult r = run_ok({store}, cfg, &s);
  ASSERT_EQ(r.fills.size(), 3u);
  // 5@100: notional 5·100·50 = 25000, fee 25000·1e-4 + 5·0.25 = 2.5 + 1.25 = 3.75.
  EXPECT_NEAR(r.fills[0].fee, 3.75, 1e-9);
  // 2@101: notional 10100, fee 1.01 + 0.5 = 1.51.
  EXPECT_NEAR(r.fills[1].fee, 1.51, 1e-9);
  // The bid at 99 (10 ahead) gets 2 of the 12 traded: maker, notional 2·99·50 = 9900,
  // fee −0.5e-4·9900 − 0.1·2 = −0.495 − 0.2 = −0.695 (a rebate).
  EXPECT_TRUE(r.fills[2].maker);
  EXPECT_NEAR(r.fills[2].fee, -0.695, 1e-9);
  EXPECT_NEAR(r.fees_paid, 3.75 + 1.51 - 0.695, 1e-9);
  // Cash: −25000 − 10100 − 9900 − fees = −45000 − 4.565 = −45004.565; position 9.
  const EquityPoint& last = r.equity.back();
  EXPECT_DOUBLE_EQ(last.position, 9);
  EXPECT_NEAR(last.cash, -45004.565, 1e-6);
  // Mid at 1500: (99 + 100)/2 = 99.5; equity −45004.565 + 9·99.5·50 = −229.565.
  EXPECT_NEAR(last.equity, -229.565, 1e-6);
  EXPECT_EQ(r.instrument.multiplier, 50);
  EXPECT_NEAR(s.end_cash, -45004.565, 1e-6);
  expect_conservation(r);
}

TEST(Engine, PartialFillsUpdatePositionAndCash) {
  // Regression (DESIGN §7.2): every partial fill moves position, cash and fees.
  const std::string store =
      write_store({S(book(1000, {{99, 10}}, {{100, 5}})), T(trade(1100, 99, 12, -1)),
                   S(book(1100, {{99, 3}}, {{100, 5}})), T(trade(1200, 99, 2, -1)),
                   S(book(1200, {{99, 1}}, {{100, 5}})), S(book(1300, {{99, 1}}, {{100, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 99, 5)); });
  SimConfig cfg;
  cfg.fees.maker_per_unit = 0.5;
  BacktestResult r = run_ok({store}, cfg, &s);
  // Ahead 10: the 12 traded gives us 2; ahead is 0 now, so the next 2 are ours too.
  ASSERT_EQ(r.fills.size(), 2u);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 2);
  EXPECT_DOUBLE_EQ(r.fills[1].qty, 2);
  ASSERT_EQ(s.positions.size(), 2u);
  EXPECT_DOUBLE_EQ(s.positions[0], 2);
  EXPECT_DOUBLE_EQ(s.cashes[0], -198 - 1);
  EXPECT_DOUBLE_EQ(s.positions[1], 4);
  EXPECT_DOUBLE_EQ(s.cashes[1], -396 - 2);
  EXPECT_EQ(r.orders[0].state, OrderState::kOpen);
  EXPECT_DOUBLE_EQ(r.orders[0].filled_qty, 4);
  EXPECT_DOUBLE_EQ(r.fees_paid, 2);
  // Equity rows at each fill carry the running totals.
  bool saw_first = false;
  for (const EquityPoint& p : r.equity)
    if (p.ts_ns == 1100 && p.position == 2) {
      saw_first = true;
      EXPECT_DOUBLE_EQ(p.cash, -199);
    }
  EXPECT_TRUE(saw_first);
  ASSERT_EQ(s.end_open.size(), 1u);
  EXPECT_DOUBLE_EQ(s.end_open[0].filled_qty, 4);
  expect_conservation(r);
}

TEST(Engine, LiquidityTakenIsRememberedUntilTheLevelRefreshes) {
  const std::string store = write_store({S(book(1000, {{99, 10}}, {{100, 5}, {101, 5}})),
                                         S(book(1200, {{99, 10}}, {{100, 5}, {101, 5}})),
                                         S(book(2000, {{99, 10}}, {{100, 6}, {101, 5}})),
                                         S(book(3000, {{99, 10}}, {{100, 6}, {101, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 5)); });
  s.at(1200, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 5)); });
  s.at(2000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 8)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  // 1: 5@100. 2: the 100 level still shows 5 (not refreshed): 5@101. 3: 100 refreshed to
  // 6 (101 still remembered): 6@100, then nothing left up to the 10 levels: 2 expire.
  ASSERT_EQ(r.fills.size(), 3u);
  EXPECT_EQ(r.fills[0].px, px(100));
  EXPECT_EQ(r.fills[1].px, px(101));
  EXPECT_DOUBLE_EQ(r.fills[1].qty, 5);
  EXPECT_EQ(r.fills[2].px, px(100));
  EXPECT_DOUBLE_EQ(r.fills[2].qty, 6);
  EXPECT_EQ(r.orders[2].state, OrderState::kExpired);
  EXPECT_DOUBLE_EQ(r.orders[2].filled_qty, 6);
}

TEST(Engine, TradeThroughFillsRestingOrderFully) {
  const std::string store =
      write_store({S(book(1000, {{99, 10}, {98, 5}}, {{100, 5}})), T(trade(1500, 98, 1, -1)),
                   S(book(1500, {{98, 4}}, {{100, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 99, 3)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].px, px(99));  // our limit, not the trade's price
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 3);
  EXPECT_TRUE(r.fills[0].maker);
  EXPECT_EQ(r.fills[0].ts_ns, 1500);
}

TEST(Engine, CrossingTouchFillsRestingSellFully) {
  const std::string store = write_store({S(book(1000, {{99, 10}}, {{100, 5}, {101, 7}})),
                                         S(book(1500, {{101, 2}, {99, 10}}, {{102, 5}}))});
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kSell, OrderType::kLimit, 101, 4)); });
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].side, Side::kSell);
  EXPECT_EQ(r.fills[0].px, px(101));
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 4);
  EXPECT_EQ(r.fills[0].ts_ns, 1500);
  EXPECT_DOUBLE_EQ(r.equity.back().position, -4);
  expect_conservation(r);
}

TEST(Engine, TradesComeBeforeTheSnapshotTheyBelongTo) {
  const std::string store =
      write_store({S(book(1000, {{99, 1}}, {{101, 1}})), T(trade(1500, 101, 1, +1)),
                   T(trade(1600, 99, 2, -1)), S(book(2000, {{98, 1}}, {{102, 1}})),
                   T(trade(2500, 98, 1, -1))});  // after the last snapshot
  Script s;
  BacktestResult r = run_ok({store}, SimConfig{}, &s);
  EXPECT_EQ(r.events, 5u);
  ASSERT_EQ(s.events.size(), 5u);
  const EventKind kinds[] = {EventKind::kSnapshot, EventKind::kTrade, EventKind::kTrade,
                             EventKind::kSnapshot, EventKind::kTrade};
  const uint64_t snapshot[] = {0, 1, 1, 1, 2};  // trades: the snapshot they belong to
  const int64_t ts[] = {1000, 1500, 1600, 2000, 2500};
  const int64_t bid_seen[] = {99, 99, 99, 98, 98};  // the latest book at or before the event
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(s.events[i].kind, kinds[i]) << i;
    EXPECT_EQ(s.events[i].snapshot, snapshot[i]) << i;
    EXPECT_EQ(s.events[i].ts_ns, ts[i]) << i;
    EXPECT_EQ(s.books[i].bid_px[0], px(bid_seen[i])) << i;
  }
  EXPECT_EQ(r.equity.back().ts_ns, 2500);  // the last event
}

TEST(Engine, SessionsReplayInOrderAndOverlapsAreRejected) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string a =
      write_store({S(book(1000, {{99, 1}}, {{100, 1}})), S(book(2000, {{99, 1}}, {{100, 1}}))}, "a",
                  "TEST", dir);
  const std::string b = write_store(
      {T(trade(2900, 99, 1, -1)), S(book(3000, {{98, 1}}, {{100, 1}}))}, "b", "TEST", dir);
  const std::string c =
      write_store({S(book(1500, {{99, 1}}, {{100, 1}})), S(book(2500, {{99, 1}}, {{100, 1}}))}, "c",
                  "TEST", dir);
  const std::string other = write_store({S(book(5000, {{99, 1}}, {{100, 1}}))}, "o", "OTHER", dir);
  Script s;
  BacktestResult r = run_ok({a, b}, SimConfig{}, &s);
  EXPECT_EQ(r.events, 4u);
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_EQ(s.events[2].kind, EventKind::kTrade);
  EXPECT_EQ(s.events[2].store, 1u);
  EXPECT_EQ(s.events[2].snapshot, 0u);
  EXPECT_FALSE(s.books[2].has_bid());  // no book yet in the new session
  EXPECT_EQ(s.events[3].store, 1u);

  auto rev = run_backtest({b, a}, SimConfig{}, &s);
  ASSERT_FALSE(rev.ok());
  EXPECT_NE(rev.status().message().find("out of time order"), std::string::npos)
      << rev.status().message();
  auto ov = run_backtest({a, c}, SimConfig{}, &s);
  ASSERT_FALSE(ov.ok());
  EXPECT_NE(ov.status().message().find("overlaps"), std::string::npos) << ov.status().message();
  auto inst = run_backtest({a, other}, SimConfig{}, &s);
  ASSERT_FALSE(inst.ok());
  EXPECT_NE(inst.status().message().find("one instrument"), std::string::npos);
  auto missing = run_backtest({dir + "/nope"}, SimConfig{}, &s);
  EXPECT_FALSE(missing.ok());
}

TEST(Engine, RestingOrderSurvivesIntoTheNextSession) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string a = write_store({S(book(1000, {{99, 4}}, {{100, 1}}))}, "a", "TEST", dir);
  const std::string b =
      write_store({S(book(3000, {{99, 6}}, {{100, 1}})), T(trade(3500, 99, 7, -1)),
                   S(book(3500, {{98, 1}}, {{100, 1}}))},
                  "b", "TEST", dir);
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2)); });
  BacktestResult r = run_ok({a, b}, SimConfig{}, &s);
  // New session: rejoins behind the 6 shown at 3000; the trade of 7 gives us 1.
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 1);
  EXPECT_EQ(r.fills[0].ts_ns, 3500);
}

TEST(Engine, ConcurrentBacktestsShareNothing) {
  const std::string store = write_store(modify_market(5));
  auto one = [&](double qty, BacktestResult* out) {
    Script s;
    s.at(1000, [qty](StrategyContext& c) {
      c.submit(order(Side::kBuy, OrderType::kLimit, 99, qty));
      c.submit(order(Side::kBuy, OrderType::kMarket, 0, 1));
    });
    SimConfig cfg;
    cfg.queue.kind = QueueModelKind::kLog;
    *out = run_ok({store}, cfg, &s);
  };
  BacktestResult serial[4], parallel[4];
  for (int i = 0; i < 4; ++i) one(1 + i, &serial[i]);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(one, 1 + i, &parallel[i]);
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(serial[i].fills.size(), parallel[i].fills.size());
    for (size_t k = 0; k < serial[i].fills.size(); ++k) {
      EXPECT_EQ(serial[i].fills[k].px, parallel[i].fills[k].px);
      EXPECT_EQ(serial[i].fills[k].qty, parallel[i].fills[k].qty);
    }
    EXPECT_EQ(serial[i].equity.back().cash, parallel[i].equity.back().cash);
  }
  // Order 1 (limit 99, joined behind 10) and a market buy of 1 at 100 each time.
  EXPECT_DOUBLE_EQ(serial[0].equity.back().position, 2);
}

TEST(Engine, MarketReplayWithoutStrategy) {
  const std::string store = write_store(
      {S(book(0, {{99, 1}}, {{101, 1}})), T(trade(500'000'000, 99, 1, -1)),
       S(book(600'000'000, {{99, 1}}, {{103, 1}})), S(book(1'000'000'000, {{99, 1}}, {{101, 1}})),
       S(book(1'500'000'000, {{100, 1}}, {{101, 1}})),
       S(book(2'200'000'000, {{100, 1}}, {{102, 1}}))});
  SimConfig cfg;  // equity every second
  BacktestResult r = run_ok({store}, cfg, nullptr);
  EXPECT_EQ(r.events, 6u);
  EXPECT_TRUE(r.orders.empty());
  ASSERT_EQ(r.equity.size(), 3u);  // 0, 1.0 s, 2.2 s (>= 1 s later), which is also the last
  EXPECT_EQ(r.equity[0].ts_ns, 0);
  EXPECT_DOUBLE_EQ(r.equity[0].mid, 100);
  EXPECT_EQ(r.equity[1].ts_ns, 1'000'000'000);
  EXPECT_EQ(r.equity[2].ts_ns, 2'200'000'000);
  EXPECT_DOUBLE_EQ(r.equity[2].mid, 101);
  EXPECT_DOUBLE_EQ(r.equity[2].equity, 0);
}

TEST(Engine, EquitySampledAtIntervalsFillsAndTheEnd) {
  const std::string store =
      write_store({S(book(0, {{99, 1}}, {{101, 1}})), S(book(400, {{99, 1}}, {{101, 1}})),
                   S(book(1000, {{99, 1}}, {{103, 1}})), S(book(1500, {{99, 1}}, {{103, 1}})),
                   S(book(2100, {{100, 1}}, {{102, 1}})), S(book(2300, {{100, 1}}, {{102, 1}}))});
  Script s;
  s.at(1500, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kMarket, 0, 1)); });
  SimConfig cfg;
  cfg.equity_interval_ns = 1000;
  BacktestResult r = run_ok({store}, cfg, &s);
  // Rows: 0 (first), 1000 (interval), 1500 (the fill: 1@103, mid 101), 2100 (the interval
  // since the last row is 600 < 1000: no), 2300 (the last event).
  ASSERT_EQ(r.equity.size(), 4u);
  EXPECT_EQ(r.equity[0].ts_ns, 0);
  EXPECT_EQ(r.equity[1].ts_ns, 1000);
  EXPECT_EQ(r.equity[2].ts_ns, 1500);
  EXPECT_DOUBLE_EQ(r.equity[2].equity, -103 + 101);
  EXPECT_EQ(r.equity[3].ts_ns, 2300);
  EXPECT_DOUBLE_EQ(r.equity[3].mid, 101);
  EXPECT_DOUBLE_EQ(r.equity[3].equity, -103 + 101);
  expect_conservation(r);
}

// Quotes one lot at the touch: a bid at the best bid when flat, then an offer at the best
// ask while long; requotes an order whose price left the touch.
class TouchQuoter : public Strategy {
 public:
  void on_event(const MarketEvent& e, StrategyContext& c) override {
    if (e.kind != EventKind::kSnapshot || !e.book->has_bid() || !e.book->has_ask()) return;
    if (e.book->flags & (kFlagCrossed | kFlagLocked)) return;
    const bool want_buy = c.position() <= 0;
    const int64_t target = want_buy ? e.book->bid_px[0] : e.book->ask_px[0];
    if (c.open_orders().empty()) {
      OrderRequest r;
      r.side = want_buy ? Side::kBuy : Side::kSell;
      r.type = OrderType::kLimit;
      r.px = target;
      r.qty = 1;
      c.submit(r);
      ++submitted;
    } else {
      const OpenOrder& o = c.open_orders().front();
      if (o.acknowledged && o.px != target && !cancel_sent[o.order_id]) {
        c.cancel(o.order_id);
        cancel_sent[o.order_id] = true;
      }
    }
  }
  int submitted = 0;
  std::map<uint64_t, bool> cancel_sent;
};

TEST(Engine, RealEsMboStoreL3QueueFills) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::vector<std::string> files = {
      fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst"),
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst")};
  std::vector<std::string> defs;
  auto jobs = plan_ingest(files, IngestOptions{}, &defs);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  const std::string store = fxt::test::scratch_dir() + "/es";
  auto ingested = ingest_to_store(jobs->front(), defs, IngestOptions{}, store);
  ASSERT_TRUE(ingested.ok()) << ingested.status().message();

  SimConfig cfg;
  cfg.instrument.multiplier = 50;
  cfg.latency.feed_ns = 20'000;
  cfg.latency.entry_ns = 50'000;
  cfg.latency.response_ns = 50'000;
  cfg.fees.maker_per_unit = 0.35;
  for (bool l3 : {true, false}) {
    cfg.use_l3 = l3;
    TouchQuoter q;
    BacktestResult r = run_ok({store}, cfg, &q);
    EXPECT_EQ(r.events, 47023u + 2973u);
    EXPECT_EQ(r.instrument.tick_px, 250'000'000);  // ES tick 0.25 from the store
    std::printf("[ es %s ] orders %zu fills %zu position %.0f equity %.2f\n", l3 ? "L3" : "L2",
                r.orders.size(), r.fills.size(), r.equity.back().position, r.equity.back().equity);
    ASSERT_GT(r.fills.size(), 0u);
    EXPECT_EQ(static_cast<int>(r.orders.size()), q.submitted);
    std::vector<double> filled(r.orders.size() + 1, 0);
    size_t makers = 0;
    for (const Fill& f : r.fills) {
      // A bid sent at the touch can arrive after the ask came down to it: then it takes.
      const OrderRecord& o = r.orders[f.order_id - 1];
      if (f.maker) {
        ++makers;
        EXPECT_EQ(f.px, o.px);  // makers fill at their limit
        EXPECT_DOUBLE_EQ(f.fee, 0.35 * f.qty);
      } else {
        EXPECT_TRUE(f.side == Side::kBuy ? f.px <= o.px : f.px >= o.px);
        EXPECT_DOUBLE_EQ(f.fee, 0);
      }
      filled[f.order_id] += f.qty;
    }
    std::printf("[ es %s ] maker fills %zu\n", l3 ? "L3" : "L2", makers);
    EXPECT_GT(makers, 0u);
    for (const OrderRecord& o : r.orders) {
      EXPECT_DOUBLE_EQ(filled[o.order_id], o.filled_qty);
      EXPECT_LE(o.filled_qty, o.qty);
      if (o.state == OrderState::kFilled) {
        EXPECT_DOUBLE_EQ(o.filled_qty, o.qty);
      }
    }
    // Never more than one lot long or short.
    for (const EquityPoint& p : r.equity) EXPECT_LE(std::fabs(p.position), 1.0);
    expect_conservation(r);
  }
}

}  // namespace
}  // namespace fxt::sim
