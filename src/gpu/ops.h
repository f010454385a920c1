// The simple layers of the perception model on the GPU (DESIGN §3.1, §3.3): variable
// selection, LayerNorm and the attention pool, forward and backward.
//
// Same semantics, argument order and shapes as the CPU reference ops of src/model/ops.h (their
// formulas are in docs/MODEL_OPS.md); only the views become device pointers plus dimensions:
// - forward overwrites its outputs and saved activations;
// - backward ADDS into every gradient; a gradient pointer that is nullptr is skipped (the CPU
//   ops' empty view);
// - nothing allocates: a backward that needs room for intermediates takes a device `scratch`
//   buffer of at least *_backward_scratch(...) floats (it may be shared between ops run in
//   sequence on one stream; its contents are undefined afterwards);
// - everything is enqueued on ctx.stream(), with no host synchronisation, so it can be captured
//   in a CUDA Graph; parameter gradients are reduced deterministically (per-row-tile or
//   per-sequence partials, then gpu::column_sum / a cuBLAS GEMM; no floating-point atomics).
// C++17-clean (included by .cu files).
#pragma once

#include <cstddef>

#include "gpu/runtime.h"

namespace fxt::gpu {

// ---- variable selection (DESIGN §3.1) ----------------------------------------------------------
// g = softmax(W x + b) over the f features of each row; y = f * g (.) x.
// x, y, gates [rows, f]; w [f, f]; b [f]. gates is saved for backward.
// Launch: one warp per row (8 rows per block), W in shared memory; logits, softmax and y fused.
void varsel_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                    float* gates, int rows, int f);
// dl = g (.) (f dy (.) x - sum_j g_j f dy_j x_j)  (dL/dlogits, kept in scratch [rows, f]);
// dx += f g (.) dy + dl W;  dw += dl^T x;  db += sum_r dl. dx, dw, db may be nullptr.
void varsel_backward(const Context& ctx, const float* x, const float* w, const float* gates,
                     const float* dy, float* dx, float* dw, float* db, int rows, int f,
                     float* scratch);
// Floats of scratch varsel_backward needs (rows * f).
size_t varsel_backward_scratch(int rows, int f);

// ---- LayerNorm (affine, eps = 1e-5 as model::kNormEps) ------------------------------------------
// y = (x - mean) * rstd * w + b over each row. x, y [rows, cols]; w, b [cols]; mean, rstd [rows]
// saved. Launch: one warp per row.
void layernorm_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                       float* mean, float* rstd, int rows, int cols);
// The residual and the norm in one launch: sum = x + a (the bits of add_inplace(a, x) on a copy
// of x), then y = LayerNorm(sum) as layernorm_forward. sum [rows, cols] is saved for backward.
void add_layernorm_forward(const Context& ctx, const float* a, const float* x, float* sum,
                           const float* w, const float* b, float* y, float* mean, float* rstd,
                           int rows, int cols);
// dx += rstd (dy w - mean(dy w) - xhat mean(dy w xhat));  dw += sum_r dy xhat;  db += sum_r dy.
// dw/db: per-tile partials [tiles, 2 cols] in scratch, then column_sum over the tiles.
// dx, dw, db may be nullptr.
void layernorm_backward(const Context& ctx, const float* x, const float* w, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dw, float* db,
                        int rows, int cols, float* scratch);
// Floats of scratch layernorm_backward needs (row tiles x 2 cols).
size_t layernorm_backward_scratch(int rows, int cols);

// ---- attention pool (DESIGN §3.3) --------------------------------------------------------------
// a_k = softmax_k(q . h_k / sqrt(d)), c = sum_k a_k h_k.
// h [batch, k, d]; q [d]; c [batch, d]; attn [batch, k] saved. Launch: one block per sequence.
void attn_pool_forward(const Context& ctx, const float* h, const float* q, float* c, float* attn,
                       int batch, int k, int d);
// da_k = dc . h_k; ds_k = a_k (da_k - sum_j a_j da_j) / sqrt(d);
// dh[k] += a_k dc + ds_k q;  dq += sum_b sum_k ds_k h_k (per-sequence partials [batch, d] in
// scratch, then column_sum). dh, dq may be nullptr.
void attn_pool_backward(const Context& ctx, const float* h, const float* q, const float* attn,
                        const float* dc, float* dh, float* dq, int batch, int k, int d,
                        float* scratch);
// Floats of scratch attn_pool_backward needs (batch * d).
size_t attn_pool_backward_scratch(int batch, int d);

}  // namespace fxt::gpu
