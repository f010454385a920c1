// The CPU lanes (sim/lanes.h): several lanes of different strategies, parameters, queue
// models, latencies and fees over one hand-built market, each equal to its own single run
// of the replay engine; results independent of threads and batch size; hand-computed fills.
#include "sim/lanes.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/backtest.h"
#include "sim/engine.h"
#include "sim_test_util.h"

namespace fxt::sim {
namespace {

using test::book;
using test::Row;
using test::S;
using test::T;
using test::trade;
using test::write_store;

constexpr int64_t kMs = 1'000'000;

// 400 snapshots 50 ms apart: the touch walks 100/101 -> 102/103 and back, sizes vary, and
// every snapshot is preceded by a trade at the bid or the ask.
std::vector<Row> busy_market(int n = 400) {
  std::vector<Row> rows;
  for (int i = 0; i < n; ++i) {
    const int64_t ts = (i + 1) * 50 * kMs;
    const int64_t step = (i / 40) % 4;
    const int64_t bid = 100 + (step == 3 ? 1 : step);
    const double bsz = 5 + i % 7, asz = 4 + (i * 3) % 5;
    if (i > 0) {
      const bool at_bid = i % 3 != 0;
      rows.push_back(T(trade(ts - kMs, at_bid ? bid : bid + 1, 1 + i % 3, at_bid ? -1 : +1)));
    }
    rows.push_back(S(book(ts, {{bid, bsz}, {bid - 1, 8}, {bid - 2, 9}},
                          {{bid + 1, asz}, {bid + 2, 8}, {bid + 3, 9}})));
  }
  return rows;
}

std::shared_ptr<const SignalSeries> wave_signal(size_t n) {
  auto s = std::make_shared<SignalSeries>();
  s->horizon = 10;
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = (i / 50) % 3 == 0 ? 0.9f : (i / 50) % 3 == 1 ? 0.1f : 0.5f;
  s->per_store.push_back(std::move(p));
  return s;
}

Lane lane(const std::string& strategy, std::vector<std::string> params, const std::string& queue,
          int64_t entry_ns, double taker_bps, double maker_bps) {
  Lane l;
  l.strategy = strategy;
  l.params = std::move(params);
  l.sim.queue = *parse_queue_model(queue);
  l.sim.latency.feed_ns = 1 * kMs;
  l.sim.latency.entry_ns = entry_ns;
  l.sim.latency.response_ns = entry_ns;
  l.sim.fees.taker_bps = taker_bps;
  l.sim.fees.maker_bps = maker_bps;
  l.sim.instrument.multiplier = 50;
  l.sim.instrument.tick_px = test::kTick;
  return l;
}

std::vector<Lane> mixed_lanes() {
  return {
      lane("mm", {"warmup=20", "gamma=0.01"}, "risk-averse", 2 * kMs, 0.5, -0.2),
      lane("mm", {"warmup=20", "gamma=0.1", "order_qty=2"}, "power:2", 5 * kMs, 0.5, -0.2),
      lane("mm", {"warmup=20", "max_inventory=2"}, "log", 0, 0, 0),
      lane("twap", {"qty=6", "slices=3", "side=buy"}, "risk-averse", 1 * kMs, 1.0, 0),
      lane("ac", {"qty=8", "slices=4", "order=limit"}, "power:3", 3 * kMs, 0.3, 0),
      lane("signal", {}, "log", 1 * kMs, 0.5, 0),
      lane("signal", {"entry=passive", "max_hold=2s"}, "risk-averse", 0, 0, -0.1),
  };
}

LaneMarket market_of(const std::string& store) {
  auto m = open_lane_market({store}, {}, 0);
  EXPECT_TRUE(m.ok()) << m.status().message();
  LaneMarket market = std::move(m).value();
  market.inputs.signal = wave_signal(market.stores.front().size());
  return market;
}

void expect_same(const BacktestResult& a, const BacktestResult& b, const std::string& what) {
  ASSERT_EQ(a.fills.size(), b.fills.size()) << what;
  for (size_t i = 0; i < a.fills.size(); ++i) {
    EXPECT_EQ(a.fills[i].ts_ns, b.fills[i].ts_ns) << what << " fill " << i;
    EXPECT_EQ(a.fills[i].order_id, b.fills[i].order_id) << what << " fill " << i;
    EXPECT_EQ(a.fills[i].px, b.fills[i].px) << what << " fill " << i;
    EXPECT_EQ(a.fills[i].qty, b.fills[i].qty) << what << " fill " << i;
    EXPECT_EQ(a.fills[i].fee, b.fills[i].fee) << what << " fill " << i;
    EXPECT_EQ(a.fills[i].maker, b.fills[i].maker) << what << " fill " << i;
  }
  ASSERT_EQ(a.orders.size(), b.orders.size()) << what;
  for (size_t i = 0; i < a.orders.size(); ++i) {
    EXPECT_EQ(a.orders[i].state, b.orders[i].state) << what << " order " << i;
    EXPECT_EQ(a.orders[i].done_ns, b.orders[i].done_ns) << what << " order " << i;
    EXPECT_EQ(a.orders[i].filled_qty, b.orders[i].filled_qty) << what << " order " << i;
  }
  ASSERT_EQ(a.equity.size(), b.equity.size()) << what;
  for (size_t i = 0; i < a.equity.size(); ++i) {
    EXPECT_EQ(a.equity[i].position, b.equity[i].position) << what << " equity " << i;
    EXPECT_EQ(a.equity[i].cash, b.equity[i].cash) << what << " equity " << i;
  }
  EXPECT_EQ(a.fees_paid, b.fees_paid) << what;
  EXPECT_EQ(a.events, b.events) << what;
}

TEST(Lanes, EachLaneEqualsItsSingleRun) {
  const std::string store = write_store(busy_market());
  const LaneMarket market = market_of(store);
  EXPECT_EQ(market.events, 400u + 399u);
  const std::vector<Lane> lanes = mixed_lanes();
  std::vector<BacktestResult> from_lanes(lanes.size());
  LaneOptions options;
  options.threads = 2;
  auto outcomes = run_lanes(market, lanes, options, [&](size_t i, const BacktestResult& r) {
    from_lanes[i] = r;  // one lane per index: no two threads write the same slot
    return Status::Ok();
  });
  ASSERT_TRUE(outcomes.ok()) << outcomes.status().message();
  size_t lanes_with_fills = 0;
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto params = StrategyParams::parse(lanes[i].params);
    ASSERT_TRUE(params.ok());
    auto factory = make_strategy_factory(lanes[i].strategy, *params, market.inputs);
    ASSERT_TRUE(factory.ok()) << factory.status().message();
    std::unique_ptr<Strategy> strategy = factory->make();
    auto single = run_backtest({store}, lanes[i].sim, strategy.get());
    ASSERT_TRUE(single.ok()) << single.status().message();
    expect_same(from_lanes[i], *single, "lane " + std::to_string(i));
    test::expect_conservation(from_lanes[i]);
    const LaneOutcome& o = (*outcomes)[i];
    EXPECT_EQ(o.fills, single->fills.size());
    EXPECT_EQ(o.events, 799u);
    if (!single->equity.empty()) {
      EXPECT_EQ(o.position, single->equity.back().position) << i;
      EXPECT_NEAR(o.cash, single->equity.back().cash, 1e-9 * (1 + std::fabs(o.cash))) << i;
    }
    lanes_with_fills += single->fills.empty() ? 0 : 1;
  }
  EXPECT_EQ(lanes_with_fills, lanes.size());  // every strategy traded: the check means something
}

TEST(Lanes, TwapFillsAreTheHandComputedOnes) {
  // A flat book 100 x 10 / 101 x 10: a TWAP buy of 6 in 3 market slices takes 2 at 101 each
  // time; taker 1 bps on 2 · 101 · 50 = 10,100 is 1.01 per fill.
  std::vector<Row> rows;
  for (int i = 0; i < 60; ++i)
    rows.push_back(S(book((i + 1) * 100 * kMs, {{100, 10}}, {{101, 10}})));
  const LaneMarket market = market_of(write_store(rows));
  Lane l = lane("twap", {"qty=6", "slices=3", "side=buy"}, "risk-averse", 0, 1.0, 0);
  l.sim.latency.feed_ns = 0;
  auto outcomes = run_lanes(market, {l, l}, LaneOptions{});
  ASSERT_TRUE(outcomes.ok()) << outcomes.status().message();
  for (const LaneOutcome& o : *outcomes) {
    EXPECT_EQ(o.fills, 3u);
    EXPECT_EQ(o.position, 6);
    EXPECT_NEAR(o.fees, 3 * 1.01, 1e-9);
    EXPECT_NEAR(o.cash, -(6 * 101.0 * 50 + 3 * 1.01), 1e-6);
  }
}

TEST(Lanes, ThreadsAndBatchesDoNotChangeResults) {
  const LaneMarket market = market_of(write_store(busy_market(240)));
  std::vector<Lane> lanes = mixed_lanes();
  for (Lane l : mixed_lanes()) {  // the same again with other latencies: 14 lanes
    l.sim.latency.entry_ns += 7 * kMs;
    lanes.push_back(l);
  }
  auto reference = run_lanes(market, lanes, LaneOptions{});
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  for (auto [threads, batch] : {std::pair<int, size_t>{2, 0}, {2, 3}, {1, 5}, {2, 1}}) {
    LaneOptions options;
    options.threads = threads;
    options.batch = batch;
    auto other = run_lanes(market, lanes, options);
    ASSERT_TRUE(other.ok()) << other.status().message();
    for (size_t i = 0; i < lanes.size(); ++i) {
      EXPECT_EQ((*other)[i].stats, (*reference)[i].stats) << "lane " << i;
      EXPECT_EQ((*other)[i].position, (*reference)[i].position) << "lane " << i;
      EXPECT_EQ((*other)[i].cash, (*reference)[i].cash) << "lane " << i;
      EXPECT_EQ((*other)[i].fees, (*reference)[i].fees) << "lane " << i;
    }
  }
}

TEST(Lanes, LockstepGroupsAndWindowsEqualSingleRuns) {
  // Lanes advanced in lockstep groups (a window of market rows each in turn) pause and resume
  // their replays mid-stream; every lane's full result must still be its single run's, for
  // any threads, group and window (1 row: a pause before every market row).
  const std::string store = write_store(busy_market(240));
  const LaneMarket market = market_of(store);
  std::vector<Lane> lanes = mixed_lanes();
  for (Lane l : mixed_lanes()) {  // 14 lanes
    l.sim.latency.entry_ns += 7 * kMs;
    l.sim.latency.feed_ns = 3 * kMs;
    lanes.push_back(l);
  }
  std::vector<BacktestResult> singles;
  for (const Lane& l : lanes) {
    auto factory =
        make_strategy_factory(l.strategy, *StrategyParams::parse(l.params), market.inputs);
    ASSERT_TRUE(factory.ok()) << factory.status().message();
    std::unique_ptr<Strategy> strategy = factory->make();
    auto single = run_backtest({store}, l.sim, strategy.get());
    ASSERT_TRUE(single.ok()) << single.status().message();
    ASSERT_FALSE(single->fills.empty()) << l.strategy;  // every lane trades: the check bites
    ASSERT_EQ(single->events, 240u + 239u);
    singles.push_back(std::move(single).value());
  }
  struct Shape {
    int threads;
    size_t group;
    uint64_t window;
  };
  for (const Shape& shape : {Shape{1, 1, 512}, Shape{1, 14, 1}, Shape{2, 3, 7}, Shape{2, 8, 64},
                             Shape{1, 5, 1000}, Shape{2, 14, 2}}) {
    const std::string what =
        fmt::format("threads {} group {} window {}", shape.threads, shape.group, shape.window);
    LaneOptions options;
    options.threads = shape.threads;
    options.group = shape.group;
    options.window_rows = shape.window;
    std::vector<BacktestResult> from_lanes(lanes.size());
    auto outcomes = run_lanes(market, lanes, options, [&](size_t i, const BacktestResult& r) {
      from_lanes[i] = r;
      return Status::Ok();
    });
    ASSERT_TRUE(outcomes.ok()) << what << ": " << outcomes.status().message();
    for (size_t i = 0; i < lanes.size(); ++i) {
      expect_same(from_lanes[i], singles[i], what + " lane " + std::to_string(i));
      const LaneOutcome& o = (*outcomes)[i];
      EXPECT_EQ(o.fills, singles[i].fills.size()) << what << " lane " << i;
      EXPECT_EQ(o.orders, singles[i].orders.size()) << what << " lane " << i;
      EXPECT_EQ(o.position, singles[i].equity.back().position) << what << " lane " << i;
      EXPECT_EQ(o.fees, singles[i].fees_paid) << what << " lane " << i;
    }
  }
}

TEST(Lanes, ZeroGroupOrWindowIsAUsageError) {
  const LaneMarket market = market_of(write_store(busy_market(20)));
  LaneOptions options;
  options.group = 0;
  auto r = run_lanes(market, mixed_lanes(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 2);
  options.group = 1;
  options.window_rows = 0;
  EXPECT_FALSE(run_lanes(market, mixed_lanes(), options).ok());
}

TEST(Lanes, RealEsMboStoreEachLaneEqualsItsSingleRun) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = fxt::test::scratch_dir();
  const auto ingest = fxt::test::run_fxt(
      "-q ingest " + fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const LaneMarket market = market_of(dir + "/es");
  EXPECT_TRUE(market.exact_queues);
  EXPECT_EQ(market.events, 47023u + 2973u);
  // L3 FIFO lanes and an L2-estimate lane (use_l3 = false).
  std::vector<Lane> lanes = {
      lane("mm", {"warmup=50", "gamma=0.01"}, "risk-averse", 2 * kMs, 0.5, -0.2),
      lane("mm", {"warmup=50", "requote_ticks=3"}, "power:2", 0, 0, 0),
      lane("twap", {"qty=20", "slices=10", "order=limit"}, "risk-averse", 1 * kMs, 0.5, 0),
      lane("signal", {"entry=passive"}, "log", 1 * kMs, 0.5, -0.2),
  };
  lanes.push_back(lanes[1]);
  lanes.back().sim.use_l3 = false;
  EXPECT_EQ(market.instrument.tick_px, 250'000'000);
  for (Lane& l : lanes) {
    l.sim.instrument = market.instrument;
    l.sim.instrument.multiplier = 50;  // as --multiplier 50 (the store's meta says 1)
  }
  std::vector<BacktestResult> from_lanes(lanes.size());
  LaneOptions options;
  options.threads = 2;
  auto outcomes = run_lanes(market, lanes, options, [&](size_t i, const BacktestResult& r) {
    from_lanes[i] = r;
    return Status::Ok();
  });
  ASSERT_TRUE(outcomes.ok()) << outcomes.status().message();
  EXPECT_EQ(from_lanes[0].instrument.multiplier, 50);
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto factory = make_strategy_factory(lanes[i].strategy, *StrategyParams::parse(lanes[i].params),
                                         market.inputs);
    ASSERT_TRUE(factory.ok()) << factory.status().message();
    std::unique_ptr<Strategy> strategy = factory->make();
    auto single = run_backtest({dir + "/es"}, lanes[i].sim, strategy.get());
    ASSERT_TRUE(single.ok()) << single.status().message();
    expect_same(from_lanes[i], *single, "ES lane " + std::to_string(i));
    EXPECT_FALSE(single->fills.empty()) << "ES lane " << i;
  }
}

TEST(Lanes, ABadLaneFailsBeforeAnyRuns) {
  const LaneMarket market = market_of(write_store(busy_market(50)));
  std::vector<Lane> lanes = mixed_lanes();
  lanes[2].params.push_back("spread=3");
  int runs = 0;
  auto r = run_lanes(market, lanes, LaneOptions{}, [&](size_t, const BacktestResult&) {
    ++runs;
    return Status::Ok();
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 2);
  EXPECT_EQ(r.status().message(),
            "lane 2: --param spread: not a parameter of strategy mm (see docs/BACKTEST.md)");
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace fxt::sim
