// The CPU training loop, evaluation and prediction (src/train/trainer.h) on a tiny synthetic
// store: metrics lines, checkpoints, bit-identical reruns and resumes, the evaluation JSON and
// the prediction CSV.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "test_util.h"
#include "train/baselines.h"
#include "train/checkpoint.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;

class TrainerTest : public ::testing::Test {
 protected:
  // One 20000-snapshot synthetic store shared by every test of the suite.
  static void SetUpTestSuite() {
    dir_ = new std::string(fs::temp_directory_path() /
                           ("fxt-trainer-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    const auto s = test::run_fxt("synth -q --events 20000 --seed 1 --out " + *dir_ + "/m.dbn.zst");
    ASSERT_EQ(s.exit_code, 0) << s.output;
    const auto i = test::run_fxt("ingest -q " + *dir_ + "/m.dbn.zst --out " + *dir_ + "/store");
    ASSERT_EQ(i.exit_code, 0) << i.output;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string store() { return *dir_ + "/store"; }

  // A small, fast configuration: K 16, B 8, D 32, two horizons.
  static TrainConfig small_config() {
    TrainConfig c;
    c.seed = 7;
    c.epochs = 3;
    c.steps_per_epoch = 4;
    c.batch = 8;
    c.window = 16;
    c.horizons = {10, 30};
    c.warmup_steps = 2;
    c.perception.d_model = 32;
    c.perception.d_state = 8;
    c.perception.head_dim = 32;
    c.perception.head_mid = 16;
    c.eval_batch = 32;
    c.baselines.max_fit_rows = 2000;  // quick fits on the small store
    c.baselines.gbdt_max_fit_rows = 2000;
    c.baselines.gbdt_params.max_rounds = 40;
    return c;
  }

  static std::vector<std::string> lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  }
  static std::string bytes(const std::string& path) {
    auto r = read_file(path);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : std::string();
  }

  static std::string* dir_;
};
std::string* TrainerTest::dir_ = nullptr;

TEST_F(TrainerTest, ConfigRoundTripsThroughJson) {
  TrainConfig c = small_config();
  c.weighting = model::HorizonWeighting::kKendall;
  c.early_stop = "auc_h30";
  c.model = ModelKind::kLogReg;
  c.perception.snapshot_heads = true;
  c.perception.ple_bins = 12;
  auto back = TrainConfig::from_json(c.to_json());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), c.to_json());
  EXPECT_TRUE(back->perception.snapshot_heads);
  EXPECT_EQ(back->perception.ple_bins, 12);
  EXPECT_TRUE(TrainConfig().perception.causal);  // training defaults to the causal trunk
  EXPECT_TRUE(back->perception.causal);
  // A config from before the snapshot heads, the PLE path and the causal trunk loads without
  // them: the pool start is the model such a checkpoint holds.
  nlohmann::json old = c.to_json();
  old.erase("snapshot_heads");
  old.erase("ple_bins");
  old.erase("causal");
  auto before = TrainConfig::from_json(old);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_FALSE(before->perception.snapshot_heads);
  EXPECT_EQ(before->perception.ple_bins, 0);
  EXPECT_FALSE(before->perception.causal);
  EXPECT_FALSE(TrainConfig::from_json(nlohmann::json::object()).ok());
}

TEST_F(TrainerTest, ValidateNamesTheBadFlag) {
  TrainConfig c = small_config();
  c.early_stop = "auc_h31";
  EXPECT_NE(c.validate().message().find("--early-stop"), std::string::npos);
  c = small_config();
  c.batch = 0;
  EXPECT_NE(c.validate().message().find("--batch"), std::string::npos);
}

