// The perception model end to end as a user runs it (issue 3): on the real ES MBO store (train a
// few steps with both CfC time modes, evaluate, predict every snapshot) and through
// `fxt quickstart` on the synthetic market, where the trained model must beat the base rate and
// match the logistic baseline at the two shortest horizons, and the pipeline must end in the
// backtests and the HTML report.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "data/store.h"
#include "test_util.h"
#include "train/gbdt.h"

namespace fxt {
namespace {

using test::run_fxt;

nlohmann::json read_json(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

// A small model so the test stays quick (and quick under the sanitizers).
const char* kFewSteps =
    " --epochs 2 --steps-per-epoch 4 --batch 8 --seq 16 --horizons 30,100 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 64 --threads 2"
    " --baseline-max-rows 2000 --gbdt-max-rows 2000";

TEST(ModelEndToEnd, EsMboStoreTrainsEvaluatesAndPredicts) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = test::scratch_dir();
  auto in =
      run_fxt("-q ingest " + test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
              test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(in.exit_code, 0) << in.output;
  auto store = StoreReader::open(dir + "/es");
  ASSERT_TRUE(store.ok());
  ASSERT_EQ(store->size(), 47023u);

  std::vector<std::vector<std::string>> predictions;
  for (const std::string mode : {"stride", "real"}) {
    const std::string run = dir + "/run-" + mode;
    auto t =
        run_fxt("train -q --store " + dir + "/es --out " + run + " --cfc-time " + mode + kFewSteps);
    ASSERT_EQ(t.exit_code, 0) << t.output;
    const std::vector<std::string> epochs = lines_of(run + "/metrics.jsonl");
    ASSERT_EQ(epochs.size(), 2u);
    for (const std::string& line : epochs) {
      const auto m = nlohmann::json::parse(line);
      EXPECT_TRUE(std::isfinite(m["val_loss"].get<double>())) << line;
    }
    EXPECT_EQ(read_json(run + "/run.json")["config"]["cfc_time"], mode);

    auto e = run_fxt("eval -q --checkpoint " + run + "/best.ckpt --out " + run + "/eval.json");
    ASSERT_EQ(e.exit_code, 0) << e.output;
    const nlohmann::json ev = read_json(run + "/eval.json");
    EXPECT_EQ(ev["split"], "test");
    EXPECT_GT(ev["rows"].get<int64_t>(), 5000);  // the last 15 % of 47,023 snapshots
    for (const std::string who : {"model", "logreg", "gbdt_lags", "base_rate"}) {
      if (who == "gbdt_lags" && !gbdt_available()) continue;  // a build without XGBoost
      const nlohmann::json& p = ev.contains(who) ? ev[who] : ev["baselines"][who];
      ASSERT_EQ(p["horizons"].size(), 2u) << who;
      for (const auto& h : p["horizons"]) {
        EXPECT_GT(h["n_valid"].get<int64_t>(), 0) << who;
        const double auc = h["auc"].get<double>();
        EXPECT_TRUE(auc >= 0.0 && auc <= 1.0) << who << " " << auc;
      }
    }
    // The comparison table goes to stdout when the JSON goes to a file.
    EXPECT_NE(e.output.find("mean AUC: model"), std::string::npos) << e.output;

    auto p = run_fxt("predict -q --checkpoint " + run + "/best.ckpt --store " + dir + "/es --out " +
                     run + "/p.csv --threads 2");
    ASSERT_EQ(p.exit_code, 0) << p.output;
    std::vector<std::string> rows = lines_of(run + "/p.csv");
    ASSERT_EQ(rows.size(), 47024u);
    EXPECT_EQ(rows[0], "ts_ns,p_h30,p_h100");
    // Every snapshot in store order, two probabilities strictly inside (0, 1).
    for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{23511}, uint64_t{47022}}) {
      const std::string& row = rows[i + 1];
      const size_t c1 = row.find(','), c2 = row.find(',', c1 + 1);
      ASSERT_NE(c2, std::string::npos) << row;
      EXPECT_EQ(std::stoll(row.substr(0, c1)), store->ts_ns[i]) << row;
      for (const double v :
           {std::stod(row.substr(c1 + 1, c2 - c1 - 1)), std::stod(row.substr(c2 + 1))}) {
        EXPECT_GT(v, 0.0) << row;
        EXPECT_LT(v, 1.0) << row;
      }
    }
    predictions.push_back(std::move(rows));
  }
  // The CfC sees different time steps in the two modes, so the models differ.
  EXPECT_NE(predictions[0], predictions[1]);
}

TEST(ModelEndToEnd, QuickstartComparesTheModelWithTheBaselines) {
#ifdef FXT_SANITIZED
  GTEST_SKIP() << "two minutes of training in Release are far longer under the sanitizers; "
                  "`make test` runs this test";
#endif
  const std::string dir = test::scratch_dir() + "/qs";
  // The demo's pipeline at a third of its size (its full run is measured in docs/QUICKSTART.md).
  auto q = run_fxt("quickstart -q --out " + dir +
                   " --threads 2 --events 300000 --backtest-events 30000 --oracle-rows 200"
                   " --epochs 2 --steps-per-epoch 60");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("mean AUC: model"), std::string::npos) << q.output;
  const nlohmann::json ev = read_json(dir + "/eval.json");
  ASSERT_GE(ev["horizons"].size(), 2u);
  const double model_mean = ev["model"]["mean_auc"].get<double>();
  EXPECT_GT(model_mean, 0.5);
  EXPECT_DOUBLE_EQ(ev["base_rate"]["mean_auc"].get<double>(), 0.5);
  // Every baseline fit, and one verdict line per horizon printed and in the JSON.
  for (const char* b : {"logreg", "logreg_lags", "gbdt", "gbdt_lags"}) {
    EXPECT_EQ(ev["baselines"].contains(b), b[0] == 'l' || gbdt_available()) << b;
  }
  // The model started from the GAM (--gam-bins 8 by default), which is reported as a baseline.
  EXPECT_TRUE(ev["baselines"].contains("gam"));
  for (const auto& e : ev["vs_best_baseline"]["horizons"]) {
    EXPECT_NE(q.output.find(e["line"].get<std::string>()), std::string::npos) << q.output;
  }
  // The rest of the pipeline: predictions of the unseen session, both backtests (mm under three
  // queue models) and the self-contained report with their charts and tables.
  EXPECT_NE(q.output.find("report: " + dir + "/report.html"), std::string::npos) << q.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/backtest-signal/stats.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/backtest-mm/power-2/equity.csv"));
  auto report = read_file(dir + "/report.html");
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->find("http://"), std::string::npos);
  EXPECT_EQ(report->find("https://"), std::string::npos);
  for (const char* id :
       {"comparison", "sec1-loss", "sec1-val-auc", "sec1-sigma", "sec1-lambda", "sec2-metrics",
        "sec2-lift", "sec2-auc", "sec2-reliability-h30", "sec2-reliability-h1000", "sec3-equity",
        "sec3-fills", "sec3-stats", "sec4-equity", "sec4-drawdown", "sec4-position", "sec4-band"}) {
    EXPECT_NE(report->find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
}

}  // namespace
}  // namespace fxt
