// Queue models (DESIGN §7.2): the L2 estimate under each model, hand computed step by
// step, the same sequence through the engine, and exact FIFO on an L3 (MBO) store.
#include "sim/queue.h"

#include <cmath>

#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim_test_util.h"

namespace fxt::sim {
namespace {
using namespace fxt::sim::test;

QueueModel model(const std::string& text) {
  auto m = parse_queue_model(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m.value() : QueueModel{};
}

TEST(QueueModel, ParseAndName) {
  EXPECT_EQ(model("risk-averse").kind, QueueModelKind::kRiskAverse);
  EXPECT_EQ(model("log").kind, QueueModelKind::kLog);
  QueueModel p = model("power:2");
  EXPECT_EQ(p.kind, QueueModelKind::kPower);
  EXPECT_DOUBLE_EQ(p.power, 2);
  EXPECT_DOUBLE_EQ(model("power:1.5").power, 1.5);
  EXPECT_EQ(queue_model_name(model("power:1.5")), "power:1.5");
  EXPECT_EQ(queue_model_name(model("power:3")), "power:3");
  EXPECT_EQ(queue_model_name(model("risk-averse")), "risk-averse");
  EXPECT_EQ(queue_model_name(model("log")), "log");
  for (const char* bad : {"", "power:", "power:0", "power:-1", "power:x", "power:2x", "power:inf",
                          "lognormal", "Risk-Averse"}) {
    auto r = parse_queue_model(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kUsage);
    EXPECT_NE(r.status().message().find("'" + std::string(bad) + "'"), std::string::npos);
    EXPECT_NE(r.status().message().find("power:<n>"), std::string::npos);
  }
}

TEST(QueueModel, ShareBehind) {
  EXPECT_DOUBLE_EQ(queue_share_behind(model("risk-averse"), 7, 2), 1.0);
  EXPECT_DOUBLE_EQ(queue_share_behind(model("power:2"), 7, 2), 4.0 / 53.0);
  EXPECT_DOUBLE_EQ(queue_share_behind(model("log"), 7, 2),
                   std::log(3.0) / (std::log(3.0) + std::log(8.0)));
  EXPECT_DOUBLE_EQ(queue_share_behind(model("power:2"), 0, 0), 1.0);  // empty level
  EXPECT_DOUBLE_EQ(queue_share_behind(model("log"), 0, 5), 1.0);      // nothing ahead
}

// The sequence used below: join a level of 10; a trade of 3; the level shows 9 (2 joined
// behind); the level shows 7 (2 cancelled: front 7, back 2); a trade of 1; the level shows
// 4 (expected 7 − 1 = 6: 2 cancelled); a trade of 5.
struct Steps {
  double after_first_cancel, after_second_trade, after_second_cancel, last_trade_beyond;
};

Steps run_l2(const QueueModel& m) {
  L2Queue q;
  q.join(10, true);
  EXPECT_DOUBLE_EQ(q.ahead, 10);
  EXPECT_DOUBLE_EQ(q.on_trade(3), 0);
  EXPECT_DOUBLE_EQ(q.ahead, 7);
  q.on_level(m, 9, true);
  EXPECT_DOUBLE_EQ(q.ahead, 7);  // growth joins behind us
  Steps s;
  q.on_level(m, 7, true);
  s.after_first_cancel = q.ahead;
  EXPECT_DOUBLE_EQ(q.on_trade(1), 0);
  s.after_second_trade = q.ahead;
  q.on_level(m, 4, true);
  s.after_second_cancel = q.ahead;
  s.last_trade_beyond = q.on_trade(5);
  return s;
}

TEST(L2Queue, RiskAverse) {
  Steps s = run_l2(model("risk-averse"));
  EXPECT_DOUBLE_EQ(s.after_first_cancel, 7);  // cancels are all behind us
  EXPECT_DOUBLE_EQ(s.after_second_trade, 6);
  EXPECT_DOUBLE_EQ(s.after_second_cancel, 4);  // never more ahead than the level: min(6, 4)
  EXPECT_DOUBLE_EQ(s.last_trade_beyond, 1);
}

TEST(L2Queue, Power2) {
  Steps s = run_l2(model("power:2"));
  // p = 2²/(2²+7²) = 4/53; ahead = 7 − 2·49/53 = 273/53.
  EXPECT_NEAR(s.after_first_cancel, 273.0 / 53.0, 1e-12);
  EXPECT_NEAR(s.after_second_trade, 220.0 / 53.0, 1e-12);
  // front 220/53, back 6 − 220/53 = 98/53: p = 98²/(98²+220²) = 9604/58004;
  // ahead = 220/53 − 2·48400/58004.
  const double a = 220.0 / 53.0 - 2.0 * 48400.0 / 58004.0;
  EXPECT_NEAR(s.after_second_cancel, a, 1e-12);
  EXPECT_NEAR(s.after_second_cancel, 2.4820929, 1e-6);
  EXPECT_NEAR(s.last_trade_beyond, 5 - a, 1e-12);
}

TEST(L2Queue, Log) {
  Steps s = run_l2(model("log"));
  // p = ln3/(ln3+ln8); ahead = 7 − 2·ln8/(ln3+ln8).
  const double a1 = 7 - 2 * std::log(8.0) / (std::log(3.0) + std::log(8.0));
  EXPECT_NEAR(s.after_first_cancel, a1, 1e-12);
  EXPECT_NEAR(s.after_first_cancel, 5.6913742, 1e-6);
  const double f = a1 - 1, b = 6 - f;
  const double a2 = f - 2 * std::log1p(f) / (std::log1p(b) + std::log1p(f));
  EXPECT_NEAR(s.after_second_cancel, a2, 1e-12);
  EXPECT_NEAR(s.last_trade_beyond, 5 - a2, 1e-12);
}

TEST(L2Queue, UnknownDepthUntilTheLevelIsShown) {
  L2Queue q;
  q.join(0, false);                    // below the displayed depth
  EXPECT_DOUBLE_EQ(q.on_trade(4), 0);  // nothing reaches an order we cannot place
  q.on_level(model("log"), 0, false);
  EXPECT_FALSE(q.known);
  q.on_level(model("log"), 6, true);  // now shown: we are behind its 6
  EXPECT_TRUE(q.known);
  EXPECT_DOUBLE_EQ(q.ahead, 6);
  EXPECT_DOUBLE_EQ(q.on_trade(8), 2);
}

// The same sequence through the engine: a bid of 10 at 99 that we join.
std::vector<Row> queue_market() {
  return {S(book(1000, {{99, 10}}, {{100, 5}})),
          T(trade(1100, 99, 3, -1)),
          S(book(1100, {{99, 7}}, {{100, 5}})),  // the trade of 3 shown
          S(book(1200, {{99, 9}}, {{100, 5}})),  // 2 join behind
          S(book(1300, {{99, 7}}, {{100, 5}})),  // 2 cancelled
          T(trade(1400, 99, 1, -1)),
          S(book(1400, {{99, 4}}, {{100, 5}})),
          T(trade(1500, 99, 5, -1)),
          S(book(1500, {{99, 1}}, {{100, 5}}))};
}

double engine_fill(const std::string& store, const std::string& queue) {
  Script s;
  s.at(1000, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 99, 10)); });
  SimConfig cfg;
  cfg.queue = model(queue);
  BacktestResult r = run_ok({store}, cfg, &s);
  double filled = 0;
  for (const Fill& f : r.fills) {
    EXPECT_EQ(f.ts_ns, 1500);
    EXPECT_TRUE(f.maker);
    filled += f.qty;
  }
  return filled;
}

