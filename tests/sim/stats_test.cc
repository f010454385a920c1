#include "sim/stats.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "sim/results.h"
#include "test_util.h"

namespace fxt::sim {
namespace {

constexpr int64_t kHour = 3'600'000'000'000;
constexpr int64_t kDay1 = 1767571200LL * 1'000'000'000;  // 2026-01-05 00:00 UTC
constexpr int64_t kDay2 = kDay1 + 24 * kHour;
constexpr int64_t kDay3 = kDay2 + 24 * kHour;

int64_t px(double currency) {
  return std::llround(currency * 1e9);
}

Fill fill(int64_t ts, uint64_t order_id, Side side, double price, double qty, double fee,
          bool maker) {
  Fill f;
  f.ts_ns = ts;
  f.order_id = order_id;
  f.side = side;
  f.px = px(price);
  f.qty = qty;
  f.fee = fee;
  f.maker = maker;
  return f;
}

OrderRecord order(uint64_t id, Side side, OrderType type, double price, double qty, double filled,
                  OrderState state) {
  OrderRecord o;
  o.order_id = id;
  o.sent_ns = kDay1 + static_cast<int64_t>(id) * kHour;
  o.arrive_ns = o.sent_ns + 1000;
  o.done_ns = o.arrive_ns + 5000;
  o.side = side;
  o.type = type;
  o.px = px(price);
  o.qty = qty;
  o.filled_qty = filled;
  o.avg_fill_px = filled > 0 ? price : 0;
  o.state = state;
  return o;
}

EquityPoint point(int64_t ts, double position, double cash, double mid, double equity) {
  return {ts, position, cash, mid, equity};
}

// Three UTC days, multiplier 2. Fills:
//   day 1 10:00 buy 2 @ 100 maker fee −0.02; 12:00 sell 1 @ 101 taker fee 0.1
//   day 2 10:00 sell 3 @ 102.5 maker fee −0.03 (closes 1, opens short 2)
//   day 3 09:00 buy 2 @ 101 taker fee 0.2 (flat)
// Cash after each: −399.98, −198.08, 416.95, 12.75.
BacktestResult three_day_result() {
  BacktestResult r;
  r.instrument.multiplier = 2;
  r.events = 1234;
  r.fills = {fill(kDay1 + 10 * kHour, 1, Side::kBuy, 100, 2, -0.02, true),
             fill(kDay1 + 12 * kHour, 2, Side::kSell, 101, 1, 0.1, false),
             fill(kDay2 + 10 * kHour, 3, Side::kSell, 102.5, 3, -0.03, true),
             fill(kDay3 + 9 * kHour, 4, Side::kBuy, 101, 2, 0.2, false)};
  r.fees_paid = 0.25;
  r.orders = {order(1, Side::kBuy, OrderType::kLimit, 100, 2, 2, OrderState::kFilled),
              order(2, Side::kSell, OrderType::kMarket, 0, 1, 1, OrderState::kFilled),
              order(3, Side::kSell, OrderType::kLimit, 102.5, 4, 3, OrderState::kCanceled),
              order(4, Side::kBuy, OrderType::kIoc, 101, 3, 2, OrderState::kExpired),
              order(5, Side::kBuy, OrderType::kPostOnly, 99, 1, 0, OrderState::kRejected)};
  r.orders[4].reason = "post-only would cross";
  // equity = cash + position·mid·2
  r.equity = {point(kDay1 + 9 * kHour, 0, 0, 100, 0),
              point(kDay1 + 10 * kHour, 2, -399.98, 100, 0.02),
              point(kDay1 + 11 * kHour, 2, -399.98, 99, -3.98),
              point(kDay1 + 12 * kHour, 1, -198.08, 101, 3.92),
              point(kDay1 + 23 * kHour, 1, -198.08, 100.5, 2.92),
              point(kDay2 + 10 * kHour, -2, 416.95, 102.5, 6.95),
              point(kDay2 + 15 * kHour, -2, 416.95, 104, 0.95),
              point(kDay2 + 23 * kHour, -2, 416.95, 104.5, -1.05),
              point(kDay3 + 9 * kHour, 0, 12.75, 101, 12.75),
              point(kDay3 + 12 * kHour, 0, 12.75, 101.5, 12.75)};
  return r;
}

TEST(Stats, ThreeDaysHandComputed) {
  const nlohmann::json s = compute_stats(three_day_result());
  EXPECT_NEAR(s["total_pnl"].get<double>(), 12.75, 1e-12);
  ASSERT_EQ(s["daily_pnl"].size(), 3u);
  EXPECT_EQ(s["daily_pnl"][0]["date"], "2026-01-05");
  EXPECT_EQ(s["daily_pnl"][1]["date"], "2026-01-06");
  EXPECT_EQ(s["daily_pnl"][2]["date"], "2026-01-07");
  EXPECT_NEAR(s["daily_pnl"][0]["pnl"].get<double>(), 2.92, 1e-12);
  EXPECT_NEAR(s["daily_pnl"][1]["pnl"].get<double>(), -3.97, 1e-12);
  EXPECT_NEAR(s["daily_pnl"][2]["pnl"].get<double>(), 13.80, 1e-12);
  EXPECT_EQ(s["days"], 3);
  // mean 4.25, sample std of (2.92, −3.97, 13.8) = 8.9658..., ×sqrt(252).
  EXPECT_NEAR(s["sharpe_daily_annualised"].get<double>(), 7.53030972812048, 1e-9);
  // downside deviation sqrt(3.97²/3) = 2.29208...
  EXPECT_NEAR(s["sortino"].get<double>(), 29.43468015651736, 1e-9);
  // Peak 6.95 (day 2 10:00) to trough −1.05 (day 2 23:00).
  EXPECT_NEAR(s["max_drawdown"].get<double>(), 8.0, 1e-12);
  EXPECT_NEAR(s["return_over_drawdown"].get<double>(), 12.75 / 8.0, 1e-12);
  EXPECT_EQ(s["trades"], 4);
  // Round trips: long 2 → flat inside the day-2 sell (6.93), short 2 → flat (5.82).
  EXPECT_EQ(s["round_trips"], 2);
  EXPECT_NEAR(s["sharpe_per_trade"].get<double>(), 6.375 / (1.11 / std::sqrt(2.0)), 1e-9);
  // 2·(100·2 + 101·1 + 102.5·3 + 101·2) = 1621.
  EXPECT_NEAR(s["turnover"].get<double>(), 1621, 1e-9);
  EXPECT_DOUBLE_EQ(s["volume"].get<double>(), 8);
  EXPECT_NEAR(s["fill_ratio"].get<double>(), 8.0 / 11.0, 1e-12);
  EXPECT_DOUBLE_EQ(s["maker_share"].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(s["taker_share"].get<double>(), 0.375);
  EXPECT_NEAR(s["fees"].get<double>(), 0.25, 1e-12);
  // FIFO lots: 1 held 2 h, 1 held 24 h, 2 (short) held 23 h: (2 + 24 + 46)/4 = 18 h.
  EXPECT_DOUBLE_EQ(s["mean_holding_ns"].get<double>(), 18.0 * kHour);
  EXPECT_EQ(s["orders"], 5);
  EXPECT_EQ(s["events"], 1234);
  EXPECT_EQ(s["final_position"].get<double>(), 0);
}

// Before: a 6-minute capture across midnight gave an annualised "daily" Sharpe from two days.
// Now it has none, and its Sharpe is on 10 s bars (the largest bar with >= 30 returns).
TEST(Stats, ShortRunsGetAnIntradaySharpeOnANamedBar) {
  constexpr int64_t kSec = 1'000'000'000;
  BacktestResult r;
  const int64_t start = kDay2 - 3 * 60 * kSec;  // 23:57:00 UTC, on the 10 s grid
  for (int k = 0; k <= 360; ++k) {
    r.equity.push_back(point(start + k * kSec, 0, 0.5 * k, 1, 0.5 * k));
  }
  const nlohmann::json s = compute_stats(r);
  EXPECT_EQ(s["days"], 2);
  EXPECT_TRUE(s["sharpe_daily_annualised"].is_null());
  EXPECT_TRUE(s["sortino"].is_null());
  const nlohmann::json& b = s["sharpe_bars"];
  ASSERT_TRUE(b.is_object()) << s.dump();
  EXPECT_EQ(b["bar"], "10s");  // 1 min gives 7 bars, 30 s 13, 10 s 37
  EXPECT_EQ(b["bars"], 37);
  // Bar PnL: 4.5 (first close 0.5·9), 35 × 5, then 0.5 (00:03:00 alone): mean 180/37.
  EXPECT_NEAR(b["per_bar"].get<double>(), 6.555756803941541, 1e-9);
  EXPECT_DOUBLE_EQ(b["bars_per_day"].get<double>(), 36.0);  // a 6-minute session
  EXPECT_NEAR(b["annualised"].get<double>(), 6.555756803941541 * std::sqrt(252.0 * 36), 1e-6);
  EXPECT_EQ(s["sharpe_annualised"], b["annualised"]);
  EXPECT_EQ(s["sharpe_basis"], "10s bars");
  // A run of 2 days or more keeps the daily Sharpe as the one that applies.
  const nlohmann::json d = compute_stats(three_day_result());
  EXPECT_TRUE(d["sharpe_bars"].is_null());
  EXPECT_EQ(d["sharpe_annualised"], d["sharpe_daily_annualised"]);
  EXPECT_EQ(d["sharpe_basis"], "daily");
}

TEST(Stats, UndefinedRatiosAreNull) {
  const nlohmann::json empty = compute_stats(BacktestResult{});
  EXPECT_EQ(empty["total_pnl"], 0.0);
  EXPECT_TRUE(empty["daily_pnl"].empty());
  for (const char* key :
       {"sharpe_daily_annualised", "sharpe_per_trade", "sortino", "return_over_drawdown",
        "fill_ratio", "maker_share", "taker_share", "mean_holding_ns"}) {
    EXPECT_TRUE(empty[key].is_null()) << key;
  }
  EXPECT_EQ(empty["max_drawdown"], 0.0);

  // One day: no daily Sharpe or Sortino; one round trip: no per-trade Sharpe.
  BacktestResult one_day;
  one_day.fills = {fill(kDay1 + kHour, 1, Side::kBuy, 10, 1, 0, true),
                   fill(kDay1 + 2 * kHour, 2, Side::kSell, 11, 1, 0, true)};
  one_day.equity = {point(kDay1 + kHour, 1, -10, 10, 0), point(kDay1 + 2 * kHour, 0, 1, 10.5, 1)};
  const nlohmann::json s = compute_stats(one_day);
  EXPECT_TRUE(s["sharpe_daily_annualised"].is_null());
  EXPECT_TRUE(s["sortino"].is_null());
  EXPECT_TRUE(s["sharpe_per_trade"].is_null());
  EXPECT_TRUE(s["return_over_drawdown"].is_null());  // never below the peak
  EXPECT_EQ(s["round_trips"], 1);
  EXPECT_DOUBLE_EQ(s["mean_holding_ns"].get<double>(), static_cast<double>(kHour));

  // Two equal winning days: zero variance and no downside.
  BacktestResult flat_days;
  flat_days.equity = {point(kDay1, 0, 5, 1, 5), point(kDay2, 0, 10, 1, 10)};
  const nlohmann::json f = compute_stats(flat_days);
  EXPECT_TRUE(f["sharpe_daily_annualised"].is_null());
  EXPECT_TRUE(f["sortino"].is_null());
  EXPECT_EQ(f["days"], 2);
  EXPECT_EQ(f.dump().find("NaN"), std::string::npos);
  EXPECT_EQ(f.dump().find("inf"), std::string::npos);
}

TEST(Stats, UtcDaysAcrossALeapDayAndUnsortedPoints) {
  const int64_t feb29 = 1709164800LL * 1'000'000'000;  // 2024-02-29 00:00 UTC
  BacktestResult r;
  // Out of time order on purpose: statistics sort equity by time.
  r.equity = {point(feb29 + 24 * kHour, 0, 3, 1, 3), point(feb29 + 24 * kHour - 1, 0, -2, 1, -2),
              point(feb29 - 1, 0, 1, 1, 1)};
  const nlohmann::json s = compute_stats(r);
  ASSERT_EQ(s["daily_pnl"].size(), 3u);
  EXPECT_EQ(s["daily_pnl"][0]["date"], "2024-02-28");
  EXPECT_EQ(s["daily_pnl"][1]["date"], "2024-02-29");
  EXPECT_EQ(s["daily_pnl"][2]["date"], "2024-03-01");
  EXPECT_DOUBLE_EQ(s["daily_pnl"][1]["pnl"].get<double>(), -3);
  EXPECT_DOUBLE_EQ(s["max_drawdown"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(s["total_pnl"].get<double>(), 3);
}

TEST(ModelRiskBand, MinMaxSpreadAndNulls) {
  const std::vector<std::string> names = {"risk-averse", "power:2", "log"};
  const std::vector<nlohmann::json> stats = {
      {{"total_pnl", 10.0}, {"sharpe_daily_annualised", 1.5}, {"trades", 40}, {"fees", 2.0}},
      {{"total_pnl", 12.5}, {"sharpe_daily_annualised", nullptr}, {"trades", 44}, {"fees", 2.5}},
      {{"total_pnl", 9.0}, {"sharpe_daily_annualised", 0.5}, {"trades", 41}, {"fees", 2.1}}};
  const nlohmann::json band = model_risk_band(names, stats);
  EXPECT_EQ(band["models"], nlohmann::json(names));
  EXPECT_DOUBLE_EQ(band["total_pnl"]["min"].get<double>(), 9);
  EXPECT_DOUBLE_EQ(band["total_pnl"]["max"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(band["total_pnl"]["spread"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(band["total_pnl"]["values"]["power:2"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(band["sharpe_daily_annualised"]["spread"].get<double>(), 1.0);
  EXPECT_TRUE(band["sharpe_daily_annualised"]["values"]["power:2"].is_null());
  EXPECT_DOUBLE_EQ(band["trades"]["spread"].get<double>(), 4);
  EXPECT_NEAR(band["fees"]["spread"].get<double>(), 0.5, 1e-12);
  // Keys no model reported: all null.
  EXPECT_TRUE(band["fill_ratio"]["min"].is_null());
  EXPECT_TRUE(band["fill_ratio"]["spread"].is_null());
  EXPECT_TRUE(band["max_drawdown"]["values"]["log"].is_null());

  const nlohmann::json bad = model_risk_band({"a"}, {});
  EXPECT_EQ(bad["error"], "model_risk_band: 1 model names but 0 stats objects");
}

std::vector<std::string> lines_of(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  std::vector<std::string> lines;
  std::istringstream in(text.ok() ? *text : std::string());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(BacktestResults, FilesReadBack) {
  BacktestResult r = three_day_result();
  r.orders[2].reason = "canceled by \"strategy\", at end";
  const nlohmann::json stats = compute_stats(r);
  const std::string dir = test::scratch_dir() + "/run/nested";
  ASSERT_TRUE(write_backtest_results(dir, r, stats).ok());

  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.insert(entry.path().filename().string());
  // Written through temporary names and renamed: nothing else is left behind.
  EXPECT_EQ(names, (std::set<std::string>{"equity.csv", "fills.csv", "orders.csv", "stats.json"}));

  const std::vector<std::string> orders = lines_of(dir + "/orders.csv");
  ASSERT_EQ(orders.size(), 6u);
  EXPECT_EQ(orders[0],
            "order_id,sent_ns,arrive_ns,done_ns,side,type,px,qty,filled_qty,avg_fill_px,state,"
            "reason");
  const std::string sent1 = std::to_string(kDay1 + kHour);
  const std::string arrive1 = std::to_string(kDay1 + kHour + 1000);
  const std::string done1 = std::to_string(kDay1 + kHour + 6000);
  EXPECT_EQ(orders[1],
            "1," + sent1 + "," + arrive1 + "," + done1 + ",buy,limit,100,2,2,100,filled,");
  EXPECT_NE(orders[2].find(",sell,market,0,1,1,0,filled,"), std::string::npos) << orders[2];
  EXPECT_NE(orders[3].find(
                ",sell,limit,102.5,4,3,102.5,canceled,\"canceled by \"\"strategy\"\", at end\""),
            std::string::npos)
      << orders[3];
  EXPECT_NE(orders[4].find(",buy,ioc,101,3,2,101,expired,"), std::string::npos);
  EXPECT_NE(orders[5].find(",buy,post_only,99,1,0,0,rejected,post-only would cross"),
            std::string::npos);

  const std::vector<std::string> fills = lines_of(dir + "/fills.csv");
  ASSERT_EQ(fills.size(), 5u);
  EXPECT_EQ(fills[0], "ts_ns,order_id,side,px,qty,fee,maker");
  EXPECT_EQ(fills[1], std::to_string(kDay1 + 10 * kHour) + ",1,buy,100,2,-0.02,1");
  EXPECT_EQ(fills[3], std::to_string(kDay2 + 10 * kHour) + ",3,sell,102.5,3,-0.03,1");
  EXPECT_EQ(fills[4], std::to_string(kDay3 + 9 * kHour) + ",4,buy,101,2,0.2,0");

  const std::vector<std::string> equity = lines_of(dir + "/equity.csv");
  ASSERT_EQ(equity.size(), 11u);
  EXPECT_EQ(equity[0], "ts_ns,position,cash,mid,equity");
  EXPECT_EQ(equity[2], std::to_string(kDay1 + 10 * kHour) + ",2,-399.98,100,0.02");
  EXPECT_EQ(equity[8], std::to_string(kDay2 + 23 * kHour) + ",-2,416.95,104.5,-1.05");

  auto stats_text = read_file(dir + "/stats.json");
  ASSERT_TRUE(stats_text.ok());
  EXPECT_EQ(nlohmann::json::parse(*stats_text), stats);

  // Rewriting the same run replaces the files whole.
  r.fills.resize(1);
  ASSERT_TRUE(write_backtest_results(dir, r, stats).ok());
  EXPECT_EQ(lines_of(dir + "/fills.csv").size(), 2u);
}

TEST(BacktestResults, UnwritableDirectoryIsAnError) {
  const std::string blocker = test::scratch_dir() + "/a_file";
  ASSERT_TRUE(write_file_atomic(blocker, "x").ok());
  const Status status = write_backtest_results(blocker + "/run", BacktestResult{}, {});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find(blocker + "/run: cannot create the run directory"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace fxt::sim
