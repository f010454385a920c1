// Features against rows computed by hand (the arithmetic is spelled out here, never taken
// from the implementation), edge cases, and standardisation.
#include "features/features.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "data/store.h"
#include "test_util.h"

namespace fxt {
namespace {

constexpr int64_t kTick = 250'000'000;              // 0.25
constexpr int64_t kB = 5'000'000'000'000;           // 5000.00 = 20000 ticks
constexpr int64_t kT0 = 1'704'205'800'000'000'000;  // 2024-01-02 14:30:00 UTC
constexpr double kTwoPi = 6.283185307179586476925286766559;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double alpha(double h) {
  return 1.0 - std::pow(2.0, -1.0 / h);
}

// A book from (offset in ticks from kB, size) pairs per side, best first.
Snapshot book(int64_t ts, std::vector<std::pair<int, double>> bids,
              std::vector<std::pair<int, double>> asks, uint8_t extra_flags = 0) {
  Snapshot s;
  s.ts_ns = ts;
  for (size_t i = 0; i < bids.size(); ++i) {
    s.bid_px[i] = kB + bids[i].first * kTick;
    s.bid_sz[i] = bids[i].second;
  }
  for (size_t i = 0; i < asks.size(); ++i) {
    s.ask_px[i] = kB + asks[i].first * kTick;
    s.ask_sz[i] = asks[i].second;
  }
  s.mark_crossed_or_locked();
  s.flags |= extra_flags;
  return s;
}

struct Event {
  Snapshot snap;
  std::vector<Trade> trades_before;  // assigned to this snapshot
};

StoreReader make_store(const std::vector<Event>& events) {
  std::string dir = test::scratch_dir() + "/store";
  StoreInfo info;
  info.source_format = "test";
  info.symbol = "T";
  info.tick_px = kTick;
  info.tick_source = "definition";
  info.has_trades = true;
  auto w = StoreWriter::create(dir, info);
  EXPECT_TRUE(w.ok()) << w.status().message();
  for (const auto& e : events) {
    for (const auto& t : e.trades_before) w->on_trade(t);
    w->on_snapshot(e.snap);
  }
  EXPECT_TRUE(w->finish().ok());
  auto r = StoreReader::open(dir);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

std::vector<double> features(const StoreReader& r, int stride = 1) {
  std::vector<double> x;
  FeatureConfig c;
  c.stride = stride;
  Status s = compute_features_f64(r, c, &x);
  EXPECT_TRUE(s.ok()) << s.message();
  return x;
}

// Compares all 40 slots of row t; NaN in `want` means "undefined".
void expect_row(const std::vector<double>& x, uint64_t t, const std::vector<double>& want) {
  ASSERT_EQ(want.size(), static_cast<size_t>(kFeatureDim));
  for (int k = 0; k < kFeatureDim; ++k) {
    double got = x[t * kFeatureDim + k];
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got)) << "row " << t << " slot " << k << " " << feature_names()[k]
                                   << " = " << got << ", want undefined";
    } else {
      EXPECT_NEAR(got, want[k], 1e-9 * std::max(1.0, std::fabs(want[k])))
          << "row " << t << " slot " << k << " " << feature_names()[k];
    }
  }
}

Trade trade(int64_t ts, double sz, int8_t side) {
  Trade t;
  t.ts_ns = ts;
  t.px = kB;
  t.sz = sz;
  t.side = side;
  return t;
}

