// Snapshot store: round trip, trade assignment, tick-rule flow, atomic creation,
// and clear errors for partial or corrupt stores.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "data/store.h"
#include "test_util.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;

Snapshot make_snapshot(int64_t ts, int64_t bid, int64_t ask, double bsz, double asz) {
  Snapshot s;
  s.ts_ns = ts;
  s.ts_alt_ns = ts - 5;
  for (int i = 0; i < 3; ++i) {
    s.bid_px[i] = bid - i * 25;
    s.ask_px[i] = ask + i * 25;
    s.bid_sz[i] = bsz + i;
    s.ask_sz[i] = asz + i;
    s.bid_ct[i] = static_cast<uint32_t>(i + 1);
    s.ask_ct[i] = static_cast<uint32_t>(i + 2);
  }
  s.mark_crossed_or_locked();
  return s;
}

TEST(Store, RoundTripSnapshotsTradesAndEvents) {
  std::string dir = test::scratch_dir() + "/store";
  StoreInfo info;
  info.source_path = "hand-built";
  info.source_format = "test";
  info.symbol = "TEST";
  info.has_trades = true;
  auto w = StoreWriter::create(dir, info);
  ASSERT_TRUE(w.ok()) << w.status().message();
  w->on_trade({90, 1000, 2.0, +1});
  w->on_order_event({91, 42, 1000, 2.0, 'T', +1, 128});
  w->on_snapshot(make_snapshot(100, 1000, 1025, 10, 20));
  w->on_snapshot(make_snapshot(200, 1000, 1025, 8, 20));
  w->on_trade({250, 1000, 1.5, -1});
  w->on_trade({260, 1025, 0.5, +1});
  w->on_snapshot(make_snapshot(300, 1025, 1025, 7, 19));  // locked
  w->on_trade({400, 1025, 3.0, -1});                      // after the last snapshot
  ASSERT_TRUE(w->finish().ok());
  EXPECT_FALSE(fs::exists(dir + ".tmp-" + std::to_string(::getpid())));

  auto r = StoreReader::open(dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  ASSERT_EQ(r->trade_count(), 4u);
  ASSERT_EQ(r->event_count(), 1u);
  Snapshot s = r->snapshot(1);
  EXPECT_EQ(s.ts_ns, 200);
  EXPECT_EQ(s.ts_alt_ns, 195);
  EXPECT_EQ(s.bid_px[2], 950);
  EXPECT_EQ(s.ask_px[1], 1050);
  EXPECT_DOUBLE_EQ(s.bid_sz[0], 8.0);
  EXPECT_EQ(s.ask_ct[2], 4u);
  EXPECT_EQ(s.bid_px[3], kEmptyPx);
  EXPECT_EQ(r->flags[2], kFlagLocked);
  // Cumulative flow: the first trade belongs to snapshot 0, the next two to snapshot 2.
  EXPECT_EQ(r->cum_trade_count[0], 1u);
  EXPECT_EQ(r->cum_trade_count[1], 1u);
  EXPECT_EQ(r->cum_trade_count[2], 3u);
  EXPECT_DOUBLE_EQ(r->signed_volume[0], 2.0);
  EXPECT_DOUBLE_EQ(r->signed_volume[2], 2.0 - 1.5 + 0.5);
  EXPECT_EQ(r->trade_snapshot[0], 0u);
  EXPECT_EQ(r->trade_snapshot[1], 2u);
  EXPECT_EQ(r->trade_snapshot[3], 3u);  // past the end: no snapshot followed it
  Trade t = r->trade(2);
  EXPECT_EQ(t.px, 1025);
  EXPECT_EQ(t.side, +1);
  OrderEvent e = r->order_event(0);
  EXPECT_EQ(e.order_id, 42u);
  EXPECT_EQ(e.action, 'T');
  EXPECT_EQ(r->event_snapshot[0], 0u);
  EXPECT_EQ(r->tick_px(), 25);  // inferred from adjacent levels
  EXPECT_EQ(r->meta()["counts"]["locked"], 1);
  EXPECT_EQ(r->meta()["trade_flow"], "trades");
  EXPECT_EQ(r->meta()["time"]["first_ts_ns"], 100);
}

TEST(Store, TickRuleWhenSourceHasNoTrades) {
  std::string dir = test::scratch_dir() + "/store";
  auto w = StoreWriter::create(dir, StoreInfo{});
  ASSERT_TRUE(w.ok());
  w->on_snapshot(make_snapshot(1, 1000, 1025, 10, 20));
  w->on_snapshot(make_snapshot(2, 1000, 1025, 10, 14));  // ask unchanged, size fell 6: +6
  w->on_snapshot(make_snapshot(3, 975, 1025, 4, 14));    // bid moved down: old 10 sold: -10
  w->on_snapshot(make_snapshot(4, 975, 1050, 4, 9));     // ask moved up: old 14 bought: +14
  w->on_snapshot(make_snapshot(5, 975, 1050, 6, 9));     // bid size rose: ambiguous, ignored
  ASSERT_TRUE(w->finish().ok());
  auto r = StoreReader::open(dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->meta()["trade_flow"], "tick-rule");
  const double expected_volume[] = {0, 6, -4, 10, 10};
  const uint64_t expected_count[] = {0, 1, 2, 3, 3};
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(r->signed_volume[i], expected_volume[i]) << i;
    EXPECT_EQ(r->cum_trade_count[i], expected_count[i]) << i;
  }
}

TEST(Store, RefusesToOverwriteAndCleansUpUnfinished) {
  std::string base = test::scratch_dir();
  std::string dir = base + "/store";
  {
    auto w = StoreWriter::create(dir, StoreInfo{});
    ASSERT_TRUE(w.ok());
    w->on_snapshot(make_snapshot(1, 1000, 1025, 10, 20));
    // Destroyed without finish(): like a killed ingest, nothing that looks whole remains.
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::is_empty(base));
  auto w = StoreWriter::create(dir, StoreInfo{});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->finish().ok());
  auto again = StoreWriter::create(dir, StoreInfo{});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
}

TEST(Store, DetectsPartialAndCorruptStores) {
  std::string dir = test::scratch_dir() + "/store";
  auto w = StoreWriter::create(dir, StoreInfo{});
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 10; ++i) w->on_snapshot(make_snapshot(i, 1000, 1025, 10 + i, 20));
  ASSERT_TRUE(w->finish().ok());
  ASSERT_TRUE(StoreReader::open(dir).ok());

  // Flip one byte in a column: the checksum catches it.
  {
    std::fstream f(dir + "/bid_sz.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(17);
    f.put('\x7f');
  }
  auto r = StoreReader::open(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("bid_sz.bin: CRC32"), std::string::npos);
  EXPECT_TRUE(StoreReader::open(dir, /*verify_checksums=*/false).ok());

  // Truncate a column: the size check catches it even without checksums.
  fs::resize_file(dir + "/ask_px.bin", 80);
  r = StoreReader::open(dir, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ask_px.bin: size 80 bytes"), std::string::npos);

  // No meta.json: an interrupted ingest.
  fs::remove(dir + "/meta.json");
  r = StoreReader::open(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("incomplete store"), std::string::npos);

  r = StoreReader::open(dir + "-missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fxt
