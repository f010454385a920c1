// Issue 14, "never silent, never wrong": each defect a new user or a fault-injection probe
// found, as a regression test that fails on the code before the fix (docs/ROBUSTNESS.md).
// Hostile flags and config files, bit flips in stores and checkpoints, records that must not
// be overwritten, and bit-identical resume whatever the run directory is called.
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;
using test::file_bytes;
using test::jsonl_without;
using test::run_fxt;
using test::write_bytes;

const char* kSmall =
    " --epochs 2 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 32 --baselines none";

// Exit 2 with exactly one line "fxt: error: ..." holding `needle`.
void expect_usage_error(const test::CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "missing '" << needle << "' in\n"
                                                      << r.output;
}

// The suite's inputs: one small market (4,000 events), its store and one tiny training run
// without baselines (their fits are not the subject here and cost most of a run under ASan).
// Built once for all the suite's processes (test::shared_fixture) and only read; each test
// writes under its own scratch directory out_.
std::vector<std::string> fixture_commands() {
  return {"synth -q --events 4000 --seed 1 --out DIR/m.dbn.zst",
          "ingest -q DIR/m.dbn.zst --out DIR/store",
          std::string("train -q --store DIR/store --run-dir DIR/run") + kSmall};
}

class RobustnessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::shared_fxt_fixture("robustness", fixture_commands()));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(dir_->empty()) << "the shared fixture could not be built";
    out_ = test::scratch_dir();
  }
  static std::string dbn() { return *dir_ + "/m.dbn.zst"; }
  static std::string store() { return *dir_ + "/store"; }
  static std::string run() { return *dir_ + "/run"; }
  // A copy of the store with one bit of bid_px.bin flipped (meta.json untouched).
  std::string corrupt_store() const {
    const std::string bad = out_ + "/bad_store";
    if (!fs::exists(bad)) {
      fs::copy(store(), bad, fs::copy_options::recursive);
      std::string px = file_bytes(bad + "/bid_px.bin");
      px[px.size() / 2] = static_cast<char>(px[px.size() / 2] ^ 0x10);
      write_bytes(bad + "/bid_px.bin", px);
    }
    return bad;
  }
  static std::string* dir_;  // the shared fixture (read only)
  std::string out_;          // this test's scratch directory
};
std::string* RobustnessTest::dir_ = nullptr;

// ---- integer and float flags: one range check for all (cli/flag_checks.h) --------------

