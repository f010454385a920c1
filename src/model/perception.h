// The perception model (DESIGN §3), assembled from its blocks on the CPU reference backend.
//
//   x [B, K, F] -> varsel -> Mamba2 m1 (F -> D) -> LayerNorm a = v1
//   u2 = v1 + m2(v1) (Mamba2 D -> D) -> LayerNorm b = h [B, K, D]
//   c = attn_pool(h) [B, D];  s = CfC(h, s_{-1} = c, dt) [B, K, D]  (s_{-1} = 0 with cfg.causal)
//   logits[:, :, j] = head_j(s) [B, K, H]  (+ x W_skip^T with the input skip path,
//   + enc(x) W_ple^T with the PLE path, + snapshot_heads(x))
// The decision stride S scales Mamba2's dt and is the CfC's Δt unless a per-position dt [B, K]
// is given (`--cfc-time real`). docs/MODEL.md has the parameter table and the backward order.
//
// Parameters live in one flat buffer described by perception_param_specs (names, shapes,
// decay flags, groups); gradients use a second buffer of the same layout. Memory is planned
// once in a PerceptionWorkspace: after resize(), forward and backward allocate nothing (the
// ops' CpuContext scratch grows on first use only). Every stage, the Mamba2 and CfC scans
// included, is threaded over batch chunks fixed by the problem size, with parameter-gradient
// partials summed in chunk order, so results are bit-identical across runs and thread counts.
//
// Thread safety: functions are re-entrant; a workspace and a context belong to one caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/cfc.h"
#include "model/mamba2.h"
#include "model/ops.h"
#include "model/params.h"
#include "model/tensor.h"

namespace fxt::model {

struct PerceptionConfig {
  int features = 40;  // F
  int d_model = 128;  // D
  int d_state = 16;   // N of both Mamba2 blocks (8..128 on the CLI)
  int head_dim = 64;  // Mamba2 channels per head
  int expand = 2;     // Mamba2 d_inner = expand * D
  int d_conv = 4;     // Mamba2 causal conv width
  int head_mid = 64;  // HEAD_MID of the output heads
  int horizons = 5;   // H
  // The input skip path: a direct linear map from each position's (standardised) features to
  // every head's logit, logits += x W_skip^T, W_skip [H, F]. With it the model contains the
  // logistic regression on one snapshot (the trainer warm-starts W_skip and the heads' b_s from
  // the fitted logistic baseline) and the deep path learns what the logistic misses; the heads'
  // output projections w_m and w_s then start at zero, so the untrained model IS that logistic.
  bool input_skip = false;
  // Snapshot heads: H more gated residual heads (the output heads' form, DESIGN §3.5) reading
  // each position's features x directly, their logits added to the model's. A per-position
  // non-linear path beside the linear skip, for what a tree model reads off one snapshot
  // (docs/MODEL.md "Snapshot heads"). They start silent (w_m = w_s = 0, biases 0), so adding
  // them does not change the untrained model.
  bool snapshot_heads = false;
  // The PLE path: with ple_bins = K > 0, each position's features are piecewise-linearly encoded
  // (model/ple.h: K intervals per feature between the edges W_ple_edges [F, K + 1], the training
  // rows' quantiles) and logits += enc(x) W_ple^T, W_ple [H, F K]: a GAM on the snapshot beside
  // the linear skip, for the per-feature shapes (thresholds, saturation) a tree model reads off
  // one snapshot (docs/MODEL.md "PLE path"). W_ple starts at 0, so adding it does not change the
  // untrained model. The edges are constants stored with the parameters (no gradient).
  int ple_bins = 0;
  // Window-causal trunk: the CfC starts from zero instead of the window's attention pool c, so
  // the state at position k depends on positions 0..k only. DESIGN §3 starts it from c, a pool
  // over all K positions: with the loss on every position (DESIGN §4), position k < K - 1 then
  // reads features of later positions, which hold its own label (the mid path of the next
  // snapshots) — a look-ahead that training and its every-position validation reward and that
  // `fxt eval`, scoring the last position, never has (docs/MODEL.md "Look-ahead in the window").
  // The pool's query stays in the parameters, unused (gradient 0).
  bool causal = false;

