// The training loop, evaluation and prediction of DESIGN §5-§6 on the CPU reference backend.
//
// train() opens a dataset over time-ordered stores, measures feature statistics on the training
// range only and standardises every store with them, then runs epochs of a fixed number of steps:
// B training anchors drawn with a seeded xoshiro256**, forward, loss_step (controllers updated),
// backward with the trunk scale lambda, AdamW with the warm-up + cosine schedule. After each
// epoch it scores the validation split (every position of non-overlapping windows), appends one
// JSON line to RUN_DIR/metrics.jsonl, writes last.ckpt (and best.ckpt when the early-stopping
// metric improved) and stops early after `patience` epochs without improvement.
//
// Before the first step the baselines (train/baselines.h: exact L2 logistic regression and XGBoost
// trees, each on the snapshot's features and on lagged features) are fit to convergence on the
// training rows, independently of the model, and saved in every checkpoint, so evaluate() scores
// them on exactly the rows the model is scored on.
//
// Reproducibility: the anchors of global step s come from Rng(seed_for_step(seed, s)), so the
// sampler has no state to save; everything else that the next step reads (parameters, moments,
// step counters, controller state, early-stopping state) is in last.ckpt. The same seed, data
// and configuration therefore give identical checkpoint bytes, and a run resumed from last.ckpt
// continues bit for bit. Checkpoints hold no timings (those go to metrics.jsonl and run.json).
// docs/TRAINING.md describes the files, the flags and the evaluation protocol.
//
// Thread-compatible: each call owns its state; `threads` only parallelises the CPU ops, whose
// results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "features/sequences.h"
#include "model/loss.h"
#include "model/perception.h"
#include "train/baselines.h"
#include "train/checkpoint.h"
#include "train/oracle_rows.h"
#include "train/train_config.h"

namespace fxt {

struct TrainOptions {
  bool resume = false;        // continue RUN_DIR/last.ckpt (config and stores come from it)
  int stop_after_epochs = 0;  // > 0: return after this many epochs of this invocation
};

struct TrainSummary {
  int epochs_run = 0;  // epochs completed in total (including resumed ones)
  int64_t steps = 0;   // global steps completed
  int best_epoch = 0;  // 1-based; 0 = none
  double best_value = 0.0;
  bool stopped_early = false;
};

// Trains into run_dir (created if missing). With options.resume, config and store_dirs are taken
// from run_dir/last.ckpt; a non-empty store_dirs must then equal the checkpoint's.
Result<TrainSummary> train(const TrainConfig& config, const std::vector<std::string>& store_dirs,
                           const std::string& run_dir, const TrainOptions& options = {});

enum class EvalSplit { kTest, kValidation, kAll };
Result<EvalSplit> parse_eval_split(const std::string& name);  // "test", "validation", "all"

struct EvalOptions {
  EvalSplit split = EvalSplit::kTest;
  std::vector<int> expect_horizons;  // non-empty: must equal the checkpoint's horizons
  int threads = 1;
  int bootstrap = 200;  // block-bootstrap replicates for confidence intervals; 0 = none
  uint64_t bootstrap_seed = 1;
  std::string device = "auto";  // as TrainConfig::device
  Precision precision = Precision::kFp32;  // as TrainConfig::precision
  // The synthetic market's oracle on a sample of the evaluated rows (train/oracle_rows.h); its
  // config empty = none.
  OracleSpec oracle;
  // The stacks (train/stacking.h) are fit on up to this many evenly spaced validation rows when
  // the test split is evaluated and baselines were fit; 0 = no stacks.
  int stack_rows = 50000;
};

// The rows evaluate() scored, in time order, row-major [rows][H]: the model's and each
// baseline's logits, labels and masks (0/1), and the training base rate per horizon. fxt cv
// pools these over folds (src/train/cv.h).
struct EvalRows {
  std::vector<int> horizons;
  std::vector<double> base_rates;
  std::vector<float> model_logits;
  std::vector<std::string> baseline_names;
  std::vector<std::vector<float>> baseline_logits;  // one [rows][H] array per baseline
  std::vector<float> stacked_logits;  // the model stack's [rows][H] logits; empty = no stack
  std::vector<uint8_t> labels, mask;
  size_t rows() const { return horizons.empty() ? 0 : labels.size() / horizons.size(); }
};

// DESIGN §6: scores every snapshot of the chosen split (of the checkpoint's split config over
// store_dirs; empty = the training stores) with the inference window ending at it; per-horizon
// metrics for the model, every baseline and the base-rate predictor on the same rows,
// block-bootstrap confidence intervals (block = the largest horizon), and per horizon the best
// baseline (the highest AUC on these rows: conservative) with the paired interval of
// model - best baseline and a verdict (baseline_comparison()).
// When `rows` is given it also receives the scored rows (the JSON is the same either way).
Result<nlohmann::json> evaluate(const std::string& checkpoint_path,
                                const std::vector<std::string>& store_dirs,
                                const EvalOptions& options = {}, EvalRows* rows = nullptr);

// Probabilities per horizon for every snapshot of one store (inference windows), as CSV:
// "ts_ns,p_h<h>..." written atomically to out_csv.
Status predict(const std::string& checkpoint_path, const std::string& store_dir,
               const std::string& out_csv, int threads = 1, const std::string& device = "auto",
               Precision precision = Precision::kFp32);

// The backend a run uses: true for the CUDA backend. device: "auto" (CUDA when it is built, a
// GPU is present and the model is the perception model), "cpu" or "cuda" (an error when CUDA is
// not built or no GPU is present, and for --model logreg, which runs on the CPU only).
Result<bool> resolve_cuda(const std::string& device, ModelKind model);
// --precision other than fp32 needs the CUDA backend: the CPU path computes in FP32 only.
Status check_precision(Precision precision, bool use_cuda);
// The name of the backend for run records: "cpu" or the GPU's name.
std::string backend_name(bool cuda);

}  // namespace fxt
