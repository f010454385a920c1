// The configuration of a training run (DESIGN §5): every flag of `fxt train` as one value, its
// checks, its JSON form (the config section of every checkpoint and run.json) and the model
// configuration derived from it. trainer.h includes this header; the loop is in trainer.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision.h"
#include "core/status.h"
#include "features/sequences.h"
#include "model/loss.h"
#include "model/perception.h"
#include "train/baselines.h"

namespace fxt {

// kLogReg / kGbdt: a baseline-only run (`--model logreg|gbdt`): the baselines of that family are
// fit (train/baselines.h) and the model is the one on the snapshot's own features.
enum class ModelKind { kPerception, kLogReg, kGbdt };
const char* model_kind_name(ModelKind k);  // "perception", "logreg", "gbdt"

// The perception model's input skip path (model::PerceptionConfig::input_skip, docs/MODEL.md):
// kLogReg = on, W_skip and the heads' b_s warm-started from the logistic regression fit on the
// training rows (the logreg baseline, or a fit of it for this purpose when --baselines leaves
// it out); kGam = on with the PLE path (--ple-bins K), W_skip, W_ple and b_s warm-started from
// the GAM on the PLE encoding (the gam baseline, or a fit of it); kZero = on, started at zero;
// kOff = the DESIGN §3 model without it.
enum class InputSkip { kOff, kZero, kLogReg, kGam };
const char* input_skip_name(InputSkip s);                  // "off", "zero", "logreg", "gam"
Result<InputSkip> parse_input_skip(const std::string& s);  // names the flag on error

inline model::PerceptionConfig causal_perception() {
  model::PerceptionConfig c;
  c.causal = true;
  return c;
}

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
  // Features and horizons are set from the data config. Training defaults to the window-causal
  // trunk (--no-causal: DESIGN §3's pool start, which lets earlier positions read later ones;
  // docs/MODEL.md "Look-ahead in the window").
  model::PerceptionConfig perception = causal_perception();
  InputSkip input_skip = InputSkip::kLogReg;  // sets perception.input_skip (not kOff)
  // With kLogReg: a horizon whose logistic start validates better than the trained model keeps
  // the logistic head in best.ckpt (train/logistic_fallback.h).
  bool logistic_fallback = true;
  BaselineConfig baselines;                   // fit once before training (DESIGN §6)
  int eval_batch = 64;                        // windows per forward pass when scoring
  int threads = 1;                            // CPU threads (results do not depend on it)
  // Backend (not part of the saved config): "auto" = the CUDA backend when it is built and a GPU
  // is present (perception model), else the CPU; "cpu"; "cuda" (an error without a GPU).
  std::string device = "auto";
  // The GPU's matrix products (not part of the saved config): FP32, or TF32 / BF16 tensor-core
  // products with FP32 accumulation (core/precision.h). The CPU backend is FP32 only.
  Precision precision = Precision::kFp32;

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

namespace train_detail {

// Early-stopping metric: "val_loss" (lower is better), "mean_auc" or "auc_h<h>" (higher).
struct StopMetric {
  bool lower_is_better = true;
  int horizon_index = -1;  // for auc_h<h>
};
// Parses TrainConfig::early_stop; the message names the flag.
Result<StopMetric> parse_stop_metric(const std::string& s, const std::vector<int>& horizons);

}  // namespace train_detail

}  // namespace fxt
