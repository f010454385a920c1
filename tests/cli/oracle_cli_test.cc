// The synthetic market's oracle as a user reaches it: fxt synth --latent, ingest, train, and
// fxt eval --oracle, whose ceiling is at or above the model's and every baseline's AUC on the
// same rows; bad --oracle use is a one-line error with exit 2.
#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"

namespace fxt {
namespace {

using test::run_fxt;

TEST(OracleCli, TheOracleIsTheCeilingOnTheSameRows) {
  const std::string dir = test::scratch_dir();
  ASSERT_EQ(run_fxt("synth -q --latent --events 30000 --seed 2 --out " + dir + "/m.dbn").exit_code,
            0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/m.dbn.latent"));
  ASSERT_TRUE(std::filesystem::exists(dir + "/m.dbn.synth.json"));
  ASSERT_EQ(run_fxt("ingest -q " + dir + "/m.dbn --out " + dir + "/store").exit_code, 0);
  auto t = run_fxt("train -q --store " + dir + "/store --run-dir " + dir +
                   "/run --epochs 1 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 "
                   "--d-model 32 --d-state 8 --head-dim 32 --head-mid 16 --warmup 1 "
                   "--baseline-max-rows 3000 --gbdt-max-rows 3000");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  auto e =
      run_fxt("eval -q --checkpoint " + dir + "/run/best.ckpt --threads 2 --oracle " + dir +
              "/m.dbn.synth.json --oracle-rows 400 --oracle-paths 48 --out " + dir + "/eval.json");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  auto text = read_file(dir + "/eval.json");
  ASSERT_TRUE(text.ok());
  const auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j.contains("oracle")) << j.dump(2);
  const auto& o = j["oracle"];
  EXPECT_EQ(o["rows"], 400);
  ASSERT_EQ(o["horizons"].size(), 2u);
  for (const auto& h : o["horizons"]) {
    const double oracle = h["oracle_auc"].get<double>();
    EXPECT_GT(oracle, 0.6) << h.dump();
    EXPECT_GE(oracle, h["model_auc"].get<double>()) << h.dump();
    EXPECT_GE(oracle, h["best_baseline_auc"].get<double>()) << h.dump();
    EXPECT_NE(e.output.find(h["line"].get<std::string>()), std::string::npos) << e.output;
  }
  // The oracle needs the store its config generated.
  ASSERT_EQ(run_fxt("synth -q --events 25000 --seed 3 --out " + dir + "/o.dbn").exit_code, 0);
  ASSERT_EQ(run_fxt("ingest -q " + dir + "/o.dbn --out " + dir + "/other").exit_code, 0);
  auto bad = run_fxt("eval -q --checkpoint " + dir + "/run/best.ckpt --split all --store " + dir +
                     "/other --oracle " + dir + "/m.dbn.synth.json");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
  EXPECT_NE(bad.output.find("the evaluated data must be the one store generated from it"),
            std::string::npos)
      << bad.output;
}

// fxt cv --oracle: the oracle on the pooled test rows. With one fold its rows are the fold's
// test rows, so it must equal fxt eval --oracle of the fold's checkpoint number for number (the
// same picked snapshots, continuations and scores); with two folds it is the ceiling of the
// pooled rows, and a store it did not generate is a one-line error.
TEST(OracleCli, CvPoolsTheOracleOverTheFoldsTestRows) {
  const std::string dir = test::scratch_dir();
  ASSERT_EQ(run_fxt("synth -q --latent --events 30000 --seed 4 --out " + dir + "/m.dbn").exit_code,
            0);
  ASSERT_EQ(run_fxt("ingest -q " + dir + "/m.dbn --out " + dir + "/store").exit_code, 0);
  const std::string flags =
      " --store " + dir +
      "/store --epochs 1 --steps-per-epoch 3 --batch 8 --seq 16 "
      "--horizons 10,30 --d-model 32 --d-state 8 --head-dim 32 --head-mid 16 --warmup 1 "
      "--baseline-max-rows 2000 --gbdt-max-rows 2000 --bootstrap 20 --threads 2 --oracle-paths 32 "
      "--oracle " +
      dir + "/m.dbn.synth.json";
  auto read_json = [](const std::string& path) {
    auto text = read_file(path);
    EXPECT_TRUE(text.ok()) << path;
    return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
  };
  auto one = run_fxt("cv -q --folds 1 --oracle-rows 200 --out " + dir + "/cv1" + flags);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto cv1 = read_json(dir + "/cv1/cv.json");
  ASSERT_TRUE(cv1.contains("oracle")) << cv1.dump(2);
  EXPECT_EQ(cv1["oracle"]["rows"], 200);
  auto e = run_fxt("eval -q --checkpoint " + dir + "/cv1/fold_0/best.ckpt --bootstrap 20 " +
                   "--threads 2 --oracle-paths 32 --oracle-rows 200 --oracle " + dir +
                   "/m.dbn.synth.json --out " + dir + "/eval1.json");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const auto ev = read_json(dir + "/eval1.json");
  ASSERT_EQ(ev["oracle"]["horizons"].size(), 2u);
  for (size_t h = 0; h < 2; ++h) {
    const auto &c = cv1["oracle"]["horizons"][h], v = ev["oracle"]["horizons"][h];
    for (const char* key : {"oracle_auc", "model_auc", "best_baseline_auc"}) {
      EXPECT_EQ(c[key].get<double>(), v[key].get<double>()) << key << " h" << h;
    }
    EXPECT_NE(one.output.find(c["line"].get<std::string>()), std::string::npos) << one.output;
  }
  EXPECT_NE(one.output.find("oracle (the synthetic market's ceiling) on 200 of pooled test rows"),
            std::string::npos)
      << one.output;

  auto two = run_fxt("cv -q --folds 2 --oracle-rows 2000 --out " + dir + "/cv2" + flags);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const auto cv2 = read_json(dir + "/cv2/cv.json");
  ASSERT_TRUE(cv2.contains("oracle")) << cv2.dump(2);
  for (const auto& h : cv2["oracle"]["horizons"]) {
    EXPECT_GT(h["oracle_auc"].get<double>(), 0.6) << h.dump();
    EXPECT_GE(h["oracle_auc"].get<double>(), h["model_auc"].get<double>()) << h.dump();
    EXPECT_GE(h["oracle_auc"].get<double>(), h["best_baseline_auc"].get<double>()) << h.dump();
  }

  ASSERT_EQ(run_fxt("synth -q --events 30000 --seed 5 --out " + dir + "/o.dbn").exit_code, 0);
  ASSERT_EQ(run_fxt("ingest -q " + dir + "/o.dbn --out " + dir + "/other").exit_code, 0);
  auto bad =
      run_fxt("cv -q --folds 1 --out " + dir + "/cv3" + flags + " --store " + dir + "/other");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
  EXPECT_NE(bad.output.find("the evaluated data must be the one store generated from it"),
            std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace fxt