TEST(L2Queue, EngineAppliesEachModel) {
  // The engine sees the trade of 3 and then a level of 7 (expected 10 − 3: no cancel),
  // then 9, 7, a trade of 1 with 4 shown, a trade of 5: the same steps as run_l2.
  const std::string store = write_store(queue_market());
  EXPECT_DOUBLE_EQ(engine_fill(store, "risk-averse"), 1);
  EXPECT_NEAR(engine_fill(store, "power:2"), 5 - (220.0 / 53.0 - 2.0 * 48400.0 / 58004.0), 1e-9);
  const double a1 = 7 - 2 * std::log(8.0) / (std::log(3.0) + std::log(8.0));
  const double f = a1 - 1, b = 6 - f;
  EXPECT_NEAR(engine_fill(store, "log"),
              5 - (f - 2 * std::log1p(f) / (std::log1p(b) + std::log1p(f))), 1e-9);
}

// L3: two orders rest at 99 (ids 1: 5, 2: 3) when ours arrives; 4 more (id 4) join behind.
// Id 1 cancels; a trade of 3 fills id 2 (then its cancel); a trade of 2 reaches us.
std::vector<Row> fifo_market(bool first_cancels) {
  std::vector<Row> rows = {E(100, 1, 99, 5, 'A', +1),  E(100, 2, 99, 3, 'A', +1),
                           E(100, 3, 100, 5, 'A', -1), S(book(100, {{99, 8}}, {{100, 5}})),
                           E(150, 4, 99, 4, 'A', +1),  S(book(150, {{99, 12}}, {{100, 5}}))};
  if (first_cancels) {
    rows.push_back(E(200, 1, 99, 5, 'C', +1));
    rows.push_back(S(book(200, {{99, 7}}, {{100, 5}})));
  } else {  // id 1 grows: it loses priority and goes behind us
    rows.push_back(E(200, 1, 99, 6, 'M', +1));
    rows.push_back(S(book(200, {{99, 13}}, {{100, 5}})));
  }
  for (Row r :
       {E(300, 0, 99, 3, 'T', -1), E(300, 2, 99, 3, 'F', +1), E(300, 2, 99, 3, 'C', +1),
        T(trade(300, 99, 3, -1)), S(book(300, {{99, first_cancels ? 4.0 : 10.0}}, {{100, 5}})),
        E(400, 0, 99, 2, 'T', -1), E(400, 4, 99, 2, 'F', +1), E(400, 4, 99, 2, 'M', +1),
        T(trade(400, 99, 2, -1)), S(book(400, {{99, first_cancels ? 2.0 : 8.0}}, {{100, 5}})),
        S(book(500, {{99, first_cancels ? 2.0 : 8.0}}, {{100, 5}}))})
    rows.push_back(r);
  return rows;
}

