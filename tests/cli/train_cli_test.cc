// fxt train / eval / predict as a user runs them: synth -> ingest -> train -> eval -> predict,
// resume, and the one-line exit-code-2 errors for bad inputs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"
#include "train/gbdt.h"

namespace fxt {
namespace {

using test::run_fxt;

const char* kSmall =
    " --epochs 2 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 32 --baseline-max-rows 2000 "
    "--gbdt-max-rows 2000";

// One error line: "fxt: error: ..." and nothing else.
void expect_one_line_error(const test::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(r.output.rfind("fxt: error: ", 0), 0u) << r.output;
}

class TrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir();
    ASSERT_EQ(run_fxt("synth -q --events 20000 --seed 1 --out " + dir_ + "/m.dbn.zst").exit_code,
              0);
    ASSERT_EQ(run_fxt("ingest -q " + dir_ + "/m.dbn.zst --out " + dir_ + "/store").exit_code, 0);
  }
  std::string dir_;
};

TEST_F(TrainCliTest, TrainEvalPredictEndToEnd) {
  const std::string run = dir_ + "/run";
  auto t = run_fxt("train -q --store " + dir_ + "/store --run-dir " + run + kSmall);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_TRUE(std::filesystem::exists(run + "/best.ckpt"));
  EXPECT_TRUE(std::filesystem::exists(run + "/last.ckpt"));
  EXPECT_TRUE(std::filesystem::exists(run + "/run.json"));

  auto e = run_fxt("eval -q --checkpoint " + run + "/best.ckpt --out " + dir_ + "/eval.json");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  auto text = read_file(dir_ + "/eval.json");
  ASSERT_TRUE(text.ok());
  const auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["split"], "test");
  for (const char* who : {"model", "base_rate"}) EXPECT_EQ(j[who]["horizons"].size(), 2u) << who;
  for (const char* who : {"logreg", "logreg_lags", "gbdt", "gbdt_lags"}) {
    if (who[0] == 'g' && !gbdt_available()) continue;  // a build without XGBoost
    EXPECT_EQ(j["baselines"][who]["horizons"].size(), 2u) << who;
  }
  EXPECT_EQ(j["vs_best_baseline"]["horizons"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["base_rate"]["horizons"][0]["auc"].get<double>(), 0.5);

  auto p = run_fxt("predict -q --checkpoint " + run + "/best.ckpt --store " + dir_ +
                   "/store --out " + dir_ + "/p.csv");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  std::ifstream f(dir_ + "/p.csv");
  std::string line;
  int rows = 0;
  std::getline(f, line);
  EXPECT_EQ(line, "ts_ns,p_h10,p_h30");
  while (std::getline(f, line)) ++rows;
  EXPECT_EQ(rows, 20000);
}

TEST_F(TrainCliTest, ResumeGivesTheSameBytes) {
  const std::string base = "train -q --store " + dir_ + "/store" + kSmall;
  ASSERT_EQ(run_fxt(base + " --run-dir " + dir_ + "/a").exit_code, 0);
  ASSERT_EQ(run_fxt(base + " --run-dir " + dir_ + "/b --stop-after 1").exit_code, 0);
  auto r = run_fxt("train -q --resume --run-dir " + dir_ + "/b --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = read_file(dir_ + "/a/last.ckpt"), b = read_file(dir_ + "/b/last.ckpt");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST_F(TrainCliTest, BadInputsExitTwoWithOneLine) {
  expect_one_line_error(
      run_fxt("train -q --store " + dir_ + "/nowhere --run-dir " + dir_ + "/r" + kSmall));
  expect_one_line_error(run_fxt("eval -q --checkpoint " + dir_ + "/missing.ckpt"));
  expect_one_line_error(run_fxt("train -q --resume --run-dir " + dir_ + "/never"));
  expect_one_line_error(run_fxt("train -q --store " + dir_ + "/store --run-dir " + dir_ +
                                "/r --early-stop auc_h7" + kSmall));

  const std::string run = dir_ + "/run";
  ASSERT_EQ(run_fxt("train -q --store " + dir_ + "/store --run-dir " + run + kSmall).exit_code, 0);
  // A corrupt checkpoint: one flipped byte near the end (inside a tensor).
  auto bytes = read_file(run + "/best.ckpt");
  ASSERT_TRUE(bytes.ok());
  std::string bad = *bytes;
  bad[bad.size() - 10] = static_cast<char>(bad[bad.size() - 10] ^ 0x55);
  ASSERT_TRUE(write_file_atomic(dir_ + "/bad.ckpt", bad).ok());
  expect_one_line_error(run_fxt("eval -q --checkpoint " + dir_ + "/bad.ckpt"));
  expect_one_line_error(run_fxt("predict -q --checkpoint " + dir_ + "/bad.ckpt --store " + dir_ +
                                "/store --out " + dir_ + "/p.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/p.csv"));
  // Horizons other than the checkpoint's.
  expect_one_line_error(run_fxt("eval -q --checkpoint " + run + "/best.ckpt --horizons 10,20"));
  expect_one_line_error(run_fxt("train -q --resume --run-dir " + run + " --horizons 10,20"));
  // A missing store for predict.
  expect_one_line_error(run_fxt("predict -q --checkpoint " + run + "/best.ckpt --store " + dir_ +
                                "/nowhere --out " + dir_ + "/p.csv"));
}

}  // namespace
}  // namespace fxt
