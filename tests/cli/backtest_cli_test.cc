// fxt backtest as a user runs it: synth/real store -> ingest -> train -> predict -> backtest with
// predictions or a checkpoint, one or several queue models; the built-in strategies with no
// configuration; result files, equity consistency, stats keys, the model-risk band, run.json;
// and the one-line exit-code-2 errors for bad inputs.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "data/store.h"
#include "test_util.h"

namespace fxt {
namespace {

using test::run_fxt;
namespace fs = std::filesystem;

const char* kSmallTrain =
    " --epochs 2 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 32 --baseline-max-rows 2000 "
    "--gbdt-max-rows 2000";

void expect_one_line_error(const test::CommandResult& r, const std::string& contains = "") {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(r.output.rfind("fxt: error: ", 0), 0u) << r.output;
  if (!contains.empty()) {
    EXPECT_NE(r.output.find(contains), std::string::npos) << r.output;
  }
}

std::vector<std::string> lines_of(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  std::vector<std::string> lines;
  std::istringstream in(text.ok() ? *text : "");
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<double> numbers(const std::string& line) {
  std::vector<double> v;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) v.push_back(std::stod(f));
  return v;
}

nlohmann::json json_of(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

// One queue model's result directory: headers, equity = cash + position·mid·multiplier on
// every row, the DESIGN §7.4 stats keys. Returns the stats.
nlohmann::json check_results(const std::string& dir, double multiplier) {
  SCOPED_TRACE(dir);
  const auto orders = lines_of(dir + "/orders.csv");
  const auto fills = lines_of(dir + "/fills.csv");
  const auto equity = lines_of(dir + "/equity.csv");
  EXPECT_FALSE(orders.empty());
  EXPECT_FALSE(fills.empty());
  EXPECT_GE(equity.size(), 2u);
  if (orders.empty() || fills.empty() || equity.empty()) return {};
  EXPECT_EQ(orders[0],
            "order_id,sent_ns,arrive_ns,done_ns,side,type,px,qty,filled_qty,avg_fill_px,state,"
            "reason");
  EXPECT_EQ(fills[0], "ts_ns,order_id,side,px,qty,fee,maker");
  EXPECT_EQ(equity[0], "ts_ns,position,cash,mid,equity");
  for (size_t i = 1; i < equity.size(); ++i) {
    const auto v = numbers(equity[i]);
    EXPECT_EQ(v.size(), 5u) << equity[i];
    if (v.size() != 5) continue;
    const double expect = v[2] + v[1] * v[3] * multiplier;
    EXPECT_NEAR(v[4], expect, 1e-6 * std::max(1.0, std::fabs(expect))) << "row " << i;
  }
  nlohmann::json stats = json_of(dir + "/stats.json");
  for (const char* key : {"total_pnl", "daily_pnl", "sharpe_daily_annualised", "sharpe_per_trade",
                          "sortino", "max_drawdown", "return_over_drawdown", "trades", "turnover",
                          "fill_ratio", "maker_share", "taker_share", "fees", "mean_holding_ns"}) {
    EXPECT_TRUE(stats.contains(key)) << key;
  }
  if (stats.contains("trades")) {
    EXPECT_EQ(stats["trades"].get<size_t>(), fills.size() - 1);
  }
  return stats;
}

// RUN_DIR with three queue models: one directory each, the top stats.json with every model's
// stats and a band whose spreads are >= 0.
void check_band(const std::string& run, double multiplier) {
  const nlohmann::json top = json_of(run + "/stats.json");
  ASSERT_TRUE(top.contains("model_risk_band")) << top.dump();
  EXPECT_EQ(top["queue_models"], nlohmann::json({"risk-averse", "power:2", "log"}));
  for (const char* dir : {"risk-averse", "power-2", "log"}) {
    const nlohmann::json s = check_results(run + "/" + dir, multiplier);
    EXPECT_EQ(top["models"][dir == std::string("power-2") ? "power:2" : dir], s);
  }
  const nlohmann::json& band = top["model_risk_band"];
  for (const char* key : {"total_pnl", "max_drawdown", "fill_ratio", "trades", "fees"}) {
    ASSERT_TRUE(band.contains(key)) << key;
    ASSERT_TRUE(band[key]["spread"].is_number()) << key;
    EXPECT_GE(band[key]["spread"].get<double>(), 0.0) << key;
    EXPECT_DOUBLE_EQ(band[key]["spread"].get<double>(),
                     band[key]["max"].get<double>() - band[key]["min"].get<double>());
  }
}

void check_run_json(const std::string& run, const std::string& strategy) {
  const nlohmann::json j = json_of(run + "/run.json");
  EXPECT_EQ(j["strategy"]["name"], strategy);
  EXPECT_NE(j["command_line"].get<std::string>().find("backtest"), std::string::npos);
  for (const char* key : {"git_revision", "start_utc", "end_utc", "wall_seconds", "store_dirs"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["config"].contains("latency"));
}

// ---- a synthetic store -----------------------------------------------------------------------

class BacktestCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::scratch_dir());
    ASSERT_EQ(run_fxt("synth -q --events 20000 --seed 1 --out " + *dir_ + "/m.dbn.zst").exit_code,
              0);
    ASSERT_EQ(run_fxt("ingest -q " + *dir_ + "/m.dbn.zst --out " + *dir_ + "/store").exit_code, 0);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string store() { return *dir_ + "/store"; }
  static std::string* dir_;
};
std::string* BacktestCliTest::dir_ = nullptr;

TEST_F(BacktestCliTest, BuiltInStrategiesRunWithDefaults) {
  for (const std::string name : {"mm", "twap", "ac"}) {
    SCOPED_TRACE(name);
    const std::string run = *dir_ + "/run_" + name;
    auto r = run_fxt("backtest -q --store " + store() + " --strategy " + name + " --out " + run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("risk-averse"), std::string::npos) << r.output;  // the summary
    const nlohmann::json stats = check_results(run, 1.0);
    EXPECT_GT(stats["trades"].get<int>(), 0);
    check_run_json(run, name);
    if (name != "mm") {
      // The default execution: sell 10 units over the session in whole-lot market children
      // (the synthetic store's sizes are whole: lot 1), 10 for twap; ac's sinh schedule rounds
      // to 1, 2, 1, 1, 1, 1, 1, 0, 1, 1.
      EXPECT_DOUBLE_EQ(stats["final_position"].get<double>(), -10.0);
      EXPECT_EQ(lines_of(run + "/orders.csv").size(), name == "twap" ? 11u : 10u);
      EXPECT_EQ(stats["execution"]["lot"].get<double>(), 1.0);
      EXPECT_TRUE(stats["execution"]["shortfall_bps"].is_number());
    }
  }
}

TEST_F(BacktestCliTest, SignalFromPredictionsAndFromTheCheckpointAgree) {
  const std::string tr = *dir_ + "/train";
  auto t = run_fxt("train -q --store " + store() + " --run-dir " + tr + kSmallTrain);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  auto p = run_fxt("predict -q --checkpoint " + tr + "/best.ckpt --store " + store() + " --out " +
                   *dir_ + "/p.csv");
  ASSERT_EQ(p.exit_code, 0) << p.output;

  const std::string a = *dir_ + "/sig_pred", b = *dir_ + "/sig_ckpt";
  auto ra = run_fxt("backtest -q --store " + store() + " --strategy signal --predictions " + *dir_ +
                    "/p.csv --horizon 30 --out " + a);
  ASSERT_EQ(ra.exit_code, 0) << ra.output;
  check_results(a, 1.0);
  check_run_json(a, "signal");
  EXPECT_EQ(json_of(a + "/run.json")["strategy"]["params"]["horizon"], 30);

  auto rb = run_fxt("backtest -q --store " + store() + " --strategy signal --checkpoint " + tr +
                    "/best.ckpt --horizon 30 --queue-models risk-averse,power:2,log --out " + b);
  ASSERT_EQ(rb.exit_code, 0) << rb.output;
  EXPECT_NE(rb.output.find("power:2"), std::string::npos) << rb.output;
  EXPECT_TRUE(fs::exists(b + "/predictions.csv"));
  check_band(b, 1.0);
  check_run_json(b, "signal");
  // The same probabilities give the same market-order fills under any queue model.
  EXPECT_EQ(lines_of(a + "/fills.csv"), lines_of(b + "/risk-averse/fills.csv"));
  EXPECT_EQ(lines_of(a + "/fills.csv"), lines_of(b + "/log/fills.csv"));

  // Passive entry with fees and latency: makers appear, fees are charged.
  const std::string c = *dir_ + "/sig_passive";
  auto rc = run_fxt("backtest -q --store " + store() + " --predictions " + *dir_ +
                    "/p.csv --param entry=passive --param max_hold=2s --latency "
                    "feed=1ms,entry=2ms,response=2ms --fees maker=-0.2bps,taker=0.5bps "
                    "--queue-models risk-averse,power:2,log --out " +
                    c);
  ASSERT_EQ(rc.exit_code, 0) << rc.output;
  check_band(c, 1.0);
  // Queue models run side by side give the same files.
  auto rc2 = run_fxt("backtest -q --store " + store() + " --predictions " + *dir_ +
                     "/p.csv --param entry=passive --param max_hold=2s --latency "
                     "feed=1ms,entry=2ms,response=2ms --fees maker=-0.2bps,taker=0.5bps "
                     "--queue-models risk-averse,power:2,log --threads 2 --out " +
                     c + "2");
  ASSERT_EQ(rc2.exit_code, 0) << rc2.output;
  EXPECT_EQ(json_of(c + "/stats.json"), json_of(c + "2/stats.json"));
  for (const char* m : {"risk-averse", "power-2", "log"}) {
    for (const char* f : {"/orders.csv", "/fills.csv", "/equity.csv"}) {
      EXPECT_EQ(lines_of(c + "/" + m + f), lines_of(c + "2/" + m + f)) << m << f;
    }
  }
  const nlohmann::json run = json_of(c + "/run.json");
  EXPECT_EQ(run["strategy"]["params"]["entry"], "passive");
  EXPECT_EQ(run["strategy"]["params"]["max_hold_ns"], 2'000'000'000);
  EXPECT_EQ(run["config"]["latency"]["entry_ns"], 2'000'000);
  EXPECT_DOUBLE_EQ(run["config"]["fees"]["maker_bps"].get<double>(), -0.2);
}

TEST_F(BacktestCliTest, ConfigFileSuppliesTheStrategyAndItsParams) {
  const std::string cfg = *dir_ + "/bt.toml";
  ASSERT_TRUE(write_file_atomic(cfg,
                                "[backtest]\nstrategy = \"twap\"\nparam = [\"slices=3\", "
                                "\"qty=2\", \"side=buy\"]\n")
                  .ok());
  const std::string run = *dir_ + "/cfg";
  auto r = run_fxt("backtest -q --config " + cfg + " --store " + store() + " --out " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json stats = check_results(run, 1.0);
  EXPECT_DOUBLE_EQ(stats["final_position"].get<double>(), 2.0);
  EXPECT_EQ(lines_of(run + "/orders.csv").size(), 3u);  // whole lots: 1 at slices 1 and 2
  const nlohmann::json j = json_of(run + "/run.json");
  EXPECT_EQ(j["strategy"]["name"], "twap");
  EXPECT_EQ(j["strategy"]["params"]["slices"], 3);
}

TEST_F(BacktestCliTest, BadInputsExitTwoWithOneLine) {
  const std::string out = " --out " + *dir_ + "/bad";
  const std::string st = " --store " + store();
  // A predictions file for another store (its first ts_ns is no snapshot's).
  const std::string pred = *dir_ + "/short.csv";
  ASSERT_TRUE(write_file_atomic(pred, "ts_ns,p_h10\n1,0.5\n").ok());
  expect_one_line_error(run_fxt("backtest -q" + st + " --predictions " + pred + out),
                        pred + ":2: ts_ns 1 but snapshot 0 of store");
  expect_one_line_error(
      run_fxt("backtest -q" + st + " --predictions " + pred + " --horizon 77" + out),
      pred + ":1: no column p_h77 (columns: p_h10)");
  // One row short of the store's 20000 snapshots (every ts_ns right).
  {
    auto reader = StoreReader::open(store());
    ASSERT_TRUE(reader.ok());
    std::string text = "ts_ns,p_h10\n";
    for (uint64_t i = 0; i + 1 < reader->size(); ++i) {
      text += std::to_string(reader->ts_ns[i]) + ",0.5\n";
    }
    const std::string short_by_one = *dir_ + "/short_by_one.csv";
    ASSERT_TRUE(write_file_atomic(short_by_one, text).ok());
    expect_one_line_error(
        run_fxt("backtest -q" + st + " --predictions " + short_by_one + out),
        short_by_one + ":20001: 19999 rows but store " + store() + " has 20000 snapshots");
  }
  expect_one_line_error(run_fxt("backtest -q" + st + out), "needs --predictions or --checkpoint");
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy vwap" + out), "--strategy");
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy mm --param gama=1" + out),
                        "--param gama: not a parameter of strategy mm");
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy mm --param warmup=x" + out),
                        "warmup=x");
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy twap --latency feed=1" + out),
                        "bad duration '1'");
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy twap --fees maker=1%" + out),
                        "--fees maker");
  expect_one_line_error(
      run_fxt("backtest -q" + st + " --strategy twap --queue-models power:2,fifo" + out),
      "--queue-models");
  expect_one_line_error(run_fxt("backtest -q --store " + *dir_ + "/nowhere --strategy twap" + out));
  expect_one_line_error(run_fxt("backtest -q" + st + " --strategy twap --multiplier -1" + out),
                        "--multiplier");
  expect_one_line_error(run_fxt("backtest -q" + st + " --predictions " + pred + " " + pred + out),
                        "2 files for 1 stores");
}