// Three snapshots; every slot of rows 0 and 1 and the recurrences of row 2, by hand.
TEST(Features, HandComputedRows) {
  const int64_t t1 = kT0 + 250'000'000, t2 = t1 + 7'000'000'000;
  auto r = make_store({
      {book(kT0, {{0, 10}, {-1, 20}}, {{1, 30}, {2, 40}}), {}},
      {book(t1, {{0, 14}, {-1, 20}, {-3, 6}}, {{2, 25}, {3, 40}}),
       {trade(t1, 5, +1), trade(t1, 2, -1)}},
      {book(t2, {{1, 8}, {0, 14}}, {{2, 40}, {3, 10}}), {trade(t2, 25, +1)}},
  });
  auto x = features(r);
  const double tod0 = kTwoPi * 52200.0 / 86400.0;  // 14:30:00
  const double d0 = (10.0 + 30.0) / 2;
  // Row 0: p = t, so every difference is zero and Δt = 0.
  expect_row(x, 0,
             {0,
              1,
              (10.0 - 30) / 40,
              (30.0 - 70) / 100,
              (30.0 - 70) / 100,
              (30.0 - 70) / 100,
              0.5 * (10.0 - 30) / 40,
              0 / d0,
              0 / d0,
              std::log1p(30.0) - std::log1p(70.0),
              (10 * 0 + 20 * 1) / 30.0,
              (30 * 0 + 40 * 1) / 70.0,
              0 / d0,
              0,
              -6,
              0,
              0,
              0,
              1 / 9.0,
              1 / 9.0,
              0,
              0,
              0,
              0,
              0,
              0,
              std::sin(tod0),
              std::cos(tod0),
              0,
              0,
              0,
              1,
              1,
              0,
              1,
              0,
              1,
              0,
              1,
              0});

  // Row 1 (p = 0). Mid in ticks from kB: 0.5 -> 1.0; prices in 1e-9 units.
  const double mid0 = kB + 0.5 * kTick, mid1 = kB + 1.0 * kTick;
  const double ret1 = std::log(mid1 / mid0) * 1e4;
  const double d1 = d0 + alpha(1000) * ((14.0 + 25) / 2 - d0);
  // OFI: e0 = (+14 - 10) [bid same] + 30 [ask up: +old size] = 34; e1 = 0 + 40 = 40;
  // e2 = +6 [new bid level vs empty] ; e3 = e4 = 0.
  const double e0 = 34, e5 = 34 + 40 + 6;
  const double dt1 = 250'000'000;
  const double tod1 = kTwoPi * 52200.25 / 86400.0;
  expect_row(x, 1,
             {ret1,
              2,
              (14.0 - 25) / 39,
              (40.0 - 65) / 105,
              (40.0 - 65) / 105,
              (40.0 - 65) / 105,
              1.0 * (14.0 - 25) / 39,
              e0 / d1,
              e5 / d1,
              std::log1p(40.0) - std::log1p(65.0),
              (14 * 0 + 20 * 1 + 6 * 3) / 40.0,
              (25 * 0 + 40 * 1) / 65.0,
              (5.0 - 2.0) / d1,
              std::log1p(2.0),
              std::log10(dt1) - 6,
              std::fabs(ret1),
              std::log1p(14.0) - std::log1p(10.0),
              std::log1p(25.0) - std::log1p(30.0),
              3 / 9.0,
              1 / 9.0,
              alpha(10) * ret1,
              alpha(100) * ret1,
              alpha(1000) * ret1,
              alpha(10) * std::fabs(ret1),
              alpha(100) * std::fabs(ret1),
              alpha(1000) * std::fabs(ret1),
              std::sin(tod1),
              std::cos(tod1),
              alpha(10) * e0 / d1,
              alpha(100) * e0 / d1,
              alpha(1000) * e0 / d1,
              1 + alpha(100) * (2 - 1),
              std::cos(kTwoPi * dt1 / 60e9),
              std::sin(kTwoPi * dt1 / 60e9),
              std::cos(kTwoPi * dt1 / 6e9),
              std::sin(kTwoPi * dt1 / 6e9),
              std::cos(kTwoPi * dt1 / 600e6),
              std::sin(kTwoPi * dt1 / 600e6),
              std::cos(kTwoPi * 10e6 / 60e6),  // 250 ms mod 60 ms = 10 ms
              std::sin(kTwoPi * 10e6 / 60e6)});

  // Row 2: the recurrences. Mid 1.0 -> 1.5 ticks; e0: bid up (+8), ask same (+0... -40+25).
  const double mid2 = kB + 1.5 * kTick;
  const double ret2 = std::log(mid2 / mid1) * 1e4;
  const double d2 = d1 + alpha(1000) * ((8.0 + 40) / 2 - d1);
  const double e0_2 = 8 - 40 + 25;  // bid moved up: +8; ask same price: -40 + 25
  const double* row2 = x.data() + 2 * kFeatureDim;
  EXPECT_NEAR(row2[0], ret2, 1e-9);
  EXPECT_NEAR(row2[7], e0_2 / d2, 1e-12);
  EXPECT_NEAR(row2[12], 25 / d2, 1e-12);
  EXPECT_NEAR(row2[13], std::log1p(1.0), 1e-12);
  const double ema10 = alpha(10) * ret1;
  EXPECT_NEAR(row2[20], ema10 + alpha(10) * (ret2 - ema10), 1e-12);
  const double ema_ofi = alpha(100) * e0 / d1;
  EXPECT_NEAR(row2[29], ema_ofi + alpha(100) * (e0_2 / d2 - ema_ofi), 1e-12);
  const double ema_spread = 1 + alpha(100) * (2 - 1);
  EXPECT_NEAR(row2[31], ema_spread + alpha(100) * (1 - ema_spread), 1e-12);
  EXPECT_NEAR(row2[14], std::log10(7e9) - 6, 1e-12);
  // 7 s mod 60 ms = 40 ms; 7 s mod 600 ms = 400 ms.
  EXPECT_NEAR(row2[38], std::cos(kTwoPi * 40e6 / 60e6), 1e-12);
  EXPECT_NEAR(row2[37], std::sin(kTwoPi * 400e6 / 600e6), 1e-12);
}

