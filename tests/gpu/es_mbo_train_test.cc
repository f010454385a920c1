// Training on the real ES MBO store on the GPU gives the CPU backend's metrics within float
// tolerance (issue 4's "done when"): the same config trained with --device cpu and --device
// cuda, in both CfC time modes; validation loss per epoch and the test-split metrics of
// `fxt eval` are compared, and `fxt predict`'s probability of every snapshot.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "gpu_test_util.h"
#include "test_util.h"

namespace fxt {
namespace {

using test::run_fxt;

std::vector<nlohmann::json> jsonl(const std::string& path) {
  std::ifstream f(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// predict's CSV (ts_ns,p_h...) as numbers per row, header skipped.
std::vector<std::vector<double>> csv_rows(const std::string& path) {
  std::vector<std::vector<double>> rows;
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  while (std::getline(f, line)) {
    std::vector<double> r;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) r.push_back(std::stod(cell));
    rows.push_back(std::move(r));
  }
  return rows;
}

TEST(GpuEndToEnd, EsMboStoreMatchesTheCpuBackend) {
  FXT_SKIP_WITHOUT_GPU();
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = test::scratch_dir();
  auto in =
      run_fxt("-q ingest " + test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
              test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(in.exit_code, 0) << in.output;
  const std::string cfg =
      " --epochs 2 --steps-per-epoch 10 --batch 16 --seq 64 --horizons 30,100 --warmup 5"
      " --threads 4";
  for (const std::string mode : {"stride", "real"}) {
    nlohmann::json eval[2];
    std::vector<std::vector<double>> pred[2];
    std::vector<nlohmann::json> epochs[2];
    int i = 0;
    for (const std::string device : {"cpu", "cuda"}) {
      const std::string run = dir + "/" + mode + "-" + device;
      auto t = run_fxt("train -q --store " + dir + "/es --out " + run + " --device " + device +
                       " --cfc-time " + mode + cfg);
      ASSERT_EQ(t.exit_code, 0) << t.output;
      epochs[i] = jsonl(run + "/metrics.jsonl");
      ASSERT_EQ(epochs[i].size(), 2u);
      auto e = run_fxt("eval -q --checkpoint " + run + "/last.ckpt --bootstrap 0 --threads 4 --device " +
                       device + " --out " + run + "/eval.json");
      ASSERT_EQ(e.exit_code, 0) << e.output;
      eval[i] = nlohmann::json::parse(*read_file(run + "/eval.json"));
      // fxt predict: every snapshot of the store through its own window (on the GPU through
      // gpu::WindowScorer, score_inference's device path).
      auto p = run_fxt("predict -q --checkpoint " + run + "/last.ckpt --store " + dir +
                       "/es --threads 4 --device " + device + " --out " + run + "/pred.csv");
      ASSERT_EQ(p.exit_code, 0) << p.output;
      pred[i] = csv_rows(run + "/pred.csv");
      ++i;
    }
    for (int ep = 0; ep < 2; ++ep) {
      const double c = epochs[0][ep]["val_loss"], g = epochs[1][ep]["val_loss"];
      EXPECT_NEAR(g, c, 1e-3 * std::abs(c)) << mode << " epoch " << ep + 1;
      const double tc = epochs[0][ep]["train_loss"], tg = epochs[1][ep]["train_loss"];
      EXPECT_NEAR(tg, tc, 1e-3 * std::abs(tc)) << mode << " epoch " << ep + 1;
    }
    EXPECT_EQ(eval[0]["rows"], eval[1]["rows"]);
    ASSERT_EQ(pred[0].size(), pred[1].size());
    ASSERT_GT(pred[0].size(), 40000u);  // 47,023 snapshots, one row each
    double worst = 0.0;
    for (size_t r = 0; r < pred[0].size(); ++r) {
      ASSERT_EQ(pred[0][r].size(), 3u);
      ASSERT_EQ(pred[0][r][0], pred[1][r][0]);  // the same timestamp
      for (size_t h = 1; h < 3; ++h) worst = std::max(worst, std::abs(pred[0][r][h] - pred[1][r][h]));
    }
    EXPECT_LT(worst, 1e-4) << mode << ": largest |p_cuda - p_cpu| over every snapshot";
    for (const std::string who : {"model", "logreg"}) {
      for (size_t h = 0; h < 2; ++h) {
        const auto& c = who == "model" ? eval[0][who]["horizons"][h]
                                       : eval[0]["baselines"][who]["horizons"][h];
        const auto& g = who == "model" ? eval[1][who]["horizons"][h]
                                       : eval[1]["baselines"][who]["horizons"][h];
        EXPECT_NEAR(g["auc"].get<double>(), c["auc"].get<double>(), 2e-3) << mode << " " << who;
        EXPECT_NEAR(g["log_loss"].get<double>(), c["log_loss"].get<double>(),
                    1e-3 * c["log_loss"].get<double>())
            << mode << " " << who;
      }
    }
  }
}

}  // namespace
}  // namespace fxt
