// Gradient-boosted trees through XGBoost's C API (DESIGN §6 baselines).
//
// Binary logistic objective, the `hist` tree method, early stopping on a validation set's log
// loss, seeded. Deterministic for a seed and thread count: hist builds the same histograms in
// the same order, rows are never subsampled (subsample = colsample = 1). A fitted model is
// kept as XGBoost's UBJSON bytes, which is what checkpoints store.
//
// Built only when XGBoost is found (Debian's libxgboost-dev; FXT_HAVE_XGBOOST); without it
// gbdt_available() is false and every call fails with a message that says so.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace fxt {

bool gbdt_available();

struct GbdtParams {
  int max_depth = 6;  // XGBoost's defaults for depth, rate, child weight, lambda, bins
  double learning_rate = 0.3;
  double min_child_weight = 1.0;
  double lambda = 1.0;  // L2 on leaf values
  int max_bin = 256;
  int max_rounds = 500;
  int early_stopping_rounds = 10;  // rounds without a lower validation log loss
  uint64_t seed = 1;
  int threads = 1;
};

struct GbdtModel {
  std::vector<uint8_t> bytes;  // XGBoost UBJSON model
  int rounds = 0;              // trees kept (best validation round + 1)
  double validation_log_loss = 0.0;
};

// x: rows x cols float, row-major (NaN = missing); labels 0/1. Validation rows drive early
// stopping; the returned model holds the trees up to the best validation round.
Result<GbdtModel> fit_gbdt(std::span<const float> train_x, std::span<const float> train_y,
                           std::span<const float> val_x, std::span<const float> val_y, int64_t cols,
                           const GbdtParams& params);

// Raw margins (logits) of rows x cols float inputs.
Result<std::vector<float>> gbdt_logits(const GbdtModel& model, std::span<const float> x,
                                       int64_t cols, int threads);

}  // namespace fxt
