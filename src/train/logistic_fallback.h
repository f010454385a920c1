// The logistic fallback (docs/MODEL.md, "Logistic fallback"). With --input-skip logreg the
// untrained model is exactly the logistic fit on the training rows: each head's logit is
// skip.weight[h]·x + b_s[h] while w_m = b_m = w_s = 0. That head does not read the trunk, so it
// can be put back per horizon in a trained parameter set without touching the others. The
// trainer validates the untrained model once before training (the "start"), and whenever an
// epoch's model is checkpointed as the best, every horizon where the start scores better on
// validation (by the early-stopping metric, per horizon) gets the start's head back. The best
// epoch is chosen by the validation value of that composed model, so training never leaves a
// horizon below its logistic on validation. Validation rows only: the test split is untouched.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/perception.h"
#include "train/train_config.h"

namespace fxt::train_detail {

struct ValResult;  // train/scoring.h

// The logistic the model started from: its heads' parameters and its validation per horizon.
struct LogisticStart {
  std::vector<float> skip_w;  // [H, F], skip.weight at the start
  std::vector<float> bias;    // [H], each head's b_s at the start
  std::vector<float> ple_w;   // [H, F K], ple.weight at the start (empty without the PLE path)
  std::vector<double> val;    // [H], validation value per horizon (loss or AUC, as `stop`)
  bool empty() const { return val.empty(); }

  nlohmann::json to_json() const;
  // `where` names the checkpoint in errors; sizes are checked against H, F and the PLE bins.
  static Result<LogisticStart> from_json(const nlohmann::json& j, int horizons, int features,
                                         const std::string& where, int ple_bins = 0);
};

// The early-stopping metric per horizon: the pooled BCE (lower is better) for val_loss, the AUC
// (higher is better) for mean_auc and auc_h<h>.
std::vector<double> per_horizon_values(const ValResult& val, const StopMetric& stop);

// Captures the start from the untrained parameters and their validation.
LogisticStart capture_logistic_start(const model::PerceptionConfig& pc,
                                     const std::vector<float>& params, const ValResult& val0,
                                     const StopMetric& stop);

// Which horizons take the logistic head back, and the early-stopping value of the composed
// model (the same aggregate as the metric: mean over defined horizons, or the one horizon).
struct HeadChoice {
  std::vector<bool> logistic;  // [H]
  double value = 0.0;
};
HeadChoice choose_heads(const LogisticStart& start, const ValResult& val, const StopMetric& stop);

// params with the start's head for every horizon marked in `logistic` (a copy).
std::vector<float> with_logistic_heads(const model::PerceptionConfig& pc,
                                       const std::vector<float>& params,
                                       const LogisticStart& start,
                                       const std::vector<bool>& logistic);

}  // namespace fxt::train_detail
