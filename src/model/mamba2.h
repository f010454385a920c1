// Mamba2 block (DESIGN §3.2): state-spaces/mamba's Mamba2 with one group, CPU reference.
//
// A block maps a batch of sequences [B, K, in_dim] to [B, K, d_model]:
//   in_proj (no bias)  in_dim -> [z (d_inner) | x (d_inner), B (N), C (N) | dt (n_heads)]
//   causal depthwise conv1d (width d_conv, bias, left zero padding) over [x, B, C], then SiLU
//   dt_h = softplus(dt_h + dt_bias_h) * S            (S = decision stride, a runtime scalar)
//   A_h = -exp(A_log_h); per head the state s [head_dim, N] starts at 0 for each sequence:
//     s <- exp(dt_h A_h) s + dt_h x_h (x) B;   y_h = s C + D_h x_h
//   y <- RMSNorm(y * SiLU(z)) * w_norm (eps 1e-5, RMS over d_inner);  out = out_proj(y)
// The scan is exact and sequential over K (no chunking). docs/MAMBA2_CFC.md has the
// backward derivation.
//
// Parameters live in one flat buffer (llm.c style): Mamba2Layout gives each tensor's offset,
// mamba2_param_specs its checkpoint name, shape and weight-decay flag. Gradients use the same
// layout in a second buffer. All functions are re-entrant; a workspace belongs to one caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/tensor.h"  // CpuContext, kMaxChunks

namespace fxt::model {

// One named parameter tensor inside a flat parameter buffer (offsets in elements).
struct ParamSpec {
  std::string name;           // checkpoint name, e.g. "m1.in_proj.weight"
  std::size_t offset = 0;     // first element in the flat buffer
  std::size_t size = 0;       // number of elements (product of shape)
  std::vector<int> shape;     // PyTorch layout, row-major
  bool weight_decay = false;  // AdamW decays only matrices (not A_log, D, dt_bias, norms, biases)
};

template <typename T>
T* param_ptr(const ParamSpec& spec, T* base) {
  return base + spec.offset;
}

struct Mamba2Config {
  int in_dim = 40;    // input features
  int d_model = 128;  // output width D
  int expand = 2;     // d_inner = expand * d_model
  int head_dim = 64;  // P: channels per head
  int d_state = 16;   // N: state size (the CLI allows 8..128)
  int d_conv = 4;     // causal conv width

