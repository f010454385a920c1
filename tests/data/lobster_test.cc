// LOBSTER import: the real AAPL pair against its own orderbook rows, New York time
// to UTC, trades and order events, and malformed files.
#include "data/lobster.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/decimal.h"
#include "test_util.h"

namespace fxt {
namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, ',')) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

constexpr int64_t kDay20120621Ns = 15512LL * 86400 * 1'000'000'000;  // 2012-06-21T00:00Z

TEST(LobsterCalendar, DaysAndNewYorkOffsets) {
  EXPECT_EQ(days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(days_from_civil(2012, 6, 21), 15512);  // 1340236800 s / 86400
  EXPECT_EQ(days_from_civil(2000, 3, 1), 11017);
  EXPECT_EQ(days_from_civil(1969, 12, 31), -1);
  EXPECT_EQ(parse_iso_date("2012-06-21").value(), 15512);
  EXPECT_FALSE(parse_iso_date("2012-02-30").ok());
  EXPECT_FALSE(parse_iso_date("2013-02-29").ok());
  EXPECT_TRUE(parse_iso_date("2012-02-29").ok());
  EXPECT_FALSE(parse_iso_date("2012-6-21").ok());

  const int64_t h = 3600LL * 1'000'000'000;
  auto ny = [](int64_t y, unsigned m, unsigned d, int64_t ns) {
    return new_york_utc_offset_minutes(y, m, d, ns);
  };
  EXPECT_EQ(ny(2012, 6, 21, 9 * h), -240);
  EXPECT_EQ(ny(2012, 1, 3, 9 * h), -300);
  EXPECT_EQ(ny(2012, 12, 24, 9 * h), -300);
  // 2012: EDT from Sunday 11 March 02:00 to Sunday 4 November 02:00 (local).
  EXPECT_EQ(ny(2012, 3, 10, 12 * h), -300);
  EXPECT_EQ(ny(2012, 3, 11, 2 * h - 1), -300);
  EXPECT_EQ(ny(2012, 3, 11, 3 * h), -240);
  EXPECT_EQ(ny(2012, 11, 3, 23 * h), -240);
  EXPECT_EQ(ny(2012, 11, 4, h + h / 2), -240);  // the repeated hour: first occurrence
  EXPECT_EQ(ny(2012, 11, 4, 2 * h), -300);
  EXPECT_EQ(ny(2012, 11, 5, 9 * h), -300);
  EXPECT_EQ(ny(2024, 3, 10, 9 * h), -240);
  EXPECT_EQ(ny(2024, 3, 9, 9 * h), -300);
  EXPECT_EQ(ny(2024, 11, 3, 9 * h), -300);
  EXPECT_EQ(ny(2024, 11, 2, 9 * h), -240);
  // 1987-2006 rules: first Sunday in April to the last Sunday in October.
  EXPECT_EQ(ny(2006, 4, 1, 12 * h), -300);
  EXPECT_EQ(ny(2006, 4, 2, 12 * h), -240);
  EXPECT_EQ(ny(2006, 10, 28, 12 * h), -240);
  EXPECT_EQ(ny(2006, 10, 29, 12 * h), -300);
  EXPECT_EQ(ny(2006, 3, 20, 12 * h), -300);  // would be EDT under the 2007 rules
}

TEST(LobsterReal, EverySnapshotEqualsItsOrderbookRow) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string base =
      test::shared_file("lobster-YileZheng-OrderBook_HLS/data/AAPL_2012-06-21_34200000_57600000_");
  const std::string msg_path = base + "message_10.csv", book_path = base + "orderbook_10.csv";
  test::RecordingSink sink;
  LobsterStats st;
  Status s = import_lobster(msg_path, book_path, {}, &sink, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  std::printf("lobster: %s (%.4f s)\n", st.to_json().dump().c_str(), st.seconds);

  const auto msgs = read_csv(msg_path);
  const auto books = read_csv(book_path);
  ASSERT_EQ(msgs.size(), 999u);
  ASSERT_EQ(books.size(), 999u);
  EXPECT_EQ(st.symbol, "AAPL");
  EXPECT_EQ(st.date, "2012-06-21");
  EXPECT_EQ(st.levels, 10);
  EXPECT_EQ(st.utc_offset_minutes, -240);
  EXPECT_EQ(st.rows, 999u);
  EXPECT_EQ(st.snapshots, 999u);
  EXPECT_EQ(st.adds, 471u);
  EXPECT_EQ(st.deletes, 369u);
  EXPECT_EQ(st.partial_cancels, 0u);
  EXPECT_EQ(st.visible_executions, 98u);
  EXPECT_EQ(st.hidden_executions, 61u);
  EXPECT_EQ(st.crosses, 0u);
  EXPECT_EQ(st.halt_messages, 0u);
  EXPECT_EQ(st.trades, 159u);
  EXPECT_EQ(st.order_events, 999u);
  EXPECT_EQ(st.snapshots_crossed, 0u);
  ASSERT_EQ(sink.snapshots.size(), 999u);
  ASSERT_EQ(sink.trades.size(), 159u);
  ASSERT_EQ(sink.events.size(), 999u);

  // First row: 34200.004241176 s after midnight, EDT -> 13:30:00.004241176Z.
  EXPECT_EQ(sink.snapshots[0].ts_ns, 1340285400004241176);
  EXPECT_EQ(st.first_ts_ns, 1340285400004241176);

  size_t trade_i = 0;
  for (size_t r = 0; r < 999; ++r) {
    const Snapshot& snap = sink.snapshots[r];
    const int64_t local_ns = parse_decimal(msgs[r][0], 9).value();
    ASSERT_EQ(snap.ts_ns, kDay20120621Ns + local_ns + 4 * 3600LL * 1'000'000'000) << r;
    ASSERT_EQ(books[r].size(), 40u);
    for (int lv = 0; lv < 10; ++lv) {
      const int64_t ask_px = std::stoll(books[r][4 * lv]),
                    ask_sz = std::stoll(books[r][4 * lv + 1]);
      const int64_t bid_px = std::stoll(books[r][4 * lv + 2]),
                    bid_sz = std::stoll(books[r][4 * lv + 3]);
      ASSERT_EQ(snap.ask_px[lv], ask_sz == 0 ? kEmptyPx : ask_px * 100000) << r << " " << lv;
      ASSERT_EQ(snap.bid_px[lv], bid_sz == 0 ? kEmptyPx : bid_px * 100000) << r << " " << lv;
      ASSERT_EQ(snap.ask_sz[lv], static_cast<double>(ask_sz)) << r << " " << lv;
      ASSERT_EQ(snap.bid_sz[lv], static_cast<double>(bid_sz)) << r << " " << lv;
      ASSERT_EQ(snap.ask_ct[lv], 0u);
    }
    const int type = std::stoi(msgs[r][1]);
    const int direction = std::stoi(msgs[r][5]);
    const OrderEvent& e = sink.events[r];
    EXPECT_EQ(e.ts_ns, snap.ts_ns);
    EXPECT_EQ(e.order_id, std::stoull(msgs[r][2]));
    EXPECT_EQ(e.px, std::stoll(msgs[r][4]) * 100000);
    EXPECT_EQ(e.sz, std::stod(msgs[r][3]));
    EXPECT_EQ(e.side, direction);
    EXPECT_EQ(e.action, "NACCFF"[type]);
    if (type == 4 || type == 5) {
      const Trade& t = sink.trades[trade_i++];
      EXPECT_EQ(t.ts_ns, snap.ts_ns);
      EXPECT_EQ(t.px, std::stoll(msgs[r][4]) * 100000);
      EXPECT_EQ(t.sz, std::stod(msgs[r][3]));
      EXPECT_EQ(t.side, -direction) << "row " << r;  // executed buy order: seller aggressed
    }
  }
  EXPECT_EQ(trade_i, sink.trades.size());
  EXPECT_EQ(st.buyer_initiated + st.seller_initiated, 159u);
  // Sink order per row: event, trade (executions), snapshot.
  EXPECT_EQ(sink.order.substr(0, 2), "ES");
  EXPECT_EQ(sink.order.size(), 999u * 2 + 159u);

  // Overrides: a fixed UTC offset and another day.
  LobsterOptions opt;
  opt.utc_offset_minutes = 0;
  opt.date = "2012-01-03";
  test::RecordingSink sink2;
  ASSERT_TRUE(import_lobster(msg_path, book_path, opt, &sink2, nullptr).ok());
  EXPECT_EQ(sink2.snapshots[0].ts_ns,
            days_from_civil(2012, 1, 3) * 86400 * 1'000'000'000 + 34200'004'241'176LL);
}

class LobsterFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratch_dir(); }
  // Writes a pair named like LOBSTER's own files and imports it.
  Status run(const std::string& messages, const std::string& book,
             test::RecordingSink* sink = nullptr, LobsterStats* st = nullptr,
             const std::string& stem = "MSFT_2012-01-03_0_0_") {
    msg_ = dir_ + "/" + stem + "message_2.csv";
    book_ = dir_ + "/" + stem + "orderbook_2.csv";
    write(msg_, messages);
    write(book_, book);
    test::RecordingSink local;
    return import_lobster(msg_, book_, {}, sink != nullptr ? sink : &local, st);
  }
  std::string dir_, msg_, book_;
};

