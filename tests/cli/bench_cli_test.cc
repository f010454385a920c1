// `fxt bench predict` and `fxt bench train` as a user runs them, on the CPU backend (CI has no
// GPU): the JSON they write and exit 2 with a one-line error on bad flags.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace fxt {
namespace {
using test::run_fxt;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(BenchCli, PredictScoresEverySnapshotOnTheCpu) {
  const std::string out = test::scratch_dir() + "/predict.json";
  auto r = run_fxt("bench predict --device cpu --rows 40 --window 8 --batch 16 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json(out);
  EXPECT_EQ(j["command"], "fxt bench predict");
  EXPECT_EQ(j["device"]["type"], "cpu");
  EXPECT_EQ(j["rows"], 40);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["snapshots"], 40);  // every snapshot scored once
  EXPECT_EQ(j["results"][0]["batch"], 16);
  EXPECT_EQ(j["results"][0]["K"], 8);
  EXPECT_GT(j["results"][0]["snapshots_per_s"].get<double>(), 0.0);
}

TEST(BenchCli, TrainWritesStepRowsOnTheCpu) {
  const std::string out = test::scratch_dir() + "/train.json";
  auto r = run_fxt("bench train --device cpu --batch 2,3 --window 8 --steps 1 --warmup 0 --out " +
                   out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json(out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["B"], 3);
  const double ms = j["results"][1]["step_ms"].get<double>();
  EXPECT_NEAR(j["results"][1]["sequences_per_s"].get<double>(), 3 * 1e3 / ms, 1e-9 * 3e3 / ms);
}

TEST(BenchCli, BadFlagsExitTwoWithOneLine) {
  struct Bad {
    const char* args;
    const char* says;
  };
  for (const Bad& b :
       {Bad{"bench predict --device cpu --batch 0", "item '0' is not an integer in [1, 16777216]"},
        Bad{"bench predict --device cpu --batch 8,x", "--batch '8,x': item 'x' is not an integer"},
        // Issue 14: std::stoi read "1e3" as 1 and benchmarked batch 1 with exit 0.
        Bad{"bench predict --device cpu --batch 1e3", "item '1e3' is not an integer"},
        Bad{"bench predict --device cpu --rows 10 --window 64", "--rows must be >= --window (64)"},
        Bad{"bench train --device cpu --batch ,", "--batch ',': item '' is not an integer"},
        Bad{"bench train --device cpu --precision tf32",
            "--precision tf32: the CPU backend computes in FP32 only (it needs --device cuda)"},
        Bad{"bench predict --device cpu --precision bf16",
            "--precision bf16: the CPU backend computes in FP32 only (it needs --device cuda)"},
        Bad{"bench predict --device cpu --precision fp16", "--precision: fp16 not in"}}) {
    auto r = run_fxt(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << ": " << r.output;
    EXPECT_NE(r.output.find(b.says), std::string::npos) << b.args << ": " << r.output;
  }
}

}  // namespace
}  // namespace fxt