TEST(Features, EmptySideAndZeroDepth) {
  auto r = make_store({
      {book(kT0, {}, {}), {}},                          // nothing at all: d = 0
      {book(kT0 + 1000, {{0, 10}, {-2, 30}}, {}), {}},  // no asks
      {book(kT0 + 2000, {{0, 10}}, {{1, 10}}), {}},
  });
  auto x = features(r);
  const double* r0 = x.data();
  for (int k : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 15, 18, 19, 20, 23, 28, 31})
    EXPECT_TRUE(std::isnan(r0[k])) << "slot " << k;
  EXPECT_EQ(r0[9], 0.0);   // log1p(0) - log1p(0)
  EXPECT_EQ(r0[13], 0.0);  // no trades
  // The first snapshot has no mid: the one-snapshot return of row 1 is undefined, so the
  // return EMAs have not started; the depth EMA started at 0 and is now 0 + a(5 - 0).
  const double* r1 = x.data() + kFeatureDim;
  for (int k : {0, 1, 6, 11, 15, 19, 20, 21, 22, 23, 31}) {
    EXPECT_TRUE(std::isnan(r1[k])) << "slot " << k;
  }
  EXPECT_EQ(r1[2], 1.0);
  EXPECT_EQ(r1[5], 1.0);
  EXPECT_DOUBLE_EQ(r1[9], std::log1p(40.0));
  EXPECT_DOUBLE_EQ(r1[10], (30 * 2) / 40.0);
  EXPECT_DOUBLE_EQ(r1[18], 2 / 9.0);
  const double d1 = 0 + alpha(1000) * (10.0 / 2 - 0);
  // e0 vs p: bid appeared (+10); ask empty at both (+inf): 0.
  EXPECT_NEAR(r1[7], 10 / d1, 1e-9);
  EXPECT_NEAR(r1[28], 10 / d1, 1e-9);  // first update of the one-snapshot OFI EMA
  const double* r2 = x.data() + 2 * kFeatureDim;
  EXPECT_EQ(r2[1], 1.0);
  EXPECT_TRUE(std::isnan(r2[0]));  // mid at p undefined
  EXPECT_TRUE(std::isnan(r2[20]));
  EXPECT_EQ(r2[31], 1.0);  // the spread EMA starts here
}

