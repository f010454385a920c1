// Whole CV runs (src/train/cv.h) on tiny synthetic days, through `fxt synth`/`fxt ingest` and
// run_cv: the plan, folds, pooled results and run record; resumption equivalence; controllers
// fresh per fold; the command line and its errors. End to end (label e2e: the Release run
// only, see tests/CMakeLists.txt); the fold plans, leak checks and bootstrap are unit tests in
// tests/train/cv_test.cc.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"
#include "train/cv.h"
#include "train/metrics.h"
#include "train/run_record.h"
#include "train/trainer.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;

class CvRun : public ::testing::Test {
 protected:
  // Four synthetic "days" (different seeds) and one uninterrupted 2-fold CV over them.
  static void SetUpTestSuite() {
    dir_ =
        new std::string(fs::temp_directory_path() / ("fxt-cv-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    stores_ = new std::vector<std::string>;
    for (int day = 1; day <= 4; ++day) {
      const std::string dbn = *dir_ + "/d" + std::to_string(day) + ".dbn.zst";
      const std::string store = *dir_ + "/store" + std::to_string(day);
      const auto s =
          test::run_fxt("synth -q --events 4000 --seed " + std::to_string(day) + " --out " + dbn);
      ASSERT_EQ(s.exit_code, 0) << s.output;
      const auto i = test::run_fxt("ingest -q " + dbn + " --out " + store);
      ASSERT_EQ(i.exit_code, 0) << i.output;
      stores_->push_back(store);
    }
    auto r = run_cv(config(), *stores_, full_dir());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->complete);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete stores_;
  }
  static std::string full_dir() { return *dir_ + "/cv-full"; }

  // K 16, B 8, D 32, horizons 10 and 30, 2 epochs of 3 steps, 2 folds by store (W = 1).
  static CvConfig config() {
    CvConfig c;
    TrainConfig& t = c.train;
    t.seed = 3;
    t.epochs = 2;
    t.steps_per_epoch = 3;
    t.batch = 8;
    t.window = 16;
    t.horizons = {10, 30};
    t.warmup_steps = 2;
    t.perception.d_model = 32;
    t.perception.d_state = 8;
    t.perception.head_dim = 32;
    t.perception.head_mid = 16;
    t.eval_batch = 64;
    t.threads = 2;
    t.baselines.max_fit_rows = 1000;
    t.baselines.gbdt_max_fit_rows = 1000;
    t.baselines.gbdt_params.max_rounds = 30;
    c.plan.folds = 2;
    c.bootstrap = 20;
    return c;
  }
  static std::string bytes(const std::string& path) {
    auto r = read_file(path);
    EXPECT_TRUE(r.ok()) << path << ": " << r.status().message();
    return r.ok() ? *r : std::string();
  }
  static nlohmann::json json_of(const std::string& path) {
    return nlohmann::json::parse(bytes(path), nullptr, false);
  }
  static std::vector<std::string> lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  }

  static std::string* dir_;
  static std::vector<std::string>* stores_;
};
std::string* CvRun::dir_ = nullptr;
std::vector<std::string>* CvRun::stores_ = nullptr;