  int d_inner() const { return expand * d_model; }
  int n_heads() const { return d_inner() / head_dim; }
  int conv_dim() const { return d_inner() + 2 * d_state; }                  // [x | B | C]
  int proj_dim() const { return 2 * d_inner() + 2 * d_state + n_heads(); }  // [z | xBC | dt]
};

// Positive sizes and d_inner divisible by head_dim.
Status mamba2_validate(const Mamba2Config& cfg);

// Offsets (in elements) of each tensor in the flat parameter buffer; total = buffer size.
struct Mamba2Layout {
  std::size_t in_proj_w;   // [proj_dim, in_dim]
  std::size_t conv_w;      // [conv_dim, d_conv] (PyTorch [conv_dim, 1, d_conv])
  std::size_t conv_b;      // [conv_dim]
  std::size_t dt_bias;     // [n_heads]
  std::size_t a_log;       // [n_heads]
  std::size_t d_skip;      // [n_heads] (the "D" parameter)
  std::size_t norm_w;      // [d_inner]
  std::size_t out_proj_w;  // [d_model, d_inner]
  std::size_t total;
};
Mamba2Layout mamba2_layout(const Mamba2Config& cfg);

// Names "<prefix>.in_proj.weight", "<prefix>.conv.weight", ... in layout order.
std::vector<ParamSpec> mamba2_param_specs(const Mamba2Config& cfg, const std::string& prefix);

// Sequences [b0, b1) of chunk c: the batch is split into a number of chunks that depends only
// on the batch size (never on the thread count), see num_seq_chunks / chunk_begin.
inline int num_seq_chunks(int batch, int seqs_per_chunk) {
  const int n = (batch + seqs_per_chunk - 1) / seqs_per_chunk;
  return n < 1 ? 1 : (n > kMaxChunks ? kMaxChunks : n);
}
inline constexpr int kMamba2SeqsPerChunk = 4;

// Mamba2's initialisation (DESIGN §3.2), deterministic in seed; params has layout.total elems.
template <typename T>
void mamba2_init(const Mamba2Config& cfg, T* params, std::uint64_t seed);

// Activations saved by the forward pass for the backward pass, plus backward scratch.
// Sized once by resize(); forward/backward allocate nothing. Shapes row-major, row = b*K + k.
template <typename T>
struct Mamba2Workspace {
  int batch = 0;
  int seq_len = 0;
  std::vector<T> zxbcdt;       // [B, K, proj_dim] in_proj output
  std::vector<T> xbc_pre;      // [B, K, conv_dim] conv output before SiLU
  std::vector<T> xbc;          // [B, K, conv_dim] after SiLU: x | B | C
  std::vector<T> dt;           // [B, K, n_heads] softplus(dt + dt_bias) * S
  std::vector<T> y;            // [B, K, d_inner] scan output including D_h x_h
  std::vector<T> gated;        // [B, K, d_inner] y * SiLU(z)
  std::vector<T> rstd;         // [B, K] 1 / rms(gated)
  std::vector<T> normed;       // [B, K, d_inner] RMSNorm output, input of out_proj
  std::vector<T> out;          // [B, K, d_model] the block's output
  std::vector<T> conv_w_taps;  // [d_conv, conv_dim] conv_w tap-major, so channel loops vectorise
  // Backward scratch.
  std::vector<T> d_zxbcdt;  // [B, K, proj_dim]
  std::vector<T> d_xbc;     // [B, K, conv_dim] dL/d(conv act), then dL/d(conv pre) in place
  std::vector<T> d_dt;      // [B, K, n_heads] dL/d(dt after softplus * S)
  std::vector<T> d_normed;  // [B, K, d_inner]
  std::vector<T> d_y;       // [B, K, d_inner]
  // Per-chunk scratch (chunks = num_seq_chunks(B, kMamba2SeqsPerChunk); chunk c owns slice c).
  int chunks = 0;
  std::vector<T> state;         // [chunks, N, head_dim] forward scan state
  std::vector<T> states;        // [chunks, K + 1, head_dim, N] s_{-1} = 0, s_0..s_{K-1}
  std::vector<T> scan_acc;      // [chunks, 3, N] per-n partial sums / products, reverse scan
  std::vector<T> state_grad;    // [chunks, head_dim, N] dL/ds carried backwards over K
  std::vector<T> grad_partial;  // [chunks, layout.total] per-chunk parameter gradients

  void resize(const Mamba2Config& cfg, int batch_size, int seq_len_k);
};

// out = block(in) into ws->out. in: [B, K, in_dim] (must stay alive until backward).
// stride: S, the decision stride scaling dt. Requires ws->resize(cfg, B, K) beforehand.
// Threaded over chunks of sequences on ctx; bit-identical for any thread count.
template <typename T>
void mamba2_forward(const Mamba2Config& cfg, CpuContext& ctx, const T* params, const T* in,
                    T stride, Mamba2Workspace<T>* ws);

// Given d_out [B, K, d_model], ADDS dL/dparams into grads (layout.total elems) and dL/din into
// d_in [B, K, in_dim] (nullptr to skip). Uses the activations of the last forward on ws.
// Parameter gradients are formed per chunk into per-chunk partial buffers (ws->grad_partial)
// and summed in chunk order, so they are bit-identical for any thread count.
template <typename T>
void mamba2_backward(const Mamba2Config& cfg, CpuContext& ctx, const T* params, const T* in,
                     T stride, const T* d_out, Mamba2Workspace<T>* ws, T* grads, T* d_in);

// Single-threaded conveniences (same results as any thread count).
template <typename T>
void mamba2_forward(const Mamba2Config& cfg, const T* params, const T* in, T stride,
                    Mamba2Workspace<T>* ws) {
  CpuContext ctx(1);
  mamba2_forward(cfg, ctx, params, in, stride, ws);
}
template <typename T>
void mamba2_backward(const Mamba2Config& cfg, const T* params, const T* in, T stride,
                     const T* d_out, Mamba2Workspace<T>* ws, T* grads, T* d_in) {
  CpuContext ctx(1);
  mamba2_backward(cfg, ctx, params, in, stride, d_out, ws, grads, d_in);
}

}  // namespace fxt::model
