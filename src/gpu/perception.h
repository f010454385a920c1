// The perception model (DESIGN §3) on the GPU: the blocks of src/gpu/ assembled exactly as
// model::perception_forward / perception_forward_last / perception_backward assemble the CPU
// ops (src/model/perception.cc), over the same flat parameter layout.
//
//   x [B, K, F] -> varsel -> Mamba2 m1 -> LayerNorm a = v1 -> u2 = v1 + m2(v1) -> LayerNorm b = h
//   c = attn_pool(h);  s = CfC(h, c, dt);  logits = heads(s) [B, K, H]  (+ x W_skip^T)
//   (+ snapshot heads(x) with cfg.snapshot_heads, + enc(x) W_ple^T with cfg.ple_bins)
//
// Memory is planned once by resize(); forward and backward then only enqueue work on the
// context's stream (no allocation, no synchronisation), so a training step that calls them can
// be captured as one CUDA Graph. Results are deterministic (docs/GPU.md).
//
// Host-side C++20 (includes model headers); not included by .cu files.
#pragma once

#include <functional>

#include "gpu/cfc_heads.h"
#include "gpu/mamba2.h"
#include "gpu/runtime.h"
#include "model/perception.h"

namespace fxt::gpu {

class PerceptionGpu {
 public:
  explicit PerceptionGpu(const model::PerceptionConfig& cfg);

  // Sizes every buffer for batch sequences of seq_len positions (allocates; a no-op when
  // unchanged). Must be called before forward/backward and never inside a graph capture.
  void resize(int batch, int seq_len);

  // logits() [B, K, H]. params: device, layout().total floats; x [B, K, F] must stay unchanged
  // until backward; dt [B, K] per-position CfC time step or nullptr (Δt = stride).
  void forward(const Context& ctx, const float* params, const float* x, float stride,
               const float* dt);
  // The heads at each sequence's last position only: logits() [B, H] (inference; no backward
  // may follow it).
  void forward_last(const Context& ctx, const float* params, const float* x, float stride,
                    const float* dt);
  // Backward of the last forward(). OVERWRITES grads (zeroed first), and d_x [B, K, F] unless
  // nullptr. d_logits [B, K, H]; lambda [H] device trunk scale (nullptr = ones).
  void backward(const Context& ctx, const float* params, const float* x, float stride,
                const float* dt, const float* d_logits, const float* lambda, float* grads,
                float* d_x);

  // Profiling hook: when set, forward and backward call marker(name) after each layer (names
  // "fwd varsel", ..., "bwd varsel"); the caller records an event there. Unset: no calls.
  void set_marker(std::function<void(const char*)> marker) { marker_ = std::move(marker); }

  const float* logits() const { return logits_.data(); }
  const model::PerceptionConfig& config() const { return cfg_; }
  const model::PerceptionLayout& layout() const { return layout_; }
  int batch() const { return batch_; }
  int seq_len() const { return seq_len_; }

 private:
  // for_backward = false (forward_last): nothing is saved for a backward, so the Mamba2 scans
  // of a few sequences may take their quadratic form (gpu/mamba2.h).
  void trunk_forward(const Context& ctx, const float* params, const float* x, float stride,
                     const float* dt, bool for_backward);
  void input_skip_forward(const Context& ctx, const float* params, const float* x, int rows,
                          float* logits) const;
  // logits [rows, H] += the snapshot heads on x [rows, F] (activations into xz1_, xz2_).
  void snapshot_heads_forward(const Context& ctx, const float* params, const float* x, int rows,
                              float* logits);
  // logits [rows, H] += enc(x) W_ple^T, the encoding kept in ple_enc_ (the PLE path).
  void ple_path_forward(const Context& ctx, const float* params, const float* x, int rows,
                        float* logits);

  void mark(const char* layer) const {
    if (marker_) marker_(layer);
  }

  model::PerceptionConfig cfg_;
  model::PerceptionLayout layout_;
  std::function<void(const char*)> marker_;
  Mamba2GpuDims m1_dims_, m2_dims_;
  Mamba2GpuOffsets m1_off_, m2_off_;
  CfcOffsets cfc_off_;
  HeadOffsets head_off_;
  HeadOffsets xhead_off_;  // the snapshot heads (input width F)
  int batch_ = 0, seq_len_ = 0;

  // Saved activations (row = b K + k).
  DeviceBuffer<float> gates_, x_sel_;          // [B, K, F]
  Mamba2GpuWorkspace m1_, m2_;                 // m1_.out, m2_.out [B, K, D]
  DeviceBuffer<float> v1_, u2_, h_;            // [B, K, D]
  DeviceBuffer<float> mean_a_, rstd_a_, mean_b_, rstd_b_;  // [B, K]
  DeviceBuffer<float> c_;                      // [B, D]
  DeviceBuffer<float> attn_;                   // [B, K]
  DeviceBuffer<float> cfc_buf_;                // carved into cfc_
  CfcWorkspace cfc_;
  DeviceBuffer<float> logits_;                 // [B, K, H] ([B, H] after forward_last)
  DeviceBuffer<float> s_last_;                 // [B, D]
  DeviceBuffer<float> x_last_;                 // [B, F] (input skip path at inference)
  DeviceBuffer<float> z1_, z2_;                // [H, B K, mid]
  DeviceBuffer<float> xz1_, xz2_, xlogits_;    // snapshot heads: [H, B K, mid], [B K, H]
  DeviceBuffer<float> ple_enc_, d_ple_enc_;    // PLE path: [B K, F ple_bins]
  // Backward scratch.
  DeviceBuffer<float> d_s_, d_h_, d_u2_, d_v1_, d_m1_out_;  // [B, K, D]
  DeviceBuffer<float> d_c_;                                // [B, D]
  DeviceBuffer<float> d_x_sel_;                            // [B, K, F]
  DeviceBuffer<float> scratch_;  // shared by the ops' backward scratch and the heads' scratch
};

}  // namespace fxt::gpu
