// Binance depth-capture replay: the sync rules on hand-built lines, malformed
// input, the real spot and USD-M captures (bookTicker cross-check), and a
// deterministic mutation test of the parser.
#include "data/binance.h"

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "data/decimal.h"
#include "test_util.h"

namespace fxt {
namespace {

using Levels = std::vector<std::pair<std::string, std::string>>;

std::string levels_json(const Levels& levels) {
  std::string out = "[";
  for (size_t i = 0; i < levels.size(); ++i) {
    out += fmt::format("{}[\"{}\",\"{}\"]", i ? "," : "", levels[i].first, levels[i].second);
  }
  return out + "]";
}

std::string rest_snapshot(int64_t last_id, const Levels& bids, const Levels& asks,
                          bool usdm = false) {
  return fmt::format("100 {{\"lastUpdateId\":{},{}\"bids\":{},\"asks\":{}}}", last_id,
                     usdm ? "\"E\":1700000000000,\"T\":1700000000000," : "", levels_json(bids),
                     levels_json(asks));
}

// Spot diff (no pu) or USD-M diff (pu >= 0).
std::string diff(int64_t first, int64_t last, const Levels& bids, const Levels& asks,
                 int64_t pu = -1, int64_t event_ms = 1700000000123, int64_t local_ns = 200) {
  const std::string pu_field = pu >= 0 ? fmt::format("\"pu\":{},", pu) : "";
  return fmt::format(
      "{} {{\"stream\":\"btcusdt@depth@{}\",\"data\":{{\"e\":\"depthUpdate\",\"E\":{},"
      "\"s\":\"BTCUSDT\",\"U\":{},\"u\":{},{}\"b\":{},\"a\":{}}}}}",
      local_ns, pu >= 0 ? "0ms" : "100ms", event_ms, first, last, pu_field, levels_json(bids),
      levels_json(asks));
}

std::string ticker(int64_t u, const std::string& b, const std::string& bq, const std::string& a,
                   const std::string& aq) {
  return fmt::format(
      "300 {{\"stream\":\"btcusdt@bookTicker\",\"data\":{{\"u\":{},\"s\":\"BTCUSDT\","
      "\"b\":\"{}\",\"B\":\"{}\",\"a\":\"{}\",\"A\":\"{}\"}}}}",
      u, b, bq, a, aq);
}

std::string trade(const std::string& p, const std::string& q, int64_t t_ms, bool maker) {
  return fmt::format(
      "400 {{\"stream\":\"btcusdt@trade\",\"data\":{{\"e\":\"trade\",\"E\":{},\"s\":\"BTCUSDT\","
      "\"t\":1,\"p\":\"{}\",\"q\":\"{}\",\"T\":{},\"m\":{},\"M\":true}}}}",
      t_ms, p, q, t_ms, maker ? "true" : "false");
}

int64_t px(const char* s) {
  return parse_decimal_e9(s).value();
}

// Feeds lines and expects every one to succeed.
void feed_all(BinanceReplayer* r, const std::vector<std::string>& lines) {
  uint64_t n = 0;
  for (const std::string& l : lines) {
    Status s = r->feed_line(l, ++n);
    ASSERT_TRUE(s.ok()) << s.message();
  }
}

const Levels kSnapBids = {{"100.00", "1.0"}, {"99.99", "2.0"}, {"99.98", "3.0"}};
const Levels kSnapAsks = {{"100.01", "1.5"}, {"100.02", "2.5"}};

TEST(BinanceSpot, BuffersDropsStaleAndBridgesFirstDiff) {
  test::RecordingSink sink;
  BinanceReplayer r("t", {}, &sink);
  feed_all(&r, {
                   diff(90, 95, {{"100.00", "9.0"}}, {}),         // stale: u <= 100
                   trade("100.01", "0.5", 1700000000001, false),  // buffered with the diffs
                   diff(96, 100, {{"100.00", "8.0"}}, {}),        // stale: u == lastUpdateId
                   diff(101, 103, {{"100.00", "0.5"}}, {{"100.01", "0"}}),  // bridges 101
                   rest_snapshot(100, kSnapBids, kSnapAsks),
                   diff(104, 110, {{"99.99", "0.00000000"}}, {{"100.03", "4"}}),
               });
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.market, BinanceMarket::kSpot);
  EXPECT_EQ(st.symbol, "BTCUSDT");
  EXPECT_EQ(st.diffs, 4u);
  EXPECT_EQ(st.diffs_buffered, 3u);
  EXPECT_EQ(st.diffs_dropped, 2u);
  EXPECT_EQ(st.diffs_applied, 2u);
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_TRUE(r.synced());
  // The trade stays ahead of the first applied diff's snapshot (source order).
  EXPECT_EQ(sink.order, "TSS");
  ASSERT_EQ(sink.snapshots.size(), 2u);
  const Snapshot& s = sink.snapshots[1];
  EXPECT_EQ(s.ts_ns, 1700000000123000000);
  EXPECT_EQ(s.ts_alt_ns, 200);
  EXPECT_EQ(s.flags, 0);
  EXPECT_EQ(s.bid_px[0], px("100.00"));
  EXPECT_EQ(s.bid_sz[0], 0.5);
  EXPECT_EQ(s.bid_px[1], px("99.98"));  // 99.99 removed by quantity 0
  EXPECT_EQ(s.bid_px[2], kEmptyPx);
  EXPECT_EQ(s.ask_px[0], px("100.02"));  // 100.01 removed by the bridging diff
  EXPECT_EQ(s.ask_px[1], px("100.03"));
  EXPECT_EQ(s.ask_sz[1], 4.0);
  ASSERT_EQ(sink.trades.size(), 1u);
  EXPECT_EQ(sink.trades[0].side, +1);  // m = false: the buyer aggressed
  EXPECT_EQ(sink.trades[0].ts_ns, 1700000000001000000);
  EXPECT_EQ(sink.trades[0].px, px("100.01"));
  EXPECT_TRUE(r.finish().ok());
}

TEST(BinanceSpot, FirstDiffPastSnapshotIsAGap) {
  test::RecordingSink sink;
  BinanceReplayer r("t", {}, &sink);
  feed_all(&r, {rest_snapshot(100, kSnapBids, kSnapAsks),
                diff(102, 105, {{"100.00", "2"}}, {})});  // 101 was missed
  EXPECT_EQ(r.stats().gaps, 1u);
  EXPECT_NE(r.stats().first_gap.find("line 2"), std::string::npos) << r.stats().first_gap;
  EXPECT_FALSE(r.synced());
  ASSERT_EQ(sink.snapshots.size(), 1u);
  EXPECT_TRUE(sink.snapshots[0].flags & kFlagMaybeBadBook);
}

TEST(BinanceSpot, ContinuityGapFlagsUntilResync) {
  test::RecordingSink sink;
  BinanceReplayer r("t", {}, &sink);
  feed_all(&r, {
                   rest_snapshot(100, kSnapBids, kSnapAsks),
                   diff(101, 105, {{"100.00", "2"}}, {}),
                   diff(106, 110, {{"100.00", "3"}}, {}),
                   diff(115, 120, {{"100.00", "4"}}, {}),  // 111..114 missing: gap
                   diff(121, 125, {{"100.00", "5"}}, {}),  // continuous, still flagged
                   diff(126, 130, {{"99.50", "7"}}, {}),   // after the new snapshot's id
                   rest_snapshot(125, {{"100.00", "5"}, {"99.00", "1"}}, kSnapAsks),  // resync
                   diff(131, 135, {{"100.00", "6"}}, {}),
               });
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_EQ(st.resyncs, 1u);
  EXPECT_EQ(st.rest_snapshots, 2u);
  EXPECT_TRUE(r.synced());
  ASSERT_EQ(sink.snapshots.size(), 6u);
  EXPECT_FALSE(sink.snapshots[1].flags & kFlagMaybeBadBook);
  EXPECT_TRUE(sink.snapshots[2].flags & kFlagMaybeBadBook);
  EXPECT_TRUE(sink.snapshots[3].flags & kFlagMaybeBadBook);
  EXPECT_TRUE(sink.snapshots[4].flags & kFlagMaybeBadBook);
  const Snapshot& last = sink.snapshots[5];
  EXPECT_FALSE(last.flags & kFlagMaybeBadBook);
  // Rebuilt from the second snapshot plus the retained diff 126..130 plus 131..135.
  EXPECT_EQ(last.bid_px[0], px("100.00"));
  EXPECT_EQ(last.bid_sz[0], 6.0);
  EXPECT_EQ(last.bid_px[1], px("99.50"));
  EXPECT_EQ(last.bid_px[2], px("99.00"));
  EXPECT_EQ(last.bid_px[3], kEmptyPx);
  EXPECT_EQ(st.diffs_applied, 6u);
}

TEST(BinanceSpot, SecondSnapshotWhileInSyncIsIgnored) {
  BinanceReplayer r("t", {}, nullptr);
  feed_all(&r, {rest_snapshot(100, kSnapBids, kSnapAsks), diff(101, 105, {{"1", "1"}}, {}),
                rest_snapshot(103, {}, {}), diff(106, 107, {}, {})});
  EXPECT_EQ(r.stats().snapshots_ignored, 1u);
  EXPECT_EQ(r.stats().gaps, 0u);
  EXPECT_EQ(r.book().bid_levels(), 4u);
}

TEST(BinanceSpot, TickerMatchesOnlyAtADiffsFinalUpdateId) {
  BinanceReplayer r("t", {}, nullptr);
  feed_all(&r, {
                   rest_snapshot(100, kSnapBids, kSnapAsks),
                   ticker(101, "100.00", "1.0", "100.01", "1.5"),  // arrives before diff 101..103
                   ticker(103, "100.00", "0.7", "100.01", "1.5"),  // u = final u of the diff
                   diff(101, 103, {{"100.00", "0.7"}}, {}),
                   ticker(103, "100.00", "0.7", "100.01", "1.5"),         // after it: still exact
                   ticker(103, "100.00", "0.70000001", "100.01", "1.5"),  // exact u, wrong qty
                   ticker(104, "100.00", "0.7", "100.01", "1.5"),         // waits for a diff
                   diff(104, 106, {}, {{"100.01", "1.4"}}),  // settles 104 as in-between
               });
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.tickers, 5u);
  EXPECT_EQ(st.tickers_compared, 5u);
  // Agreement at arrival: #1 (snapshot state), #3, #5 agree; #2 precedes its diff.
  EXPECT_EQ(st.tickers_agree, 3u);
  EXPECT_EQ(st.tickers_exact_u, 3u);
  EXPECT_EQ(st.tickers_exact_u_matched, 2u);
  EXPECT_NE(st.first_exact_u_mismatch.find("u=103"), std::string::npos)
      << st.first_exact_u_mismatch;
}