TEST_F(TrainerTest, WritesMetricsCheckpointsAndRunJson) {
  const std::string run = test::scratch_dir() + "/run";
  auto s = train(small_config(), {store()}, run);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->epochs_run, 3);
  EXPECT_EQ(s->steps, 12);
  const auto ls = lines(run + "/metrics.jsonl");
  ASSERT_EQ(ls.size(), 3u);
  for (size_t i = 0; i < ls.size(); ++i) {
    const auto j = nlohmann::json::parse(ls[i]);
    EXPECT_EQ(j["epoch"], static_cast<int>(i) + 1);
    EXPECT_EQ(j["step"], 4 * (static_cast<int>(i) + 1));
    for (const char* key :
         {"train_loss", "val_loss", "val_mean_auc", "lr", "grad_norm", "seconds"}) {
      EXPECT_TRUE(j[key].is_number()) << key;
    }
    EXPECT_TRUE(j["val_auc"]["h10"].is_number());
    EXPECT_TRUE(j["val_auc"]["h30"].is_number());
    EXPECT_EQ(j["controller"]["sigma"].size(), 2u);
    EXPECT_EQ(j["controller"]["lambda"].size(), 2u);
  }
  const auto run_json = nlohmann::json::parse(bytes(run + "/run.json"));
  EXPECT_EQ(run_json["device"], backend_name(*resolve_cuda("auto", ModelKind::kPerception)));
  EXPECT_TRUE(run_json.contains("git_revision"));
  EXPECT_EQ(run_json["config"], small_config().to_json());

  for (const char* name : {"/best.ckpt", "/last.ckpt"}) {
    auto ck = read_checkpoint(run + name);
    ASSERT_TRUE(ck.ok()) << ck.status().message();
    for (const char* t :
         {"varsel.weight", "adam.m/varsel.weight", "baseline.logreg.weight",
          "baseline.logreg_lags.bias"}) {
      EXPECT_NE(ck->find(t), nullptr) << t;
    }
    EXPECT_EQ(ck->config, small_config().to_json());
    EXPECT_EQ(ck->feature_stats["mean"].size(), 40u);
    EXPECT_EQ(ck->meta["base_rates"].size(), 2u);
  }
  auto last = read_checkpoint(run + "/last.ckpt");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->meta["epoch"], 3);
  EXPECT_EQ(last->optimizer["step"], 12);
  // Both checkpoints have the same layout (check_compatible) and load for evaluation.
  auto best = read_checkpoint(run + "/best.ckpt");
  ASSERT_TRUE(best.ok());
  EXPECT_TRUE(check_compatible(*last, *best).ok());
  EXPECT_TRUE(evaluate(run + "/best.ckpt", {}).ok());
}

TEST_F(TrainerTest, SameSeedGivesIdenticalCheckpointBytes) {
  const std::string base = test::scratch_dir();
  TrainConfig c = small_config();
  ASSERT_TRUE(train(c, {store()}, base + "/a").ok());
  c.threads = 2;  // the thread count never changes results
  ASSERT_TRUE(train(c, {store()}, base + "/b").ok());
  EXPECT_EQ(bytes(base + "/a/last.ckpt"), bytes(base + "/b/last.ckpt"));
  EXPECT_EQ(bytes(base + "/a/best.ckpt"), bytes(base + "/b/best.ckpt"));
  c.seed = 8;
  ASSERT_TRUE(train(c, {store()}, base + "/c").ok());
  EXPECT_NE(bytes(base + "/a/last.ckpt"), bytes(base + "/c/last.ckpt"));
}

// 3 epochs straight == 1 epoch, then resume for the rest; for the default and the kendall
// weighting (whose learned log sigma is part of the optimizer state).
TEST_F(TrainerTest, ResumeContinuesBitForBit) {
  for (auto w : {model::HorizonWeighting::kKendallClosed, model::HorizonWeighting::kKendall}) {
    const std::string base = test::scratch_dir();
    TrainConfig c = small_config();
    c.weighting = w;
    ASSERT_TRUE(train(c, {store()}, base + "/straight").ok());
    TrainOptions o;
    o.stop_after_epochs = 1;
    auto first = train(c, {store()}, base + "/resumed", o);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->epochs_run, 1);
    TrainOptions r;
    r.resume = true;
    TrainConfig other;  // ignored on resume except threads and (empty) horizons
    other.horizons.clear();
    auto rest = train(other, {}, base + "/resumed", r);
    ASSERT_TRUE(rest.ok()) << rest.status().message();
    EXPECT_EQ(rest->epochs_run, 3);
    EXPECT_EQ(bytes(base + "/straight/last.ckpt"), bytes(base + "/resumed/last.ckpt"));
    EXPECT_EQ(bytes(base + "/straight/best.ckpt"), bytes(base + "/resumed/best.ckpt"));
    EXPECT_EQ(lines(base + "/resumed/metrics.jsonl").size(), 3u);
  }
}

