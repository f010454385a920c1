// Mamba2 block on the GPU (DESIGN §3.2, §5.1): the same semantics as model::mamba2_forward /
// model::mamba2_backward (src/model/mamba2.h), float32, on a gpu::Context stream.
//
//   in_proj (no bias)  in_dim -> [z (d_inner) | x (d_inner), B (N), C (N) | dt (n_heads)]
//   causal depthwise conv1d (width d_conv, bias, zero left padding) over [x, B, C], then SiLU
//   dt_h = softplus(dt_h + dt_bias_h) * S;  A_h = -exp(A_log_h)
//   per head, state s [head_dim, N] = 0 at k = 0:  s <- exp(dt A) s + dt x (x) B;  y = s C + D x
//   y <- RMSNorm(y * SiLU(z)) * w_norm (eps 1e-5);  out = out_proj(y) (no bias)
//
// Parameters and gradients use the flat layout of model::mamba2_layout, passed as offsets in
// Mamba2GpuOffsets (mamba2_gpu_offsets converts a model::Mamba2Layout). This header is C++17 so
// .cu files can include it; it only forward-declares the model types.
//
// The ops follow gpu/runtime.h: they only enqueue on ctx.stream() (graph-capturable, no
// allocation once the workspace is sized), backward ADDS into grads and d_in, and every
// reduction runs in a fixed order (no float atomics), so results are bit-reproducible.
// docs/GPU.md ("Mamba2 on the GPU") describes the kernels, launch shapes and saved tensors.
#pragma once

#include <cstddef>

#include "gpu/runtime.h"

namespace fxt::model {
struct Mamba2Config;
struct Mamba2Layout;
}  // namespace fxt::model

namespace fxt::gpu {

// Sizes of one block (model::Mamba2Config with expand folded into d_inner).
struct Mamba2GpuDims {
  int in_dim = 40;    // input features
  int d_model = 128;  // output width D
  int d_inner = 256;  // expand * d_model
  int head_dim = 64;  // P
  int n_heads = 4;    // d_inner / head_dim
  int d_state = 16;   // N
  int d_conv = 4;     // causal conv width

