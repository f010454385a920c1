// Fault injection (issue 14, docs/ROBUSTNESS.md): fxt killed with SIGKILL at seeded random
// points of ingest, train and cv (core/fault.h), then rerun as a user would, must give the
// bytes of an uninterrupted run; random bit flips in cv's rows.bin must be refused. The
// uninterrupted references are built once for the suite (test::shared_fixture); the
// interrupted runs use long, different directory names, so every comparison also checks that
// no output depends on where the run lives.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/random.h"
#include "test_util.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;
using test::file_bytes;
using test::jsonl_without;
using test::run_fxt;

const char* kModel =
    " --batch 8 --seq 16 --horizons 10,30 --d-model 32 --d-state 8 --head-dim 32"
    " --head-mid 16 --warmup 2 --eval-batch 32 --baselines none --threads 2";
constexpr int kEpochs = 3, kSteps = 3;      // the training run: 9 optimizer steps
constexpr int kCvFolds = 2, kCvEpochs = 2;  // the cv: 2 folds x 2 epochs x kSteps
constexpr const char* kLong = "an_interrupted_run_under_a_much_longer_name_than_the_reference";

std::string train_args() {
  return std::string(" --epochs ") + std::to_string(kEpochs) + " --steps-per-epoch " +
         std::to_string(kSteps) + kModel;
}
std::string cv_args() {
  return std::string(" --folds ") + std::to_string(kCvFolds) + " --epochs " +
         std::to_string(kCvEpochs) + " --steps-per-epoch " + std::to_string(kSteps) +
         " --bootstrap 50" + kModel;
}

std::vector<std::string> fixture_commands() {
  return {"synth -q --events 4000 --seed 3 --out DIR/m.dbn.zst",
          "ingest -q DIR/m.dbn.zst --out DIR/store",
          "train -q --store DIR/store --run-dir DIR/train" + train_args(),
          "cv -q --store DIR/store --out DIR/cv" + cv_args()};
}

// Runs `fxt ARGS` with FXT_FAULT=spec (inherited by the child): exit 137 expected.
test::CommandResult run_with_fault(const std::string& spec, const std::string& args) {
  ::setenv("FXT_FAULT", spec.c_str(), 1);
  auto r = run_fxt(args);
  ::unsetenv("FXT_FAULT");
  return r;
}

// Expects the store at `dir` to hold the files of `ref`, byte for byte; meta.json as JSON
// without its wall-clock "created_utc".
void expect_same_store(const std::string& dir, const std::string& ref) {
  std::vector<std::string> names, ref_names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(ref)) {
    ref_names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::sort(ref_names.begin(), ref_names.end());
  ASSERT_EQ(names, ref_names);
  for (const std::string& n : names) {
    if (n == "meta.json") {
      auto a = nlohmann::json::parse(file_bytes(dir + "/" + n));
      auto b = nlohmann::json::parse(file_bytes(ref + "/" + n));
      a.erase("created_utc");
      b.erase("created_utc");
      EXPECT_EQ(a, b) << n;
    } else {
      EXPECT_TRUE(file_bytes(dir + "/" + n) == file_bytes(ref + "/" + n)) << n << " differs";
    }
  }
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::shared_fxt_fixture("fault", fixture_commands()));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(dir_->empty()) << "the shared fixture could not be built";
    out_ = test::scratch_dir();
  }
  static std::string* dir_;  // the uninterrupted references (read only)
  std::string out_;          // this test's scratch directory
};
std::string* FaultInjectionTest::dir_ = nullptr;

TEST_F(FaultInjectionTest, IngestKilledAtRandomPointsLeavesNoStoreAndTheRerunIsIdentical) {
  const std::string ref = *dir_ + "/store";
  const auto meta = nlohmann::json::parse(file_bytes(ref + "/meta.json"));
  const uint64_t blocks = meta["counts"]["snapshots"].get<uint64_t>() / 1024;
  ASSERT_GE(blocks, 2u);
  Rng rng(14);
  for (int trial = 0; trial < 3; ++trial) {
    // Inside the snapshot stream (a seeded 1024-snapshot block), or after meta.json.
    const std::string spec = trial == 2
                                 ? std::string("store.before_rename")
                                 : "store.snapshots:" + std::to_string(1 + rng.uniform(blocks));
    SCOPED_TRACE(spec);
    const std::string d = out_ + "/" + kLong + std::to_string(trial);
    const std::string cmd = "ingest -q " + *dir_ + "/m.dbn.zst --out " + d;
    EXPECT_EQ(run_with_fault(spec, cmd).exit_code, 128 + 9);
    EXPECT_FALSE(fs::exists(d)) << "a killed ingest must not leave a store that looks whole";
    auto again = run_fxt(cmd);
    ASSERT_EQ(again.exit_code, 0) << again.output;
    expect_same_store(d, ref);
    for (const auto& e : fs::directory_iterator(out_)) {
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    }
  }
}