TEST_F(TrainerTest, ResumeRefusesOtherHorizonsOrStores) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.epochs = 1;
  ASSERT_TRUE(train(c, {store()}, run).ok());
  TrainOptions r;
  r.resume = true;
  TrainConfig other;
  other.horizons = {10, 20};
  EXPECT_EQ(train(other, {}, run, r).status().code(), StatusCode::kUsage);
  other.horizons.clear();
  EXPECT_EQ(train(other, {store(), store()}, run, r).status().code(), StatusCode::kUsage);
  EXPECT_EQ(train(other, {}, run + "-missing", r).status().code(), StatusCode::kNotFound);
  // A fresh run never overwrites an existing one.
  EXPECT_EQ(train(c, {store()}, run).status().code(), StatusCode::kUsage);
}

TEST_F(TrainerTest, EarlyStoppingWithPatience) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.epochs = 30;
  c.steps_per_epoch = 1;
  c.lr = 1e-6;  // nothing improves much; patience 1 must stop well before 30 epochs
  c.patience = 1;
  c.early_stop = "mean_auc";
  auto s = train(c, {store()}, run);
  ASSERT_TRUE(s.ok()) << s.status().message();
  if (s->stopped_early) {
    EXPECT_LT(s->epochs_run, 30);
    EXPECT_EQ(s->epochs_run - s->best_epoch, 1);
  } else {
    EXPECT_EQ(s->best_epoch, 30);  // improved every epoch
  }
  EXPECT_EQ(lines(run + "/metrics.jsonl").size(), static_cast<size_t>(s->epochs_run));
}

TEST_F(TrainerTest, EvaluateScoresModelBaselineAndBaseRateOnTheSameRows) {
  const std::string run = test::scratch_dir() + "/run";
  ASSERT_TRUE(train(small_config(), {store()}, run).ok());
  auto j = evaluate(run + "/best.ckpt", {});
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["split"], "test");
  const int64_t rows = (*j)["rows"];
  EXPECT_GT(rows, 2000);  // every snapshot of the test split (about 15% of 20000)
  for (const std::string who : {"model", "logreg", "logreg_lags", "base_rate"}) {
    const auto& hs = who.starts_with("logreg") ? (*j)["baselines"][who]["horizons"]
                                               : (*j)[who]["horizons"];
    ASSERT_EQ(hs.size(), 2u) << who;
    EXPECT_EQ(hs[0]["horizon"], 10);
    EXPECT_EQ(hs[1]["horizon"], 30);
    for (const auto& h : hs) {
      EXPECT_TRUE(h["auc"].is_number()) << who;
      EXPECT_GT(h["n_valid"].get<int64_t>(), 100) << who;
      EXPECT_EQ(h["n_valid"], (*j)["model"]["horizons"][0]["horizon"] == h["horizon"]
                                  ? (*j)["model"]["horizons"][0]["n_valid"]
                                  : (*j)["model"]["horizons"][1]["n_valid"]);
    }
  }
  EXPECT_DOUBLE_EQ((*j)["base_rate"]["horizons"][0]["auc"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ((*j)["base_rate"]["horizons"][1]["auc"].get<double>(), 0.5);
  // The comparison with the best baseline: one verdict line per horizon.
  ASSERT_EQ((*j)["vs_best_baseline"]["horizons"].size(), 2u);
  for (const auto& e : (*j)["vs_best_baseline"]["horizons"]) {
    EXPECT_TRUE(e["diff_ci"][0].is_number()) << e.dump();
    EXPECT_NE(e["line"].get<std::string>().find("model beats the best baseline"),
              std::string::npos);
  }
  // Block-bootstrap intervals (blocks of the largest horizon) for model and baseline.
  for (const char* who : {"model", "logreg"}) {
    const auto& b = (*j)["bootstrap"][who];
    ASSERT_EQ(b["horizons"].size(), 2u) << b.dump();
    EXPECT_EQ(b["block_rows"], 30);
    EXPECT_EQ(b["replicates"], 200);
  }
  EvalOptions all_rows;
  all_rows.split = EvalSplit::kAll;
  all_rows.bootstrap = 0;
  auto all = evaluate(run + "/best.ckpt", {store()}, all_rows);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["rows"], 20000);
  // No stacks unless the test split is scored: their rows would include their own fit rows.
  EXPECT_FALSE(all->contains("stacked"));
  EXPECT_FALSE((*all)["baselines"].contains("baseline_stack"));
  EvalOptions bad;
  bad.expect_horizons = {10, 20};
  EXPECT_EQ(evaluate(run + "/best.ckpt", {}, bad).status().code(), StatusCode::kUsage);
}

