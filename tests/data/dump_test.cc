// fxt dump (data/dump.h): DBN records and store rows as CSV / JSON lines, checked against the
// fixtures' documented values (../shared/data/README.md) and a hand-built store; the UTC
// time parser of --start/--end.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/dump.h"
#include "data/store.h"
#include "test_util.h"

namespace fxt {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::string dump_text(const std::string& src, const DumpOptions& o) {
  const std::string out = test::scratch_dir() + "/dump.out";
  auto r = dump_source(src, o, out);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return test::file_bytes(out);
}

std::string fixture(const std::string& name) {
  return test::shared_file("dbn-fixtures/databento-dbn/tests/data/" + name);
}

TEST(Dump, DbnTradesAsCsvInDatabentoColumnOrder) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const auto rows = lines(dump_text(fixture("test_data.trades.v3.dbn.zst"), DumpOptions{}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            "ts_recv,ts_event,rtype,publisher_id,instrument_id,action,side,depth,price,size,flags,"
            "ts_in_delta,sequence");
  // README: record 1 ts_event 1609160400098821953, price 3720.25, size 5, action T, side A,
  // flags 129.
  EXPECT_EQ(rows[1],
            "1609160400099150057,1609160400098821953,0,1,5482,T,A,0,3720.25,5,129,19251,"
            "1170380");
}

TEST(Dump, DbnMbp10AsJsonLinesWithLimitAndStart) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string src = fixture("test_data.mbp-10.v1.dbn.zst");
  DumpOptions o;
  o.format = DumpFormat::kJsonLines;
  const auto all = lines(dump_text(src, o));
  ASSERT_EQ(all.size(), 2u);
  const auto r1 = nlohmann::json::parse(all[0]);
  EXPECT_EQ(r1["ts_event"], 1609160400000429831ull);
  EXPECT_EQ(r1["ts_recv"], 1609160400000704060ull);
  EXPECT_EQ(r1["price"], "3722.75");  // exact decimal, not a double
  EXPECT_EQ(r1["action"], "C");
  EXPECT_EQ(r1["depth"], 9);
  EXPECT_EQ(r1["sequence"], 1170352);
  EXPECT_EQ(r1["bid_px_00"], "3720.25");
  EXPECT_EQ(r1["ask_px_00"], "3720.5");
  EXPECT_EQ(r1["bid_sz_00"], 24);
  EXPECT_EQ(r1["ask_ct_00"], 8);
  EXPECT_EQ(r1["bid_px_02"], "3719.75");
  EXPECT_EQ(r1["ask_sz_02"], 39);
  o.limit = 1;
  EXPECT_EQ(lines(dump_text(src, o)).size(), 1u);
  o.limit = 0;
  o.start_ns = 1609160400000704061;  // just after record 1's ts_recv
  const auto later = lines(dump_text(src, o));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(later[0])["sequence"], 1170356);
}

TEST(Dump, StoreSnapshotsAndTradesWithEmptyLevels) {
  const std::string dir = test::scratch_dir() + "/store";
  auto w = StoreWriter::create(dir, StoreInfo{});
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 3; ++i) {
    Snapshot s;
    s.ts_ns = 1000 + i;
    s.bid_px[0] = 99'750'000'000;
    s.ask_px[0] = 100'000'000'000 + i * 250'000'000;
    s.bid_sz[0] = 2.5;
    s.ask_sz[0] = i == 1 ? 0 : 4;  // snapshot 1: no ask
    if (i == 2) {
      Trade t;
      t.ts_ns = 1002;
      t.px = 100'500'000'000;
      t.sz = 3;
      t.side = 1;
      w->on_trade(t);
    }
    w->on_snapshot(s);
  }
  ASSERT_TRUE(w->finish().ok());
  DumpOptions o;
  const auto rows = lines(dump_text(dir, o));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].rfind("ts_ns,ts_alt_ns,flags,bid_px_00,ask_px_00,bid_sz_00,ask_sz_00,", 0), 0u);
  EXPECT_EQ(rows[1].rfind("1000,0,0,99.75,100,2.5,4.0,0,0,,,0.0,0.0,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("1001,0,0,99.75,,2.5,0.0,", 0), 0u) << rows[2];  // empty ask: blank
  o.table = "trades";
  EXPECT_EQ(dump_text(dir, o), "ts_ns,px,sz,side,snapshot\n1002,100.5,3.0,1,2\n");
  o.table = "nope";
  auto bad = dump_source(dir, o, "-");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--table nope"), std::string::npos);
  o.table = "snapshots";
  o.format = DumpFormat::kJsonLines;
  o.start_ns = 1001;
  o.end_ns = 1002;
  const auto one = lines(dump_text(dir, o));
  ASSERT_EQ(one.size(), 1u);
  const auto j = nlohmann::json::parse(one[0]);
  EXPECT_EQ(j["ts_ns"], 1001);
  EXPECT_TRUE(j["ask_px_00"].is_null());
  EXPECT_EQ(j["bid_px_00"], "99.75");
}

TEST(Dump, ParseUtcNs) {
  EXPECT_EQ(*parse_utc_ns("1970-01-01T00:00:01Z"), 1'000'000'000);
  EXPECT_EQ(*parse_utc_ns("2024-01-02T14:30:00.5Z"), 1704205800'500'000'000);
  EXPECT_EQ(*parse_utc_ns("2024-01-02 14:30:00.000000001"), 1704205800'000'000'001);
  EXPECT_EQ(*parse_utc_ns("2024-01-02"), 1704153600'000'000'000);
  EXPECT_EQ(*parse_utc_ns("1704205800000000000"), 1704205800'000'000'000);
  for (const char* bad : {"", "yesterday", "2024-13-01", "2024-01-02T25:00:00Z", "2024-01-02T14:30",
                          "2024-01-02T14:30:00.Z", "2024-01-02T14:30:00Zx"}) {
    EXPECT_FALSE(parse_utc_ns(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace fxt
