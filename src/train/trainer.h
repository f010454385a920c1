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

namespace fxt {

// kLogReg / kGbdt: a baseline-only run (`--model logreg|gbdt`): the baselines of that family are
// fit (train/baselines.h) and the model is the one on the snapshot's own features.
enum class ModelKind { kPerception, kLogReg, kGbdt };
const char* model_kind_name(ModelKind k);  // "perception", "logreg", "gbdt"

// The perception model's input skip path (model::PerceptionConfig::input_skip, docs/MODEL.md):
// kLogReg = on, W_skip and the heads' b_s warm-started from the logistic regression fit on the
// training rows (the logreg baseline, or a fit of it for this purpose when --baselines leaves
// it out); kZero = on, started at zero; kOff = the DESIGN §3 model without it.
enum class InputSkip { kOff, kZero, kLogReg };
const char* input_skip_name(InputSkip s);                 // "off", "zero", "logreg"
Result<InputSkip> parse_input_skip(const std::string& s);  // names the flag on error

struct TrainConfig {
  uint64_t seed = 1;
  int64_t steps_per_epoch = 200;
  int epochs = 20;
  int batch = 32;   // B
  int window = 64;  // K
  int stride = 1;   // S
  // CfC time step (DESIGN §3.4): false = S per position; true = elapsed time in units of the
  // training range's median snapshot gap (`--cfc-time real`).
  bool cfc_time_real = false;
  std::vector<int> horizons = {30, 100, 300, 1000, 6000};
  int64_t min_move_ticks = 0;
  std::vector<int> drop_features;  // feature slots held at 0 (their training mean), sorted
  SplitConfig split;
  double lr = 1e-3;
  int64_t warmup_steps = 100;  // capped at the total number of steps
  double min_lr_ratio = 0.1;
  double weight_decay = 0.01;
  double clip = 1.0;  // global gradient-norm clip; <= 0 off
  double lr_mult_mamba = 1.0, lr_mult_cfc = 1.0, lr_mult_heads = 1.0;
  model::HorizonWeighting weighting = model::HorizonWeighting::kKendallClosed;
  bool lambda = true;
  std::string early_stop = "val_loss";  // val_loss | mean_auc | auc_h<h>
  int patience = 5;                     // epochs without improvement; 0 = never stop early
  ModelKind model = ModelKind::kPerception;
  model::PerceptionConfig perception;  // features and horizons are set from the data config
  InputSkip input_skip = InputSkip::kLogReg;  // sets perception.input_skip (not kOff)
  BaselineConfig baselines;            // fit once before training (DESIGN §6)
  int eval_batch = 64;                 // windows per forward pass when scoring
  int threads = 1;                     // CPU threads (results do not depend on it)
  // Backend (not part of the saved config): "auto" = the CUDA backend when it is built and a GPU
  // is present (perception model), else the CPU; "cpu"; "cuda" (an error without a GPU).
  std::string device = "auto";
  bool tf32 = false;  // TF32 tensor-core GEMMs on the GPU (FP32 by default)

  // Checks every field; the message names the flag.
  Status validate() const;
  // Everything that defines the run except `threads`.
  nlohmann::json to_json() const;
  static Result<TrainConfig> from_json(const nlohmann::json& j);
  DatasetConfig dataset_config() const;
  // The model's complete configuration: `perception` with the data's feature count, the
  // horizon count and the input skip path set (the one place these are combined).
  model::PerceptionConfig perception_config() const;
};

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
  // The synthetic market's oracle (data/synth_oracle.h): the OUT.synth.json that `fxt synth
  // --latent` wrote for the evaluated store; empty = none. Computed on oracle_rows evenly spaced
  // rows of the evaluated ones, for horizons <= oracle_max_horizon (Monte Carlo cost grows
  // with the horizon), by oracle_paths continuations each.
  std::string oracle_config;
  int oracle_rows = 2000;
  int oracle_paths = 64;
  int oracle_max_horizon = 1000;
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
               const std::string& out_csv, int threads = 1, const std::string& device = "auto");

// The backend a run uses: true for the CUDA backend. device: "auto" (CUDA when it is built, a
// GPU is present and the model is the perception model), "cpu" or "cuda" (an error when CUDA is
// not built or no GPU is present, and for --model logreg, which runs on the CPU only).
Result<bool> resolve_cuda(const std::string& device, ModelKind model);
// The name of the backend for run records: "cpu" or the GPU's name.
std::string backend_name(bool cuda);

}  // namespace fxt