// The stacks (train/stacking.h): fit on evenly spaced validation rows, the baseline stack among
// the baselines, the model stack's test logits exactly its stored weights applied to the model's
// and the baselines' test logits; --stack-rows 0 turns both off.
TEST_F(TrainerTest, EvaluateStacksTheBaselinesAndTheModelOnValidationRows) {
  const std::string run = test::scratch_dir() + "/run";
  ASSERT_TRUE(train(small_config(), {store()}, run).ok());
  EvalOptions o;
  o.bootstrap = 20;
  o.stack_rows = 500;
  EvalRows rows;
  auto j = evaluate(run + "/best.ckpt", {}, o, &rows);
  ASSERT_TRUE(j.ok()) << j.status().message();
  const auto& st = (*j)["stacked"];
  // About 3,000 validation snapshots (15% of 20,000), evenly spaced down to at most 500.
  EXPECT_LE(st["validation_rows"].get<int64_t>(), 500);
  EXPECT_GT(st["validation_rows"].get<int64_t>(), 400);
  EXPECT_GE(st["validation_step"].get<int64_t>(), 6);
  // The fitted baselines, then the baseline stack over them; the model stack adds the model.
  ASSERT_GE(rows.baseline_names.size(), 3u);
  EXPECT_EQ(rows.baseline_names.back(), "baseline_stack");
  std::vector<std::string> fitted(rows.baseline_names.begin(), rows.baseline_names.end() - 1);
  EXPECT_EQ(st["baseline_stack"]["inputs"], fitted);
  std::vector<std::string> with_model = fitted;
  with_model.emplace_back("model");
  EXPECT_EQ(st["model_stack"]["inputs"], with_model);
  ASSERT_EQ(rows.stacked_logits.size(), rows.model_logits.size());
  const size_t nh = rows.horizons.size(), nb = fitted.size();
  for (const char* which : {"model_stack", "baseline_stack"}) {
    const auto& hs = st[which]["horizons"];
    ASSERT_EQ(hs.size(), nh);
    for (size_t h = 0; h < nh; ++h) {
      EXPECT_GT(hs[h]["rows"].get<int64_t>(), 20);  // labelled rows only (the mid moved)
      const auto& w = hs[h]["weights"];
      for (size_t r = 0; r < rows.rows(); r += 97) {
        const size_t at = r * nh + h;
        double z = hs[h]["bias"].get<double>();
        for (size_t b = 0; b < nb; ++b) {
          z += w[fitted[b]].get<double>() * rows.baseline_logits[b][at];
        }
        if (std::string(which) == "model_stack") {
          z += w["model"].get<double>() * rows.model_logits[at];
          EXPECT_NEAR(rows.stacked_logits[at], z, 1e-4 * (1 + std::abs(z)));
        } else {
          EXPECT_NEAR(rows.baseline_logits[nb][at], z, 1e-4 * (1 + std::abs(z)));
        }
      }
    }
  }
  // The stack's own comparison and verdict lines, and its AUC in the metrics.
  ASSERT_EQ(st["vs_best_baseline"]["horizons"].size(), nh);
  for (const auto& e : st["vs_best_baseline"]["horizons"]) {
    EXPECT_NE(e["line"].get<std::string>().find(
                  "the model stacked with the baselines beats the best baseline"),
              std::string::npos);
  }
  EXPECT_TRUE(st["model"]["horizons"][0]["auc"].is_number());
  EXPECT_TRUE((*j)["baselines"]["baseline_stack"]["horizons"][0]["auc"].is_number());
  // One validation row cannot hold both classes: the stacks are skipped, the evaluation stands.
  o.stack_rows = 1;
  auto one = evaluate(run + "/best.ckpt", {}, o);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_FALSE(one->contains("stacked"));
  EXPECT_TRUE((*one)["vs_best_baseline"].is_object());
  o.stack_rows = 0;
  auto none = evaluate(run + "/best.ckpt", {}, o, &rows);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->contains("stacked"));
  EXPECT_TRUE(rows.stacked_logits.empty());
  EXPECT_EQ(rows.baseline_names, fitted);
}