TEST_F(RobustnessTest, NegativeCountsAndSeedsAreRefused) {
  const std::string out = out_ + "/x.dbn";
  // Before: -5 wrapped to 2^64 - 5 events and ran "forever".
  expect_usage_error(run_fxt("synth --out " + out + " --events -5"), "--events");
  expect_usage_error(run_fxt("synth --out " + out + " --seed -1"), "--seed");
  expect_usage_error(run_fxt("synth --out " + out + " --events 0x10"), "decimal integer");
  expect_usage_error(run_fxt("eval --checkpoint " + run() + "/best.ckpt --bootstrap-seed -1"),
                     "--bootstrap-seed");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(RobustnessTest, CvEmbargoIsCheckedBeforeThePlanIsWritten) {
  const std::string out = out_ + "/cv_neg";
  expect_usage_error(run_fxt("cv --store " + store() + " --out " + out + " --embargo -1"),
                     "--embargo");
  EXPECT_FALSE(fs::exists(out + "/plan.json"));
}

TEST_F(RobustnessTest, NonFiniteAndOutOfRangeFloatsAreRefused) {
  const std::string base = "train --store " + store() + " --run-dir " + out_ + "/never";
  expect_usage_error(run_fxt(base + " --clip nan"), "--clip");
  expect_usage_error(run_fxt(base + " --lr inf"), "--lr");
  expect_usage_error(run_fxt(base + " --d-model 100000000"), "--d-model");
  EXPECT_FALSE(fs::exists(out_ + "/never"));
}

// ---- config files: strict TOML, FILE:LINE errors (cli/config_file.h) ---------------------

struct ConfigCase {
  const char* text;
  const char* needle;
};

TEST_F(RobustnessTest, StrictConfigRefusesWhatItCannotUse) {
  const std::string cfg = out_ + "/run.toml";
  const ConfigCase cases[] = {
      {"[train\nepochs = 2\n", "run.toml:1: malformed section header '[train'"},
      {"[trian]\nepochs = 2\n", "run.toml:1: unknown section [trian] (did you mean [train]?)"},
      {"[train]\nsteps-per-epochs = 2\n",
       "run.toml:2: unknown key 'steps-per-epochs' in [train] (did you mean 'steps-per-epoch'?)"},
      {"# fees\n[backtest]\nfeez = \"maker=0\"\n",
       "run.toml:3: unknown key 'feez' in [backtest] (did you mean 'fees'?)"},
      {"epochs = 3\n", "run.toml:1: unknown key 'epochs' at the top level"},
      {"[synth]\nevents = \"many\"\n", "run.toml:2: 'events' expects a number"},
      {"[synth]\nevents = -5\n", "run.toml:2: 'events': expected an integer in [1, "},
      {"[synth]\nevents = 5\nevents = 6\n", "run.toml:3: key 'events' is given twice"},
      {"[synth]\njson = 1\n", "run.toml:2: 'json' is a switch"},
      {"[synth]\nsymbol = \"ES\n", "run.toml:2: 'symbol': unterminated string"},
      {"[synth]\nevents 5\n", "run.toml:2: expected 'key = value'"},
  };
  for (const ConfigCase& c : cases) {
    SCOPED_TRACE(c.text);
    write_bytes(cfg, c.text);
    expect_usage_error(run_fxt("synth --config " + cfg + " --out " + out_ + "/cfg.dbn"), c.needle);
  }
  write_bytes(cfg, std::string("\x7f"
                               "ELF\x02\x01\x01\x00\x00",
                               9));
  expect_usage_error(run_fxt("synth --config " + cfg + " --out " + out_ + "/cfg.dbn"),
                     "is not UTF-8 text: not a TOML file");
  EXPECT_FALSE(fs::exists(out_ + "/cfg.dbn"));
}

TEST_F(RobustnessTest, StrictConfigReadsTheTomlFxtUses) {
  const std::string cfg = out_ + "/ok.toml";
  write_bytes(cfg,
              "quiet = true  # top-level flag\n"
              "[synth]\n"
              "events = 2_000\n"
              "seed = 7\n"
              "symbol = 'A#B'  # a literal string holding a hash\n"
              "json = true\n"
              "[train]\n"
              "horizons = \"10,30\"\n"
              "store = [\n  \"a\",\n  \"b\",\n]\n");
  auto r = run_fxt("synth --config " + cfg + " --out " + out_ + "/ok.dbn");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["events"], 2000);
}

// ---- temporary files: removed on every failure path (core/temp_files.h) -----------------

