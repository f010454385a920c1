// The GPU lanes' exchange (sim/lane_engine.h, sim/gpu_lanes.h) run on host threads — the same
// code the CUDA kernel runs — against the CPU replay engine: every lane's fills, orders,
// equity rows, fees and stats identical; a hand-computed fill; sessions, signal skew, batches
// and chunked advancing; lanes that overflow the fixed state rerun on the CPU; refusals.
// tests/gpu/lane_engine_gpu_test.cc runs the same checks on the device.
#include "sim/gpu_lanes.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lane_test_util.h"
#include "sim/backtest.h"

namespace fxt::sim {
namespace {

using test::book;
using test::exec_lanes;
using test::kLaneMs;
using test::mm_lane;
using test::mm_lanes;
using test::random_market;
using test::S;
using test::signal_lanes;
using test::T;
using test::trade;
using test::write_store;

LaneMarket open_market(const std::vector<std::string>& stores) {
  auto m = open_lane_market(stores, {}, 0);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

// Two sessions an hour apart, n random-walk snapshots each (seeds seed and seed + 1).
LaneMarket two_sessions(int n, uint64_t seed) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string a = write_store(random_market(n, seed), "a", "TEST", dir);
  const std::string b = write_store(random_market(n, seed + 1, 3'600'000 * kLaneMs), "b", "TEST", dir);
  return open_market({a, b});
}

// Gives the market a signal: p(i) for snapshot i of every store.
template <class P>
void attach_signal(LaneMarket* market, P p) {
  auto signal = std::make_shared<SignalSeries>();
  signal->horizon = 10;
  for (const StoreReader& r : market->stores) {
    std::vector<float> v(r.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = p(i);
    signal->per_store.push_back(std::move(v));
  }
  market->inputs.signal = signal;
}

GpuLaneOptions host_lanes() {
  GpuLaneOptions o;
  o.on_device = false;
  o.threads = 2;
  return o;
}

// One lane on host threads; its rows into *result.
Result<std::vector<LaneOutcome>> run_one_lane(const LaneMarket& market, const Lane& lane,
                                              BacktestResult* result) {
  return run_gpu_lanes(market, {lane}, host_lanes(), nullptr,
                       [&](size_t, const BacktestResult& r) {
                         *result = r;
                         return Status::Ok();
                       });
}

// The kernel's way of advancing: the stream in windows of `rows` rows staged in a buffer (its
// shared memory), state kept in between: the same rows as one pass.
void expect_windows_change_nothing(const LaneMarket& market, const std::vector<Lane>& lanes,
                                   uint64_t rows) {
  LaneStreamData stream = build_lane_stream(market);
  std::vector<LaneConfig> configs;
  for (const Lane& lane : lanes) {
    auto config = gpu_lane_config(market, lane, &stream.holdings);
    ASSERT_TRUE(config.ok()) << config.status().message();
    configs.push_back(*config);
  }
  const LaneStream view = stream.view();
  for (size_t i = 0; i < lanes.size(); ++i) {
    const LaneConfig* config = &configs[i];
    std::vector<LaneFillRow> f1(4096), f2(4096);
    std::vector<LaneEquityRow> e1(8192), e2(8192);
    std::vector<LaneOrderRow> o1(4096), o2(4096);
    LaneState s1, s2;
    LaneSim(view, *config, &s1, {f1.data(), e1.data(), o1.data(), 4096, 8192, 4096})
        .advance(view.n);
    std::vector<uint64_t> buffer(lane_window_bytes(rows) / 8 + 1);
    LaneStream window = view;
    for (uint64_t w = 0; w < view.n; w += rows) {
      const uint64_t end = std::min<uint64_t>(view.n, w + rows);
      lane_stage_window(view, w, end, buffer.data(), 0, 1, &window);
      ASSERT_LE(window.w_row_end - window.w_row_begin, static_cast<int64_t>(rows) + 1);
      LaneSim(window, *config, &s2, {f2.data(), e2.data(), o2.data(), 4096, 8192, 4096})
          .advance(end);
    }
    LaneSim(window, *config, &s2, {f2.data(), e2.data(), o2.data(), 4096, 8192, 4096})
        .advance(view.n);
    ASSERT_TRUE(s2.finished);
    ASSERT_EQ(s1.error, kLaneOk);
    ASSERT_GT(s1.fills, 0u) << "lane " << i;
    ASSERT_EQ(s1.fills, s2.fills);
    ASSERT_EQ(s1.equity_rows, s2.equity_rows);
    EXPECT_EQ(s1.account.cash, s2.account.cash);
    EXPECT_EQ(s1.account.position, s2.account.position);
    for (uint64_t k = 0; k < s1.fills; ++k) {
      EXPECT_EQ(f1[k].ts_ns, f2[k].ts_ns);
      EXPECT_EQ(f1[k].qty, f2[k].qty);
    }
    for (uint64_t k = 0; k < s1.equity_rows; ++k) EXPECT_EQ(e1[k].equity, e2[k].equity);
  }
}

TEST(GpuLanes, HandComputedQuoteAndFill) {
  // Touch 100/101 (5 each). warmup=0, gamma=1, k=3, sigma 0: half spread ln(4/3) = 0.288
  // ticks around 100.5: bid 100, ask 101, joining behind 5. A sell of 8 at 100 goes 3 beyond
  // the queue: our bid fills 1 at 100 as maker; fee -0.2 bps of 100·50 = -0.1.
  const std::string store = write_store({
      S(book(10 * kLaneMs, {{100, 5}}, {{101, 5}})),
      S(book(20 * kLaneMs, {{100, 5}}, {{101, 5}})),
      T(trade(25 * kLaneMs, 100, 8, -1)),
      S(book(30 * kLaneMs, {{100, 2}}, {{101, 5}})),
  });
  const LaneMarket market = open_market({store});
  Lane l = mm_lane({"warmup=0", "gamma=1"}, "risk-averse", 0, -0.2);
  l.sim.latency = LatencyConfig();
  BacktestResult got;
  auto out = run_one_lane(market, l, &got);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(got.fills.size(), 1u);
  EXPECT_EQ(got.fills[0].ts_ns, 25 * kLaneMs);
  EXPECT_EQ(got.fills[0].order_id, 1u);
  EXPECT_EQ(got.fills[0].px, test::px(100));
  EXPECT_EQ(got.fills[0].qty, 1);
  EXPECT_TRUE(got.fills[0].maker);
  EXPECT_NEAR(got.fills[0].fee, -0.1, 1e-12);
  EXPECT_EQ((*out)[0].position, 1);
  EXPECT_NEAR((*out)[0].cash, -5000 + 0.1, 1e-9);
  ASSERT_GE(got.orders.size(), 2u);
  EXPECT_EQ(got.orders[1].px, test::px(101));  // the ask
  EXPECT_EQ(got.orders[0].state, OrderState::kFilled);
  test::expect_gpu_lanes_equal_cpu(market, {l}, host_lanes());
}

TEST(GpuLanes, EveryLaneEqualsTheCpuEngineOnARandomMarket) {
  const LaneMarket market = open_market({write_store(random_market(1500, 7))});
  const GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(market, mm_lanes(32), host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  EXPECT_EQ(report.batches, 1u);
  EXPECT_GT(report.bytes_per_lane, sizeof(LaneState));
}

TEST(GpuLanes, TwoSessionsAndASignalSkew) {
  LaneMarket market = two_sessions(400, 11);
  attach_signal(&market, [](size_t i) {
    return (i / 30) % 3 == 0 ? 0.85f : (i / 30) % 3 == 1 ? 0.2f : 0.5f;
  });
  test::expect_gpu_lanes_equal_cpu(market, mm_lanes(12), host_lanes());
}

TEST(GpuLanes, BatchesAndChunksDoNotChangeResults) {
  const LaneMarket market = open_market({write_store(random_market(600, 5))});
  const std::vector<Lane> lanes = mm_lanes(7);
  GpuLaneOptions all = host_lanes();
  auto whole = run_gpu_lanes(market, lanes, all);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  for (size_t batch : {1, 3}) {
    GpuLaneOptions o = host_lanes();
    o.batch = batch;
    o.threads = 1;
    GpuLaneReport report;
    auto got = run_gpu_lanes(market, lanes, o, &report);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(report.batches, (lanes.size() + batch - 1) / batch);
    for (size_t i = 0; i < lanes.size(); ++i)
      test::expect_identical((*whole)[i], (*got)[i], "batch " + std::to_string(batch));
  }
  expect_windows_change_nothing(market, lanes, 37);
}

TEST(GpuLanes, WindowsAcrossSessionsChangeNothing) {
  expect_windows_change_nothing(two_sessions(300, 41), mm_lanes(5), 13);
}

TEST(GpuLanes, RecordedLatencyCurvesEqualTheCpuEngine) {
  // Two recorded curves (entry and response interpolated at the send / act time), each
  // shared by several lanes, next to constant-latency lanes.
  const std::string dir = fxt::test::scratch_dir();
  std::ofstream(dir + "/slow.csv")
      << "ts_ns,entry_ns,response_ns\n"
      << 5 * kLaneMs << "," << 1 * kLaneMs << "," << 2 * kLaneMs << "\n"
      << 15'000 * kLaneMs << "," << 30 * kLaneMs << "," << 7 * kLaneMs << "\n";
  std::ofstream(dir + "/fast.csv") << "ts_ns,entry_ns,response_ns\n0,100000,50000\n"
                                   << 30'000 * kLaneMs << ",900000,1700000\n";
  const LaneMarket market = open_market({write_store(random_market(1200, 17))});
  std::vector<Lane> lanes = mm_lanes(8);
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (i % 4 == 3) continue;  // constant latencies
    lanes[i].sim.latency.file = dir + (i % 2 == 0 ? "/slow.csv" : "/fast.csv");
  }
  test::expect_gpu_lanes_equal_cpu(market, lanes, host_lanes());
}

TEST(GpuLanes, LanesThatOverflowRerunOnTheCpu) {
  const LaneMarket market = open_market({write_store(random_market(800, 9))});
  GpuLaneOptions o = host_lanes();
  o.row_capacity = 6;  // fewer fills and orders than most lanes make
  const GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(market, mm_lanes(6), o);
  EXPECT_GT(report.cpu_fallback_lanes, 0u);
}

TEST(GpuLanes, RefusesWhatIsNotOnTheGpuWithOneLine) {
  const LaneMarket market = open_market({write_store(random_market(50, 3))});
  Lane signal = mm_lane({}, "log", 0, 0);
  signal.strategy = "signal";
  auto r = run_gpu_lanes(market, {mm_lane({}, "log", 0, 0), signal}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "lane 1: --strategy signal needs --predictions or --checkpoint");
  // A window whose slice index would overflow int64 (the CPU falls back to long double).
  Lane wide = exec_lanes(1)[0];
  wide.params = {"qty=4", "slices=2000000", "duration=1000000s"};
  r = run_gpu_lanes(market, {wide}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "lane 0: --device cuda: a 1000000000000000 ns window in 2000000 slices is beyond the "
            "GPU lanes' int64 slice arithmetic; use --device cpu");
  Lane file = mm_lane({}, "log", 0, 0);
  file.sim.latency.file = fxt::test::scratch_dir() + "/missing.csv";
  r = run_gpu_lanes(market, {mm_lane({}, "log", 0, 0), file}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("lane 1: ", 0), 0u) << r.status().message();
  r = run_gpu_lanes(market, {mm_lane({"gamma=-1"}, "log", 0, 0)}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "lane 0: mm gamma must be > 0");
  // An MBO store (order events): L3 FIFO lanes are refused, L2-estimate lanes run.
  const std::string mbo = write_store({
      test::E(5 * kLaneMs, 1, 100, 3, 'A', +1),
      test::E(6 * kLaneMs, 2, 101, 3, 'A', -1),
      S(book(10 * kLaneMs, {{100, 3}}, {{101, 3}})),
      S(book(20 * kLaneMs, {{100, 3}}, {{101, 3}})),
  });
  const LaneMarket l3 = open_market({mbo});
  r = run_gpu_lanes(l3, {mm_lane({}, "log", 0, 0)}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "lane 0: --device cuda: L3 FIFO queues of MBO stores are not on the GPU yet; set l2 = "
            "true (L2 queue estimates) or use --device cpu");
  Lane l2 = mm_lane({"warmup=0"}, "log", 0, 0);
  l2.sim.use_l3 = false;
  test::expect_gpu_lanes_equal_cpu(l3, {l2}, host_lanes(), /*expect_fills=*/false);
#if !defined(FXT_HAVE_CUDA)
  r = run_gpu_lanes(market, {mm_lane({}, "log", 0, 0)}, GpuLaneOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--device cuda: this build has no CUDA (configure with CUDA); use --device cpu");
#endif
}

TEST(GpuLanes, HandComputedTwapWalksLevelsAndRemembersWhatItTook) {
  // Asks 101 x 3, 102 x 5 until 40 ms. A buy of 8 in 2 slices over [10, 50) ms, no latency:
  // slice 0 at the first book (10 ms) sends a market child of 4: 3 at 101 and 1 at 102, taker
  // (fee 1 bps: 101·3·50·1e-4 = 1.515 and 102·1·50·1e-4 = 0.51). Slice 1 starts at 30 ms: a
  // child of 4 finds 101 used up (the level has not refreshed) and takes 4 at 102. The book of
  // 40 ms refreshes 101; nothing is left to do.
  const std::string store = write_store({
      S(book(10 * kLaneMs, {{100, 5}}, {{101, 3}, {102, 5}})),
      S(book(20 * kLaneMs, {{100, 5}}, {{101, 3}, {102, 5}})),
      S(book(30 * kLaneMs, {{100, 5}}, {{101, 3}, {102, 5}})),
      S(book(40 * kLaneMs, {{100, 5}}, {{101, 4}, {102, 5}})),
      S(book(50 * kLaneMs, {{100, 5}}, {{101, 4}, {102, 5}})),
  });
  const LaneMarket market = open_market({store});
  Lane l = mm_lane({}, "risk-averse", 0, 0);
  l.sim.latency = LatencyConfig();
  l.sim.fees.taker_bps = 1;
  l.strategy = "twap";
  l.params = {"side=buy", "qty=8", "slices=2", "duration=40ms"};
  BacktestResult got;
  auto out = run_one_lane(market, l, &got);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(got.fills.size(), 3u);
  const int64_t ts[] = {10 * kLaneMs, 10 * kLaneMs, 30 * kLaneMs};
  const int64_t px[] = {101, 102, 102};
  const double qty[] = {3, 1, 4};
  const uint64_t id[] = {1, 1, 2};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(got.fills[k].ts_ns, ts[k]) << k;
    EXPECT_EQ(got.fills[k].px, test::px(px[k])) << k;
    EXPECT_EQ(got.fills[k].qty, qty[k]) << k;
    EXPECT_EQ(got.fills[k].order_id, id[k]) << k;
    EXPECT_FALSE(got.fills[k].maker) << k;
    EXPECT_NEAR(got.fills[k].fee, static_cast<double>(px[k]) * qty[k] * 50 * 1e-4, 1e-9) << k;
  }
  ASSERT_EQ(got.orders.size(), 2u);
  EXPECT_EQ(got.orders[1].type, OrderType::kMarket);
  EXPECT_EQ(got.orders[1].state, OrderState::kFilled);
  EXPECT_EQ((*out)[0].position, 8);
  const nlohmann::json& report = (*out)[0].stats.at("execution");
  EXPECT_EQ(report.at("executed_qty").get<double>(), 8);
  EXPECT_NEAR(report.at("avg_fill_px").get<double>(), (3 * 101 + 5 * 102) / 8.0, 1e-12);
  EXPECT_NEAR(report.at("arrival_px").get<double>(), 100.5, 1e-12);
  test::expect_gpu_lanes_equal_cpu(market, {l}, host_lanes());
}

TEST(GpuLanes, ExecutionLanesEqualTheCpuEngine) {
  // twap/ac with market and IOC children, lots, windows, over one market and over two
  // sessions (the liquidity memory resets with the session); every lane must trade.
  const LaneMarket one = open_market({write_store(random_market(1500, 8))});
  GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(one, exec_lanes(24), host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  // The lanes exercise what they are for: children walking several levels, IOC remainders
  // expiring, taker fees.
  size_t walked = 0, expired = 0, taker = 0;
  auto got = run_gpu_lanes(one, exec_lanes(24), host_lanes(), nullptr,
                           [&](size_t, const BacktestResult& r) {
                             for (size_t k = 1; k < r.fills.size(); ++k)
                               walked += r.fills[k].order_id == r.fills[k - 1].order_id &&
                                         r.fills[k].px != r.fills[k - 1].px;
                             for (const OrderRecord& o : r.orders)
                               expired += o.state == OrderState::kExpired;
                             for (const Fill& f : r.fills) taker += !f.maker && f.fee > 0;
                             return Status::Ok();
                           });
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_GT(walked, 10u);
  EXPECT_GT(expired, 3u);
  EXPECT_GT(taker, 100u);
  const LaneMarket two = two_sessions(500, 51);
  std::vector<Lane> mixed = exec_lanes(9);
  for (const Lane& l : mm_lanes(5)) mixed.push_back(l);
  report = test::expect_gpu_lanes_equal_cpu(two, mixed, host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  expect_windows_change_nothing(two, exec_lanes(6), 29);
}

TEST(GpuLanes, SignalLanesEqualTheCpuEngine) {
  // A signal that swings through every exposure level (long, short, hold, flat) over two
  // sessions; market and passive entry, Kelly, lots, holding-time exits; mm lanes beside.
  LaneMarket market = two_sessions(700, 61);
  Rng rng(5);
  double x = 0.5;  // a bounded random walk
  attach_signal(&market, [&](size_t) {
    x = std::clamp(x + (rng.unit() - 0.5) * 0.08, 0.2, 0.8);
    return static_cast<float>(x);
  });
  std::vector<Lane> lanes = signal_lanes(18);
  for (const Lane& l : mm_lanes(4)) lanes.push_back(l);
  const GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(market, lanes, host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  // Both entries trade, and passive lanes cancel their orders.
  size_t canceled = 0, market_orders = 0;
  auto got = run_gpu_lanes(market, lanes, host_lanes(), nullptr,
                           [&](size_t, const BacktestResult& r) {
                             for (const OrderRecord& o : r.orders) {
                               canceled += o.state == OrderState::kCanceled;
                               market_orders += o.type == OrderType::kMarket;
                             }
                             return Status::Ok();
                           });
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_GT(canceled, 5u);
  EXPECT_GT(market_orders, 20u);
  expect_windows_change_nothing(market, signal_lanes(6), 31);
}

TEST(GpuLanes, RealEsMboStoreL2LanesEqualTheCpuEngine) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = fxt::test::scratch_dir();
  const auto ingest = fxt::test::run_fxt(
      "-q ingest " + fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const LaneMarket market = open_market({dir + "/es"});
  std::vector<Lane> lanes = mm_lanes(8);
  for (Lane& l : lanes) {
    l.sim.use_l3 = false;
    l.sim.instrument = market.instrument;
    l.sim.instrument.multiplier = 50;
  }
  test::expect_gpu_lanes_equal_cpu(market, lanes, host_lanes());
}

}  // namespace
}  // namespace fxt::sim
