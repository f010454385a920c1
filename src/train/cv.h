// Purged walk-forward cross-validation (`fxt cv`, DESIGN §2.6 and §6, docs/CV.md).
//
// The dataset (stores in time order, snapshots concatenated) is cut into consecutive blocks:
// one block per store when there are at least folds + 2 stores, else equal blocks of the
// concatenated index. With N folds and W training blocks, fold i tests on block M - N + i
// (M blocks, so the test blocks are the last N and tile the end of the data), validates on the
// block before it and trains on the W blocks before that (walk-forward) or on every block from
// the start (expanding). Between train and validation and between validation and test the
// earlier range is cut short by the gap = purge (max horizon x stride) + embargo, so every
// training position t satisfies t + gap < validation begin and its labels (t + h, h <= max
// horizon) end before the first validation row; likewise validation -> test. Validation and
// test blocks are kept whole at their start. Windows never cross a store (Dataset's rule) and
// labels are masked at store ends, so nothing crosses a day boundary either.
//
// run_cv() trains each fold with train() into OUT/fold_<i>/ (fresh state: parameters,
// optimizer moments and the controllers, through TrainState::setup -> ControllerState::reset),
// evaluates best.ckpt on the fold's test range (evaluate(): model, logistic baseline, base
// rate) and writes OUT/fold_<i>/rows.bin (the scored rows) and then OUT/fold_<i>/eval.json,
// whose presence marks the fold finished. When every fold is finished it pools the test rows
// of all folds into OUT/cv.json: per-horizon metrics with block-bootstrap intervals and a
// paired model-vs-logistic comparison. A rerun of the same command skips finished folds and
// resumes an unfinished one from its last.ckpt; OUT/plan.json (written first) guards against
// rerunning with another plan or configuration. cv.json holds no timings or output paths, so
// an interrupted and resumed CV gives the same bytes as an uninterrupted one.
// On a cluster (docs/CLUSTER.md) each fold runs alone (CvOptions::only_fold) and a final
// step pools them (CvOptions::pool_only), giving the same files as one run.
//
// Thread-compatible: each call owns its state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "features/sequences.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace fxt {

enum class CvScheme { kWalkForward, kExpanding };
const char* cv_scheme_name(CvScheme s);  // "walk-forward", "expanding"
Result<CvScheme> parse_cv_scheme(const std::string& name);

enum class FoldUnit { kAuto, kStore, kBlock };
const char* fold_unit_name(FoldUnit u);  // "auto", "store", "block"
Result<FoldUnit> parse_fold_unit(const std::string& name);

inline constexpr int kDefaultBlockTrainBlocks = 3;  // training blocks per fold when by block

struct FoldPlanConfig {
  int folds = 3;
  CvScheme scheme = CvScheme::kWalkForward;
  FoldUnit unit = FoldUnit::kAuto;  // auto: by store when stores >= folds + 2, else by block
  // Training blocks W of a walk-forward fold (of the first fold when expanding). 0 = auto: by
  // store every store before the first validation store (stores - folds - 1); by block 3.
  int train_blocks = 0;
  uint64_t purge = 0;     // snapshots; at least max(horizons) x stride (run_cv sets it so)
  uint64_t embargo = 0;   // extra snapshots added to each purge gap
  uint64_t min_span = 1;  // the fewest snapshots a train or validation range may hold (a window)
};

struct Fold {
  int index = 0;
  GlobalRange train, validation, test;  // in the concatenated index of all stores
  // The stores [first_store, end_store) the fold touches and its ranges relative to the first
  // one's start: what the fold's training run sees (other stores are not opened).
  size_t first_store = 0, end_store = 0;
  GlobalRange local_train, local_validation, local_test;
};

struct FoldPlan {
  FoldUnit unit = FoldUnit::kStore;  // resolved: store or block
  CvScheme scheme = CvScheme::kWalkForward;
  int train_blocks = 0;
  uint64_t gap = 0;  // purge + embargo
  std::vector<uint64_t> store_sizes;
  std::vector<GlobalRange> blocks;
  std::vector<Fold> folds;

  uint64_t total_snapshots() const;  // of every store
  nlohmann::json to_json() const;
};

// The fold plan over stores of these sizes (pure). Errors (one line, exit code 2): fewer than
// one fold, too few stores for --by store, or blocks too short for the gap plus a window.
Result<FoldPlan> plan_folds(const std::vector<uint64_t>& store_sizes, const FoldPlanConfig& config);

