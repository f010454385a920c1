// A logistic-regression layer on the CPU reference backend: a small convex model the optimizer's
// tests train with AdamW and the masked BCE (tests/train/optimizer_test.cc, docs/OPTIMIZER.md).
// It is NOT the product's logistic baseline: that one is solved exactly (train/logistic_fit.h,
// train/baselines.h, docs/BASELINES.md); the SGD-trained baseline this layer once was is gone.
//
// Per horizon h, on the standardised features x [F] of one row: logit_h = w_h . x + b_h.
// Parameters live in one flat buffer: "logreg.weight" [H, F] (weight decay) then "logreg.bias"
// [H] (no decay); gradients in a buffer of the same layout. Initialisation is all zeros (every
// logit 0, p = 1/2). Re-entrant; forward and backward allocate nothing beyond CpuContext scratch.
#pragma once

#include <cstddef>
#include <vector>

#include "core/status.h"
#include "model/mamba2.h"  // ParamSpec
#include "model/ops.h"

namespace fxt::model {

struct LogRegConfig {
  int features = 40;  // F
  int horizons = 5;   // H
};

// features >= 1 and horizons >= 1.
Status logreg_validate(const LogRegConfig& cfg);

// Offsets (in elements) in the flat parameter buffer; total = buffer size = H * F + H.
struct LogRegLayout {
  std::size_t weight;  // [H, F]
  std::size_t bias;    // [H]
  std::size_t total;
};
LogRegLayout logreg_layout(const LogRegConfig& cfg);

// "logreg.weight" [H, F] decayed, "logreg.bias" [H] not, in layout order.
std::vector<ParamSpec> logreg_param_specs(const LogRegConfig& cfg);

// All zeros; params has layout.total elements.
template <typename T>
void logreg_init(const LogRegConfig& cfg, T* params);

// x [R, F] -> logits [R, H] (overwritten).
template <typename T>
void logreg_forward(CpuContext& ctx, const LogRegConfig& cfg, const T* params, In<T> x,
                    Out<T> logits);

// Given dlogits [R, H], ADDS dL/dparams into grads (layout.total elements) and dL/dx into dx
// [R, F] (an empty view skips it).
template <typename T>
void logreg_backward(CpuContext& ctx, const LogRegConfig& cfg, const T* params, In<T> x,
                     In<T> dlogits, T* grads, Out<T> dx);

}  // namespace fxt::model
