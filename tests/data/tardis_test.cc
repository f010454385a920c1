// Tardis.dev incremental_book_L2 + trades CSV import (data/tardis.h): a hand-written day with
// a snapshot, level updates and deletes, a book reset, and trades merged in time order; the
// ingest pairing by file name; one-line errors naming file and line.
#include <string>

#include <gtest/gtest.h>

#include "data/ingest.h"
#include "data/store.h"
#include "data/tardis.h"
#include "test_util.h"

namespace fxt {
namespace {

constexpr const char* kBook =
    "exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount\n"
    "deribit,BTC-PERPETUAL,1000,1100,true,ask,100.5,2\n"
    "deribit,BTC-PERPETUAL,1000,1100,true,ask,101,3\n"
    "deribit,BTC-PERPETUAL,1000,1100,true,bid,100,1.5\n"
    "deribit,BTC-PERPETUAL,1000,1100,true,bid,99.5,4\n"
    "deribit,BTC-PERPETUAL,2000,2100,false,bid,100,0\n"       // the best bid leaves
    "deribit,BTC-PERPETUAL,2000,2100,false,bid,100.25,0.5\n"  // a better one arrives
    "deribit,BTC-PERPETUAL,3000,3150,false,ask,100.5,1\n"     // the best ask shrinks
    "deribit,BTC-PERPETUAL,4000,4100,true,bid,90,1\n"         // a new snapshot: reset
    "deribit,BTC-PERPETUAL,4000,4100,true,ask,91,1\n";
constexpr const char* kTrades =
    "exchange,symbol,timestamp,local_timestamp,id,side,price,amount\n"
    "deribit,BTC-PERPETUAL,1500,1600,t1,buy,100.5,0.25\n"
    "deribit,BTC-PERPETUAL,2000,2050,t2,sell,100,1\n"
    "deribit,BTC-PERPETUAL,5000,5050,t3,sell,91,1\n";

constexpr int64_t px(double v) {
  return static_cast<int64_t>(v * 1e9 + 0.5);
}

TEST(Tardis, RebuildsTheBookAndMergesTrades) {
  const std::string dir = test::scratch_dir();
  test::write_bytes(dir + "/book.csv", kBook);
  test::write_bytes(dir + "/trades.csv", kTrades);
  test::RecordingSink sink;
  TardisStats st;
  ASSERT_TRUE(import_tardis(dir + "/book.csv", dir + "/trades.csv", &sink, &st).ok());
  // A trade goes to the first snapshot at or after it: t1 and t2 to the one at 2000 us.
  EXPECT_EQ(sink.order, "STTSSST");
  ASSERT_EQ(sink.snapshots.size(), 4u);
  const Snapshot& s0 = sink.snapshots[0];
  EXPECT_EQ(s0.ts_ns, 1'000'000);
  EXPECT_EQ(s0.ts_alt_ns, 1'100'000);
  EXPECT_EQ(s0.bid_px[0], px(100));
  EXPECT_EQ(s0.bid_sz[0], 1.5);
  EXPECT_EQ(s0.bid_px[1], px(99.5));
  EXPECT_EQ(s0.ask_px[0], px(100.5));
  EXPECT_EQ(s0.ask_sz[1], 3);
  EXPECT_EQ(s0.bid_sz[2], 0);  // an empty level
  EXPECT_TRUE(s0.flags & kFlagSnapshotRun);
  const Snapshot& s1 = sink.snapshots[1];
  EXPECT_EQ(s1.bid_px[0], px(100.25));
  EXPECT_EQ(s1.bid_sz[0], 0.5);
  EXPECT_EQ(s1.bid_px[1], px(99.5));
  EXPECT_FALSE(s1.flags & kFlagSnapshotRun);
  EXPECT_EQ(sink.snapshots[2].ask_sz[0], 1);
  const Snapshot& s3 = sink.snapshots[3];
  EXPECT_EQ(s3.bid_px[0], px(90));
  EXPECT_EQ(s3.ask_px[0], px(91));
  EXPECT_EQ(s3.bid_sz[1], 0);  // the old levels are gone
  EXPECT_TRUE(s3.flags & kFlagSnapshotRun);
  ASSERT_EQ(sink.trades.size(), 3u);
  EXPECT_EQ(sink.trades[0].ts_ns, 1'500'000);
  EXPECT_EQ(sink.trades[0].px, px(100.5));
  EXPECT_EQ(sink.trades[0].sz, 0.25);
  EXPECT_EQ(sink.trades[0].side, 1);
  EXPECT_EQ(sink.trades[1].side, -1);
  EXPECT_EQ(st.symbol, "BTC-PERPETUAL");
  EXPECT_EQ(st.resets, 1u);
  EXPECT_EQ(st.snapshots, 4u);
  EXPECT_EQ(st.trades, 3u);
  EXPECT_EQ(st.trades_after_last_snapshot, 1u);
}

TEST(Tardis, IngestPairsTheFilesByName) {
  const std::string dir = test::scratch_dir();
  const std::string book = dir + "/deribit_incremental_book_L2_2020-01-01_BTC-PERPETUAL.csv";
  const std::string trades = dir + "/deribit_trades_2020-01-01_BTC-PERPETUAL.csv";
  test::write_bytes(book, kBook);
  test::write_bytes(trades, kTrades);
  auto out = ingest_sources({trades, book}, IngestOptions{}, dir + "/store");
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto r = StoreReader::open(dir + "/store");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->size(), 4u);
  EXPECT_EQ(r->trade_count(), 3u);
  EXPECT_EQ(r->meta()["source"]["format"], "tardis");
  EXPECT_EQ(r->meta()["instrument"]["symbol"], "BTC-PERPETUAL");
  EXPECT_EQ(r->meta()["trade_flow"], "trades");
  // A trades file alone is refused: it needs its book.
  auto alone = ingest_sources({trades}, IngestOptions{}, dir + "/alone");
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("needs its incremental_book_L2 file"), std::string::npos);
}

