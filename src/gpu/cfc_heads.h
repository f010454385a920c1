// CfC recurrence and the gated residual heads on the GPU (DESIGN §3.4, §3.5, §5.1).
//
// Semantics mirror the CPU reference ops exactly: model::cfc_forward / cfc_backward
// (src/model/cfc.h) and model::head_forward / head_backward (src/model/ops.h). Conventions of
// src/gpu/runtime.h: float32 device pointers, ops only enqueue on ctx.stream() (capturable in a
// CUDA Graph), backward ADDS into every gradient, deterministic (no floating-point atomics).
//
// Engineering (docs/GPU.md, "CfC and heads on the GPU"):
// - CfC forward: W_in h + b for all B*K positions is one GEMM; the sequential loop over K is ONE
//   kernel launch, a block per sequence, W_rec held in registers and the state on chip across all
//   K steps. Backward: one reverse-loop kernel (block per sequence) carrying dL/ds on chip and
//   writing d_pre and per-sequence dL/dtau partials; then W_rec / W_in gradients as GEMMs over
//   all rows, the bias as a column sum and d_h = d_pre W_in as a GEMM.
// - Heads: they do not feed the recurrence, so they run after it over all positions at once as
//   batched GEMMs over the H heads plus small fused elementwise kernels.
//
// This header is C++17-clean (compiled by nvcc): it includes no src/model header. Layout
// offsets are passed as plain structs that mirror model::cfc_layout / model::head_layout.
#pragma once

#include <cstddef>

#include "gpu/runtime.h"

