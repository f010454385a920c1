// Per-epoch sums of the captured training step (gpu/train_step.h), accumulated on the device.
// C++17-clean (included by step_sums.cu).
#pragma once

#include "gpu/adamw.h"
#include "gpu/runtime.h"

namespace fxt::gpu {

// Slots of the sums array: [steps, loss, grad norm, skipped, loss_h[0..H)].
constexpr int kSumSteps = 0, kSumLoss = 1, kSumGradNorm = 2, kSumSkipped = 3, kSumLossH = 4;

// sums += this step's values (one thread, in a fixed order: deterministic). stats: the model
// optimizer's.
void accumulate_step_sums(const Context& ctx, const double* total, const double* loss_h,
                          int horizons, const AdamWStats* stats, double* sums);

}  // namespace fxt::gpu