std::vector<std::string> temp_leftovers(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

TEST_F(RobustnessTest, TempFilesAreRemovedWhenTheFinalRenameFails) {
  const std::string d = out_ + "/rename_fails";
  fs::create_directories(d + "/out.dbn/occupied");  // --out is a non-empty directory
  auto r = run_fxt("synth -q --events 2000 --out " + d + "/out.dbn");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_TRUE(temp_leftovers(d).empty());
}

TEST_F(RobustnessTest, TempFilesAreRemovedOnSigterm) {
  const std::string d = out_ + "/sigterm";
  fs::create_directories(d);
  // run_fxt hands its arguments to the shell: start synth, send SIGTERM a second later.
  auto r = run_fxt("synth -q --events 100000000 --out " + d +
                   "/big.dbn & sleep 1; kill -TERM $!; wait $!; echo status=$?");
  EXPECT_NE(r.output.find("status=143"), std::string::npos) << r.output;  // 128 + SIGTERM
  EXPECT_FALSE(fs::exists(d + "/big.dbn"));
  EXPECT_TRUE(temp_leftovers(d).empty());
}

TEST_F(RobustnessTest, BacktestInputErrorLeavesNoRunDirectory) {
  const std::string out = out_ + "/bt_input_error";
  auto r = run_fxt("backtest -q --store " + store() + " --strategy signal --predictions " + out_ +
                   "/no_such.csv --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(RobustnessTest, IngestKilledBeforeTheRenameLeavesNoStore) {
  const std::string d = out_ + "/ingest_kill";
  fs::create_directories(d);
  const std::string cmd = "ingest -q " + dbn() + " --out " + d + "/s";
  // SIGTERM: the handler removes the whole temporary store directory.
  ::setenv("FXT_FAULT", "store.before_rename:1:TERM", 1);
  auto term = run_fxt(cmd);
  ::unsetenv("FXT_FAULT");
  EXPECT_EQ(term.exit_code, 128 + 15) << term.output;
  EXPECT_TRUE(temp_leftovers(d).empty());
  EXPECT_FALSE(fs::exists(d + "/s"));
  // SIGKILL leaves it; the next ingest of the same store removes it and succeeds.
  ::setenv("FXT_FAULT", "store.before_rename", 1);
  auto kill = run_fxt(cmd);
  ::unsetenv("FXT_FAULT");
  EXPECT_EQ(kill.exit_code, 128 + 9) << kill.output;
  EXPECT_EQ(temp_leftovers(d).size(), 1u);
  ASSERT_EQ(run_fxt(cmd).exit_code, 0);
  EXPECT_TRUE(temp_leftovers(d).empty());
  EXPECT_TRUE(fs::exists(d + "/s/meta.json"));
}

TEST_F(RobustnessTest, StaleTempFilesOfAKilledRunAreRemoved) {
  const std::string d = out_ + "/stale";
  fs::create_directories(d + "/s.tmp-999999999");  // a store directory of a gone process
  write_bytes(d + "/s.tmp-999999999/bid_px.bin", "x");
  write_bytes(d + "/f.csv.tmp-999999998", "half");
  ASSERT_EQ(run_fxt("ingest -q " + dbn() + " --out " + d + "/s").exit_code, 0);
  ASSERT_EQ(
      run_fxt("features -q --store " + store() + " --out " + d + "/f.csv --horizons 10").exit_code,
      0);
  EXPECT_TRUE(temp_leftovers(d).empty());
}

// ---- impossible configurations, refused before work ------------------------------------

TEST_F(RobustnessTest, DuplicateHorizonsAreRefused) {
  expect_usage_error(
      run_fxt("train --store " + store() + " --run-dir " + out_ + "/dup --horizons 30,30"),
      "horizon 30 is given twice");
  expect_usage_error(
      run_fxt("features --store " + store() + " --out " + out_ + "/f.csv --horizons 10,10"),
      "given twice");
  EXPECT_FALSE(fs::exists(out_ + "/dup"));
}

// TF32 and BF16 are GPU precisions: on the CPU backend train, eval and predict refuse them
// before reading data (no run directory, no output), and an unknown precision is a usage error.
TEST_F(RobustnessTest, ReducedPrecisionOnTheCpuIsRefused) {
  const std::string says = "the CPU backend computes in FP32 only (it needs --device cuda)";
  for (const std::string p : {"tf32", "bf16"}) {
    expect_usage_error(run_fxt("train --device cpu --precision " + p + " --store " + store() +
                               " --run-dir " + out_ + "/" + p),
                       "--precision " + p + ": " + says);
    EXPECT_FALSE(fs::exists(out_ + "/" + p));
    expect_usage_error(run_fxt("eval --device cpu --precision " + p + " --checkpoint " + run() +
                               "/best.ckpt --store " + store()),
                       "--precision " + p + ": " + says);
    expect_usage_error(run_fxt("predict --device cpu --precision " + p + " --checkpoint " + run() +
                               "/best.ckpt --store " + store() + " --out " + out_ + "/p.csv"),
                       "--precision " + p + ": " + says);
    EXPECT_FALSE(fs::exists(out_ + "/p.csv"));
  }
  expect_usage_error(
      run_fxt("train --precision fp16 --store " + store() + " --run-dir " + out_ + "/fp16"),
      "--precision: fp16 not in");
}

TEST_F(RobustnessTest, MinMoveTicksThatMasksEveryLabelIsRefused) {
  auto r = run_fxt("train -q --store " + store() + " --run-dir " + out_ + "/masked" + kSmall +
                   " --min-move-ticks 1000000");
  expect_usage_error(r, "every training label is masked");
  EXPECT_FALSE(fs::exists(out_ + "/masked/last.ckpt"));
}

// ---- store verification on every command that reads a store ----------------------------

TEST_F(RobustnessTest, BacktestRefusesACorruptStoreUnlessNoVerify) {
  const std::string bad = corrupt_store();
  // Before: a PnL from garbage prices with exit 0.
  auto r = run_fxt("backtest -q --store " + bad + " --strategy twap --out " + out_ + "/bt_bad");
  expect_usage_error(r, "bid_px.bin: CRC32");
  auto p = run_fxt("predict -q --checkpoint " + run() + "/best.ckpt --store " + bad + " --out " +
                   out_ + "/bad.csv");
  expect_usage_error(p, "CRC32");
  // The escape hatch reads it anyway.
  auto n = run_fxt("backtest -q --no-verify --store " + bad + " --strategy twap --out " + out_ +
                   "/bt_noverify");
  EXPECT_EQ(n.exit_code, 0) << n.output;
}

TEST_F(RobustnessTest, RunJsonStoreIdentityCoversTheData) {
  auto text = read_file(run() + "/run.json");
  ASSERT_TRUE(text.ok());
  const auto j = nlohmann::json::parse(*text);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_TRUE(j["inputs"][0]["data_verified"].get<bool>()) << j["inputs"].dump();
  // A store whose data no longer matches its meta.json cannot be recorded as an input.
  auto r = run_fxt("eval -q --bootstrap 0 --checkpoint " + run() + "/best.ckpt --store " +
                   corrupt_store() + " --split all --run-dir " + out_ + "/eval_bad");
  expect_usage_error(r, "CRC32");
}

// Random single-bit flips (a fixed seed): every corrupted store column and every corrupted
// checkpoint byte must give a one-line exit-2 error, never a result and never a crash.
TEST_F(RobustnessTest, RandomBitFlipsInStoresAndCheckpointsAreRefused) {
  std::vector<std::string> columns;
  for (const auto& e : fs::directory_iterator(store())) {
    if (e.path().extension() == ".bin" && fs::file_size(e.path()) > 0) {
      columns.push_back(e.path().filename().string());
    }
  }
  std::sort(columns.begin(), columns.end());
  ASSERT_FALSE(columns.empty());
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int trial = 0; trial < 4; ++trial) {
    const std::string column = columns[next() % columns.size()];
    SCOPED_TRACE(column);
    const std::string bad = out_ + "/flip_store_" + std::to_string(trial);
    fs::copy(store(), bad, fs::copy_options::recursive);
    std::string bytes = file_bytes(bad + "/" + column);
    bytes[next() % bytes.size()] ^= static_cast<char>(1 << (next() % 8));
    write_bytes(bad + "/" + column, bytes);
    const std::string cmd = trial % 2 == 0 ? "backtest -q --strategy twap --out " + bad + "_bt"
                                           : "features -q --out " + bad + ".csv";
    expect_usage_error(run_fxt(cmd + " --store " + bad), "CRC32");
  }
  const std::string ckpt = file_bytes(run() + "/best.ckpt");
  for (int trial = 0; trial < 4; ++trial) {
    std::string bytes = ckpt;
    const size_t at = next() % bytes.size();
    bytes[at] ^= static_cast<char>(1 << (next() % 8));
    SCOPED_TRACE(at);
    const std::string path = out_ + "/flip_" + std::to_string(trial) + ".ckpt";
    write_bytes(path, bytes);
    auto r = run_fxt("predict -q --checkpoint " + path + " --store " + store() + " --out " + path +
                     ".csv");
    expect_usage_error(r, path);
  }
}

// ---- checkpoints: finite values on load -------------------------------------------------

TEST_F(RobustnessTest, CheckpointWithNanWeightsIsRefused) {
  auto ck = read_checkpoint(run() + "/best.ckpt");
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  NamedTensor* t = nullptr;
  for (NamedTensor& x : ck->tensors) {
    if (x.dtype == DType::kF32 && x.numel() > 3) {
      t = &x;
      break;
    }
  }
  ASSERT_NE(t, nullptr);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(t->data.data() + 3 * sizeof(float), &nan, sizeof nan);
  const std::string path = out_ + "/nan.ckpt";
  ASSERT_TRUE(write_checkpoint(path, *ck).ok());  // valid CRCs over a NaN
  auto p = run_fxt("predict -q --checkpoint " + path + " --store " + store() + " --out " + out_ +
                   "/nan.csv");
  expect_usage_error(p, "element 3 is not finite");
  EXPECT_FALSE(fs::exists(out_ + "/nan.csv"));
}

TEST_F(RobustnessTest, CheckpointWithZeroFeatureStdIsRefused) {
  auto ck = read_checkpoint(run() + "/best.ckpt");
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  ck->feature_stats["std"][5] = 0.0;
  const std::string path = out_ + "/zerostd.ckpt";
  ASSERT_TRUE(write_checkpoint(path, *ck).ok());
  auto e = run_fxt("eval -q --bootstrap 0 --checkpoint " + path);
  expect_usage_error(e, "feature_stats slot 5");
}

// ---- internal errors become one line with the right exit code ---------------------------

TEST_F(RobustnessTest, HostilePathsGiveOneLineErrors) {
  // Invalid UTF-8 cannot go into run.json: refused while parsing.
  expect_usage_error(run_fxt("predict --checkpoint " + run() + "/best.ckpt --store " + store() +
                             " --out " + out_ + "/bad\xff.csv"),
                     "not UTF-8");
  // Before: "unexpected failure: filesystem error ..." with exit 1.
  auto r = run_fxt("train -q --store '' --run-dir " + out_ + "/empty_store" + kSmall);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST_F(RobustnessTest, IngestWarnsAboutATinyStore) {
  const std::string d = out_ + "/tiny";
  ASSERT_EQ(run_fxt("synth -q --events 50 --out " + d + ".dbn").exit_code, 0);
  auto r = run_fxt("ingest " + d + ".dbn --out " + d);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("only 50 snapshots (fewer than 100)"), std::string::npos) << r.output;
}

TEST_F(RobustnessTest, IngestTickFlagSetsTheTickAndMustDivideThePriceLevels) {
  const std::string d = out_ + "/tick";
  // The synthetic market's levels are 0.25 apart: 0.5 cannot be its tick.
  expect_usage_error(run_fxt("ingest -q " + dbn() + " --out " + d + " --tick 0.5"),
                     "--tick 0.5: price levels 0.25 apart are not multiples of it");
  EXPECT_FALSE(fs::exists(d));
  auto r = run_fxt("ingest " + dbn() + " --out " + d + " --tick 0.125");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--tick 0.125 replaces the definition's tick 0.25"), std::string::npos)
      << r.output;
  const auto meta = nlohmann::json::parse(file_bytes(d + "/meta.json"));
  EXPECT_EQ(meta["instrument"]["tick_px"], 125000000);
  EXPECT_EQ(meta["instrument"]["tick_source"], "flag");
}

TEST_F(RobustnessTest, PredictWarnsWhenTheStoreIsAnotherInstrument) {
  const std::string other = out_ + "/other_tick";
  ASSERT_EQ(run_fxt("ingest -q " + dbn() + " --out " + other + " --tick 0.125").exit_code, 0);
  const std::string warning = "differs from the training stores'";
  auto same = run_fxt("predict --checkpoint " + run() + "/best.ckpt --store " + store() +
                      " --out " + out_ + "/same.csv");
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(same.output.find(warning), std::string::npos) << same.output;
  auto diff = run_fxt("predict --checkpoint " + run() + "/best.ckpt --store " + other + " --out " +
                      out_ + "/other.csv");
  ASSERT_EQ(diff.exit_code, 0) << diff.output;
  EXPECT_NE(diff.output.find("(tick 0.125) " + warning + " (SYN tick 0.25)"), std::string::npos)
      << diff.output;
}

TEST_F(RobustnessTest, VersionFlagAndGpuPresence) {
  auto v = run_fxt("--version");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.output.rfind("fxt ", 0), 0u) << v.output;
  auto full = run_fxt("version");
  EXPECT_EQ(full.exit_code, 0) << full.output;
  // Either a GPU line or an explicit "none found": never silent about the device.
  EXPECT_TRUE(full.output.find("gpu 0:") != std::string::npos ||
              full.output.find("gpu: none found") != std::string::npos)
      << full.output;
}