struct CvConfig {
  TrainConfig train;    // the split is replaced by each fold's explicit ranges
  FoldPlanConfig plan;  // purge is raised to max(horizons) x stride when smaller
  int bootstrap = 200;  // block-bootstrap replicates, per fold and pooled (0 = no intervals)
  uint64_t bootstrap_seed = 1;
  int stack_rows = 50000;  // EvalOptions::stack_rows of each fold's evaluation

  // Everything that defines the CV's results (not threads): compared on a rerun.
  nlohmann::json to_json() const;
};

struct CvOptions {
  int stop_after_folds = 0;   // > 0: return after finishing this many folds in this invocation
  int stop_after_epochs = 0;  // > 0: train the next unfinished fold this many epochs, return
  // One fold of a CV spread over machines (docs/CLUSTER.md): >= 0 runs (or resumes) only this
  // fold and writes only inside OUT/fold_<i>/ (its plan as fold_<i>/cv_plan.json), never at
  // OUT's top level, so concurrent folds on a shared volume never write the same file.
  int only_fold = -1;
  // The gather step: no training; every fold must be finished; checks each fold's cv_plan.json,
  // then writes plan.json (or compares it), cv.json and run.json exactly as a full run does.
  bool pool_only = false;
  // The synthetic market's oracle on evenly spaced rows of the pooled test rows (one store,
  // generated by this config), compared with the pooled model and best baseline; computed when
  // the folds are pooled, so a rerun of a finished CV (or --pool-only) can add it.
  OracleSpec oracle;
};

struct CvResult {
  bool complete = false;  // every fold finished and cv.json written
  int folds_finished = 0;
  nlohmann::json cv;  // the cv.json contents when complete
};

// The CV a command describes, before any file is written: the configuration with the purge and
// minimum span derived from the training flags, the stores as absolute paths, the fold plan
// and plan.json's contents. run_cv() runs exactly this; `fxt cv --emit` (cluster specs) plans
// with it, so a cluster's folds are the same folds.
struct CvSetup {
  CvConfig config;
  std::vector<std::string> stores;  // absolute, lexically normal
  FoldPlan plan;
  nlohmann::json plan_json;  // plan.json: format, stores, config, plan
};
Result<CvSetup> prepare_cv(const CvConfig& config, const std::vector<std::string>& store_dirs);

// Runs (or continues) the CV into out_dir; see the file comment.
Result<CvResult> run_cv(const CvConfig& config, const std::vector<std::string>& store_dirs,
                        const std::string& out_dir, const CvOptions& options = {});

// The printed summary of a cv.json: per fold and horizon the AUC of model, logistic baseline
// and base rate, then the pooled AUCs with intervals and the paired comparison.
std::string format_cv_table(const nlohmann::json& cv);

// ---- pooled statistics (exposed for tests) ---------------------------------------------------

// Paired circular block bootstrap of the AUC of two scorers on the same rows. Replicate r
// resamples exactly the rows bootstrap_metrics() resamples with the same options (seed,
// block = max(block_rows, largest horizon)), so the `a` and `b` intervals equal its AUC
// intervals; `diff` is the interval of AUC(a) - AUC(b) over the same replicates. Rows count
// for a horizon when the mask is set and neither score is NaN.
struct PairedAucHorizon {
  double auc_a = HorizonMetrics::kNaN, auc_b = HorizonMetrics::kNaN;  // point estimates
  double diff = HorizonMetrics::kNaN;
  Interval a, b, d;
};
struct PairedAucResult {
  std::vector<PairedAucHorizon> horizons;
  double mean_diff = HorizonMetrics::kNaN;  // over horizons where both AUCs are defined
  Interval mean_d;
  int64_t block_rows = 0;
  int replicates = 0;
  // Every replicate's two AUCs, replicate-major (r * horizons + h; NaN where a horizon had no
  // valid rows), for statistics of paired quantities other than the difference (a ratio).
  std::vector<double> replicate_a, replicate_b;
};
Result<PairedAucResult> paired_auc_bootstrap(std::span<const float> scores_a,
                                             std::span<const float> scores_b,
                                             std::span<const uint8_t> labels,
                                             std::span<const uint8_t> mask,
                                             std::span<const int> horizons,
                                             const BootstrapOptions& options);

// rows.bin: the scored test rows of one fold (EvalRows), binary, little-endian.
Status write_eval_rows(const std::string& path, const EvalRows& rows);
Result<EvalRows> read_eval_rows(const std::string& path);

}  // namespace fxt