// Every ticker lands in exactly one class of the aligned check once finish() ran.
void expect_aligned_partition(const BinanceStats& st) {
  EXPECT_EQ(st.aligned_boundary, st.aligned_at_final + st.aligned_between);
  EXPECT_EQ(st.aligned_boundary_matched, st.aligned_at_final_matched + st.aligned_between_matched);
  EXPECT_EQ(st.aligned_boundary + st.aligned_inside + st.aligned_before_book + st.aligned_too_old +
                st.aligned_unresolved,
            st.tickers);
}

TEST(BinanceSpot, AlignedCheckUsesTheStateAtTheTickersUpdateId) {
  BinanceReplayer r("t", {}, nullptr);
  feed_all(&r, {
                   ticker(90, "1", "1", "2", "1"),  // before the book, older than it
                   rest_snapshot(100, kSnapBids, kSnapAsks),
                   ticker(99, "1", "1", "2", "1"),                 // older than the snapshot
                   ticker(100, "100.00", "1.0", "100.01", "1.5"),  // the snapshot's state
                   ticker(102, "100.00", "0.9", "100.01", "1.5"),  // early, inside 101..103
                   ticker(103, "100.00", "0.7", "100.01", "1.5"),  // early, at 103
                   diff(101, 103, {{"100.00", "0.7"}}, {}),
                   ticker(102, "100.00", "0.7", "100.01", "1.5"),  // late, inside 101..103
                   ticker(103, "100.00", "0.7", "100.01", "1.5"),  // late, at 103
                   ticker(100, "100.00", "1.0", "100.01", "1.5"),  // late, the snapshot's state
                   ticker(105, "100.00", "0.7", "100.01", "1.4"),  // early, inside 104..106
                   ticker(106, "100.00", "0.7", "100.01", "1.3"),  // early, at 106, wrong qty
                   diff(104, 106, {}, {{"100.01", "1.4"}}),
                   ticker(107, "100.00", "0.7", "100.01", "1.4"),  // no diff reaches it
               });
  ASSERT_TRUE(r.finish().ok());
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.tickers, 11u);
  EXPECT_EQ(st.aligned_before_book, 2u);  // u 90 (arrived before the book) and 99
  EXPECT_EQ(st.aligned_at_final, 5u);     // 100, 103, 103, 100, 106
  EXPECT_EQ(st.aligned_at_final_matched, 4u);
  EXPECT_EQ(st.aligned_between, 0u);  // spot ids are contiguous: nothing lies between
  EXPECT_EQ(st.aligned_boundary, 5u);
  EXPECT_EQ(st.aligned_boundary_matched, 4u);
  EXPECT_EQ(st.aligned_inside, 3u);        // 102, 102, 105
  EXPECT_EQ(st.aligned_inside_agree, 2u);  // the early 102 had a different bid size
  EXPECT_EQ(st.aligned_inside_agree_px, 3u);
  EXPECT_EQ(st.aligned_late, 3u);
  EXPECT_EQ(st.aligned_too_old, 0u);
  EXPECT_EQ(st.aligned_unresolved, 1u);
  EXPECT_DOUBLE_EQ(st.aligned_boundary_rate(), 0.8);
  EXPECT_NE(st.first_aligned_mismatch.find("u=106 (at a final u)"), std::string::npos)
      << st.first_aligned_mismatch;
  // The exact-u check sees the diffs' final ids only, not the snapshot's.
  EXPECT_EQ(st.tickers_exact_u, 3u);
  EXPECT_EQ(st.tickers_exact_u_matched, 2u);
  expect_aligned_partition(st);
  const nlohmann::json j = st.to_json();
  EXPECT_EQ(j.at("aligned_inside").get<uint64_t>(), 3u);
  EXPECT_DOUBLE_EQ(j.at("aligned_boundary_rate").get<double>(), 0.8);
}