// ---- records: a command never overwrites another run's run.json -------------------------

TEST_F(RobustnessTest, EvalDoesNotOverwriteATrainingRunRecord) {
  const std::string before = file_bytes(run() + "/run.json");
  auto e = run_fxt("eval -q --bootstrap 0 --checkpoint " + run() + "/best.ckpt --run-dir " + run());
  expect_usage_error(e, "records a train run");
  EXPECT_EQ(file_bytes(run() + "/run.json"), before);
  EXPECT_FALSE(fs::exists(run() + "/eval.json"));
  expect_usage_error(run_fxt("backtest -q --store " + store() + " --strategy twap --out " + run()),
                     "records a train run");
  EXPECT_EQ(file_bytes(run() + "/run.json"), before);
}

// ---- divergence: one line, exit 1, the last good checkpoint kept ------------------------

TEST_F(RobustnessTest, DivergenceStopsWithTheStepAndKeepsOnlyGoodCheckpoints) {
  // Before: exit 2 with "best.ckpt: section 'controller': non-finite number ..." and the
  // epoch lost. Adam's steps are about lr in size, so lr = 1e6 without clipping overflows.
  const std::string d = out_ + "/diverge";
  auto r = run_fxt("train -q --store " + store() + " --run-dir " + d +
                   " --epochs 3 --steps-per-epoch 20 --batch 8 --seq 16 --horizons 10,30"
                   " --d-model 32 --d-state 8 --head-dim 32 --head-mid 16 --warmup 0"
                   " --eval-batch 32 --lr 1000000 --clip 0 --baselines none");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find("training diverged at step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lower --lr"), std::string::npos) << r.output;
  // Whatever was written is a good (finite) checkpoint.
  for (const char* name : {"/last.ckpt", "/best.ckpt"}) {
    if (fs::exists(d + name)) {
      EXPECT_TRUE(read_checkpoint(d + name).ok()) << name;
    }
  }
}