TEST_F(FaultInjectionTest, TrainKilledAtRandomPointsResumesToTheUninterruptedBytes) {
  const std::string ref = *dir_ + "/train";
  Rng rng(1414);
  // One kill inside an epoch's steps, one between the metrics line and the checkpoints, one
  // after the checkpoints; the step or epoch is drawn from the seed.
  const std::string specs[] = {
      "train.step:" + std::to_string(1 + rng.uniform(kEpochs * kSteps)),
      "train.line_written:" + std::to_string(1 + rng.uniform(kEpochs)),
      "train.epoch_written:" + std::to_string(1 + rng.uniform(kEpochs - 1)),
  };
  int trial = 0;
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    const std::string d = out_ + "/" + kLong + std::to_string(trial++);
    const std::string cmd = "train -q --store " + *dir_ + "/store --run-dir " + d + train_args();
    EXPECT_EQ(run_with_fault(spec, cmd).exit_code, 128 + 9);
    // What a user does: --resume when a checkpoint exists, else the same command again.
    auto again = run_fxt(fs::exists(d + "/last.ckpt") ? "train -q --resume --run-dir " + d : cmd);
    ASSERT_EQ(again.exit_code, 0) << again.output;
    for (const char* f : {"/last.ckpt", "/best.ckpt"}) {
      EXPECT_TRUE(file_bytes(d + f) == file_bytes(ref + f)) << f << " differs";
    }
    EXPECT_EQ(jsonl_without(d + "/metrics.jsonl", "seconds"),
              jsonl_without(ref + "/metrics.jsonl", "seconds"));
  }
}

TEST_F(FaultInjectionTest, CvKilledAtRandomPointsResumesToTheUninterruptedBytes) {
  const std::string ref = *dir_ + "/cv";
  Rng rng(141414);
  const std::string specs[] = {
      "train.step:" + std::to_string(1 + rng.uniform(kCvFolds * kCvEpochs * kSteps)),
      "cv.rows_written:" + std::to_string(1 + rng.uniform(kCvFolds)),
  };
  int trial = 0;
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    const std::string d = out_ + "/" + kLong + std::to_string(trial++);
    const std::string cmd = "cv -q --store " + *dir_ + "/store --out " + d + cv_args();
    EXPECT_EQ(run_with_fault(spec, cmd).exit_code, 128 + 9);
    auto again = run_fxt(cmd);  // a rerun in the same --out resumes (docs/CV.md)
    ASSERT_EQ(again.exit_code, 0) << again.output;
    for (int f = 0; f < kCvFolds; ++f) {
      const std::string fold = "/fold_" + std::to_string(f);
      for (const char* file : {"/rows.bin", "/last.ckpt", "/best.ckpt"}) {
        EXPECT_TRUE(file_bytes(d + fold + file) == file_bytes(ref + fold + file))
            << fold << file << " differs";
      }
      EXPECT_EQ(jsonl_without(d + fold + "/metrics.jsonl", "seconds"),
                jsonl_without(ref + fold + "/metrics.jsonl", "seconds"));
    }
    EXPECT_EQ(file_bytes(d + "/cv.json"), file_bytes(ref + "/cv.json"));
  }
}

// Before rows.bin carried a CRC32, a flipped logit bit pooled into other AUCs with exit 0.
TEST_F(FaultInjectionTest, RandomBitFlipsInCvRowsAreRefused) {
  Rng rng(77);
  for (int trial = 0; trial < 3; ++trial) {
    const std::string d = out_ + "/cv" + std::to_string(trial);
    fs::copy(*dir_ + "/cv", d, fs::copy_options::recursive);
    const std::string rows = d + "/fold_" + std::to_string(rng.uniform(kCvFolds)) + "/rows.bin";
    std::string bytes = file_bytes(rows);
    ASSERT_FALSE(bytes.empty());
    const size_t at = rng.uniform(bytes.size());
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << rng.uniform(8)));
    test::write_bytes(rows, bytes);
    SCOPED_TRACE(rows + " byte " + std::to_string(at));
    auto r = run_fxt("cv -q --store " + *dir_ + "/store --out " + d + cv_args());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find("rows.bin"), std::string::npos) << r.output;
    EXPECT_EQ(file_bytes(d + "/cv.json"), file_bytes(*dir_ + "/cv/cv.json"));  // not rewritten
  }
}

}  // namespace
}  // namespace fxt