TEST(BinanceUsdm, AlignedCheckBetweenBundles) {
  // USD-M diffs may skip ids (pu chain): a ticker whose u falls in the skip saw the
  // book after the earlier diff, with nothing unobservable in between.
  BinanceReplayer r("t", {}, nullptr);
  feed_all(&r, {
                   rest_snapshot(100, kSnapBids, kSnapAsks, true),
                   ticker(102, "100.00", "1.0", "100.01", "1.5"),  // early, between 100 and 105
                   ticker(103, "100.00", "1.1", "100.01", "1.5"),  // early, between, wrong qty
                   ticker(100, "100.00", "1.0", "100.01", "1.5"),  // waits: a diff may end at 100
                   diff(95, 100, {}, {}, 90),                      // first: U <= 100 <= u
                   diff(105, 108, {{"100.00", "5"}}, {}, 100),
                   ticker(104, "100.00", "1.0", "100.01", "1.5"),  // late, between 100 and 105
                   ticker(106, "100.00", "5", "100.01", "1.5"),    // late, inside 105..108
                   diff(110, 112, {{"100.00", "6"}}, {}, 108),
                   ticker(109, "100.00", "5", "100.01", "1.5"),  // late, between 108 and 110
                   ticker(112, "100.00", "6", "100.01", "1.5"),  // late, at 112
               });
  ASSERT_TRUE(r.finish().ok());
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_EQ(st.aligned_between, 4u);  // 102, 103, 104, 109
  EXPECT_EQ(st.aligned_between_matched, 3u);
  EXPECT_EQ(st.aligned_at_final, 2u);  // 100 (against the first diff), 112
  EXPECT_EQ(st.aligned_at_final_matched, 2u);
  EXPECT_EQ(st.tickers_exact_u, 2u);
  EXPECT_EQ(st.tickers_exact_u_early, 1u);
  EXPECT_EQ(st.aligned_inside, 1u);
  EXPECT_EQ(st.aligned_inside_agree, 1u);
  EXPECT_EQ(st.aligned_late, 4u);
  EXPECT_NE(st.first_aligned_mismatch.find("u=103 (between bundles)"), std::string::npos)
      << st.first_aligned_mismatch;
  expect_aligned_partition(st);
}

