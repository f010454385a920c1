// The simple layers of the perception model (DESIGN §3), CPU reference backend.
//
// Each op has a forward and a backward declared side by side; docs/MODEL_OPS.md gives every
// formula, shape, initialisation and the measured gradient-check errors.
//
// Conventions shared by all ops:
// - Tensors are row-major views; "rows" R is any flattening of the leading dims (R = B*K).
// - Forward overwrites its outputs and any saved activations ("saved" tensors are written by
//   forward and read by backward; the caller owns them).
// - Backward ACCUMULATES (+=) into every gradient it produces, inputs and parameters alike, so
//   a tensor used twice receives the sum; the caller zeroes gradients once per step. An empty
//   gradient view means "not needed" and is skipped.
// - No op allocates except CpuContext::scratch on first use. Work is split over row chunks
//   fixed by the problem size; parameter gradients are per-chunk partials summed in chunk order,
//   so results are bit-identical across runs and thread counts.
// - Dense products use Eigen (single-threaded inside a chunk).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "model/tensor.h"

namespace fxt::model {

// Input and output views with the scalar type given explicitly at the call site
// (op<float>(...)), so Tensor<T> arguments convert implicitly.
template <typename T>
using In = std::type_identity_t<TensorView<const T>>;
template <typename T>
using Out = std::type_identity_t<TensorView<T>>;

// ---- scalar functions (also used by the Mamba2 and CfC code) ----------------------------------

template <typename T>
inline T sigmoid(T x) {
  // Stable for both signs: exp of a non-positive number only.
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}
template <typename T>
inline T silu(T x) {
  return x * sigmoid(x);
}
template <typename T>
inline T silu_grad(T x) {  // d/dx x*sigma(x) = sigma(x) * (1 + x*(1 - sigma(x)))
  const T s = sigmoid(x);
  return s * (T(1) + x * (T(1) - s));
}
template <typename T>
inline T softplus(T x) {  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|)
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}
template <typename T>
inline T softplus_grad(T x) {
  return sigmoid(x);
}
template <typename T>
inline T gelu(T x) {  // erf form: x * Phi(x)
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}
template <typename T>
inline T gelu_grad(T x) {  // Phi(x) + x * phi(x)
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
  const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

// ---- the same activations over n contiguous values ----------------------------------------------
// Eigen packet math (8 floats per instruction when built for x86-64-v3): the hot activations of
// Mamba2, CfC and the heads go through these. They agree with the scalar forms above to a few
// ulp (Eigen's float logistic, erf and tanh are rational approximations; double uses exp and the
// C library). y may be x.
template <typename T>
void silu_n(const T* x, T* y, int64_t n);
template <typename T>
void gelu_n(const T* x, T* y, int64_t n);
template <typename T>
void tanh_n(const T* x, T* y, int64_t n);
template <typename T>
void sigmoid_n(const T* x, T* y, int64_t n);

// ---- (a) linear: y = x W^T (+ b) ----------------------------------------------------------------
// x [R, in], w [out, in], b [out] or empty, y [R, out].
template <typename T>
void linear_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y);
// dx += dy W;  dw += dy^T x;  db += sum_r dy.
template <typename T>
void linear_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> dy, Out<T> dx, Out<T> dw, Out<T> db);

// ---- (b) variable selection (DESIGN §3.1) -------------------------------------------------------
// g = softmax(W_v x + b_v) over the F features of each row; y = F * g (.) x (uniform gates are
// the identity). x, y, gates [R, F]; w [F, F]; b [F]. gates is saved for backward.
template <typename T>
void varsel_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y, Out<T> gates);
template <typename T>
void varsel_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> gates, In<T> dy, Out<T> dx, Out<T> dw,
                     Out<T> db);
// W_v ~ N(0, 1/F), b_v = 0; deterministic in seed.
template <typename T>
void varsel_init(Out<T> w, Out<T> b, uint64_t seed);

// ---- (c) LayerNorm (affine, eps 1e-5) -----------------------------------------------------------
// y = (x - mean) * rstd * w + b over the last dim. x, y [R, C]; w, b [C]; mean, rstd [R] saved.
inline constexpr double kNormEps = 1e-5;
template <typename T>
void layernorm_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y, Out<T> mean,
                       Out<T> rstd);
template <typename T>
void layernorm_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> mean, In<T> rstd, In<T> dy,
                        Out<T> dx, Out<T> dw, Out<T> db);

