// `fxt backtest --sweep` (sim/sweep.h): the Pareto front and ranking on hand-made figures,
// and a sweep end to end: sweep.csv / sweep.json rows equal to single runs, --top files
// equal to `fxt backtest` of the same parameters, bad grids exit 2 with one line.
#include "sim/sweep.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "sim/backtest.h"
#include "sim_test_util.h"

namespace fxt::sim {
namespace {

using test::book;
using test::Row;
using test::S;
using test::T;
using test::trade;

constexpr int64_t kMs = 1'000'000;

nlohmann::json figures(nlohmann::json sharpe, double drawdown, double turnover, double pnl = 0) {
  return {{"sharpe_annualised", sharpe},
          {"max_drawdown", drawdown},
          {"turnover", turnover},
          {"total_pnl", pnl}};
}

TEST(Sweep, ParetoFrontOfSharpeDrawdownTurnover) {
  const std::vector<nlohmann::json> stats = {
      figures(1.0, 10, 100),   // 0: front (best drawdown among Sharpe 1)
      figures(2.0, 20, 100),   // 1: front (best Sharpe)
      figures(1.0, 20, 100),   // 2: dominated by 0
      figures(0.5, 5, 300),    // 3: front (lowest drawdown)
      figures(0.5, 5, 300),    // 4: equal to 3: not dominated, on the front too
      figures(nullptr, 1, 1),  // 5: null Sharpe = worst, but lowest drawdown and turnover
      figures(0.1, 30, 400),   // 6: dominated by 0
  };
  EXPECT_EQ(pareto_front(stats), (std::vector<size_t>{1, 0, 3, 4, 5}));
  EXPECT_EQ(best_lanes(stats, 3), (std::vector<size_t>{1, 0, 2}));
  const std::vector<nlohmann::json> ties = {figures(1.0, 0, 0, 5), figures(1.0, 0, 0, 7)};
  EXPECT_EQ(best_lanes(ties, 5), (std::vector<size_t>{1, 0}));  // equal Sharpe: higher pnl
}

std::string market_store() {
  std::vector<Row> rows;
  for (int i = 0; i < 300; ++i) {
    const int64_t ts = (i + 1) * 40 * kMs;
    const int64_t bid = 100 + (i / 30) % 3;
    if (i > 0) rows.push_back(T(trade(ts - kMs, i % 2 ? bid : bid + 1, 2, i % 2 ? -1 : 1)));
    rows.push_back(
        S(book(ts, {{bid, 4.0 + i % 5}, {bid - 1, 9}}, {{bid + 1, 3.0 + i % 4}, {bid + 2, 9}})));
  }
  return test::write_store(rows);
}

std::string slurp(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : "";
}

TEST(Sweep, TableRowsAndTopLanesEqualSingleRuns) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string store = market_store();
  ASSERT_TRUE(write_file_atomic(dir + "/mm.toml", R"(strategy = "mm"
[fixed]
warmup = 10
latency = "feed=1ms,entry=2ms,response=2ms"
[grid]
gamma = [0.01, 0.2]
queue = ["risk-averse", "log"]
[[lane]]
order_qty = 2
fees = "maker=-0.2bps,taker=0.5bps"
)")
                  .ok());
  SweepSpec spec;
  spec.grid_path = dir + "/mm.toml";
  spec.stores = {store};
  spec.threads = 2;
  spec.top = 2;
  spec.out_dir = dir + "/sweep";
  auto out = run_sweep(spec, "test");
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->lanes, 5u);
  EXPECT_EQ(out->events_per_lane, 599u);
  ASSERT_EQ(out->top.size(), 2u);