TEST(Binance, AlignedCheckCountsTickersOlderThanTheRing) {
  // 2^14 tops are kept; a ticker whose state has been pushed out is "too old".
  BinanceReplayer r("t", {}, nullptr);
  std::vector<std::string> lines = {rest_snapshot(100, kSnapBids, kSnapAsks)};
  for (int64_t id = 101; id <= 101 + 16384; ++id) lines.push_back(diff(id, id, {}, {}));
  // The snapshot's state and diff 101 have been pushed out by the 16,385 later ones.
  lines.push_back(ticker(101, "100.00", "1.0", "100.01", "1.5"));  // evicted
  lines.push_back(ticker(102, "100.00", "1.0", "100.01", "1.5"));  // the oldest kept
  lines.push_back(ticker(99, "100.00", "1.0", "100.01", "1.5"));   // older than the book
  feed_all(&r, lines);
  ASSERT_TRUE(r.finish().ok());
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.aligned_too_old, 2u);  // once the snapshot's state is gone, 99 is too old too
  EXPECT_EQ(st.aligned_at_final_matched, 1u);
  EXPECT_EQ(st.aligned_before_book, 0u);
  expect_aligned_partition(st);
}

TEST(BinanceUsdm, PuChainAndBridgingRules) {
  test::RecordingSink sink;
  BinanceReplayer r("t", {}, &sink);
  feed_all(&r, {
                   diff(80, 90, {{"100.00", "9"}}, {}, 79),   // u < 100: dropped
                   diff(91, 100, {{"100.00", "8"}}, {}, 90),  // u == 100: applied (bridges)
                   rest_snapshot(100, kSnapBids, kSnapAsks, true),
                   diff(101, 104, {{"99.99", "0"}}, {}, 100),  // pu == previous u
                   diff(107, 109, {{"99.98", "0"}}, {}, 104),  // ids may skip: pu rules
                   diff(112, 115, {{"99.97", "1"}}, {}, 110),  // pu != 109: gap
               });
  const BinanceStats& st = r.stats();
  EXPECT_EQ(st.market, BinanceMarket::kUsdm);
  EXPECT_EQ(st.diffs_dropped, 1u);
  EXPECT_EQ(st.diffs_applied, 4u);
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_NE(st.first_gap.find("pu=110"), std::string::npos) << st.first_gap;
  ASSERT_EQ(sink.snapshots.size(), 4u);
  EXPECT_EQ(sink.snapshots[0].bid_sz[0], 8.0);
  EXPECT_EQ(sink.snapshots[2].bid_px[1], kEmptyPx);
  EXPECT_EQ(sink.snapshots[2].flags & kFlagMaybeBadBook, 0);
  EXPECT_TRUE(sink.snapshots[3].flags & kFlagMaybeBadBook);
}