// ---- (d) gated RMSNorm (Mamba2's RMSNormGated, norm after gate) ---------------------------------
// u = y (.) SiLU(z); out = u * rstd * w, rstd = 1/sqrt(mean(u^2) + eps) over the last dim.
// y, z, out [R, C]; w [C]; rstd [R] saved.
template <typename T>
void rmsnorm_gated_forward(CpuContext& ctx, In<T> y, In<T> z, In<T> w, Out<T> out, Out<T> rstd);
template <typename T>
void rmsnorm_gated_backward(CpuContext& ctx, In<T> y, In<T> z, In<T> w, In<T> rstd, In<T> dout,
                            Out<T> dy, Out<T> dz, Out<T> dw);

// ---- (e) elementwise activations ----------------------------------------------------------------
enum class Activation { kSilu, kSoftplus, kGelu, kSigmoid, kTanh };
const char* activation_name(Activation a);
// y = f(x), any shape with x.numel() == y.numel() (may alias).
template <typename T>
void activation_forward(Activation a, In<T> x, Out<T> y);
// dx += f'(x) dy.
template <typename T>
void activation_backward(Activation a, In<T> x, In<T> dy, Out<T> dx);

// ---- (f) residual add ---------------------------------------------------------------------------
// out = a + b (same numel); backward: da += dout, db += dout.
template <typename T>
void add_forward(In<T> a, In<T> b, Out<T> out);
template <typename T>
void add_backward(In<T> dout, Out<T> da, Out<T> db);

// ---- (g) attention pool (DESIGN §3.3) -----------------------------------------------------------
// a_k = softmax_k(q . h_k / sqrt(D)), c = sum_k a_k h_k. h [B, K, D], q [D], c [B, D];
// attn [B, K] saved. q = 0 at init (mean pooling).
template <typename T>
void attn_pool_forward(CpuContext& ctx, In<T> h, In<T> q, Out<T> c, Out<T> attn);
template <typename T>
void attn_pool_backward(CpuContext& ctx, In<T> h, In<T> q, In<T> attn, In<T> dc, Out<T> dh,
                        Out<T> dq);

// ---- (h) gated residual heads (DESIGN §3.5), one per horizon ------------------------------------
// z1 = W1 s + b1; a1 = GELU(z1); z2 = W2 a1 + b2; g = w_g.z2 + b_g; m = w_m.z2 + b_m;
// skip = w_s.s + b_s; logit = skip + sigmoid(g) * m.
inline constexpr int kHeadMid = 64;  // HEAD_MID

// Offsets (elements) of one head's tensors in its flat parameter row; heads are stacked [H, size].
struct HeadLayout {
  int64_t d = 0;     // input width D
  int64_t mid = 0;   // HEAD_MID
  int64_t w1 = 0;    // [mid, d]
  int64_t b1 = 0;    // [mid]
  int64_t w2 = 0;    // [mid, mid]
  int64_t b2 = 0;    // [mid]
  int64_t wg = 0;    // [mid]
  int64_t bg = 0;    // [1]
  int64_t wm = 0;    // [mid]
  int64_t bm = 0;    // [1]
  int64_t ws = 0;    // [d]
  int64_t bs = 0;    // [1]
  int64_t size = 0;  // elements per head
};
HeadLayout head_layout(int64_t d, int64_t mid = kHeadMid);

// s [R, D]; params [H, size]; logits [R, H]. Saved: z1, z2 [H, R, mid].
template <typename T>
void head_forward(CpuContext& ctx, const HeadLayout& l, In<T> s, In<T> params, Out<T> logits,
                  Out<T> z1, Out<T> z2);
// dparams[h] += dL/dparams[h] (unscaled); ds += sum_h trunk_scale[h] * dL/ds via head h.
// trunk_scale [H] is the lambda of DESIGN §4 (empty = all ones); it scales only what flows
// into the trunk, never the head's own parameter gradients.
template <typename T>
void head_backward(CpuContext& ctx, const HeadLayout& l, In<T> s, In<T> params, In<T> z1, In<T> z2,
                   In<T> dlogits, In<T> trunk_scale, Out<T> ds, Out<T> dparams);
// Xavier-uniform matrices and vectors (fan_in/fan_out of each nn.Linear), zero biases.
template <typename T>
void head_init(const HeadLayout& l, Out<T> params, uint64_t seed);
// Zeroes one head's w_m, b_m and w_s (head = its row of params): m = 0 and nothing of s reaches
// the logit, which is then b_s whatever the input. The gated path trains again from there.
template <typename T>
void head_silence(const HeadLayout& l, T* head) {
  std::fill(head + l.wm, head + l.wm + l.mid, T(0));
  head[l.bm] = T(0);
  std::fill(head + l.ws, head + l.ws + l.d, T(0));
}

}  // namespace fxt::model
