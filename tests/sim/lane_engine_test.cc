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
                                   uint64_t rows, bool l3 = false) {
  Status exact = Status::Ok();
  LaneStreamData stream = build_lane_stream(market, l3, &exact);
  ASSERT_TRUE(exact.ok()) << exact.message();
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
  // An MBO store whose events the lanes' L3 queues cannot follow exactly (a modify moving an
  // order to the other side at its price, which the CPU's queue keeps ahead): L3 lanes are
  // refused, L2-estimate lanes run.
  const std::string mbo = write_store({
      test::E(5 * kLaneMs, 1, 100, 3, 'A', +1),
      test::E(6 * kLaneMs, 2, 101, 3, 'A', -1),
      S(book(10 * kLaneMs, {{100, 3}}, {{101, 3}})),
      test::E(15 * kLaneMs, 1, 100, 2, 'M', -1),
      S(book(20 * kLaneMs, {}, {{100, 2}, {101, 3}})),
  });
  const LaneMarket l3 = open_market({mbo});
  r = run_gpu_lanes(l3, {mm_lane({}, "log", 0, 0), mm_lane({}, "log", 0, 0)}, host_lanes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "lane 0: --device cuda: store 0 (" + mbo +
                "): order event at 15000000 ns moves order 1 to the other side at its price: the "
                "GPU lanes' L3 queues cannot follow it; set l2 = true or use --device cpu");
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

TEST(GpuLanes, HandComputedL3Queue) {
  // Bids 100: id 1 (2), id 2 (3); ask 101: id 10 (5). At 10 ms our mm bid (2 at 100, no
  // latency) joins behind both: 5 ahead. Id 3 adds 4 behind us (not ahead); id 2 cancels 1
  // (4 ahead); id 1 grows to 5 and loses its priority (2 ahead: id 2). A sell of 1 at 25 ms
  // trades with id 2: 1 ahead in effect, nothing for us; its cancel follows (2 -> 1 ahead, the
  // trade netted out). A sell of 2 at 26 ms: 1 ahead, 1 beyond: we fill 1 at 26 ms; id 2's last
  // unit cancels (and 1 of id 3, behind us: not counted). A sell of 4 at 35 ms finds nobody
  // ahead of us (ids 3 and 1 are behind): our last unit fills at 35 ms. The L2 estimate of
  // the same lane fills otherwise.
  const std::string store = write_store({
      test::E(1 * kLaneMs, 1, 100, 2, 'A', +1),
      test::E(2 * kLaneMs, 2, 100, 3, 'A', +1),
      test::E(3 * kLaneMs, 10, 101, 5, 'A', -1),
      S(book(10 * kLaneMs, {{100, 5}}, {{101, 5}})),
      test::E(12 * kLaneMs, 3, 100, 4, 'A', +1),
      test::E(13 * kLaneMs, 2, 100, 1, 'C', +1),
      test::E(14 * kLaneMs, 1, 100, 5, 'M', +1),
      S(book(20 * kLaneMs, {{100, 11}}, {{101, 5}})),
      test::E(25 * kLaneMs, 0, 100, 1, 'T', -1),
      T(trade(25 * kLaneMs, 100, 1, -1)),
      test::E(25 * kLaneMs, 2, 100, 1, 'F', +1),
      test::E(25 * kLaneMs, 2, 100, 1, 'C', +1),
      S(book(25 * kLaneMs, {{100, 10}}, {{101, 5}})),
      test::E(26 * kLaneMs, 0, 100, 2, 'T', -1),
      T(trade(26 * kLaneMs, 100, 2, -1)),
      test::E(26 * kLaneMs, 2, 100, 1, 'C', +1),
      test::E(26 * kLaneMs, 3, 100, 1, 'C', +1),
      S(book(26 * kLaneMs, {{100, 8}}, {{101, 5}})),
      test::E(35 * kLaneMs, 0, 100, 4, 'T', -1),
      T(trade(35 * kLaneMs, 100, 4, -1)),
      test::E(35 * kLaneMs, 3, 100, 3, 'C', +1),
      test::E(35 * kLaneMs, 1, 100, 1, 'C', +1),
      S(book(35 * kLaneMs, {{100, 4}}, {{101, 5}})),
      S(book(40 * kLaneMs, {{100, 4}}, {{101, 5}})),
  });
  const LaneMarket market = open_market({store});
  Lane l = mm_lane({"warmup=0", "gamma=1", "order_qty=2"}, "risk-averse", 0, 0);
  l.sim.latency = LatencyConfig();
  BacktestResult got;
  auto out = run_one_lane(market, l, &got);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(got.fills.size(), 2u);
  const int64_t ts[] = {26 * kLaneMs, 35 * kLaneMs};
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(got.fills[k].ts_ns, ts[k]) << k;
    EXPECT_EQ(got.fills[k].order_id, 1u) << k;
    EXPECT_EQ(got.fills[k].side, Side::kBuy) << k;
    EXPECT_EQ(got.fills[k].px, test::px(100)) << k;
    EXPECT_EQ(got.fills[k].qty, 1) << k;
    EXPECT_TRUE(got.fills[k].maker) << k;
  }
  EXPECT_EQ(got.orders[0].state, OrderState::kFilled);
  EXPECT_EQ((*out)[0].position, 2);
  test::expect_gpu_lanes_equal_cpu(market, {l}, host_lanes());
  // The same lane with L2 estimates fills otherwise: the L3 queue is what decided.
  Lane l2 = l;
  l2.sim.use_l3 = false;
  BacktestResult est;
  ASSERT_TRUE(run_one_lane(market, l2, &est).ok());
  EXPECT_FALSE(est.fills.size() == 2 && est.fills[0].ts_ns == ts[0] && est.fills[1].ts_ns == ts[1]);
}