TEST(BinanceUsdm, FirstEventMustCoverLastUpdateId) {
  BinanceReplayer r("t", {}, nullptr);
  feed_all(&r, {rest_snapshot(100, kSnapBids, kSnapAsks, true),
                diff(101, 104, {}, {}, 100)});  // U > lastUpdateId
  EXPECT_EQ(r.stats().gaps, 1u);
}

TEST(Binance, MarketDetectionAndOverride) {
  {
    BinanceReplayer r("t", {}, nullptr);
    feed_all(&r, {rest_snapshot(1, {}, {}, /*usdm=*/true)});
    EXPECT_EQ(r.stats().market, BinanceMarket::kUsdm);
  }
  {
    // A snapshot's guess gives way to the first diff, which then decides for good.
    BinanceReplayer r("t", {}, nullptr);
    feed_all(&r, {rest_snapshot(1, {}, {}), diff(1, 2, {}, {}, 0)});
    EXPECT_EQ(r.stats().market, BinanceMarket::kUsdm);
    EXPECT_FALSE(r.feed_line(diff(3, 4, {}, {}), 3).ok());
  }
  {
    BinanceOptions opt;
    opt.market = BinanceMarket::kSpot;
    BinanceReplayer r("cap.gz", opt, nullptr);
    Status s = r.feed_line(diff(1, 2, {}, {}, 0), 7);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    EXPECT_NE(s.message().find("cap.gz: line 7: unexpected field \"pu\""), std::string::npos)
        << s.message();
  }
  {
    BinanceReplayer r("t", {}, nullptr);
    feed_all(&r, {diff(1, 2, {}, {})});
    Status s = r.feed_line(diff(3, 4, {}, {}, 2), 2);  // a USD-M diff in a spot capture
    EXPECT_FALSE(s.ok());
  }
  EXPECT_EQ(parse_binance_market("usdm").value(), BinanceMarket::kUsdm);
  EXPECT_FALSE(parse_binance_market("coinm").ok());
}

TEST(Binance, MalformedLinesAreStatusesAndLeaveStateAlone) {
  BinanceReplayer r("cap", {}, nullptr);
  feed_all(&r, {rest_snapshot(100, kSnapBids, kSnapAsks)});
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"lastUpdateId\":1}", "expected '<local receive ns> <json>'"},
      {"12 {\"stream\":\"btcusdt@trade\",\"data\":{\"p\":\"1\"", "invalid JSON"},
      {"12 [1,2]", "invalid JSON"},
      {"12 {\"a\":1} trailing", "invalid JSON"},
      {"12 {\"stream\":\"btcusdt@trade\",\"data\":{\"p\":\"1\",\"q\":\"1\",\"T\":5}}",
       "expected a boolean field \"m\""},
      {"12 {\"stream\":\"btcusdt@trade\",\"data\":{\"p\":\"1e3\",\"q\":\"1\",\"T\":5,\"m\":true}}",
       "field \"p\": \"1e3\": unexpected 'e'"},
      {"12 {\"stream\":\"btcusdt@trade\",\"data\":{\"p\":1,\"q\":\"1\",\"T\":5,\"m\":true}}",
       "expected a decimal string"},
      {"12 {\"stream\":\"btcusdt@trade\",\"data\":{\"p\":\"-1\",\"q\":\"1\",\"T\":5,\"m\":true}}",
       "non-negative"},
      {"12 {\"stream\":\"btcusdt@depth\",\"data\":{\"E\":1,\"U\":5,\"u\":4,\"b\":[],\"a\":[]}}",
       "expected U <= u"},
      {"12 {\"stream\":\"btcusdt@depth\",\"data\":{\"E\":1,\"U\":101,\"u\":102,\"b\":[[\"1\"]],"
       "\"a\":[]}}",
       "expected [\"price\", \"quantity\"]"},
      {"12 {\"stream\":\"btcusdt@depth\",\"data\":{\"E\":1,\"U\":101,\"u\":102,\"b\":[]}}",
       "expected field \"a\""},
      {"12 "
       "{\"stream\":\"btcusdt@depth\",\"data\":{\"E\":1,\"U\":101,\"u\":102,\"b\":[[\"1."
       "0000000001\","
       "\"1\"]],\"a\":[]}}",
       "more than 9 decimals"},
      {"12 {\"stream\":\"ethusdt@trade\",\"data\":{\"p\":\"1\",\"q\":\"1\",\"T\":5,\"m\":true}}",
       "expected one instrument (BTCUSDT), got ETHUSDT"},
      {"12 {\"lastUpdateId\":\"x\",\"bids\":[],\"asks\":[]}", "field \"lastUpdateId\""},
      {"12 {\"stream\":\"btcusdt@bookTicker\",\"data\":{\"u\":1}}", "expected field \"b\""},
  };
  // A diff that would be valid and continuous must still apply after all the failures.
  feed_all(&r, {diff(101, 101, {{"1", "1"}}, {})});
  uint64_t line = 10;
  for (const auto& [text, want] : bad) {
    Status s = r.feed_line(text, ++line);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << text;
    EXPECT_NE(s.message().find(fmt::format("cap: line {}: ", line)), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
  feed_all(&r, {diff(102, 102, {{"1", "2"}}, {})});
  EXPECT_EQ(r.stats().gaps, 0u);
  EXPECT_EQ(r.stats().diffs_applied, 2u);
  EXPECT_TRUE(r.feed_line("", 99).ok());  // blank lines are skipped
  EXPECT_TRUE(
      r.feed_line("5 {\"stream\":\"btcusdt@aggTrade\",\"data\":{\"x\":[1,{\"y\":null}]}}", 100)
          .ok());
  EXPECT_EQ(r.stats().other_messages, 1u);
}

TEST(Binance, NoSnapshotFailsAtFinish) {
  BinanceReplayer r("cap", {}, nullptr);
  feed_all(&r, {diff(1, 2, {}, {})});
  Status s = r.finish();
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("no REST depth snapshot"), std::string::npos);
}