namespace fxt::gpu {

// ---- CfC recurrence ---------------------------------------------------------------------------

struct CfcDims {
  int batch = 0;    // B sequences
  int seq_len = 0;  // K positions per sequence
  int in_dim = 0;   // width of h_k
  int hidden = 0;   // D, width of s_k and c
};

// Element offsets into the flat CfC parameter (and gradient) buffer: identical to
// model::cfc_layout(CfcConfig{in_dim, hidden}).
struct CfcOffsets {
  size_t w_in = 0;     // [D, in_dim]
  size_t w_rec = 0;    // [D, D]
  size_t bias = 0;     // [D]
  size_t tau_raw = 0;  // [D]
  size_t total = 0;
};
inline CfcOffsets cfc_offsets(int in_dim, int hidden) {
  const auto d = static_cast<size_t>(hidden);
  CfcOffsets o;
  size_t at = 0;
  o.w_in = at, at += d * static_cast<size_t>(in_dim);
  o.w_rec = at, at += d * d;
  o.bias = at, at += d;
  o.tau_raw = at, at += d;
  o.total = at;
  return o;
}

// Saved activations and backward scratch, all device memory, row = b*K + k. Carve it from one
// buffer of cfc_workspace_floats(dims) floats with cfc_workspace_carve (every array 256-byte
// aligned when base is). forward writes xin, act, s_prev, out; backward reads act, s_prev and
// writes d_pre, d_tau, d_bias. A workspace belongs to one forward/backward pair at a time.
struct CfcWorkspace {
  float* xin = nullptr;     // [B, K, D] W_in h_k + b (the input projection)
  float* act = nullptr;     // [B, K, D] tanh(pre_k)
  float* s_prev = nullptr;  // [B, K, D] s_{k-1} (c at k = 0)
  float* out = nullptr;     // [B, K, D] s_k, the outputs
  float* d_pre = nullptr;   // [B, K, D] dL/dpre_k (backward)
  float* d_tau = nullptr;   // [B, D] per-sequence partial dL/dtau (backward)
  float* d_bias = nullptr;  // [B, D] per-sequence partial dL/dbias (backward)
};
size_t cfc_workspace_floats(const CfcDims& dims);
CfcWorkspace cfc_workspace_carve(const CfcDims& dims, float* base);

// s_k for all k into ws.out. h [B, K, in_dim]; c [B, D]; dt [B, K] per-position time step, or
// nullptr for dt_const everywhere. params: the flat CfC buffer (offsets o).
// Launches: 1 GEMM + 1 bias broadcast + 1 recurrence kernel (grid B).
void cfc_forward(const Context& ctx, const CfcDims& dims, const CfcOffsets& o, const float* params,
                 const float* h, const float* c, const float* dt, float dt_const,
                 const CfcWorkspace& ws);

// Given d_s = dL/ds_k [B, K, D] (from the outputs only), ADDS dL/dparams into grads (layout o),
// dL/dh into d_h [B, K, in_dim] and dL/dc into d_c [B, D] (either may be nullptr). dt and
// dt_const as in forward; ws as left by the matching forward.
void cfc_backward(const Context& ctx, const CfcDims& dims, const CfcOffsets& o, const float* params,
                  const float* h, const float* dt, float dt_const, const float* d_s,
                  const CfcWorkspace& ws, float* grads, float* d_h, float* d_c);

// ---- gated residual heads ---------------------------------------------------------------------

struct HeadDims {
  int rows = 0;   // R (B*K in training, B at inference)
  int heads = 0;  // H
  int d = 0;      // input width D
  int mid = 0;    // HEAD_MID (64)
};

// Element offsets of one head's tensors in its flat row; heads are stacked [H, size]. Identical
// to model::head_layout(d, mid).
struct HeadOffsets {
  long long w1 = 0;  // [mid, d]
  long long b1 = 0;  // [mid]
  long long w2 = 0;  // [mid, mid]
  long long b2 = 0;  // [mid]
  long long wg = 0;  // [mid]
  long long bg = 0;  // [1]
  long long wm = 0;  // [mid]
  long long bm = 0;  // [1]
  long long ws = 0;  // [d]
  long long bs = 0;  // [1]
  long long size = 0;
};
inline HeadOffsets head_offsets(int d, int mid) {
  HeadOffsets o;
  long long at = 0;
  const long long dd = d, m = mid;
  o.w1 = at, at += m * dd;
  o.b1 = at, at += m;
  o.w2 = at, at += m * m;
  o.b2 = at, at += m;
  o.wg = at, at += m;
  o.bg = at, at += 1;
  o.wm = at, at += m;
  o.bm = at, at += 1;
  o.ws = at, at += dd;
  o.bs = at, at += 1;
  o.size = at;
  return o;
}

// Device scratch (floats) that heads_forward / heads_backward need; the caller owns it.
size_t heads_forward_scratch_floats(const HeadDims& dims);
size_t heads_backward_scratch_floats(const HeadDims& dims);

// s [R, D]; params [H, size]; logits [R, H] (overwritten). Saved: z1, z2 [H, R, mid] (the
// pre-activations including their biases, as the CPU op saves them).
void heads_forward(const Context& ctx, const HeadDims& dims, const HeadOffsets& o,
                   const float* params, const float* s, float* logits, float* z1, float* z2,
                   float* scratch);

// dparams[h] += dL/dparams[h] (unscaled); ds += sum_h trunk_scale[h] * dL/ds via head h
// (ds may be nullptr: skipped). trunk_scale: DEVICE pointer to H floats (the lambda of
// DESIGN §4), nullptr = all ones; it scales only what flows into ds, never the head's own
// parameter gradients. z1, z2 as saved by heads_forward on the same s and params.
void heads_backward(const Context& ctx, const HeadDims& dims, const HeadOffsets& o,
                    const float* params, const float* s, const float* z1, const float* z2,
                    const float* dlogits, const float* trunk_scale, float* ds, float* dparams,
                    float* scratch);

// out[b, :] = s[b, K-1, :] for b < B (s [B, K, D], out [B, D]): the rows the heads read at
// inference, where only the last position is scored.
void gather_last_positions(const Context& ctx, const float* s, int batch, int seq_len, int d,
                           float* out);

}  // namespace fxt::gpu