// docs/MODEL.md "Logistic fallback": each epoch's line names the horizons whose logistic start
// validates better than the trained head (from the start's values in the checkpoint), the
// selection value is the composed model's, and in best.ckpt those heads are the logistic: on the
// test rows their AUC is the logistic baseline's (the same fit, float against double scores).
TEST_F(TrainerTest, LogisticFallbackPutsTheStartBackWhereItValidatesBetter) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.lr = 3e-3;  // training that hurts some horizon on validation, so the fallback acts
  ASSERT_TRUE(train(c, {store()}, run).ok());
  auto last = read_checkpoint(run + "/last.ckpt");
  ASSERT_TRUE(last.ok());
  const std::vector<double> start = last->meta["logistic_start"]["val"].get<std::vector<double>>();
  ASSERT_EQ(start.size(), 2u);
  for (const std::string& l : lines(run + "/metrics.jsonl")) {
    const auto j = nlohmann::json::parse(l);
    double composed = 0.0;
    std::vector<int> expect;
    for (size_t h = 0; h < 2; ++h) {
      const double t = j["val_loss_h"][h].get<double>();
      if (start[h] < t) expect.push_back(c.horizons[h]);
      composed += std::min(start[h], t) / 2;
    }
    EXPECT_EQ(j["logistic_heads"].get<std::vector<int>>(), expect) << l;
    EXPECT_NEAR(j["selection_value"].get<double>(), composed, 1e-12) << l;
  }
  auto best = read_checkpoint(run + "/best.ckpt");
  ASSERT_TRUE(best.ok());
  const auto heads = best->meta["logistic_heads"].get<std::vector<int>>();
  ASSERT_FALSE(heads.empty()) << "this seed and lr must exercise the fallback";
  const auto run_json = nlohmann::json::parse(bytes(run + "/run.json"));
  EXPECT_EQ(run_json["logistic_heads"].get<std::vector<int>>(), heads);
  EvalOptions o;
  o.bootstrap = 0;
  auto j = evaluate(run + "/best.ckpt", {}, o);
  ASSERT_TRUE(j.ok()) << j.status().message();
  for (size_t h = 0; h < 2; ++h) {
    const double model_auc = (*j)["model"]["horizons"][h]["auc"];
    const double logistic_auc = (*j)["baselines"]["logreg"]["horizons"][h]["auc"];
    if (std::find(heads.begin(), heads.end(), c.horizons[h]) != heads.end()) {
      EXPECT_NEAR(model_auc, logistic_auc, 2e-4) << "h" << c.horizons[h];
    }
  }
  // Off: no start, no per-epoch choice, best.ckpt is the trained model.
  c.logistic_fallback = false;
  const std::string off = test::scratch_dir() + "/off";
  ASSERT_TRUE(train(c, {store()}, off).ok());
  auto off_best = read_checkpoint(off + "/best.ckpt");
  ASSERT_TRUE(off_best.ok());
  EXPECT_FALSE(off_best->meta.contains("logistic_start"));
  EXPECT_FALSE(off_best->meta.contains("logistic_heads"));
  EXPECT_FALSE(nlohmann::json::parse(lines(off + "/metrics.jsonl")[0]).contains("logistic_heads"));
}

// --ple-bins: the PLE path's edges in the checkpoint are the training rows' quantiles of the
// standardised features (training_ple_edges on the dataset train() builds), unchanged by
// training (constants), while W_ple trains off zero; the run evaluates.
TEST_F(TrainerTest, PleEdgesAreTheTrainingQuantilesAndStayConstant) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.perception.ple_bins = 8;
  ASSERT_TRUE(train(c, {store()}, run).ok());
  auto ds = Dataset::open({store()}, c.dataset_config());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ds->standardise_features(ds->measure_train_stats());
  const std::vector<float> want = training_ple_edges(*ds, 8, c.baselines.max_fit_rows);
  ASSERT_EQ(want.size(), 40u * 9u);
  int spread = 0;  // features with several intervals
  for (int i = 0; i < 40; ++i) {
    for (int t = 0; t < 8; ++t)
      EXPECT_LE(want[static_cast<size_t>(i * 9 + t)], want[static_cast<size_t>(i * 9 + t + 1)]);
    spread += want[static_cast<size_t>(i * 9 + 2)] > want[static_cast<size_t>(i * 9 + 1)];
  }
  EXPECT_GT(spread, 10);
  for (const char* name : {"/last.ckpt", "/best.ckpt"}) {
    auto ck = read_checkpoint(run + name);
    ASSERT_TRUE(ck.ok());
    auto edges = ck->get_f32("ple.edges");
    ASSERT_TRUE(edges.ok()) << edges.status().message();
    EXPECT_EQ(*edges, want) << name;
  }
  auto last = read_checkpoint(run + "/last.ckpt");
  auto w = last->get_f32("ple.weight");
  ASSERT_TRUE(w.ok());
  EXPECT_GT(*std::max_element(w->begin(), w->end()), 0.0f);
  EvalOptions o;
  o.bootstrap = 0;
  EXPECT_TRUE(evaluate(run + "/best.ckpt", {}, o).ok());
}