  // sweep.csv: header + one row per lane, the grid's columns first.
  std::istringstream csv(slurp(spec.out_dir + "/sweep.csv"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(csv, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].rfind("lane,warmup,latency,gamma,queue,order_qty,fees,total_pnl,", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("0,10,\"feed=1ms,entry=2ms,response=2ms\",0.01,risk-averse,,,", 0), 0u)
      << lines[1];
  const nlohmann::json doc = nlohmann::json::parse(slurp(spec.out_dir + "/sweep.json"));
  ASSERT_EQ(doc["results"].size(), 5u);
  EXPECT_EQ(doc["results"][4]["params"]["order_qty"], 2.0);
  EXPECT_EQ(doc["pareto_front"].get<std::vector<size_t>>(), out->pareto);

  // Every lane equals `fxt backtest` with its parameters (the single-run library path).
  const std::vector<std::vector<std::string>> params = {{"warmup=10", "gamma=0.01"},
                                                        {"warmup=10", "gamma=0.01"},
                                                        {"warmup=10", "gamma=0.2"},
                                                        {"warmup=10", "gamma=0.2"},
                                                        {"warmup=10", "order_qty=2"}};
  const char* queues[] = {"risk-averse", "log", "risk-averse", "log", "risk-averse"};
  size_t traded = 0;
  for (size_t i = 0; i < 5; ++i) {
    BacktestSpec one;
    one.stores = {store};
    one.strategy = "mm";
    one.params = params[i];
    one.sim.latency = *parse_latency("feed=1ms,entry=2ms,response=2ms");
    one.sim.queue = *parse_queue_model(queues[i]);
    if (i == 4) one.sim.fees = *parse_fees("maker=-0.2bps,taker=0.5bps");
    one.out_dir = dir + "/single" + std::to_string(i);
    auto single = run_backtest_spec(one, "test");
    ASSERT_TRUE(single.ok()) << single.status().message();
    nlohmann::json expected = single->runs.front().stats;
    expected.erase("daily_pnl");
    EXPECT_EQ(doc["results"][i]["stats"], expected) << "lane " << i;
    traded += expected["trades"].get<int64_t>() > 0 ? 1 : 0;
    for (size_t k = 0; k < out->top.size(); ++k) {
      if (out->top[k] != i) continue;
      const std::string top_dir = spec.out_dir + "/top/lane-" + std::to_string(i);
      for (const char* f : {"fills.csv", "orders.csv", "equity.csv", "stats.json"})
        EXPECT_EQ(slurp(top_dir + "/" + f), slurp(one.out_dir + "/" + f)) << top_dir << f;
    }
  }
  EXPECT_GE(traded, 4u);
}

TEST(Sweep, CommandRejectsBadGridsWithOneLine) {
  const std::string dir = fxt::test::scratch_dir();
  const std::string store = market_store();
  ASSERT_TRUE(write_file_atomic(dir + "/bad.toml", "[grid]\ngamma = [0.1]\nwobble = [1]\n").ok());
  auto r = fxt::test::run_fxt("backtest -q --store " + store + " --strategy mm --sweep " + dir +
                              "/bad.toml --out " + dir + "/o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "fxt: error: " + dir +
                          "/bad.toml:3: lane 0: --param wobble: not a parameter of strategy mm "
                          "(see docs/BACKTEST.md)\n");
  ASSERT_TRUE(write_file_atomic(dir + "/ok.toml", "[grid]\ngamma = [0.1]\n").ok());
  r = fxt::test::run_fxt("backtest -q --store " + store + " --strategy mm --sweep " + dir +
                         "/ok.toml --device tpu --out " + dir + "/o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "fxt: error: --device must be cpu or cuda (got 'tpu')\n");
  // What the GPU lanes do not have is refused whether or not a GPU is present.
  ASSERT_TRUE(write_file_atomic(dir + "/twap.toml",
                                "[grid]\nqty = [2, 4]\nslices = [2000000]\nduration = [\"1000000s\"]\n")
                  .ok());
  r = fxt::test::run_fxt("backtest -q --store " + store + " --strategy twap --sweep " + dir +
                         "/twap.toml --device cuda --out " + dir + "/o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "fxt: error: " + dir +
                          "/twap.toml:1: lane 0: --device cuda: a 1000000000000000 ns window in "
                          "2000000 slices is beyond the GPU lanes' int64 slice arithmetic; use "
                          "--device cpu\n");
}

}  // namespace
}  // namespace fxt::sim