// ---- determinism: outputs never depend on the run directory's name ----------------------

TEST_F(RobustnessTest, ResumeIsBitIdenticalWhateverTheRunDirectoryIsCalled) {
  const std::string a = out_ + "/r";
  const std::string b = out_ + "/a_much_longer_run_directory_name_than_the_first_one_0123456789";
  ASSERT_EQ(run_fxt("train -q --store " + store() + " --run-dir " + a + kSmall + " --stop-after 1")
                .exit_code,
            0);
  fs::copy(a, b, fs::copy_options::recursive);
  for (const std::string& d : {a, b}) {
    auto r = run_fxt("train -q --resume --run-dir " + d);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_EQ(file_bytes(a + "/last.ckpt"), file_bytes(b + "/last.ckpt"));
  EXPECT_EQ(jsonl_without(a + "/metrics.jsonl", "seconds"),
            jsonl_without(b + "/metrics.jsonl", "seconds"));
}

TEST_F(RobustnessTest, ResumeAndEvalRefuseAStoreReplacedInPlace) {
  const std::string st = out_ + "/replaced_store", d = out_ + "/replaced_run";
  fs::copy(store(), st, fs::copy_options::recursive);
  ASSERT_EQ(
      run_fxt("train -q --store " + st + " --run-dir " + d + kSmall + " --stop-after 1").exit_code,
      0);
  // Another market under the same name: a valid store, other data.
  ASSERT_EQ(run_fxt("synth -q --events 4000 --seed 2 --out " + out_ + "/m2.dbn.zst").exit_code, 0);
  fs::remove_all(st);
  ASSERT_EQ(run_fxt("ingest -q " + out_ + "/m2.dbn.zst --out " + st).exit_code, 0);
  expect_usage_error(run_fxt("train -q --resume --run-dir " + d), "store changed since");
  expect_usage_error(run_fxt("eval -q --bootstrap 0 --checkpoint " + d + "/last.ckpt"),
                     "store changed since");
}

// ---- kills: nothing lost, resume gives the bytes of an uninterrupted run -----------------

TEST_F(RobustnessTest, KillBetweenMetricsLineAndCheckpointLosesNothing) {
  // Before: a kill between the last.ckpt rename and the metrics append lost that epoch's
  // line for good. Now the line comes first; resume drops a line past last.ckpt and redoes it.
  const std::string ref = out_ + "/kill_ref", d = out_ + "/kill";
  const std::string base =
      "train -q --store " + store() +
      " --epochs 3 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 --d-model 32"
      " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 32 --baselines none";
  ASSERT_EQ(run_fxt(base + " --run-dir " + ref).exit_code, 0);
  for (const char* point : {"train.line_written:2", "train.epoch_written:2"}) {
    SCOPED_TRACE(point);
    fs::remove_all(d);
    ::setenv("FXT_FAULT", point, 1);  // inherited by the child (core/fault.h)
    auto killed = run_fxt(base + " --run-dir " + d);
    ::unsetenv("FXT_FAULT");
    EXPECT_EQ(killed.exit_code, 128 + 9) << killed.output;  // SIGKILL
    auto r = run_fxt("train -q --resume --run-dir " + d);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(file_bytes(d + "/last.ckpt"), file_bytes(ref + "/last.ckpt"));
    EXPECT_EQ(jsonl_without(d + "/metrics.jsonl", "seconds"),
              jsonl_without(ref + "/metrics.jsonl", "seconds"));
  }
}

// ---- the same class of fault in the later commands (docs/ROBUSTNESS.md, "elsewhere") ------

const char* kRlTiny = " --steps 200 --learning-starts 50 --batch 16 --hidden 8 --eval-episodes 2";

// Before: each of these trained nothing (0 updates) or hung, and wrote an untrained
// checkpoint with exit 0.
TEST_F(RobustnessTest, RlTrainThatWouldNotLearnIsRefused) {
  const std::string out = " --out " + out_ + "/rl_never";
  expect_usage_error(run_fxt("rl train --steps 2000" + out),
                     "--learning-starts 10000 is not below --steps 2000: no update would run");
  expect_usage_error(run_fxt("rl train --steps 200 --learning-starts 50 --batch 64 "
                             "--buffer-size 32" +
                             out),
                     "--batch 64 exceeds --buffer-size 32");
  expect_usage_error(run_fxt("rl train --steps 200 --learning-starts 50 --batch 500" + out),
                     "--batch 500 exceeds --steps 200");
  expect_usage_error(run_fxt("rl train --steps 200 --learning-starts 50 --envs 100000000" + out),
                     "--envs 100000000 exceeds --steps 200");
  EXPECT_FALSE(fs::exists(out_ + "/rl_never"));
}

// Before: rl train into a training run's directory truncated its metrics.jsonl and wrote
// checkpoint.fxt there, then refused at run.json (exit 2, the training run's curve gone); a
// second rl train into its own directory replaced the first one's checkpoint.
TEST_F(RobustnessTest, RlTrainDoesNotWriteIntoAnotherRun) {
  const std::string train_copy = out_ + "/train_run";
  fs::copy(run(), train_copy, fs::copy_options::recursive);
  const std::string metrics = file_bytes(train_copy + "/metrics.jsonl");
  expect_usage_error(run_fxt(std::string("rl train") + kRlTiny + " --out " + train_copy),
                     "run.json records a train run: give this rl-train run a directory of its own");
  EXPECT_EQ(file_bytes(train_copy + "/metrics.jsonl"), metrics);
  EXPECT_FALSE(fs::exists(train_copy + "/checkpoint.fxt"));

  const std::string rl = out_ + "/rl_run";
  ASSERT_EQ(run_fxt(std::string("-q rl train") + kRlTiny + " --out " + rl).exit_code, 0);
  const std::string ckpt = file_bytes(rl + "/checkpoint.fxt");
  expect_usage_error(run_fxt(std::string("rl train") + kRlTiny + " --seed 7 --out " + rl),
                     "already holds a run (run.json): give another --out");
  EXPECT_EQ(file_bytes(rl + "/checkpoint.fxt"), ckpt);
  // What a killed rl train leaves (metrics.jsonl only) is taken over.
  const std::string killed = out_ + "/rl_killed";
  fs::create_directories(killed);
  write_bytes(killed + "/metrics.jsonl", "");
  EXPECT_EQ(run_fxt(std::string("-q rl train") + kRlTiny + " --out " + killed).exit_code, 0);
  EXPECT_EQ(file_bytes(killed + "/checkpoint.fxt"), ckpt);  // same seed, same bytes
}

// Before: an ifstream opened the directory and read nothing: "/tmp:1: empty file (expected a
// fxt predict CSV)" and "/tmp: no lanes".
TEST_F(RobustnessTest, ADirectoryWhereAFileIsExpectedIsNamed) {
  const std::string out = out_ + "/bt_dir";
  expect_usage_error(run_fxt("backtest -q --store " + store() +
                             " --strategy signal "
                             "--predictions " +
                             out_ + " --out " + out),
                     out_ + ": is a directory, expected a file");
  expect_usage_error(run_fxt("backtest -q --store " + store() + " --strategy mm --sweep " + out_ +
                             " --out " + out),
                     out_ + ": is a directory, expected a file");
  EXPECT_FALSE(fs::exists(out));
}

// Before: --hidden went through its own std::stoi loop and bench's --batch read "1e3" as 1;
// integer flags without a range showed "INT:>= -9223372036854775808" in --help.
TEST_F(RobustnessTest, IntegerListsAreStrictAndHelpShowsNoFakeRange) {
  expect_usage_error(run_fxt("rl train --hidden 8x --out " + out_ + "/rl_h"),
                     "--hidden '8x': item '8x' is not an integer in [1, 65536]");
  expect_usage_error(run_fxt("bench predict --device cpu --batch 1e3"),
                     "--batch '1e3': item '1e3' is not an integer in [1, 16777216]");
  const auto help = run_fxt("rl train --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.output.find("9223372036854775808"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--steps INT=500000"), std::string::npos) << help.output;
}

