// Helpers of the GPU-lane tests (tests/sim/lane_engine_test.cc on host threads,
// tests/gpu/lane_engine_gpu_test.cc on the device): a seeded random-walk market, a set of
// mm lanes over every L2 queue model, latencies and fees, and exact comparisons of results.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "data/mbo_book.h"
#include "data/store.h"
#include "sim/engine.h"
#include "sim/gpu_lanes.h"
#include "sim/lanes.h"
#include "sim_test_util.h"

namespace fxt::sim::test {

constexpr int64_t kLaneMs = 1'000'000;

// n snapshots of a random-walk touch (ticks of 1.00, five levels a side, sizes 1..12, now and
// then a crossed or one-sided book), each preceded by 0-2 trades at the bid or the ask; row
// times jitter (a trade may print a little before the previous snapshot: exchange time is
// made monotone). Starts at t0 (ns).
inline std::vector<Row> random_market(int n, uint64_t seed, int64_t t0 = 0) {
  Rng rng(seed);
  std::vector<Row> rows;
  int64_t bid = 100;
  for (int i = 0; i < n; ++i) {
    const int64_t ts = t0 + (i + 1) * 20 * kLaneMs;
    const uint64_t move = rng.uniform(10);
    if (move == 0 && bid > 90) --bid;
    if (move == 1) ++bid;
    const int trades = static_cast<int>(rng.uniform(3));
    for (int k = 0; k < trades; ++k) {
      const bool at_bid = rng.uniform(2) == 0;
      const int64_t jitter = static_cast<int64_t>(rng.uniform(30)) * kLaneMs / 2;
      rows.push_back(T(trade(ts - jitter, at_bid ? bid : bid + 1,
                             static_cast<double>(1 + rng.uniform(6)), at_bid ? -1 : +1)));
    }
    Levels bids, asks;
    const bool one_sided = rng.uniform(97) == 0;
    const int64_t gap = rng.uniform(50) == 0 ? 0 : 1;  // 0: locked book
    for (int64_t l = 0; l < 5; ++l) {
      bids.push_back({bid - l, static_cast<double>(1 + rng.uniform(12))});
      if (!one_sided) asks.push_back({bid + gap + l, static_cast<double>(1 + rng.uniform(12))});
    }
    rows.push_back(S(book(ts, bids, asks)));
  }
  return rows;
}

// An MBO store of `events` random order-book events, built the way `fxt ingest` builds one
// (the records through an MboBook into a StoreWriter: order events, trades and a snapshot per
// event): adds on both sides around a drifting centre (never crossing), partial and full
// cancels, modifies that keep priority (smaller) or lose it (larger, another price), adds of a
// resting id, a book clear now and then, and trades: a 'T' (the aggressor) then the 'F' and
// 'C' records of the resting orders it filled, front of the level first (now and then two
// trades in one event, cancels after a snapshot of their own, or no cancels). Ticks of 1.00;
// sizes 1..9. Starts at t0 (ns).
inline std::string random_mbo_store(int events, uint64_t seed, int64_t t0 = 0,
                                    const std::string& name = "mbo",
                                    const std::string& dir = "") {
  const std::string path = (dir.empty() ? fxt::test::scratch_dir() : dir) + "/" + name;
  StoreInfo info;
  info.source_path = "hand-built";
  info.source_format = "dbn-mbo";
  info.symbol = "TEST";
  info.tick_px = kTick;
  info.has_trades = true;
  auto w = StoreWriter::create(path, info);
  EXPECT_TRUE(w.ok()) << w.status().message();
  MboBook mbo(&*w);
  Rng rng(seed);
  std::vector<uint64_t> ids;  // ids ever added (some no longer rest)
  uint64_t next_id = 1;
  int64_t ts = t0, centre = 100;
  auto msg = [&](char action, char side, uint64_t id, int64_t px_units, uint32_t sz, bool last) {
    dbn::MboMsg m{};
    m.hd.ts_event = static_cast<uint64_t>(ts);
    m.ts_recv = static_cast<uint64_t>(ts);
    m.order_id = id;
    m.price = px(px_units);
    m.size = sz;
    m.action = action;
    m.side = side;
    m.flags = last ? dbn::kFLast : 0;
    mbo.apply(m);
  };
  auto resting = [&](uint64_t id) { return mbo.queue_position(id); };
  std::vector<RestingOrder> level;
  for (int i = 0; i < events; ++i) {
    ts += static_cast<int64_t>(1 + rng.uniform(4)) * kLaneMs / 2;
    if (rng.uniform(40) == 0) centre += rng.uniform(2) == 0 ? -1 : 1;
    centre = std::clamp<int64_t>(centre, 95, 105);
    const uint64_t what = rng.uniform(100);
    const int64_t best_bid = mbo.best_bid_px(), best_ask = mbo.best_ask_px();
    if (what < 40 || ids.empty()) {  // add
      const bool bid = rng.uniform(2) == 0;
      const int64_t p = bid ? centre - static_cast<int64_t>(rng.uniform(4))
                            : centre + 1 + static_cast<int64_t>(rng.uniform(4));
      if (bid ? (best_ask != kEmptyPx && px(p) >= best_ask)
              : (best_bid != kEmptyPx && px(p) <= best_bid))
        continue;
      // Now and then an add of an id that rests already (replaces it).
      const uint64_t id =
          !ids.empty() && rng.uniform(30) == 0 ? ids[rng.uniform(ids.size())] : next_id++;
      if (id + 1 == next_id) ids.push_back(id);
      msg('A', bid ? 'B' : 'A', id, p, static_cast<uint32_t>(1 + rng.uniform(9)), true);
    } else if (what < 65) {  // cancel, partial or whole
      const uint64_t id = ids[rng.uniform(ids.size())];
      const auto q = resting(id);
      if (!q) continue;
      const uint32_t cut = rng.uniform(2) == 0 ? q->size : 1 + static_cast<uint32_t>(rng.uniform(q->size));
      msg('C', q->side > 0 ? 'B' : 'A', id, q->px / kTick, cut, true);
    } else if (what < 80) {  // modify: smaller (keeps priority), larger, or another price
      const uint64_t id = ids[rng.uniform(ids.size())];
      const auto q = resting(id);
      if (!q) continue;
      const uint64_t kind = rng.uniform(3);
      int64_t p = q->px / kTick;
      uint32_t sz = q->size;
      if (kind == 0 && sz > 1) sz = 1 + static_cast<uint32_t>(rng.uniform(sz - 1));
      if (kind == 1) sz += 1 + static_cast<uint32_t>(rng.uniform(3));
      if (kind == 2) {
        p += q->side > 0 ? -1 : 1;  // away from the touch: never crosses
      }
      msg('M', q->side > 0 ? 'B' : 'A', id, p, sz, true);
    } else if (what < 99) {  // trades against the best bid or ask
      const bool sell = rng.uniform(2) == 0;  // aggressor sells: hits the bid
      const int64_t p = sell ? best_bid : best_ask;
      if (p == kEmptyPx) continue;
      mbo.level_orders(sell ? 1 : -1, p, &level);
      // Mostly one trade whose fills' cancels follow in the same event; now and then two
      // trades in one event, the cancels in an event of their own (a snapshot between), or no
      // cancels at all (the book keeps the filled size until the next snapshot).
      const int trades = rng.uniform(4) == 0 ? 2 : 1;
      const bool split = trades == 1 && rng.uniform(3) == 0;
      const bool cancels = rng.uniform(8) != 0;
      struct Msg {
        char action, side;
        uint64_t id;
        uint32_t sz;
        bool last;
      };
      std::vector<Msg> out;
      const char passive = sell ? 'B' : 'A';
      size_t front = 0;
      for (int k = 0; k < trades; ++k) {
        uint32_t left = 1 + static_cast<uint32_t>(rng.uniform(8));
        std::vector<std::pair<uint64_t, uint32_t>> filled;
        for (size_t j = front; j < level.size() && left > 0; ++j) {
          const uint32_t q = std::min(left, level[j].size);
          filled.emplace_back(level[j].order_id, q);
          left -= q;
        }
        if (filled.empty()) break;
        uint32_t total = 0;
        for (const auto& f : filled) total += f.second;
        out.push_back({'T', sell ? 'A' : 'B', 0, total, split});
        for (const auto& f : filled) out.push_back({'F', passive, f.first, f.second, false});
        if (!cancels) continue;
        for (const auto& f : filled) {
          out.push_back({'C', passive, f.first, f.second, false});
          for (size_t j = front; j < level.size(); ++j) {
            if (level[j].order_id != f.first) continue;
            level[j].size -= f.second;
            if (level[j].size == 0) ++front;
          }
        }
      }
      out.back().last = true;
      for (const Msg& m : out) msg(m.action, m.side, m.id, p / kTick, m.sz, m.last);
    } else {  // the venue clears the book
      msg('R', 'N', 0, 0, 0, true);
    }
  }
  mbo.finish();
  Status st = w->finish();
  EXPECT_TRUE(st.ok()) << st.message();
  return path;
}

// A lane of `mm` with these parameters, queue model, latencies (feed 1 ms) and fees.
inline Lane mm_lane(std::vector<std::string> params, const std::string& queue, int64_t entry_ns,
                    double maker_bps, double taker_per_unit = 0, int64_t equity_interval_ns = 0) {
  Lane l;
  l.strategy = "mm";
  l.params = std::move(params);
  l.sim.queue = *parse_queue_model(queue);
  l.sim.latency.feed_ns = 1 * kLaneMs;
  l.sim.latency.entry_ns = entry_ns;
  l.sim.latency.response_ns = entry_ns / 2;
  l.sim.fees.maker_bps = maker_bps;
  l.sim.fees.taker_per_unit = taker_per_unit;
  l.sim.instrument.multiplier = 50;
  l.sim.instrument.tick_px = kTick;
  if (equity_interval_ns > 0) l.sim.equity_interval_ns = equity_interval_ns;
  return l;
}

// `count` mm lanes cycling through quoting models, gammas, inventory limits, requote rules,
// every L2 queue model, latencies and fees.
inline std::vector<Lane> mm_lanes(size_t count) {
  const char* queues[] = {"risk-averse", "power:2", "power:0.5", "log"};
  const char* gammas[] = {"gamma=0.001", "gamma=0.01", "gamma=0.1", "gamma=0.5"};
  const int64_t entries[] = {0, 1 * kLaneMs, 3 * kLaneMs, 25 * kLaneMs};
  std::vector<Lane> lanes;
  for (size_t i = 0; i < count; ++i) {
    std::vector<std::string> p = {"warmup=" + std::to_string(5 + i % 7), gammas[i % 4],
                                  "requote_ticks=" + std::to_string(i % 3),
                                  "max_inventory=" + std::to_string(2 + i % 5)};
    if (i % 5 == 1) p.push_back("model=glft");
    if (i % 6 == 2) p.push_back("order_qty=2");
    if (i % 7 == 3) p.push_back("sigma=1.5");
    if (i % 4 == 0) p.push_back("skew_ticks=2");
    lanes.push_back(mm_lane(p, queues[(i / 4) % 4], entries[(i / 3) % 4], i % 2 == 0 ? -0.2 : 0.3,
                            i % 3 == 0 ? 0.01 : 0, i % 2 == 0 ? 500 * kLaneMs : 0));
  }
  return lanes;
}

// `count` twap and ac lanes: buys and sells, market children and IOC children through the
// touch, whole lots, windows inside and across the market, taker and maker fees, latencies.
// The random market's levels hold 1..12 units, so children of several units walk levels and
// meet the liquidity memory.
inline std::vector<Lane> exec_lanes(size_t count) {
  const int64_t entries[] = {0, 2 * kLaneMs, 30 * kLaneMs};
  std::vector<Lane> lanes;
  for (size_t i = 0; i < count; ++i) {
    Lane l = mm_lane({}, i % 2 == 0 ? "risk-averse" : "log", entries[i % 3], 0.1,
                     i % 3 == 1 ? 0.02 : 0, i % 2 == 0 ? 400 * kLaneMs : 0);
    l.sim.fees.taker_bps = i % 4 == 0 ? 1.5 : 0.4;
    l.strategy = i % 3 == 2 ? "ac" : "twap";
    l.params = {std::string("side=") + (i % 2 == 0 ? "buy" : "sell"),
                "qty=" + std::to_string(20 + 7 * (i % 5)), "slices=" + std::to_string(3 + i % 9)};
    if (i % 4 == 1) l.params.push_back("order=limit");
    if (i % 8 == 5) l.params.push_back("limit_ticks=0");
    if (i % 5 == 2) l.params.push_back("lot=2");
    if (i % 6 == 0) l.params.push_back("start=2s");
    if (i % 6 == 3) l.params.push_back("duration=9s");
    if (l.strategy == "ac") l.params.push_back("urgency=" + std::to_string(1 + i % 4));
    lanes.push_back(l);
  }
  return lanes;
}

// `count` signal lanes (the market needs a signal): market and passive entry, level sizes and
// Kelly, lots, maximum holding times, thresholds, latencies and fees.
inline std::vector<Lane> signal_lanes(size_t count) {
  const int64_t entries[] = {0, 3 * kLaneMs, 40 * kLaneMs};
  std::vector<Lane> lanes;
  for (size_t i = 0; i < count; ++i) {
    Lane l = mm_lane({}, i % 3 == 0 ? "power:2" : "risk-averse", entries[i % 3], -0.1,
                     i % 4 == 1 ? 0.02 : 0, i % 2 == 0 ? 300 * kLaneMs : 0);
    l.sim.fees.taker_bps = 0.5;
    l.strategy = "signal";
    l.params = {"max_position=" + std::to_string(2 + i % 4)};
    if (i % 2 == 1) l.params.push_back("entry=passive");
    if (i % 3 == 1) l.params.push_back("kelly=1.5");
    if (i % 5 == 2) l.params.push_back("lot=2");
    if (i % 4 == 3) l.params.push_back("max_hold=900ms");
    if (i % 6 == 4) l.params.push_back("long_small=0.53");
    lanes.push_back(l);
  }
  return lanes;
}

// a == b when rel is 0; else within rel relative (to 1 at least). The device's power/log
// queue estimates use CUDA's pow/log1p (within 1e-12 of glibc's: fill_rules_gpu_test), so
// fractional fills there agree to rounding, not to the bit.
inline bool near_equal(double a, double b, double rel) {
  if (rel == 0) return a == b;
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// Two JSON documents equal, numbers within rel (near_equal).
inline void expect_json_near(const nlohmann::json& a, const nlohmann::json& b, double rel,
                             const std::string& what) {
  if (a.is_number() && b.is_number()) {
    EXPECT_TRUE(near_equal(a.get<double>(), b.get<double>(), rel))
        << what << ": " << a.dump() << " vs " << b.dump();
    return;
  }
  ASSERT_EQ(a.type(), b.type()) << what << ": " << a.dump() << " vs " << b.dump();
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << what << "." << it.key();
      expect_json_near(it.value(), b[it.key()], rel, what + "." + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i)
      expect_json_near(a[i], b[i], rel, what + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

// Equality of two results: every integer field exactly (times, ids, prices, sides, states,
// counts), every quantity and money field within rel (0: the same bits); not the rejection
// texts.
inline void expect_identical(const BacktestResult& a, const BacktestResult& b,
                             const std::string& what, double rel = 0) {
  ASSERT_EQ(a.fills.size(), b.fills.size()) << what;
  for (size_t i = 0; i < a.fills.size(); ++i) {
    const Fill &x = a.fills[i], &y = b.fills[i];
    EXPECT_TRUE(x.ts_ns == y.ts_ns && x.order_id == y.order_id && x.side == y.side &&
                x.px == y.px && near_equal(x.qty, y.qty, rel) && near_equal(x.fee, y.fee, rel) &&
                x.maker == y.maker)
        << what << " fill " << i;
  }
  ASSERT_EQ(a.orders.size(), b.orders.size()) << what;
  for (size_t i = 0; i < a.orders.size(); ++i) {
    const OrderRecord &x = a.orders[i], &y = b.orders[i];
    EXPECT_TRUE(x.order_id == y.order_id && x.sent_ns == y.sent_ns && x.arrive_ns == y.arrive_ns &&
                x.done_ns == y.done_ns && x.side == y.side && x.type == y.type && x.px == y.px &&
                near_equal(x.qty, y.qty, rel) && near_equal(x.filled_qty, y.filled_qty, rel) &&
                near_equal(x.avg_fill_px, y.avg_fill_px, rel) && x.state == y.state)
        << what << " order " << i;
  }
  ASSERT_EQ(a.equity.size(), b.equity.size()) << what;
  for (size_t i = 0; i < a.equity.size(); ++i) {
    const EquityPoint &x = a.equity[i], &y = b.equity[i];
    EXPECT_TRUE(x.ts_ns == y.ts_ns && near_equal(x.position, y.position, rel) &&
                near_equal(x.cash, y.cash, rel) && x.mid == y.mid &&
                near_equal(x.equity, y.equity, rel))
        << what << " equity " << i;
  }
  EXPECT_TRUE(near_equal(a.fees_paid, b.fees_paid, rel)) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.instrument.tick_px, b.instrument.tick_px) << what;
  EXPECT_EQ(a.instrument.multiplier, b.instrument.multiplier) << what;
}

inline void expect_identical(const LaneOutcome& a, const LaneOutcome& b, const std::string& what,
                             double rel = 0) {
  if (rel == 0) {
    EXPECT_EQ(a.stats.dump(), b.stats.dump()) << what;
  } else {
    expect_json_near(a.stats, b.stats, rel, what + " stats");
  }
  EXPECT_TRUE(near_equal(a.position, b.position, rel)) << what;
  EXPECT_TRUE(near_equal(a.cash, b.cash, rel)) << what;
  EXPECT_TRUE(near_equal(a.fees, b.fees, rel)) << what;
  EXPECT_EQ(a.fills, b.fills) << what;
  EXPECT_EQ(a.orders, b.orders) << what;
  EXPECT_EQ(a.events, b.events) << what;
}

// Every lane's result and outcome from the CPU engine (run_lanes) and from the GPU lanes
// (on the device or on host threads): equal lane by lane (expect_identical with rel).
// Returns the GPU lanes' report.
inline GpuLaneReport expect_gpu_lanes_equal_cpu(const LaneMarket& market,
                                                const std::vector<Lane>& lanes,
                                                GpuLaneOptions options, bool expect_fills = true,
                                                double rel = 0) {
  std::vector<BacktestResult> cpu(lanes.size()), gpu(lanes.size());
  LaneOptions cpu_options;
  cpu_options.threads = 2;
  auto a = run_lanes(market, lanes, cpu_options, [&](size_t i, const BacktestResult& r) {
    cpu[i] = r;
    return Status::Ok();
  });
  EXPECT_TRUE(a.ok()) << a.status().message();
  GpuLaneReport report;
  auto b = run_gpu_lanes(market, lanes, options, &report, [&](size_t i, const BacktestResult& r) {
    gpu[i] = r;
    return Status::Ok();
  });
  EXPECT_TRUE(b.ok()) << b.status().message();
  if (!a.ok() || !b.ok()) return report;
  size_t trading = 0;
  for (size_t i = 0; i < lanes.size(); ++i) {
    expect_identical(cpu[i], gpu[i], "lane " + std::to_string(i), rel);
    expect_identical((*a)[i], (*b)[i], "lane " + std::to_string(i), rel);
    trading += cpu[i].fills.empty() ? 0 : 1;
  }
  if (expect_fills) {
    EXPECT_GE(trading, lanes.size() * 3 / 4) << "most lanes must trade";
  }
  return report;
}

}  // namespace fxt::sim::test
