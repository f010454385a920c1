// What the GPU lanes' stream computes once for every lane (sim/gpu_lanes.h build_lane_stream,
// add_lane_mm_table): the `mm` estimates per row and tick (LaneMmRow), each snapshot's touches
// with size and its book flags (LaneItem::best_bid / best_ask / book), checked by hand; lanes
// of a second tick get their own table and still equal the CPU engine; a lane whose tick has no
// table stops (and is rerun on the CPU) instead of reading another tick's estimates; the
// unchanged prefix of each side (LaneItem::book) reads what the level scan would, and the queue
// shortcut it allows changes no result.
#include <cmath>
#include <cstring>
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

uint64_t bits(double x) {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// lane_level_unchanged against the scan it stands for: over random pairs of one side's levels
// (ordered or not, an empty tail, the next row equal on a random prefix), wherever it says a
// price's level reads the same, level_size_at gives the same bits and the same `known` in both
// rows; and it says so for prefixes short of the whole side, not only for unchanged sides.
TEST(LaneStream, AnUnchangedPrefixReadsTheSameLevel) {
  Rng rng(17);
  int fired = 0, fired_partial = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int side = trial % 2 == 0 ? +1 : -1;
    int64_t p0[kBookLevels], p1[kBookLevels];
    double s0[kBookLevels], s1[kBookLevels];
    const int depth = static_cast<int>(rng.uniform(kBookLevels + 1));
    int64_t level = 100;
    for (int i = 0; i < kBookLevels; ++i) {
      level -= side * static_cast<int64_t>(1 + rng.uniform(2));
      if (rng.uniform(25) == 0) level += side * 3;  // now and then out of order
      p0[i] = i < depth ? level : kEmptyPx;
      s0[i] = static_cast<double>(rng.uniform(4));
    }
    const int keep = static_cast<int>(rng.uniform(kBookLevels + 1));
    for (int i = 0; i < kBookLevels; ++i) {
      p1[i] = p0[i];
      s1[i] = s0[i];
      if (i < keep) continue;
      if (rng.uniform(2) == 0) s1[i] = static_cast<double>(rng.uniform(4));
      if (rng.uniform(3) == 0) {  // a level gone, or moved one tick (an empty one stays empty)
        const bool gone = rng.uniform(4) == 0;
        p1[i] = gone || p0[i] == kEmptyPx ? kEmptyPx : p0[i] - side;
      }
    }
    const uint8_t code = lane_side_prefix_code(p1, s1, p0, s0);
    const uint8_t book =
        static_cast<uint8_t>(code << (side > 0 ? kLaneBidPrefixShift : kLaneAskPrefixShift));
    ASSERT_EQ(lane_prefix_code(book, side), code);
    for (int64_t px = 80; px <= 120; ++px) {
      if (!lane_level_unchanged(book, side, px, p1)) continue;
      bool known0 = false, known1 = false;
      const double a = level_size_at(p0, s0, side, px, &known0);
      const double b = level_size_at(p1, s1, side, px, &known1);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "trial " << trial << " px " << px;
      ASSERT_EQ(known0, known1) << "trial " << trial << " px " << px;
      ++fired;
      if (code != kLaneSideSame) ++fired_partial;
    }
  }
  EXPECT_GT(fired_partial, 1000);
  EXPECT_GT(fired, fired_partial);
}

// A market whose snapshots change one level of one side at a time (a size, a level gone or
// back at the end), now and then nothing or the whole touch moving, with trades at the touch:
// every code of the unchanged prefix occurs.
std::vector<test::Row> sticky_market(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<test::Row> rows;
  int64_t bid = 100;
  int levels[2] = {5, 5};
  double sizes[2][5];
  for (auto& side : sizes)
    for (double& x : side) x = static_cast<double>(1 + rng.uniform(12));
  for (int i = 0; i < n; ++i) {
    const int64_t ts = (i + 1) * 20 * kLaneMs;
    const uint64_t what = rng.uniform(20);
    if (what == 0 && bid > 90) {
      --bid;
    } else if (what == 1) {
      ++bid;
    } else if (what == 2) {
      // nothing changes
    } else if (what == 3) {
      const int s = static_cast<int>(rng.uniform(2));
      levels[s] = levels[s] == 5 ? 4 : 5;  // the deepest level leaves or comes back
    } else {
      sizes[rng.uniform(2)][rng.uniform(5)] = static_cast<double>(1 + rng.uniform(12));
    }
    if (rng.uniform(3) == 0) {
      const bool at_bid = rng.uniform(2) == 0;
      rows.push_back(T(trade(ts - kLaneMs, at_bid ? bid : bid + 1,
                             static_cast<double>(1 + rng.uniform(6)), at_bid ? -1 : +1)));
    }
    test::Levels bids, asks;
    for (int64_t l = 0; l < levels[0]; ++l) bids.push_back({bid - l, sizes[0][l]});
    for (int64_t l = 0; l < levels[1]; ++l) asks.push_back({bid + 1 + l, sizes[1][l]});
    rows.push_back(S(book(ts, bids, asks)));
  }
  return rows;
}