TEST(Binance, ReplaysPlainAndGzipFilesWithLongLines) {
  const std::string dir = test::scratch_dir();
  Levels many;
  for (int i = 0; i < 150000; ++i) many.push_back({fmt::format("{}.5", 1000 + i), "1"});
  const std::string text = rest_snapshot(100, {}, many) + "\n" +
                           diff(101, 101, {{"999", "2"}}, {}) + "\r\n" +
                           ticker(101, "999", "2", "1000.5", "1");  // no final newline
  ASSERT_GT(text.size(), size_t{2} << 20);  // longer than the reader's first buffer
  {
    std::ofstream(dir + "/plain.txt") << text;
    gzFile f = gzopen((dir + "/cap.gz").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  for (const char* name : {"/plain.txt", "/cap.gz"}) {
    test::RecordingSink sink;
    BinanceStats st;
    Status s = replay_binance_capture(dir + name, {}, &sink, &st);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(st.lines, 3u);
    EXPECT_EQ(st.tickers_exact_u_matched, 1u);
    ASSERT_EQ(sink.snapshots.size(), 1u);
    EXPECT_EQ(sink.snapshots[0].ask_px[9], px("1009.5"));
  }
  Status missing = replay_binance_capture(dir + "/none.gz", {}, nullptr, nullptr);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
}

// ---- real captures -------------------------------------------------------------

struct Expected {
  const char* file;
  BinanceMarket market;
  uint64_t lines, diffs, applied, dropped, buffered, gaps, trades, tickers, before_book, agree,
      exact_u;
  // Aligned check: boundary (all at a final u: none fall between bundles), inside,
  // inside agreeing exactly / on prices, resolved late, older than the book, unresolved.
  uint64_t boundary, inside, inside_agree, inside_agree_px, late, aligned_before_book, unresolved;
};

void check_books_sorted_and_uncrossed(const std::vector<Snapshot>& snaps) {
  size_t bad = 0;
  for (const Snapshot& s : snaps) {
    bool ok = s.has_bid() && s.has_ask() && s.bid_px[0] < s.ask_px[0];
    for (int i = 1; i < kBookLevels; ++i) {
      ok = ok && s.bid_px[i] != kEmptyPx && s.ask_px[i] != kEmptyPx;
      ok = ok && s.bid_px[i] < s.bid_px[i - 1] && s.ask_px[i] > s.ask_px[i - 1];
      ok = ok && s.bid_sz[i] > 0 && s.ask_sz[i] > 0;
    }
    if (!ok && bad++ < 3) ADD_FAILURE() << "unsorted or crossed book at ts " << s.ts_ns;
  }
  EXPECT_EQ(bad, 0u);
}

void replay_real(const Expected& want) {
  const std::string path = test::shared_file(want.file);
  test::RecordingSink sink;
  BinanceStats st;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = replay_binance_capture(path, {}, &sink, &st);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(s.ok()) << s.message();
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "%s: %s\n  %.3f s (%.0f lines/s)\n  ticker agreement at arrival %.4f%% "
      "(%llu/%llu; best prices only %llu), exact-u %llu/%llu (%.2f%%, %llu arrived "
      "before their diff)\n",
      want.file, st.to_json().dump().c_str(), secs, static_cast<double>(st.lines) / secs,
      100 * st.agreement_rate(), ull(st.tickers_agree), ull(st.tickers_compared),
      ull(st.tickers_agree_px), ull(st.tickers_exact_u_matched), ull(st.tickers_exact_u),
      100 * st.exact_u_match_rate(), ull(st.tickers_exact_u_early));
  EXPECT_EQ(st.market, want.market);
  EXPECT_EQ(st.symbol, "BTCUSDT");
  EXPECT_EQ(st.lines, want.lines);
  EXPECT_EQ(st.rest_snapshots, 1u);
  EXPECT_EQ(st.diffs, want.diffs);
  EXPECT_EQ(st.diffs_applied, want.applied);
  EXPECT_EQ(st.diffs_dropped, want.dropped);
  EXPECT_EQ(st.diffs_buffered, want.buffered);
  EXPECT_EQ(st.diffs_applied + st.diffs_dropped, st.diffs);
  EXPECT_EQ(st.gaps, want.gaps) << st.first_gap;
  EXPECT_EQ(st.trades, want.trades);
  EXPECT_EQ(st.tickers, want.tickers);
  EXPECT_EQ(st.tickers_before_book, want.before_book);
  EXPECT_EQ(st.tickers_compared, st.tickers - st.tickers_before_book);
  EXPECT_EQ(st.tickers_agree, want.agree);
  EXPECT_EQ(st.other_messages, 0u);
  EXPECT_EQ(st.snapshots_emitted, st.diffs_applied);
  EXPECT_EQ(st.snapshots_crossed, 0u);
  EXPECT_EQ(st.snapshots_maybe_bad, 0u);
  // The key check: every ticker at an applied diff's final u equals the rebuilt top.
  EXPECT_EQ(st.tickers_exact_u, want.exact_u);
  EXPECT_EQ(st.tickers_exact_u_matched, st.tickers_exact_u) << st.first_exact_u_mismatch;
  // The honest overall rate: every ticker whose state the book passes through, i.e.
  // whose u is not inside a diff's bundle, matches exactly.
  std::printf(
      "  aligned: boundary %llu/%llu (at final u %llu, between %llu), inside %llu (agree %llu, "
      "prices %llu), late %llu, before book %llu, too old %llu, unresolved %llu\n",
      ull(st.aligned_boundary_matched), ull(st.aligned_boundary), ull(st.aligned_at_final),
      ull(st.aligned_between), ull(st.aligned_inside), ull(st.aligned_inside_agree),
      ull(st.aligned_inside_agree_px), ull(st.aligned_late), ull(st.aligned_before_book),
      ull(st.aligned_too_old), ull(st.aligned_unresolved));
  EXPECT_EQ(st.aligned_boundary, want.boundary);
  EXPECT_EQ(st.aligned_boundary_matched, st.aligned_boundary) << st.first_aligned_mismatch;
  EXPECT_EQ(st.aligned_at_final, want.boundary);
  EXPECT_EQ(st.aligned_between, 0u);
  EXPECT_EQ(st.aligned_inside, want.inside);
  EXPECT_EQ(st.aligned_inside_agree, want.inside_agree);
  EXPECT_EQ(st.aligned_inside_agree_px, want.inside_agree_px);
  EXPECT_EQ(st.aligned_late, want.late);
  EXPECT_EQ(st.aligned_before_book, want.aligned_before_book);
  EXPECT_EQ(st.aligned_too_old, 0u);
  EXPECT_EQ(st.aligned_unresolved, want.unresolved);
  expect_aligned_partition(st);
  EXPECT_EQ(sink.snapshots.size(), st.snapshots_emitted);
  EXPECT_EQ(sink.trades.size(), st.trades);
  check_books_sorted_and_uncrossed(sink.snapshots);
  for (size_t i = 1; i < sink.snapshots.size(); ++i) {
    ASSERT_GE(sink.snapshots[i].ts_ns, sink.snapshots[i - 1].ts_ns) << i;
  }
  int64_t buys = 0;
  for (const Trade& t : sink.trades) buys += t.side > 0;
  std::printf("  trades: %lld buyer-initiated of %zu\n", static_cast<long long>(buys),
              sink.trades.size());
  // Binance timestamps of 2024-08-08/09 UTC.
  EXPECT_GT(st.first_ts_ns, 1723161200000000000);
  EXPECT_LT(st.last_ts_ns, 1723161700000000000);
}

TEST(BinanceReal, Spot) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  replay_real({"binance-hftbacktest/examples/spot/btcusdt_20240808.gz",
               BinanceMarket::kSpot,
               41249,
               3451,
               3449,
               2,
               3,
               0,
               9757,
               28040,
               3,
               198,
               564,
               564,
               27466,
               2549,
               18446,
               0,
               1,
               9});
}