TEST(GpuLanes, L3EdgeEventsEqualTheCpuEngine) {
  // Our bid (2 at 100, no latency) joins behind ids 1, 2, 3 (3 each) at 10 ms. An oversize
  // cancel removes id 1 (6 ahead); an add of resting id 2 that the book ignores (size 0) still
  // takes id 2 out of our queue (3 ahead; the book keeps it); a modify of an unknown id adds
  // behind us. A sell of 4 at 21 ms: 1 beyond id 3: we fill 1; the cancels follow (id 2's is
  // not ours to count: 2 ahead). A sell of 1 at 26 ms does not reach us (2 ahead, no cancels
  // after it). A valid re-add of id 2, then a
  // book clear: nobody ahead; a sell of 1 at 35 ms fills our last unit. A second lane (entry
  // 15 ms) joins at 25 ms behind ids 2, 3 and 50 and sees the re-add and the clear.
  const std::string store = write_store({
      test::E(1 * kLaneMs, 1, 100, 3, 'A', +1),
      test::E(2 * kLaneMs, 2, 100, 3, 'A', +1),
      test::E(3 * kLaneMs, 3, 100, 3, 'A', +1),
      test::E(4 * kLaneMs, 10, 101, 5, 'A', -1),
      S(book(10 * kLaneMs, {{100, 9}}, {{101, 5}})),
      test::E(12 * kLaneMs, 1, 100, 7, 'C', +1),
      test::E(13 * kLaneMs, 2, 100, 0, 'A', +1),
      test::E(14 * kLaneMs, 50, 100, 2, 'M', +1),
      S(book(20 * kLaneMs, {{100, 8}}, {{101, 5}})),
      test::E(21 * kLaneMs, 0, 100, 4, 'T', -1),
      T(trade(21 * kLaneMs, 100, 4, -1)),
      test::E(21 * kLaneMs, 2, 100, 3, 'C', +1),
      test::E(21 * kLaneMs, 3, 100, 1, 'C', +1),
      S(book(22 * kLaneMs, {{100, 4}}, {{101, 5}})),
      test::E(26 * kLaneMs, 0, 100, 1, 'T', -1),
      T(trade(26 * kLaneMs, 100, 1, -1)),
      S(book(26 * kLaneMs, {{100, 4}}, {{101, 5}})),
      test::E(30 * kLaneMs, 2, 100, 4, 'A', +1),
      S(book(30 * kLaneMs, {{100, 8}}, {{101, 5}})),
      test::E(31 * kLaneMs, 0, 0, 0, 'R', 0),
      test::E(32 * kLaneMs, 60, 100, 5, 'A', +1),
      test::E(32 * kLaneMs, 61, 101, 5, 'A', -1),
      S(book(32 * kLaneMs, {{100, 5}}, {{101, 5}})),
      test::E(35 * kLaneMs, 0, 100, 1, 'T', -1),
      T(trade(35 * kLaneMs, 100, 1, -1)),
      S(book(35 * kLaneMs, {{100, 5}}, {{101, 5}})),
      S(book(40 * kLaneMs, {{100, 5}}, {{101, 5}})),
  });
  const LaneMarket market = open_market({store});
  Lane l = mm_lane({"warmup=0", "gamma=1", "order_qty=2"}, "risk-averse", 0, 0);
  l.sim.latency = LatencyConfig();
  Lane late = l;
  late.sim.latency.entry_ns = 15 * kLaneMs;
  BacktestResult got;
  auto out = run_one_lane(market, l, &got);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(got.fills.size(), 2u);
  EXPECT_EQ(got.fills[0].ts_ns, 21 * kLaneMs);
  EXPECT_EQ(got.fills[0].qty, 1);
  EXPECT_EQ(got.fills[1].ts_ns, 35 * kLaneMs);
  EXPECT_EQ(got.fills[1].qty, 1);
  test::expect_gpu_lanes_equal_cpu(market, {l, late}, host_lanes());
}