// Before: `top = -3` in a config file failed late with "--top must be >= 0" (no FILE:LINE), and
// --threads advertised [0, 4096] but 0 was refused after parsing.
TEST_F(RobustnessTest, BacktestSweepFlagsAreRangedInConfigFilesToo) {
  const std::string cfg = out_ + "/bt.toml";
  write_bytes(cfg, "[backtest]\nstrategy = \"mm\"\ntop = -3\n");
  const std::string base = "backtest --store " + store() + " --out " + out_ + "/bt_cfg";
  expect_usage_error(run_fxt(base + " --config " + cfg),
                     cfg + ":3: 'top': expected an integer in [0, 1000000] (got -3)");
  expect_usage_error(run_fxt(base + " --threads 0"),
                     "--threads: expected an integer in [1, 4096] (got 0)");
  EXPECT_FALSE(fs::exists(out_ + "/bt_cfg"));
}

// Before: "/x/out.csv.tmp-4242: cannot create: ..." named a temporary file the user never gave.
TEST_F(RobustnessTest, AnUnwritableOutIsNamedAsGiven) {
  const std::string out = out_ + "/missing/x.csv";
  auto r = run_fxt("dump " + store() + " --limit 5 --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("fxt: error: " + out + ": cannot create its temporary file " + out +
                               ".tmp-",
                           0),
            0u)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