TEST(BinanceReal, Usdm) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  replay_real({"binance-hftbacktest/examples/usdm/btcusdt_20240808.gz",
               BinanceMarket::kUsdm,
               93954,
               6551,
               6547,
               4,
               6,
               0,
               21313,
               66089,
               43,
               389,
               629,
               629,
               65427,
               5498,
               52378,
               1093,
               33,
               0});
}

// ---- deterministic mutation test ----------------------------------------------

// The first `n` lines of a gzip capture.
std::vector<std::string> head_lines(const std::string& path, size_t n) {
  std::vector<std::string> lines;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return lines;
  std::string cur;
  char buf[1 << 16];
  int got = 0;
  while (lines.size() < n && (got = gzread(f, buf, sizeof buf)) > 0) {
    for (int i = 0; i < got && lines.size() < n; ++i) {
      if (buf[i] == '\n') {
        lines.push_back(cur);
        cur.clear();
      } else {
        cur += buf[i];
      }
    }
  }
  gzclose(f);
  return lines;
}

TEST(BinanceMutation, GarbledLinesNeverCrash) {
  const LogLevel saved = log_level();
  set_log_level(LogLevel::kError);  // the garbled chains log many gaps
  std::vector<std::string> corpus = {
      rest_snapshot(100, kSnapBids, kSnapAsks),
      rest_snapshot(100, kSnapBids, kSnapAsks, true),
      diff(101, 103, {{"100.00", "0.5"}}, {{"100.01", "0"}}),
      diff(104, 110, {{"99.99", "0.00000000"}}, {{"100.03", "4"}}),
      diff(101, 104, {{"99.99", "0"}}, {}, 100),
      ticker(103, "100.00", "0.5", "100.02", "2.5"),
      trade("100.01", "0.5", 1700000000001, true),
  };
  if (!test::shared_data_dir().empty()) {
    for (const char* m : {"spot", "usdm"}) {
      auto lines = head_lines(
          test::shared_file(fmt::format("binance-hftbacktest/examples/{}/btcusdt_20240808.gz", m)),
          80);
      // Long snapshot lines are cut to keep the run short; truncation is a mutation anyway.
      for (auto& l : lines) corpus.push_back(l.size() > 4000 ? l.substr(0, 4000) : l);
    }
  }
  std::string specials = "\"[]{},:-.0123456789eE+\\ \tntfu";
  specials.push_back('\0');
  std::mt19937_64 rng(20240808);
  auto uniform = [&rng](size_t n) { return static_cast<size_t>(rng() % (n == 0 ? 1 : n)); };
  uint64_t ok = 0, invalid = 0, gaps = 0;
  for (int round = 0; round < 8; ++round) {
    BinanceReplayer r("mut", {}, nullptr);
    for (int i = 0; i < 2500; ++i) {
      std::string line = corpus[uniform(corpus.size())];
      const int edits = 1 + static_cast<int>(uniform(4));
      for (int e = 0; e < edits && !line.empty(); ++e) {
        const size_t at = uniform(line.size());
        switch (uniform(6)) {
          case 0:
            line.resize(at);
            break;  // truncate
          case 1:
            line[at] = static_cast<char>(line[at] ^ (1 << uniform(8)));
            break;  // bit flip
          case 2:
            line[at] = specials[uniform(specials.size())];
            break;  // garble
          case 3:
            line.erase(at, uniform(16));
            break;  // delete a span
          case 4:
            line.insert(at, line.substr(uniform(line.size()), uniform(24)));
            break;
          default:
            break;  // keep the line intact: the state machine sees valid messages too
        }
      }
      Status s = r.feed_line(line, static_cast<uint64_t>(i + 1));
      if (s.ok()) {
        ++ok;
      } else {
        ++invalid;
        ASSERT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
        ASSERT_NE(s.message().find("mut: line "), std::string::npos) << s.message();
      }
    }
    (void)r.finish();
    gaps += r.stats().gaps;
  }
  std::printf("mutation: %llu lines accepted, %llu rejected, %llu gaps counted\n",
              static_cast<unsigned long long>(ok), static_cast<unsigned long long>(invalid),
              static_cast<unsigned long long>(gaps));
  set_log_level(saved);
  EXPECT_GT(ok, 0u);
  EXPECT_GT(invalid, 0u);
  EXPECT_GT(gaps, 0u);
}

}  // namespace
}  // namespace fxt