// The shortcut of a queue whose level reads the same (LaneSim::on_book) against the full
// update: the same lanes over the same stream with every prefix code cleared (each queue then
// looks its level up) give the same fills, orders, equity rows and accounts, bit for bit; and
// the lanes equal the CPU engine.
TEST(LaneStream, TheUnchangedLevelShortcutChangesNoResult) {
  const LaneMarket market = open_market(write_store(sticky_market(3000, 5)));
  const std::vector<Lane> lanes = test::mm_lanes(12);
  LaneStreamData fast = build_lane_stream(market);
  LaneStreamData slow = fast;
  int partial = 0, same = 0;
  for (LaneItem& it : slow.items) {
    if (it.kind != kLaneSnapshot) continue;
    for (int side : {+1, -1}) {
      const uint8_t code = lane_prefix_code(it.book, side);
      partial += code > 0 && code < kLaneSideSame ? 1 : 0;
      same += code == kLaneSideSame ? 1 : 0;
    }
    it.book &= kLaneBookCrossed;
  }
  EXPECT_GT(partial, 1000);
  EXPECT_GT(same, 1000);
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto config = gpu_lane_config(market, lanes[i]);
    ASSERT_TRUE(config.ok()) << config.status().message();
    constexpr uint32_t kCap = 1 << 14;
    std::vector<LaneFillRow> f1(kCap), f2(kCap);
    std::vector<LaneEquityRow> e1(kCap), e2(kCap);
    std::vector<LaneOrderRow> o1(kCap), o2(kCap);
    LaneState s1, s2;
    LaneSim(fast.view(), *config, &s1, {f1.data(), e1.data(), o1.data(), kCap, kCap, kCap})
        .advance(fast.items.size());
    LaneSim(slow.view(), *config, &s2, {f2.data(), e2.data(), o2.data(), kCap, kCap, kCap})
        .advance(slow.items.size());
    ASSERT_EQ(s1.error, kLaneOk) << "lane " << i;
    ASSERT_EQ(s2.error, kLaneOk) << "lane " << i;
    ASSERT_GT(s1.fills, 0u) << "lane " << i;
    ASSERT_EQ(s1.fills, s2.fills) << "lane " << i;
    ASSERT_EQ(s1.orders, s2.orders) << "lane " << i;
    ASSERT_EQ(s1.equity_rows, s2.equity_rows) << "lane " << i;
    for (uint64_t k = 0; k < s1.fills; ++k) {
      EXPECT_EQ(f1[k].ts_ns, f2[k].ts_ns);
      EXPECT_EQ(f1[k].order_id, f2[k].order_id);
      EXPECT_EQ(f1[k].px, f2[k].px);
      EXPECT_EQ(bits(f1[k].qty), bits(f2[k].qty));
      EXPECT_EQ(bits(f1[k].fee), bits(f2[k].fee));
      EXPECT_EQ(f1[k].side, f2[k].side);
      EXPECT_EQ(f1[k].maker, f2[k].maker);
    }
    for (uint64_t k = 0; k < s1.equity_rows; ++k) {
      EXPECT_EQ(e1[k].ts_ns, e2[k].ts_ns);
      EXPECT_EQ(bits(e1[k].position), bits(e2[k].position));
      EXPECT_EQ(bits(e1[k].cash), bits(e2[k].cash));
      EXPECT_EQ(bits(e1[k].equity), bits(e2[k].equity));
    }
    for (uint64_t k = 0; k < s1.orders; ++k) {
      EXPECT_EQ(o1[k].arrive_ns, o2[k].arrive_ns);
      EXPECT_EQ(o1[k].done_ns, o2[k].done_ns);
      EXPECT_EQ(o1[k].px, o2[k].px);
      EXPECT_EQ(o1[k].state, o2[k].state);
      EXPECT_EQ(bits(o1[k].filled_qty), bits(o2[k].filled_qty));
    }
    EXPECT_EQ(bits(s1.account.cash), bits(s2.account.cash));
    EXPECT_EQ(bits(s1.account.position), bits(s2.account.position));
    for (int k = 0; k < kLaneSlots; ++k) {  // the queues too
      EXPECT_EQ(bits(s1.live[k].l2.ahead), bits(s2.live[k].l2.ahead));
      EXPECT_EQ(bits(s1.live[k].l2.level_size), bits(s2.live[k].l2.level_size));
      EXPECT_EQ(bits(s1.live[k].l2.traded), bits(s2.live[k].l2.traded));
    }
  }
  GpuLaneOptions o;
  o.on_device = false;
  o.threads = 2;
  test::expect_gpu_lanes_equal_cpu(market, lanes, o);
}

}  // namespace
}  // namespace fxt::sim
