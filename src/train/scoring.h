// Internal to src/train (not public API): scoring a TrainState's model on a dataset. The
// per-epoch validation of train() and the inference-window scoring that evaluate() and predict()
// share; both run the model of the state (the perception model on the CPU or the GPU, or for a
// baseline-only run its model baseline).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/progress.h"
#include "core/status.h"
#include "data/store.h"
#include "features/sequences.h"
#include "train/metrics.h"
#include "train/train_state.h"

namespace fxt::train_detail {

// Validation (DESIGN §6): every position of the non-overlapping validation windows.
struct ValResult {
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean over horizons of pooled BCE
  std::vector<double> loss_h;
  Metrics metrics;
  int64_t rows = 0;
};

// Scores the validation split of `ds` with the state's model (train(), after every epoch).
Result<ValResult> validate_epoch(TrainState& st, const Dataset& ds, CpuContext& ctx);

// Scores snapshot `ends` (local indices of one store, features n x 40 standardised) with the
// inference window ending at each: model logits [n_ends, H] at the last position (for a
// baseline-only run, the model baseline's logits at those snapshots). `progress`, when given,
// advances by the snapshots scored.
Status score_inference(TrainState& st, CpuContext& ctx, const StoreReader& store,
                       const float* features, const std::vector<uint64_t>& ends,
                       std::vector<float>* model_logits, Progress* progress = nullptr);

}  // namespace fxt::train_detail