  int conv_dim() const { return d_inner + 2 * d_state; }                // [x | B | C]
  int proj_dim() const { return 2 * d_inner + 2 * d_state + n_heads; }  // [z | xBC | dt]
};

// Element offsets of each tensor in the flat parameter (and gradient) buffer of one block, as
// model::Mamba2Layout: in_proj_w [proj_dim, in_dim], conv_w [conv_dim, d_conv], conv_b
// [conv_dim], dt_bias / a_log / d_skip [n_heads], norm_w [d_inner], out_proj_w [d_model, d_inner].
struct Mamba2GpuOffsets {
  std::size_t in_proj_w = 0;
  std::size_t conv_w = 0;
  std::size_t conv_b = 0;
  std::size_t dt_bias = 0;
  std::size_t a_log = 0;
  std::size_t d_skip = 0;
  std::size_t norm_w = 0;
  std::size_t out_proj_w = 0;
  std::size_t total = 0;
};

// Conversions from the CPU model's config and layout (defined in mamba2.cc, C++20).
Mamba2GpuDims mamba2_gpu_dims(const model::Mamba2Config& cfg);
Mamba2GpuOffsets mamba2_gpu_offsets(const model::Mamba2Layout& layout);

// nullptr when the GPU kernels support dims, else why not. Supported: all sizes positive,
// d_inner == n_heads * head_dim, head_dim <= 1024, d_conv <= 32, d_inner <= 1472, at most 16
// scan states per thread (always true for d_state <= 128 with head_dim <= 64) and the reverse
// scan's shared memory for one staged position < 46 KB.
const char* mamba2_gpu_unsupported(const Mamba2GpuDims& dims);

// Device activations saved by the forward for the backward, and backward scratch. Row-major,
// row r = b * K + k. Sized once by resize(); the ops allocate nothing.
struct Mamba2GpuWorkspace {
  int batch = 0;    // B
  int seq_len = 0;  // K
  // Forward (saved for backward).
  DeviceBuffer<float> zxbcdt;   // [B, K, proj_dim] in_proj output
  DeviceBuffer<float> xbc_pre;  // [B, K, conv_dim] conv output before SiLU
  DeviceBuffer<float> xbc;      // [B, K, conv_dim] after SiLU: x | B | C
  DeviceBuffer<float> dt;       // [B, K, n_heads] softplus(dt + dt_bias) * S
  DeviceBuffer<float> states;   // scan states saved by the forward (mamba2.cu: every s_k, or
                                // only those entering each reverse-scan chunk)
  DeviceBuffer<float> y;        // [B, K, d_inner] scan output including D x
  DeviceBuffer<float> gated;    // [B, K, d_inner] y * SiLU(z)
  DeviceBuffer<float> rstd;     // [B, K] 1 / rms(gated)
  DeviceBuffer<float> normed;   // [B, K, d_inner] RMSNorm output (out_proj input)
  DeviceBuffer<float> out;      // [B, K, d_model] the block's output
  // Backward scratch.
  DeviceBuffer<float> d_normed;   // [B, K, d_inner]
  DeviceBuffer<float> d_y;        // [B, K, d_inner]
  DeviceBuffer<float> d_zxbcdt;   // [B, K, proj_dim] (every column written by the backward)
  DeviceBuffer<float> d_xbc;      // [B, K, conv_dim] dL/dx from the scan, then dL/d(conv pre)
  DeviceBuffer<float> d_bc_head;  // [B, K, n_heads, 2N] per-head dL/dB | dL/dC (summed later)
  DeviceBuffer<float> d_dt;       // [B, K, n_heads] dL/d(dt after softplus * S)
  // Deterministic parameter-gradient partials, reduced by column_sum in a fixed row order.
  DeviceBuffer<float> norm_w_part;  // [row tiles, d_inner] per tile of rows
  DeviceBuffer<float> conv_w_part;  // [B, conv_dim * d_conv] per sequence
  DeviceBuffer<float> conv_b_part;  // [B, conv_dim] per sequence
  DeviceBuffer<float> a_log_part;   // [B, n_heads] per (sequence, head)
  DeviceBuffer<float> d_skip_part;  // [B, n_heads] per (sequence, head)

  // Sizes every buffer for batch_size sequences of seq_len_k positions (host call, allocates;
  // aborts via cuda_fail when mamba2_gpu_unsupported(dims) is non-null).
  void resize(const Mamba2GpuDims& dims, int batch_size, int seq_len_k);
};

// out = block(in) into ws->out [B, K, d_model]. params: device, offsets.total floats. in: device
// [B, K, in_dim], must stay unchanged until the backward. stride: S scaling dt. B and K are
// those of ws->resize. for_backward = false: no backward will follow (inference), so the scan
// need not save its states; at up to 8 sequences of K <= 64 it then runs in its quadratic
// (SSD) form, without the K-step chain (mamba2.cu; same outputs to float rounding).
void mamba2_forward(const Context& ctx, const Mamba2GpuDims& dims, const Mamba2GpuOffsets& off,
                    const float* params, const float* in, float stride, Mamba2GpuWorkspace* ws,
                    bool for_backward = true);

// Given d_out [B, K, d_model], ADDS dL/dparams into grads (block layout, offsets.total floats)
// and dL/din into d_in [B, K, in_dim] (nullptr to skip). Uses the activations of the last
// mamba2_forward on ws (same params, in, stride).
void mamba2_backward(const Context& ctx, const Mamba2GpuDims& dims, const Mamba2GpuOffsets& off,
                     const float* params, const float* in, float stride, const float* d_out,
                     Mamba2GpuWorkspace* ws, float* grads, float* d_in);

}  // namespace fxt::gpu
