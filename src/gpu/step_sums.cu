// Per-epoch sums of the training step, accumulated by one thread so the order is fixed.
#include "gpu/step_sums.h"

namespace fxt::gpu {

namespace {
__global__ void accumulate_kernel(const double* total, const double* loss_h, int horizons,
                                  const AdamWStats* stats, double* sums) {
  sums[kSumSteps] += 1.0;
  sums[kSumLoss] += *total;
  sums[kSumGradNorm] += stats->grad_norm;
  if (!stats->applied) sums[kSumSkipped] += 1.0;
  for (int h = 0; h < horizons; ++h) sums[kSumLossH + h] += loss_h[h];
}
}  // namespace

void accumulate_step_sums(const Context& ctx, const double* total, const double* loss_h,
                          int horizons, const AdamWStats* stats, double* sums) {
  accumulate_kernel<<<1, 1, 0, ctx.stream()>>>(total, loss_h, horizons, stats, sums);
  FXT_CUDA_LAUNCH_CHECK();
}

}  // namespace fxt::gpu