BacktestResult run_fifo(const std::string& store, bool use_l3) {
  Script s;
  s.at(100, [](StrategyContext& c) { c.submit(order(Side::kBuy, OrderType::kLimit, 99, 2)); });
  SimConfig cfg;
  cfg.use_l3 = use_l3;
  return run_ok({store}, cfg, &s);
}

TEST(L3Queue, ExactFifoBehindTwoOrders) {
  const std::string store = write_store(fifo_market(true));
  BacktestResult r = run_fifo(store, true);
  // Ahead: 1 (5) + 2 (3) = 8. Id 1 cancels: 3. The trade of 3 takes id 2: 0 (its cancel
  // follows). The trade of 2 is ours: filled at 400.
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].ts_ns, 400);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 2);
  EXPECT_EQ(r.fills[0].px, px(99));
  EXPECT_TRUE(r.fills[0].maker);
  EXPECT_EQ(r.orders[0].state, OrderState::kFilled);
  EXPECT_EQ(r.events, 8u);  // 6 snapshots + 2 trades (order events are not counted)
  expect_conservation(r);

  // The L2 estimate (risk-averse) on the same data: the cancel of 5 is assumed behind us,
  // so 7 stay ahead (the level's size), 4 after the trade of 3, 2 after the trade of 2.
  BacktestResult l2 = run_fifo(store, false);
  EXPECT_TRUE(l2.fills.empty());
  EXPECT_EQ(l2.orders[0].state, OrderState::kOpen);
}

TEST(L3Queue, PriorityLostByAnOrderAheadMovesItBehind) {
  const std::string store = write_store(fifo_market(false));
  BacktestResult r = run_fifo(store, true);
  // Id 1 grows to 6 and goes behind us: 3 ahead (id 2). The trade of 3 takes id 2, the trade
  // of 2 is ours.
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].ts_ns, 400);
  EXPECT_DOUBLE_EQ(r.fills[0].qty, 2);
}

}  // namespace
}  // namespace fxt::sim