  Status validate() const;
  bool operator==(const PerceptionConfig&) const = default;
  Mamba2Config m1() const;  // F -> D
  Mamba2Config m2() const;  // D -> D
  CfcConfig cfc() const;    // D -> D
};

// Offsets (elements) of each block in the flat parameter buffer, in this order.
struct PerceptionLayout {
  std::size_t varsel_w;  // [F, F]
  std::size_t varsel_b;  // [F]
  std::size_t m1;        // Mamba2Layout of m1, relative to this offset
  std::size_t norm_a_w;  // [D]
  std::size_t norm_a_b;  // [D]
  std::size_t m2;        // Mamba2Layout of m2, relative
  std::size_t norm_b_w;  // [D]
  std::size_t norm_b_b;  // [D]
  std::size_t pool_q;    // [D]
  std::size_t cfc;       // CfcLayout, relative
  std::size_t heads;     // [H, head.size], HeadLayout per row
  HeadLayout head;
  std::size_t skip_w;    // [H, F] input skip path (only with input_skip; == total otherwise)
  std::size_t xheads;    // [H, xhead.size] snapshot heads (only with snapshot_heads)
  HeadLayout xhead;      // head_layout(F, head_mid)
  std::size_t ple_edges;  // [F, K + 1] PLE edges (constants; only with ple_bins)
  std::size_t ple_w;      // [H, F K] PLE path weights (only with ple_bins)
  std::size_t total;
};
PerceptionLayout perception_layout(const PerceptionConfig& cfg);

// Every tensor in layout order: "varsel.weight", "m1.in_proj.weight", ..., "head{j}.b_s".
// The specs tile [0, layout.total) exactly.
std::vector<ModelParamSpec> perception_param_specs(const PerceptionConfig& cfg);

// DESIGN §3 initialisation of every block, deterministic in seed: varsel N(0, 1/F), Mamba2's
// init for m1 and m2, LayerNorms w = 1 and b = 0, pool q = 0 (mean pooling), CfC and heads
// Xavier-uniform with zero biases. With input_skip: W_skip = 0 and the heads' w_m, w_s = 0.
// Snapshot heads: Xavier-uniform w1, w2, w_g, and w_m = w_s = 0 (they output 0 until trained).
// PLE path: the default edges (model::ple_default_edges) and W_ple = 0.
// params has layout.total elements.
template <typename T>
void perception_init(const PerceptionConfig& cfg, T* params, std::uint64_t seed);

// Saved activations of the forward pass and backward scratch, row = b*K + k.
template <typename T>
struct PerceptionWorkspace {
  PerceptionConfig sized_for;  // the configuration the buffers are sized for
  int batch = 0;
  int seq_len = 0;
  std::vector<T> gates;           // [B, K, F] varsel softmax
  std::vector<T> x_sel;           // [B, K, F] varsel output, m1's input
  Mamba2Workspace<T> m1;          // m1.out [B, K, D]
  std::vector<T> v1;              // [B, K, D] LayerNorm a output, m2's input
  std::vector<T> mean_a, rstd_a;  // [B, K]
  Mamba2Workspace<T> m2;          // m2.out [B, K, D]
  std::vector<T> u2;              // [B, K, D] v1 + m2(v1)
  std::vector<T> h;               // [B, K, D] LayerNorm b output
  std::vector<T> mean_b, rstd_b;  // [B, K]
  std::vector<T> c;               // [B, D] pooled initial state
  std::vector<T> attn;            // [B, K] pool weights
  CfcWorkspace<T> cfc;            // cfc.out = s [B, K, D]
  std::vector<T> logits;          // [B, K, H] ([B, H] after perception_forward_last)
  std::vector<T> s_last;          // [B, D] CfC state at k = K - 1 (perception_forward_last)
  std::vector<T> z1, z2;          // [H, B*K, head_mid] head activations
  // Snapshot heads (cfg.snapshot_heads): their activations, logits and last-position inputs.
  std::vector<T> xz1, xz2;  // [H, B*K, head_mid]
  std::vector<T> xlogits;   // [B, K, H]
  std::vector<T> x_last;    // [B, F] (perception_forward_last, with any x path)
  // PLE path (cfg.ple_bins): the encoded inputs and their gradient, [B, K, F ple_bins] ([B, ...]
  // after perception_forward_last).
  std::vector<T> ple_enc, d_ple_enc;
  // Backward scratch (dL/d of the named activation).
  std::vector<T> d_s, d_h, d_c, d_u2, d_v1, d_m1_out;  // [B, K, D] ([B, D] for d_c)
  std::vector<T> d_x_sel;                              // [B, K, F]
  std::vector<T> ones;                                 // [H] default trunk scale

  // Sizes every buffer for (batch_size, seq_len_k); a no-op when nothing changed.
  void resize(const PerceptionConfig& cfg, int batch_size, int seq_len_k);
};

// Forward pass into ws->logits [B, K, H] (B, K from ws->resize). x [B, K, F] must stay alive
// and unchanged until backward. stride: S. dt: per-position CfC time step [B, K], or nullptr
// for Δt = S everywhere.
template <typename T>
void perception_forward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                        T stride, const T* dt, PerceptionWorkspace<T>* ws);

// Inference: the same trunk, the heads only at each sequence's last position (what scoring a
// snapshot with the window ending at it needs; the heads are ~20 % of a full forward).
// ws->logits then holds [B, H], equal to the full forward's rows k = K - 1. Not a basis for
// backward.
template <typename T>
void perception_forward_last(const PerceptionConfig& cfg, CpuContext& ctx, const T* params,
                             const T* x, T stride, const T* dt, PerceptionWorkspace<T>* ws);

// Backward pass of the last forward on ws. d_logits [B, K, H] = dL/dlogits; lambda [H] the
// trunk scale of DESIGN §4 (nullptr = all ones): head j's own parameter gradients are unscaled,
// what it sends into s is multiplied by lambda[j]. OVERWRITES grads (layout.total elements;
// zeroed here first) and, unless nullptr, d_x [B, K, F] with dL/dx.
template <typename T>
void perception_backward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                         T stride, const T* dt, const T* d_logits, const T* lambda,
                         PerceptionWorkspace<T>* ws, T* grads, T* d_x);

}  // namespace fxt::model