constexpr const char* kRow = "300000,10,299000,20,9999999999,0,-9999999999,0\n";

TEST_F(LobsterFiles, EventTypesTradesAndEmptyLevels) {
  test::RecordingSink sink;
  LobsterStats st;
  Status s = run(
      "34200.5,1,11,10,300000,-1\n"
      "34201,2,11,4,300000,-1\n"
      "34202,5,0,7,299500,1\n"
      "34203,6,0,1000,299800,-1\n"
      "34204,7,0,0,-1,-1\n"
      "34205,4,11,6,300000,-1\n",
      std::string(kRow) + kRow + kRow + kRow + kRow + "300000,0,299000,20,1,1,2,2\r\n", &sink, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(st.levels, 2);
  EXPECT_EQ(st.utc_offset_minutes, -300);  // January: EST
  EXPECT_EQ(st.trades, 3u);
  EXPECT_EQ(st.halt_messages, 1u);
  EXPECT_EQ(st.order_events, 4u);
  ASSERT_EQ(sink.trades.size(), 3u);
  EXPECT_EQ(sink.trades[0].side, -1);  // hidden execution of a buy order
  EXPECT_EQ(sink.trades[0].px, 29950000000);
  EXPECT_EQ(sink.trades[1].side, 0);  // cross
  EXPECT_EQ(sink.trades[1].sz, 1000.0);
  EXPECT_EQ(sink.trades[2].side, +1);  // visible execution of a sell order
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_EQ(sink.events[0].action, 'A');
  EXPECT_EQ(sink.events[0].side, -1);
  EXPECT_EQ(sink.events[1].action, 'C');
  EXPECT_EQ(sink.events[1].sz, 4.0);
  EXPECT_EQ(sink.events[2].action, 'F');
  EXPECT_EQ(sink.events[2].order_id, 0u);
  EXPECT_EQ(sink.events[3].action, 'F');
  ASSERT_EQ(sink.snapshots.size(), 6u);
  const Snapshot& a = sink.snapshots[0];
  EXPECT_EQ(a.ts_ns, days_from_civil(2012, 1, 3) * 86400'000'000'000 +
                         (34200'500'000'000 + 5 * 3600'000'000'000));
  EXPECT_EQ(a.ask_px[0], 30000000000);
  EXPECT_EQ(a.bid_px[0], 29900000000);
  EXPECT_EQ(a.ask_px[1], kEmptyPx);
  EXPECT_EQ(a.bid_px[1], kEmptyPx);
  EXPECT_EQ(a.ask_sz[1], 0.0);
  EXPECT_EQ(a.ask_px[2], kEmptyPx);  // only 2 levels in the file
  const Snapshot& b = sink.snapshots[5];
  EXPECT_EQ(b.ask_px[0], kEmptyPx);  // size 0: empty level
  EXPECT_EQ(b.ask_px[1], 100000);
  EXPECT_EQ(b.bid_sz[1], 2.0);
  EXPECT_EQ(sink.order, "ESESETSTSSETS");
}

TEST_F(LobsterFiles, MalformedFilesAreReported) {
  auto expect_error = [](const Status& s, const std::string& file, const std::string& want) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  const std::string ok_msg = "34200.5,1,11,10,300000,-1\n";
  expect_error(run("34200.5,1,11\n", kRow), "message_2.csv", ": line 1: expected 6 fields, got 3");
  expect_error(run(ok_msg + "34200.5,1,11,10,300000,-1,7\n", std::string(kRow) + kRow),
               "message_2.csv", ": line 2: expected 6 fields, got 7");
  expect_error(run(ok_msg + ok_msg, kRow), "orderbook_2.csv", "ends after 1 rows, but");
  expect_error(run(ok_msg, std::string(kRow) + kRow), "message_2.csv", "ends after 1 rows");
  expect_error(run("34200.5,1,abc,10,300000,-1\n", kRow), "message_2.csv",
               "line 1: field 3 (order id): \"abc\": unexpected 'a'");
  expect_error(run("34200.5x,1,11,10,300000,-1\n", kRow), "message_2.csv",
               "line 1: field 1 (time)");
  expect_error(run("34200.0000000001,1,11,10,300000,-1\n", kRow), "message_2.csv",
               "more than 9 decimals");
  expect_error(run("34200,9,11,10,300000,-1\n", kRow), "message_2.csv", "type 9: expected 1-7");
  expect_error(run("34200,1,11,10,300000,0\n", kRow), "message_2.csv",
               "direction 0: expected 1 or -1");
  expect_error(run(ok_msg, "1,2,3,4,5\n"), "orderbook_2.csv",
               "line 1: expected 4 fields per level, got 5 fields");
  expect_error(run(ok_msg + ok_msg, std::string(kRow) + "1,2,3,4\n"), "orderbook_2.csv",
               "line 2: expected 8 fields, got 4");
  expect_error(run(ok_msg, "300000,10,299000,x,1,1,1,1\n"), "orderbook_2.csv",
               "line 1: field 4: \"x\"");
  expect_error(run(ok_msg, "300000,-10,299000,1,1,1,1,1\n"), "orderbook_2.csv",
               "non-negative size");
  expect_error(run("", ""), "message_2.csv", "no rows");

  Status no_date = run(ok_msg, kRow, nullptr, nullptr, "nodate_");
  EXPECT_EQ(no_date.code(), StatusCode::kUsage);
  EXPECT_NE(no_date.message().find("no trading day"), std::string::npos);
  Status missing =
      import_lobster(dir_ + "/none_2012-01-03_message_1.csv", book_, {}, nullptr, nullptr);
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace fxt