// ---- real data -------------------------------------------------------------------------------

// ingest -> train -> predict -> backtest with predictions, then with the checkpoint and three
// queue models (passive entry, so the L2 queue estimate matters where the store has no MBO).
// An MBO store replays exact FIFO queues: comparing L2 queue models there needs --l2.
void real_data_round_trip(const std::string& sources, double multiplier, bool mbo) {
  const std::string dir = test::scratch_dir();
  auto in = run_fxt("-q ingest " + sources + " --out " + dir + "/store");
  ASSERT_EQ(in.exit_code, 0) << in.output;
  auto t = run_fxt("train -q --store " + dir + "/store --run-dir " + dir + "/train" + kSmallTrain);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  auto p = run_fxt("predict -q --checkpoint " + dir + "/train/best.ckpt --store " + dir +
                   "/store --out " + dir + "/p.csv");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string mult = " --multiplier " + std::to_string(multiplier);
  auto a = run_fxt("backtest -q --store " + dir + "/store --strategy signal --predictions " + dir +
                   "/p.csv --horizon 10" + mult + " --out " + dir + "/a");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const nlohmann::json stats = check_results(dir + "/a", multiplier);
  EXPECT_GT(stats["trades"].get<int>(), 0);
  const std::string band_run = "backtest -q --store " + dir +
                               "/store --strategy signal --checkpoint " + dir +
                               "/train/best.ckpt --param entry=passive --queue-models "
                               "risk-averse,power:2,log" +
                               mult + " --out " + dir + "/b";
  if (mbo) {
    auto exact = run_fxt(band_run);
    EXPECT_EQ(exact.exit_code, 2) << exact.output;
    EXPECT_NE(exact.output.find("add --l2"), std::string::npos) << exact.output;
  }
  auto b = run_fxt(band_run + (mbo ? " --l2" : ""));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  check_band(dir + "/b", multiplier);
  check_run_json(dir + "/b", "signal");
  EXPECT_DOUBLE_EQ(json_of(dir + "/b/run.json")["config"]["instrument"]["multiplier"].get<double>(),
                   multiplier);
}

