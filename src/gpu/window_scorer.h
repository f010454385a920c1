// Scoring on the GPU (DESIGN §6: `fxt eval` and `fxt predict` score every snapshot with the
// window that ends at it): the store's standardised feature rows are uploaded once; a pass then
// scores up to `batch` snapshots at once — their end indices are copied in, the windows are
// gathered on the device (gather_scoring_windows, the left padding of window_positions), the
// model runs forward with the heads at the last position only (PerceptionGpu::forward_last),
// and the [batch, H] logits are copied back. The whole pass (copy in, gather, forward, copy out)
// is one CUDA graph, replayed; the host synchronises once per pass. No window is ever built on
// the host, so a pass costs the host only the end indices in and the logits out.
//
// The logits equal the CPU's perception_forward_last on the host-gathered windows to float
// tolerance (tests/gpu/window_scorer_train_test.cc). Host-side C++20; not included by .cu files.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/perception.h"
#include "gpu/runtime.h"
#include "model/perception.h"

namespace fxt::gpu {

struct ScoringShape {
  int window = 64;      // K
  int stride = 1;       // S
  int batch = 4096;     // windows per pass (the graph's fixed batch; a short last pass pads)
  bool elapsed = false;  // --cfc-time real: per-position Δt from the elapsed rows
};

class WindowScorer {
 public:
  WindowScorer(const model::PerceptionConfig& cfg, const ScoringShape& shape, int device = 0);
  ~WindowScorer();
  WindowScorer(const WindowScorer&) = delete;
  WindowScorer& operator=(const WindowScorer&) = delete;

  void set_precision(Precision p);                  // the products' arithmetic (FP32 default)
  void set_params(const std::vector<float>& host);  // layout().total floats; synchronous
  // One store's rows: features [rows, F] standardised, elapsed [rows] (gpu::elapsed_per_row)
  // when shape.elapsed, else ignored. Synchronous; replaces the previous store.
  void upload_rows(const float* features, const float* elapsed, uint64_t rows);
  // logits [n, H] (host) at the last position of the window ending at each ends[i] (< rows).
  // Synchronous. An end past the uploaded rows is a caller bug: aborts with a message.
  void score(const uint64_t* ends, size_t n, float* logits);

  const ScoringShape& shape() const { return shape_; }
  size_t graph_nodes() const { return graph_.node_count(); }
  const Context& context() const { return ctx_; }

 private:
  void capture();

  Context ctx_;
  PerceptionGpu model_;
  ScoringShape shape_;
  DeviceBuffer<float> params_, rows_, elapsed_, x_, dt_;
  DeviceBuffer<uint64_t> ends_;
  MappedHost<uint64_t> ends_host_;  // pinned staging of one pass's end indices
  MappedHost<float> logits_host_;   // pinned landing of one pass's logits [batch, H]
  uint64_t rows_n_ = 0;
  Graph graph_;
};

}  // namespace fxt::gpu