// Found by the fault-injection suite failing at random ("out of memory" from fxt cv): run.json's
// summary read cv.json keys that --baselines none leaves out through nlohmann's const
// operator[] (undefined behaviour), and wrote `"auc_diff_h10": ,` (not JSON) with exit 0.
TEST_F(RobustnessTest, CvRunRecordWithoutBaselinesIsValidJson) {
  const std::string out = out_ + "/cv_none";
  auto r = run_fxt("cv -q --store " + store() + " --out " + out +
                   " --folds 2 --bootstrap 0 --threads 2" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto run_json = nlohmann::json::parse(file_bytes(out + "/run.json"), nullptr, false);
  ASSERT_FALSE(run_json.is_discarded()) << file_bytes(out + "/run.json");
  const auto& m = run_json["metrics"];
  for (const char* key : {"auc_diff_h10", "auc_diff_h30", "auc_best_baseline_h10",
                          "mean_auc_best_baseline"}) {
    ASSERT_TRUE(m.contains(key)) << key;
    EXPECT_TRUE(m[key].is_null()) << key << ": " << m[key].dump();
  }
  EXPECT_TRUE(m["auc_model_h10"].is_number());
  EXPECT_TRUE(m["pooled_rows"].is_number_integer());
}

}  // namespace
}  // namespace fxt