TEST_F(CvRun, WritesPlanFoldsPooledResultsAndRunRecord) {
  const std::string d = full_dir();
  const nlohmann::json plan = json_of(d + "/plan.json");
  ASSERT_FALSE(plan.is_discarded());
  EXPECT_EQ(plan["plan"]["unit"], "store");
  EXPECT_EQ(plan["plan"]["train_blocks"], 1);
  EXPECT_EQ(plan["plan"]["gap"], 30);  // max horizon 30 x stride 1
  EXPECT_EQ(plan["config"]["train"]["seed"], 3);
  EXPECT_FALSE(plan["config"]["train"].contains("split_ranges"));
  const nlohmann::json cv = json_of(d + "/cv.json");
  ASSERT_FALSE(cv.is_discarded());
  EXPECT_EQ(cv["folds"], 2);
  EXPECT_EQ(cv["scheme"], "walk-forward");
  ASSERT_EQ(cv["per_fold"].size(), 2u);
  uint64_t rows = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string f = d + "/fold_" + std::to_string(i);
    for (const char* file : {"/best.ckpt", "/last.ckpt", "/metrics.jsonl", "/rows.bin"}) {
      EXPECT_TRUE(fs::exists(f + file)) << f + file;
    }
    const nlohmann::json ev = json_of(f + "/eval.json");
    EXPECT_EQ(ev["split"], "test");
    EXPECT_EQ(ev["fold"], i);
    // The fold's test range is store i + 2 whole: rows = its snapshot count.
    auto st = StoreReader::open((*stores_)[static_cast<size_t>(i) + 2]);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(ev["rows"].get<uint64_t>(), st->size());
    EXPECT_EQ(cv["per_fold"][i]["rows"].get<uint64_t>(), st->size());
    EXPECT_EQ(cv["per_fold"][i]["auc"]["model"][0], ev["model"]["horizons"][0]["auc"]);
    rows += st->size();
    // The fold's checkpoint carries its explicit ranges.
    auto ck = read_checkpoint(f + "/best.ckpt");
    ASSERT_TRUE(ck.ok());
    EXPECT_TRUE(ck->config.contains("split_ranges"));
    EXPECT_EQ(ck->meta["store_dirs"].size(), 3u);  // a train store, validation, test
  }
  EXPECT_EQ(cv["pooled"]["rows"].get<uint64_t>(), rows);
  ASSERT_EQ(cv["comparison"].size(), 2u);
  for (size_t h = 0; h < 2; ++h) {
    const auto& c = cv["comparison"][h];
    const double am = c["model_auc"].get<double>(), al = c["best_baseline_auc"].get<double>();
    // The best baseline is the pooled AUC's best of the four.
    const std::string best = c["best_baseline"];
    EXPECT_DOUBLE_EQ(al, cv["pooled"]["baselines"][best]["horizons"][h]["auc"].get<double>());
    for (const auto& [name, m] : cv["pooled"]["baselines"].items()) {
      EXPECT_LE(m["horizons"][h]["auc"].get<double>(), al) << name;
    }
    EXPECT_NEAR(c["diff"].get<double>(), am - al, 1e-15);
    EXPECT_LE(c["model_auc_ci"][0].get<double>(), c["model_auc_ci"][1].get<double>());
    EXPECT_LE(c["diff_ci"][0].get<double>(), c["diff_ci"][1].get<double>());
    EXPECT_EQ(c["folds_compared"], 2);
    const int wins = c["folds_model_wins"].get<int>();
    EXPECT_DOUBLE_EQ(c["win_fraction"].get<double>(), wins / 2.0);
  }
  // Per-fold wins recomputed from the fold table.
  for (size_t h = 0; h < 2; ++h) {
    int wins = 0;
    for (const auto& f : cv["per_fold"]) {
      wins += f["auc"]["model"][h].get<double>() > f["auc"]["best_baseline"][h].get<double>();
    }
    EXPECT_EQ(cv["comparison"][h]["folds_model_wins"], wins);
  }
  auto rr = read_run_record(d);
  ASSERT_TRUE(rr.ok()) << rr.status().message();
  EXPECT_EQ((*rr)["kind"], "cv");
  EXPECT_EQ((*rr)["inputs"].size(), 4u);
  EXPECT_TRUE((*rr)["metrics"].contains("auc_model_h10"));
  const std::string table = format_cv_table(cv);
  EXPECT_NE(table.find("pooled over 2 folds"), std::string::npos) << table;
  EXPECT_NE(table.find("h30"), std::string::npos) << table;
}

TEST_F(CvRun, InterruptedAndResumedRunEqualsUninterrupted) {
  const std::string d = *dir_ + "/cv-resumed";
  CvOptions one_fold;
  one_fold.stop_after_folds = 1;
  auto r1 = run_cv(config(), *stores_, d, one_fold);
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  EXPECT_FALSE(r1->complete);
  EXPECT_EQ(r1->folds_finished, 1);
  EXPECT_TRUE(fs::exists(d + "/fold_0/eval.json"));
  EXPECT_FALSE(fs::exists(d + "/fold_1"));
  EXPECT_FALSE(fs::exists(d + "/cv.json"));
  // Kill fold 1 after one epoch (its last.ckpt exists, eval.json does not).
  CvOptions one_epoch;
  one_epoch.stop_after_epochs = 1;
  auto r2 = run_cv(config(), *stores_, d, one_epoch);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_FALSE(r2->complete);
  EXPECT_EQ(r2->folds_finished, 1);
  EXPECT_TRUE(fs::exists(d + "/fold_1/last.ckpt"));
  EXPECT_FALSE(fs::exists(d + "/fold_1/eval.json"));
  EXPECT_EQ(lines(d + "/fold_1/metrics.jsonl").size(), 1u);
  // A fresh invocation (other thread count: results do not depend on it) finishes the CV.
  CvConfig c = config();
  c.train.threads = 1;
  auto r3 = run_cv(c, *stores_, d);
  ASSERT_TRUE(r3.ok()) << r3.status().message();
  EXPECT_TRUE(r3->complete);
  EXPECT_EQ(r3->folds_finished, 2);
  EXPECT_EQ(bytes(d + "/cv.json"), bytes(full_dir() + "/cv.json"));
  EXPECT_EQ(bytes(d + "/fold_1/best.ckpt"), bytes(full_dir() + "/fold_1/best.ckpt"));
  EXPECT_EQ(bytes(d + "/fold_1/rows.bin"), bytes(full_dir() + "/fold_1/rows.bin"));
  // Rerunning a finished CV only pools again: same bytes.
  auto r4 = run_cv(config(), *stores_, d);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(bytes(d + "/cv.json"), bytes(full_dir() + "/cv.json"));

  // Another plan or configuration is refused with one line naming plan.json.
  CvConfig other = config();
  other.train.seed = 4;
  auto bad = run_cv(other, *stores_, d);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().exit_code(), 2);
  EXPECT_NE(bad.status().message().find("plan.json holds a different CV (\"config\" differs)"),
            std::string::npos)
      << bad.status().message();
  other = config();
  other.plan.embargo = 5;
  bad = run_cv(other, *stores_, d);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  bad = run_cv(config(), {(*stores_)[0], (*stores_)[1], (*stores_)[3], (*stores_)[2]}, d);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(\"stores\" differs)"), std::string::npos)
      << bad.status().message();
}

