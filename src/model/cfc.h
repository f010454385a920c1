// CfC recurrence (DESIGN §3.4): a closed-form continuous-time cell, CPU reference.
//
// Over k = 0..K-1 with hidden size D and an initial state c per sequence (the attention
// pool's output):
//   pre_k = W_in h_k + W_rec s_{k-1} + b,   tau = softplus(tau_raw) + 0.1   (per channel)
//   e_k = exp(-dt_k / tau),   s_k = e_k * s_{k-1} + (1 - e_k) * tanh(pre_k),   s_{-1} = c
// dt_k is given per position (the decision stride S by default; normalised elapsed time under
// `--cfc-time real`). W_in h_k for all k of a chunk of sequences is one matrix product before
// the sequential loop.
// The outputs are all s_k [B, K, D]. docs/MAMBA2_CFC.md has the backward derivation.
//
// Parameters live in one flat buffer (see CfcLayout, cfc_param_specs); gradients use the same
// layout. Functions are re-entrant; a workspace belongs to one caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/mamba2.h"  // ParamSpec, num_seq_chunks
#include "model/tensor.h"  // CpuContext

namespace fxt::model {

// Lower bound of the time constant tau (in the units of dt).
inline constexpr double kCfcTauMin = 0.1;

struct CfcConfig {
  int in_dim = 128;  // width of h_k
  int hidden = 128;  // D, width of s_k and c
};

Status cfc_validate(const CfcConfig& cfg);

struct CfcLayout {
  std::size_t w_in;     // [hidden, in_dim]
  std::size_t w_rec;    // [hidden, hidden]
  std::size_t bias;     // [hidden]
  std::size_t tau_raw;  // [hidden]
  std::size_t total;
};
CfcLayout cfc_layout(const CfcConfig& cfg);

// Names "<prefix>.w_in", "<prefix>.w_rec", "<prefix>.bias", "<prefix>.tau_raw" (prefix "cfc").
std::vector<ParamSpec> cfc_param_specs(const CfcConfig& cfg, const std::string& prefix);

// Xavier-uniform W_in and W_rec, zero bias, tau_raw = softplus^-1(0.9) so tau = 1 (in units of
// dt). Deterministic in seed.
template <typename T>
void cfc_init(const CfcConfig& cfg, T* params, std::uint64_t seed);

inline constexpr int kCfcSeqsPerChunk = 8;

// Saved activations and backward scratch; sized by resize(), nothing allocated per call.
// Row-major, row = b*K + k.
template <typename T>
struct CfcWorkspace {
  int batch = 0;
  int seq_len = 0;
  std::vector<T> tau;      // [D] softplus(tau_raw) + 0.1
  std::vector<T> pre;      // [B, K, D] W_in h + b, then + W_rec s_{k-1} (the full pre_k)
  std::vector<T> act;      // [B, K, D] tanh(pre_k)
  std::vector<T> decay;    // [B, K, D] e_k = exp(-dt_k / tau)
  std::vector<T> s_prev;   // [B, K, D] s_{k-1} (c at k = 0)
  std::vector<T> out;      // [B, K, D] s_k, the outputs
  std::vector<T> decay_c;  // [D] exp(-dt_const / tau) when no per-position dt is given
  // Backward scratch.
  std::vector<T> d_pre;    // [B, K, D]
  std::vector<T> d_carry;  // [B, D] dL/ds_{k-1} carried backwards over K
  // Chunks of sequences: chunks = num_seq_chunks(B, kCfcSeqsPerChunk); chunk c owns slice c.
  int chunks = 0;
  std::vector<T> d_tau;         // [chunks, D] per-chunk partial dL/dtau
  std::vector<T> grad_partial;  // [chunks, layout.tau_raw] per-chunk dL/d(w_in, w_rec, bias)

  void resize(const CfcConfig& cfg, int batch_size, int seq_len_k);
};

// s_k for all k into ws->out. h: [B, K, in_dim]; c: [B, D]; dt: [B, K] per-position time step,
// or nullptr to use dt_const everywhere. Requires ws->resize(cfg, B, K) beforehand.
// Threaded over chunks of sequences on ctx; bit-identical for any thread count.
template <typename T>
void cfc_forward(const CfcConfig& cfg, CpuContext& ctx, const T* params, const T* h, const T* c,
                 const T* dt, T dt_const, CfcWorkspace<T>* ws);

// Given d_s = dL/ds_k [B, K, D] (from the outputs only), ADDS dL/dparams into grads, dL/dh into
// d_h [B, K, in_dim] and dL/dc into d_c [B, D] (either may be nullptr). dt as in forward.
// Parameter gradients are bit-identical for any thread count (per-chunk partial buffers summed
// in chunk order).
template <typename T>
void cfc_backward(const CfcConfig& cfg, CpuContext& ctx, const T* params, const T* h, const T* dt,
                  T dt_const, const T* d_s, CfcWorkspace<T>* ws, T* grads, T* d_h, T* d_c);

// Single-threaded conveniences (same results as any thread count).
template <typename T>
void cfc_forward(const CfcConfig& cfg, const T* params, const T* h, const T* c, const T* dt,
                 T dt_const, CfcWorkspace<T>* ws) {
  CpuContext ctx(1);
  cfc_forward(cfg, ctx, params, h, c, dt, dt_const, ws);
}
template <typename T>
void cfc_backward(const CfcConfig& cfg, const T* params, const T* h, const T* dt, T dt_const,
                  const T* d_s, CfcWorkspace<T>* ws, T* grads, T* d_h, T* d_c) {
  CpuContext ctx(1);
  cfc_backward(cfg, ctx, params, h, dt, dt_const, d_s, ws, grads, d_h, d_c);
}

}  // namespace fxt::model