// mm lanes (the queue model is unused under L3), signal and twap/ac lanes over MBO sessions.
std::vector<Lane> l3_mixed_lanes() {
  std::vector<Lane> lanes = mm_lanes(16);
  for (const Lane& l : signal_lanes(6)) lanes.push_back(l);
  for (const Lane& l : exec_lanes(4)) lanes.push_back(l);
  return lanes;
}

TEST(GpuLanes, L3LanesEqualTheCpuEngineOnMboMarkets) {
  // One random MBO session; then MBO, L2 and MBO sessions an hour apart (sessions switch
  // between L3 and L2 queues; orders rejoin); a signal for the signal lanes.
  const std::string dir = fxt::test::scratch_dir();
  LaneMarket one = open_market({test::random_mbo_store(6000, 3, 0, "one", dir)});
  attach_signal(&one, [](size_t i) { return (i / 40) % 3 == 0 ? 0.8f : (i / 40) % 3 == 1 ? 0.25f : 0.5f; });
  GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(one, l3_mixed_lanes(), host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  LaneMarket three = open_market({test::random_mbo_store(3000, 5, 0, "a", dir),
                                  write_store(random_market(400, 6, 3'600'000 * kLaneMs), "b",
                                              "TEST", dir),
                                  test::random_mbo_store(3000, 7, 7'200'000 * kLaneMs, "c", dir)});
  attach_signal(&three, [](size_t i) { return (i / 25) % 3 == 0 ? 0.8f : (i / 25) % 3 == 1 ? 0.25f : 0.5f; });
  report = test::expect_gpu_lanes_equal_cpu(three, l3_mixed_lanes(), host_lanes());
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
  // L3 queues change results: some mm lane fills otherwise under the L2 estimate.
  std::vector<Lane> l2 = mm_lanes(8);
  for (Lane& l : l2) l.sim.use_l3 = false;
  size_t differ = 0;
  std::vector<std::vector<Fill>> fills(8);
  auto a = run_gpu_lanes(one, mm_lanes(8), host_lanes(), nullptr,
                         [&](size_t i, const BacktestResult& r) {
                           fills[i] = r.fills;
                           return Status::Ok();
                         });
  ASSERT_TRUE(a.ok());
  auto b = run_gpu_lanes(one, l2, host_lanes(), nullptr, [&](size_t i, const BacktestResult& r) {
    bool same = fills[i].size() == r.fills.size();
    for (size_t k = 0; same && k < r.fills.size(); ++k)
      same = fills[i][k].ts_ns == r.fills[k].ts_ns && fills[i][k].qty == r.fills[k].qty;
    differ += same ? 0 : 1;
    return Status::Ok();
  });
  ASSERT_TRUE(b.ok());
  EXPECT_GE(differ, 3u);
  // Windows of the L3 stream (the kernel's staging) change nothing.
  expect_windows_change_nothing(three, mm_lanes(4), 23, /*l3=*/true);
}

TEST(GpuLanes, L3AndL2LanesInOneRun) {
  // Lanes with L3 queues and lanes with L2 estimates over the same MBO store, in one call (two
  // streams) and in small batches: each equals the CPU engine.
  const LaneMarket market = open_market({test::random_mbo_store(4000, 11)});
  std::vector<Lane> lanes = mm_lanes(12);
  for (size_t i = 0; i < lanes.size(); i += 2) lanes[i].sim.use_l3 = false;
  test::expect_gpu_lanes_equal_cpu(market, lanes, host_lanes());
  GpuLaneOptions small = host_lanes();
  small.batch = 5;
  const GpuLaneReport report = test::expect_gpu_lanes_equal_cpu(market, lanes, small);
  EXPECT_EQ(report.batches, 4u);  // 6 L2 lanes in 2 batches, 6 L3 lanes in 2
}

TEST(GpuLanes, RealEsMboStoreL3LanesEqualTheCpuEngine) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = fxt::test::scratch_dir();
  const auto ingest = fxt::test::run_fxt(
      "-q ingest " + fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const LaneMarket market = open_market({dir + "/es"});
  ASSERT_GT(market.stores[0].event_count(), 0u);
  std::vector<Lane> lanes = mm_lanes(8);
  for (Lane& l : lanes) {
    l.sim.instrument = market.instrument;
    l.sim.instrument.multiplier = 50;
  }
  test::expect_gpu_lanes_equal_cpu(market, lanes, host_lanes());
}

}  // namespace
}  // namespace fxt::sim