TEST(BacktestCliReal, EsMboStore) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  real_data_round_trip(test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
                           test::shared_file(nt + "definition-glbx-es-fut.dbn.zst"),
                       50.0, /*mbo=*/true);
}

// Two sessions (the 2023-12-24 opening snapshot run and 2023-12-25): predictions are computed
// per store into predictions_<i>.csv, and the daily PnL has one row per day.
TEST(BacktestCliReal, EsTwoSessionsWithTheCheckpoint) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string def = test::shared_file(nt + "definition-glbx-es-fut.dbn.zst");
  const std::string dir = test::scratch_dir();
  for (const std::string day : {"20231224", "20231225"}) {
    const std::string mbo = test::shared_file(nt + "esh4-glbx-mdp3-" + day + ".mbo.dbn.zst");
    auto in = run_fxt("-q ingest " + mbo + " " + def + " --out " + dir + "/" + day);
    ASSERT_EQ(in.exit_code, 0) << in.output;
  }
  auto t =
      run_fxt("train -q --store " + dir + "/20231225 --run-dir " + dir + "/train" + kSmallTrain);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  auto b =
      run_fxt("backtest -q --store " + dir + "/20231224 " + dir + "/20231225 --checkpoint " + dir +
              "/train/best.ckpt --param entry=passive --multiplier 50 --out " + dir + "/b");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(lines_of(dir + "/b/predictions_0.csv").size(), 2u);  // header + 1 snapshot
  EXPECT_EQ(lines_of(dir + "/b/predictions_1.csv").size(), 47024u);
  const nlohmann::json stats = check_results(dir + "/b", 50.0);
  ASSERT_EQ(stats["daily_pnl"].size(), 2u);
  EXPECT_EQ(stats["daily_pnl"][0]["date"], "2023-12-24");
  EXPECT_EQ(stats["daily_pnl"][1]["date"], "2023-12-25");
}

TEST(BacktestCliReal, BinanceSpotStore) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  real_data_round_trip(test::shared_file("binance-hftbacktest/examples/spot/btcusdt_20240808.gz"),
                       1.0, /*mbo=*/false);
}

}  // namespace
}  // namespace fxt
