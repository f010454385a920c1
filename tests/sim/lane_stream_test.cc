// What the GPU lanes' stream computes once for every lane (sim/gpu_lanes.h build_lane_stream,
// add_lane_mm_table): the `mm` estimates per row and tick (LaneMmRow), each snapshot's touches
// with size and its book flags (LaneItem::best_bid / best_ask / book), checked by hand; lanes
// of a second tick get their own table and still equal the CPU engine; a lane whose tick has no
// table stops (and is rerun on the CPU) instead of reading another tick's estimates.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lane_test_util.h"
#include "sim/gpu_lanes.h"

namespace fxt::sim {
namespace {

using test::book;
using test::kLaneMs;
using test::kTick;
using test::mm_lane;
using test::px;
using test::S;
using test::T;
using test::trade;
using test::write_store;

LaneMarket open_market(const std::string& store) {
  auto m = open_lane_market({store}, {}, 0);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

// Four snapshots over 30 ms and one trade: the touch moves half a tick twice; the third
// snapshot's bid has no size (one-sided: mm does not count it).
std::string hand_store() {
  return write_store({
      S(book(10 * kLaneMs, {{100, 5}}, {{101, 5}})),
      T(trade(15 * kLaneMs, 101, 2, +1)),
      S(book(20 * kLaneMs, {{100, 5}}, {{102, 5}})),
      S(book(30 * kLaneMs, {{100, 0}, {99, 3}}, {{101, 4}})),
      S(book(40 * kLaneMs, {{101, 5}}, {{102, 5}})),
  });
}

TEST(LaneStream, MmEstimatesAndBookFactsPerRowByHand) {
  const LaneMarket market = open_market(hand_store());
  const LaneStreamData d = build_lane_stream(market);
  ASSERT_EQ(d.items.size(), 5u);
  ASSERT_EQ(d.items[1].kind, kLaneTrade);
  ASSERT_EQ(d.mm_ticks, std::vector<int64_t>{kTick});  // the store's tick, built with the stream
  ASSERT_EQ(d.mm_stride, 5u);
  const std::vector<LaneMmRow>& mm = d.mm_rows;
  // Session 10..40 ms (30 ms). Row 0: the first two-sided snapshot, nothing elapsed.
  EXPECT_EQ(mm[0].seen, 1u);
  EXPECT_EQ(mm[0].sigma, 0.0);
  EXPECT_EQ(mm[0].arrival, 0.0);
  EXPECT_EQ(mm[0].mid_ticks, 100.5);
  EXPECT_EQ(mm[0].bid_px, px(100));
  EXPECT_EQ(mm[0].ask_px, px(101));
  // Row 2: mid 100.5 -> 101 (0.25 ticks² of variance) over a third of the session, one trade
  // seen: sigma sqrt(0.25 / (1/3)), arrival 1 / (1/3).
  EXPECT_EQ(mm[2].seen, 2u);
  EXPECT_DOUBLE_EQ(mm[2].sigma, std::sqrt(0.75));
  EXPECT_DOUBLE_EQ(mm[2].arrival, 3.0);
  EXPECT_EQ(mm[2].mid_ticks, 101.0);
  // Row 3 does not count; row 4: mid 101 -> 101.5 over the other two thirds.
  EXPECT_EQ(mm[3].seen, 0u);
  EXPECT_EQ(mm[4].seen, 3u);
  EXPECT_DOUBLE_EQ(mm[4].sigma, std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(mm[4].arrival, 1.0);
  EXPECT_EQ(mm[4].mid_ticks, 101.5);
  // The book facts: the first level with size, the sides equal to the previous snapshot's.
  EXPECT_EQ(d.items[0].book, 0);  // the first snapshot has no previous one
  EXPECT_EQ(d.items[2].book, kLaneBidSame);
  EXPECT_EQ(d.items[3].best_bid, px(99));  // 100 shows no size
  EXPECT_EQ(d.items[3].best_ask, px(101));
  EXPECT_EQ(d.items[3].book, 0);
  EXPECT_EQ(d.items[4].best_bid, px(101));
  EXPECT_EQ(d.items[4].best_ask, px(102));
}

TEST(LaneStream, OneMmTablePerTick) {
  const LaneMarket market = open_market(hand_store());
  LaneStreamData d = build_lane_stream(market);
  EXPECT_EQ(add_lane_mm_table(&d, kTick), 0u);  // that tick has its table already
  EXPECT_EQ(add_lane_mm_table(&d, 2 * kTick), 1u);
  ASSERT_EQ(d.mm_rows.size(), 2 * d.mm_stride);
  const LaneStream s = d.view();
  EXPECT_EQ(s.n_mm_tables, 2u);
  EXPECT_EQ(s.mm_row(1, 0).mid_ticks, 50.25);
  EXPECT_EQ(s.mm_row(1, 2).mid_ticks, 50.5);
  EXPECT_DOUBLE_EQ(s.mm_row(1, 2).sigma, std::sqrt(0.0625 * 3));  // (0.25 ticks)² / (1/3)
  EXPECT_EQ(s.mm_row(1, 2).arrival, s.mm_row(0, 2).arrival);      // trades know no tick
}

TEST(LaneStream, LanesOfTwoTicksEqualTheCpuEngine) {
  const LaneMarket market = open_market(write_store(test::random_market(800, 21)));
  std::vector<Lane> lanes;
  for (int i = 0; i < 4; ++i) {
    Lane l = mm_lane({"warmup=5", i % 2 == 0 ? "gamma=0.01" : "gamma=0.1", "requote_ticks=1"},
                     i < 2 ? "risk-averse" : "log", 1 * kLaneMs, -0.2);
    if (i % 2 == 1) l.sim.instrument.tick_px = kTick / 4;  // quotes on a finer grid
    lanes.push_back(l);
  }
  GpuLaneOptions o;
  o.on_device = false;
  o.threads = 2;
  const GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(market, lanes, o);
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
}

TEST(LaneStream, ALaneWithoutItsTicksTableStops) {
  const LaneMarket market = open_market(hand_store());
  const LaneStreamData d = build_lane_stream(market);
  Lane lane = mm_lane({"warmup=0"}, "risk-averse", 0, 0);
  lane.sim.instrument.tick_px = kTick / 2;  // no table for it in this stream
  auto config = gpu_lane_config(market, lane);
  ASSERT_TRUE(config.ok()) << config.status().message();
  LaneState st;
  LaneSim(d.view(), *config, &st, LaneCapture()).advance(d.items.size());
  EXPECT_EQ(st.error, kLaneOverflow);
  EXPECT_EQ(st.fills, 0u);
  EXPECT_EQ(st.m, 0u);  // not a row was replayed
}

}  // namespace
}  // namespace fxt::sim