TEST(Features, ZeroAndNegativeDtAndSnapshotRun) {
  auto r = make_store({
      {book(kT0, {{0, 10}}, {{1, 10}}, kFlagSnapshotRun), {}},
      {book(kT0 + 5'000'000'000, {{0, 10}}, {{1, 10}}, kFlagSnapshotRun), {}},
      {book(kT0 + 9'000'000'000, {{0, 10}}, {{1, 10}}), {}},  // first live after the run
      {book(kT0 + 9'030'000'000, {{0, 10}}, {{1, 10}}), {}},  // 30 ms later
      {book(kT0 + 9'030'000'000, {{0, 10}}, {{1, 10}}), {}},  // same timestamp
      {book(kT0 + 9'000'000'000, {{0, 10}}, {{1, 10}}), {}},  // goes back in time
  });
  auto x = features(r);
  for (uint64_t t : {0, 1, 2, 4, 5}) {
    const double* row = x.data() + t * kFeatureDim;
    EXPECT_EQ(row[14], -6.0) << t;
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(row[32 + 2 * k], 1.0) << t;
      EXPECT_EQ(row[33 + 2 * k], 0.0) << t;
    }
  }
  const double* r3 = x.data() + 3 * kFeatureDim;
  EXPECT_NEAR(r3[14], std::log10(30e6) - 6, 1e-12);
  EXPECT_NEAR(r3[38], std::cos(kTwoPi * 30e6 / 60e6), 1e-12);  // half a period: -1
  EXPECT_NEAR(r3[38], -1.0, 1e-12);
}

TEST(Features, CrossedBookDoesNotUpdateEmas) {
  auto r = make_store({
      {book(kT0, {{0, 10}}, {{2, 30}}), {}},
      {book(kT0 + 1, {{3, 50}}, {{1, 70}}), {}},  // crossed
      {book(kT0 + 2, {{1, 50}}, {{1, 70}}), {}},  // locked
      {book(kT0 + 3, {{0, 20}}, {{1, 20}}), {}},
  });
  EXPECT_TRUE(r.flags[1] & kFlagCrossed);
  EXPECT_TRUE(r.flags[2] & kFlagLocked);
  auto x = features(r);
  for (uint64_t t : {1, 2}) {
    for (int k : {20, 21, 22, 23, 24, 25, 28, 29, 30, 31})
      EXPECT_EQ(x[t * kFeatureDim + k], x[k]) << "row " << t << " slot " << k;
    // d is unchanged too: e0 at t over d0.
  }
  const double d0 = 20;
  // Row 1 vs row 0: bid up (+50), ask down (-70): e0 = -20; the slot uses d (unchanged).
  EXPECT_NEAR(x[kFeatureDim + 7], -20 / d0, 1e-12);
  EXPECT_DOUBLE_EQ(x[kFeatureDim + 1], -2.0);  // spread of a crossed book, in ticks
  // Row 3 updates again (e0 vs the locked row: bid down -50, ask same -20 + 70 = 0), with the
  // one-snapshot return from the locked row's mid.
  const double mid2 = kB + 1.0 * kTick, mid3 = kB + 0.5 * kTick;
  const double ret3 = std::log(mid3 / mid2) * 1e4;
  EXPECT_NEAR(x[3 * kFeatureDim + 20], 0 + alpha(10) * (ret3 - 0), 1e-12);
  const double d3 = d0 + alpha(1000) * (20 - d0);
  EXPECT_NEAR(x[3 * kFeatureDim + 7], (-50.0 - 20 + 70) / d3, 1e-12);
}

TEST(Features, StrideFour) {
  std::vector<Event> ev;
  for (int i = 0; i < 7; ++i) {
    std::vector<Trade> tr;
    for (int j = 0; j < i; ++j) tr.push_back(trade(kT0 + i * 1'000'000, 1.0 + j, j % 2 ? -1 : 1));
    ev.push_back({book(kT0 + i * 1'000'000, {{i, 10.0 + i}}, {{i + 1, 20.0 + 2 * i}}), tr});
  }
  auto r = make_store(ev);
  auto x1 = features(r, 1), x4 = features(r, 4);
  // EMAs are per snapshot whatever the stride.
  for (int t = 0; t < 7; ++t) {
    for (int k : {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31})
      EXPECT_EQ(x1[t * kFeatureDim + k], x4[t * kFeatureDim + k]) << t << " " << k;
  }
  auto mid = [](int i) { return kB + (i + 0.5) * kTick; };
  auto at = [&](int t, int k) { return x4[t * kFeatureDim + k]; };
  // t = 2 < S: p = 0. t = 6: p = 2. t = 0: p = t.
  EXPECT_NEAR(at(2, 0), std::log(mid(2) / mid(0)) * 1e4, 1e-9);
  EXPECT_NEAR(at(6, 0), std::log(mid(6) / mid(2)) * 1e4, 1e-9);
  EXPECT_EQ(at(0, 0), 0.0);
  // trades: snapshot i has i trades; (2, 6] holds 3 + 4 + 5 + 6 = 18 trades.
  EXPECT_NEAR(at(6, 13), std::log1p(18.0), 1e-12);
  // signed volume of snapshot i: sum_j (1 + j)(+1 for even j, -1 odd).
  auto sv = [](int i) {
    double s = 0;
    for (int j = 0; j < i; ++j) s += (1.0 + j) * (j % 2 ? -1 : 1);
    return s;
  };
  double vol = sv(3) + sv(4) + sv(5) + sv(6);
  double d = 15;  // (10 + 20) / 2 at t = 0, then per snapshot
  for (int i = 1; i <= 6; ++i) d += alpha(1000) * ((10.0 + i + 20.0 + 2 * i) / 2 - d);
  EXPECT_NEAR(at(6, 12), vol / d, 1e-12);
  EXPECT_NEAR(at(6, 14), std::log10(4e6) - 6, 1e-12);
  EXPECT_NEAR(at(6, 16), std::log1p(16.0) - std::log1p(12.0), 1e-12);
  // e0 between p = 2 and t = 6: bid up (+16), ask up (+ask size at p = 24).
  EXPECT_NEAR(at(6, 7), (16.0 + 24.0) / d, 1e-12);
}

TEST(Features, ZeroTickIsAnError) {
  std::string dir = test::scratch_dir() + "/store";
  StoreInfo info;
  info.source_format = "test";
  auto w = StoreWriter::create(dir, info);
  ASSERT_TRUE(w.ok());
  w->on_snapshot(book(kT0, {}, {}));  // no levels: the tick cannot be inferred
  ASSERT_TRUE(w->finish().ok());
  auto r = StoreReader::open(dir);
  ASSERT_TRUE(r.ok());
  if (r->tick_px() > 0) GTEST_SKIP() << "writer inferred a tick";
  std::vector<float> x;
  Status s = compute_features(*r, {}, &x);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_NE(s.message().find("tick"), std::string::npos);
  FeatureConfig bad;
  bad.stride = 0;
  EXPECT_FALSE(compute_features(*r, bad, &x).ok());
}

TEST(Standardise, NeverNanOrInfAndClipped) {
  const uint64_t n = 1000;
  std::vector<float> x(n * kFeatureDim);
  for (uint64_t t = 0; t < n; ++t) {
    for (int k = 0; k < kFeatureDim; ++k) {
      float v = static_cast<float>((t * 7919 + k * 104729) % 1000) / 100.0f;
      if (k == 0) v = 3.0f;                         // constant: std -> 1
      if (k == 1 && t % 3 == 0) v = std::nanf("");  // undefined -> 0
      if (k == 2 && t == 5) v = 1e30f;              // outlier -> +10
      if (k == 3 && t == 6) v = -std::numeric_limits<float>::infinity();
      if (k == 4) v = std::nanf("");  // never defined
      x[t * kFeatureDim + k] = v;
    }
  }
  FeatureStats st = measure_feature_stats(x.data(), 0, n);
  EXPECT_EQ(st.stddev[0], 1.0);
  EXPECT_EQ(st.mean[0], 3.0);
  EXPECT_EQ(st.count[1], n - 334);
  EXPECT_EQ(st.count[4], 0u);
  EXPECT_EQ(st.mean[4], 0.0);
  EXPECT_EQ(st.stddev[4], 1.0);
  std::vector<float> y = x;
  standardise(st, y.data(), n);
  for (uint64_t t = 0; t < n; ++t) {
    for (int k = 0; k < kFeatureDim; ++k) {
      float v = y[t * kFeatureDim + k];
      ASSERT_TRUE(std::isfinite(v)) << t << " " << k;
      ASSERT_LE(std::fabs(v), 10.0f);
    }
  }
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[3 * kFeatureDim + 1], 0.0f);
  EXPECT_EQ(y[5 * kFeatureDim + 2], 10.0f);
  EXPECT_EQ(y[6 * kFeatureDim + 3], 0.0f);
  // Mean 0, std 1 on a well-behaved column.
  double s = 0, s2 = 0;
  for (uint64_t t = 0; t < n; ++t) {
    s += y[t * kFeatureDim + 10];
    s2 += y[t * kFeatureDim + 10] * y[t * kFeatureDim + 10];
  }
  EXPECT_NEAR(s / n, 0.0, 1e-5);
  EXPECT_NEAR(s2 / n, 1.0, 1e-4);
}

}  // namespace
}  // namespace fxt