TEST_F(CvRun, ControllersStartFreshInEveryFold) {
  // Fold 1 of the CV ran in the same process after fold 0. Train the same fold alone in a fresh
  // directory: its first-epoch controller values (and everything else) are identical, so
  // nothing of fold 0 carries over.
  auto plan = json_of(full_dir() + "/plan.json");
  const auto& f1 = plan["plan"]["folds"][1];
  TrainConfig t = config().train;
  t.split.explicit_ranges = true;
  auto range = [](const nlohmann::json& a) {
    return GlobalRange{a[0].get<uint64_t>(), a[1].get<uint64_t>()};
  };
  t.split.train_range = range(f1["local"]["train"]);
  t.split.validation_range = range(f1["local"]["validation"]);
  t.split.test_range = range(f1["local"]["test"]);
  const size_t first = f1["stores"][0].get<size_t>(), end = f1["stores"][1].get<size_t>();
  const std::vector<std::string> fold_stores(stores_->begin() + static_cast<std::ptrdiff_t>(first),
                                             stores_->begin() + static_cast<std::ptrdiff_t>(end));
  const std::string alone = test::scratch_dir() + "/fold1-alone";
  auto s = train(t, fold_stores, alone);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto cv_lines = lines(full_dir() + "/fold_1/metrics.jsonl");
  const auto alone_lines = lines(alone + "/metrics.jsonl");
  ASSERT_FALSE(cv_lines.empty());
  ASSERT_EQ(cv_lines.size(), alone_lines.size());
  const auto c1 = nlohmann::json::parse(cv_lines[0]), a1 = nlohmann::json::parse(alone_lines[0]);
  EXPECT_EQ(c1["controller"], a1["controller"]);
  EXPECT_EQ(c1["controller"]["sigma"].size(), 2u);
  EXPECT_EQ(bytes(full_dir() + "/fold_1/last.ckpt"), bytes(alone + "/last.ckpt"));
  // The two folds' first epochs differ (other data), so the check above is not vacuous.
  const auto f0 = nlohmann::json::parse(lines(full_dir() + "/fold_0/metrics.jsonl")[0]);
  EXPECT_NE(f0["controller"]["ema"], c1["controller"]["ema"]);
}

TEST_F(CvRun, CommandLinePrintsTheTableAndRejectsImpossiblePlans) {
  std::string stores;
  for (const auto& s : *stores_) stores += " --store " + s;
  const std::string flags =
      " --seed 3 --epochs 1 --steps-per-epoch 2 --batch 8 --seq 16 --horizons 10,30 --warmup 1"
      " --d-model 32 --d-state 8 --head-dim 32 --head-mid 16 --bootstrap 10 --threads 2"
      " --baseline-max-rows 2000 --gbdt-max-rows 2000";
  const std::string out = test::scratch_dir() + "/cv";
  auto r = test::run_fxt("cv" + stores + " --folds 1 --scheme expanding --embargo 4" + flags +
                         " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cv: expanding by store, 1 folds, 2 training block(s), gap 34"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("pooled over 1 folds"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model - best"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("h10: model beats the best baseline ("), std::string::npos) << r.output;
  for (const char* f : {"/plan.json", "/cv.json", "/run.json", "/fold_0/eval.json"}) {
    EXPECT_TRUE(fs::exists(out + f)) << f;
  }
  // More folds than the stores allow, by store: exit 2, one line.
  auto bad = test::run_fxt("cv -q" + stores + " --folds 3 --by store" + flags + " --out " +
                           test::scratch_dir() + "/x");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("fxt: error: --folds 3 by store with 1 training store(s) needs at "
                            "least 5 stores (got 4)"),
            std::string::npos)
      << bad.output;
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
  // By block, blocks too short for the gap plus a window.
  bad = test::run_fxt("cv -q --store " + (*stores_)[0] + " --folds 400" + flags + " --out " +
                      test::scratch_dir() + "/y");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--folds 400 cuts"), std::string::npos) << bad.output;
  // A rerun with other flags is refused.
  bad = test::run_fxt("cv -q" + stores + " --folds 1 --scheme walk-forward" + flags + " --out " +
                      out);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("plan.json holds a different CV"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace fxt