TEST(Tardis, ErrorsNameFileAndLine) {
  const std::string dir = test::scratch_dir();
  struct Case {
    std::string text, needle;
  };
  const std::string head =
      "exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount\n";
  const Case cases[] = {
      {"exchange,symbol,ts\n", "book.csv:1: expected the Tardis incremental_book_L2 header"},
      {head + "x,Y,1000,1000,true,middle,1,1\n", "book.csv:2: side 'middle': expected bid or ask"},
      {head + "x,Y,1000,1000,maybe,bid,1,1\n", "book.csv:2: is_snapshot 'maybe'"},
      {head + "x,Y,1000,1000,true,bid,-1,1\n", "book.csv:2: price '-1'"},
      {head + "x,Y,1000,1000,true,bid,1,nan\n", "book.csv:2: amount 'nan'"},
      {head + "x,Y,1000,1000,true,bid,1,1\nx,Y,900,900,false,bid,1,2\n",
       "book.csv:3: timestamp goes backwards"},
      {head + "x,Y,1000,1000,true,bid,1\n", "book.csv:2: 7 fields, expected 8"},
      // Issue 14: a grouped file's second symbol was merged into the first one's book, and an
      // empty file or a header alone gave a store of 0 snapshots, exit 0.
      {head + "x,Y,1000,1000,true,bid,1,1\nx,Z,2000,2000,false,ask,2,1\n",
       "book.csv:3: instrument 'x Z' differs from 'x Y' of " + dir +
           "/book.csv:2 (one instrument "
           "per source"},
      {head + "x,Y,1000,1000,true,bid,1,1\nw,Y,2000,2000,false,ask,2,1\n",
       "book.csv:3: instrument 'w Y' differs from 'x Y'"},
      {"", "book.csv: no book rows (an empty file or a header alone)"},
      {head, "book.csv: no book rows (an empty file or a header alone)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    test::write_bytes(dir + "/book.csv", c.text);
    test::RecordingSink sink;
    TardisStats st;
    const Status s = import_tardis(dir + "/book.csv", "", &sink, &st);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

// The trades file names the book's instrument too, and an empty one (no header) is refused.
TEST(Tardis, TradesOfAnotherInstrumentAreRefused) {
  const std::string dir = test::scratch_dir();
  test::write_bytes(dir + "/book.csv", kBook);
  test::write_bytes(dir + "/trades.csv",
                    "exchange,symbol,timestamp,local_timestamp,id,side,price,amount\n"
                    "deribit,ETH-PERPETUAL,1500,1600,t1,buy,100.5,0.25\n");
  test::RecordingSink sink;
  TardisStats st;
  Status s = import_tardis(dir + "/book.csv", dir + "/trades.csv", &sink, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), dir +
                             "/book.csv:2: instrument 'deribit BTC-PERPETUAL' differs from "
                             "'deribit ETH-PERPETUAL' of " +
                             dir +
                             "/trades.csv:2 (one instrument per source: split grouped Tardis "
                             "files by symbol first)");
  test::write_bytes(dir + "/trades.csv", "");
  s = import_tardis(dir + "/book.csv", dir + "/trades.csv", &sink, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("trades.csv: empty file (expected the Tardis trades header"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace fxt