// --input-skip gam: the model starts as the gam baseline. The start in the checkpoint holds the
// GAM's coefficients (W_skip its first 40, W_ple the rest, b_s its bias) and the PLE edges are the
// GAM's; a GAM with other bins than the model's is refused.
TEST_F(TrainerTest, GamStartIsTheGamBaseline) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.perception.ple_bins = 6;
  c.input_skip = InputSkip::kGam;
  c.baselines.gbdt = false;
  c.baselines.gam = true;
  c.baselines.gam_bins = 6;
  ASSERT_TRUE(train(c, {store()}, run).ok());
  auto ck = read_checkpoint(run + "/last.ckpt");
  ASSERT_TRUE(ck.ok());
  auto gam_w = ck->get_f64("baseline.gam.weight");
  auto gam_b = ck->get_f64("baseline.gam.bias");
  ASSERT_TRUE(gam_w.ok() && gam_b.ok());
  ASSERT_EQ(gam_w->size(), 2u * 40u * 7u);
  const nlohmann::json& start = ck->meta["logistic_start"];
  const auto skip = start["skip_w"].get<std::vector<float>>();
  const auto ple = start["ple_w"].get<std::vector<float>>();
  const auto bias = start["bias"].get<std::vector<float>>();
  ASSERT_EQ(skip.size(), 80u);
  ASSERT_EQ(ple.size(), 2u * 240u);
  for (size_t h = 0; h < 2; ++h) {
    EXPECT_EQ(bias[h], static_cast<float>((*gam_b)[h]));
    for (size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(skip[h * 40 + i], static_cast<float>((*gam_w)[h * 280 + i]));
    }
    for (size_t i = 0; i < 240; ++i) {
      EXPECT_EQ(ple[h * 240 + i], static_cast<float>((*gam_w)[h * 280 + 40 + i]));
    }
  }
  EXPECT_EQ(*ck->get_f32("ple.edges"), *ck->get_f32("baseline.gam.edges"));
  EvalOptions o;
  o.bootstrap = 0;
  auto j = evaluate(run + "/best.ckpt", {}, o);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE((*j)["baselines"].contains("gam"));
  c.baselines.gam_bins = 8;
  EXPECT_NE(c.validate().message().find("--gam-bins"), std::string::npos);
  c.perception.ple_bins = 0;
  EXPECT_NE(c.validate().message().find("--ple-bins"), std::string::npos);
}

TEST_F(TrainerTest, LogRegModelTrainsAndEvaluates) {
  const std::string run = test::scratch_dir() + "/run";
  TrainConfig c = small_config();
  c.model = ModelKind::kLogReg;
  ASSERT_TRUE(train(c, {store()}, run).ok());
  auto ck = read_checkpoint(run + "/last.ckpt");
  ASSERT_TRUE(ck.ok());
  EXPECT_NE(ck->find("baseline.logreg.weight"), nullptr);
  EXPECT_EQ(ck->find("baseline.gbdt.h0"), nullptr);  // only the logistic family is fit
  EXPECT_EQ(ck->find("varsel.weight"), nullptr);
  auto j = evaluate(run + "/best.ckpt", {});
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["model"], (*j)["baselines"]["logreg"]);  // the model is the baseline
}

TEST_F(TrainerTest, PredictWritesOneRowPerSnapshot) {
  const std::string dir = test::scratch_dir();
  TrainConfig c = small_config();
  c.epochs = 1;
  ASSERT_TRUE(train(c, {store()}, dir + "/run").ok());
  ASSERT_TRUE(predict(dir + "/run/best.ckpt", store(), dir + "/p.csv", 2).ok());
  const auto ls = lines(dir + "/p.csv");
  ASSERT_EQ(ls.size(), 20001u);
  EXPECT_EQ(ls[0], "ts_ns,p_h10,p_h30");
  for (size_t i = 1; i < ls.size(); i += 997) {
    std::istringstream in(ls[i]);
    std::string ts, p;
    std::getline(in, ts, ',');
    EXPECT_GT(std::stoll(ts), 0);
    for (int h = 0; h < 2; ++h) {
      ASSERT_TRUE(std::getline(in, p, ','));
      const double v = std::stod(p);
      EXPECT_GT(v, 0.0);
      EXPECT_LT(v, 1.0);
    }
  }
}

}  // namespace
}  // namespace fxt
