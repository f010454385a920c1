// AdamW with global gradient-norm clipping and the warm-up + cosine learning-rate schedule on the
// GPU: fxt::AdamW and fxt::LrSchedule of src/train/optimizer.h (docs/OPTIMIZER.md), with the
// step counters, the learning rate and the statistics in device memory so that step() can sit
// inside the captured training step.
//
// Registration (setup, synchronous): one or more (params, grads, n) device buffers, each with
// per-element weight-decay flags and learning-rate multipliers (host vectors, uploaded once), or
// with a list of segments (offset, size, decay, multiplier: a ParamSpec and its group's
// multiplier) whose uncovered elements are neither read nor written, as the CPU optimizer's
// uncovered elements. Moments start at zero.
//
// step(ctx) enqueues three kernels on ctx.stream():
//   1. sum of g^2 over every active element of every buffer, in double, over a fixed partition
//      of the concatenated buffers (a function of the registered sizes only) with an ordered
//      shared-memory tree per block;
//   2. finalize (one block): ordered sum of the block partials, norm = sqrt; lr from the schedule
//      at the device schedule step (or from an external device lr); when the norm is finite the
//      clip scale (max_grad_norm / norm when norm > max_grad_norm > 0), the step counter + 1 and
//      the per-group float step size and decay factor; stats written;
//   3. the element update, skipped entirely (params, grads, moments unchanged) when the norm was
//      not finite: g *= clip (in place, as the CPU), then the float AdamW update in the CPU's
//      operation order (no FMA contraction), so the same gradients give the CPU's parameters up
//      to the last ulp of the double step scalars.
// No floating-point atomics, no allocation, no host synchronisation, no host branch on device
// data.
//
// Two device counters: `step` = updates applied (the bias-correction exponent, fxt::AdamW's
// step_count(), checkpoint optimizer["step"]); `schedule_step` = step() calls including skipped
// ones (the trainer's step, whose lr_at gives the learning rate: lr = schedule.lr_at(
// schedule_step)). Both round-trip through download_state / upload_state with the moments.
//
// C++17-clean (included by .cu files); no train/ headers (fxt_train depends on fxt_gpu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/runtime.h"

namespace fxt::model {
struct ParamSpec;
}

namespace fxt::gpu {

// fxt::AdamWConfig's numeric fields (group multipliers come per element at registration).
struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled; only elements flagged for decay
  double max_grad_norm = 1.0;  // <= 0 turns clipping off
};

// fxt::LrSchedule: linear warm-up to peak_lr over warmup_steps, cosine decay to
// min_lr_ratio * peak_lr at total_steps, constant afterwards (formula in docs/OPTIMIZER.md).
struct LrSchedule {
  double peak_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double min_lr_ratio = 0.1;
};

// What one step wrote, in device memory (same layout on host and device).
struct AdamWStats {
  double grad_norm;   // before clipping (NaN / inf when the step was skipped)
  double clip_scale;  // factor the gradients were multiplied by (1 when not clipped)
  double lr;          // the step's base learning rate (before group multipliers)
  int applied;        // 0 when the norm was not finite and the step was skipped
  int pad_;
};

// The device counters.
struct AdamWCounters {
  long long step;           // updates applied
  long long schedule_step;  // step() calls (the schedule's step index)
};

// Float scalars the update kernel reads (internal; written by the finalize kernel).
struct AdamWStepCoef {
  float clip;          // gradient multiplier
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  int clip_on;         // 1 when the gradients are scaled
  int applied;         // 0: skip the update
};

// A ParamSpec with its group's multiplier: elements [offset, offset + size) of a buffer.
struct AdamSegment {
  size_t offset = 0;
  size_t size = 0;
  bool weight_decay = false;
  double lr_multiplier = 1.0;
};

// One segment per spec (offset, size, weight_decay of the spec) with lr_multipliers[i] (the
// multiplier of spec i's group; empty: all 1). Asserts matching sizes. Defined in adamw.cc.
std::vector<AdamSegment> segments_from_specs(const std::vector<model::ParamSpec>& specs,
                                             const std::vector<double>& lr_multipliers = {});

// Host copy of the optimizer state: moments per registered buffer (the buffer's layout) and the
// counters. The trainer maps m/v slices to the checkpoint tensors "adam.m/<name>",
// "adam.v/<name>" and `step` to optimizer["step"], exactly as fxt::AdamW::save_state.
struct AdamWHostState {
  int64_t step = 0;
  int64_t schedule_step = 0;
  std::vector<std::vector<float>> m, v;  // [buffers][n]
};

constexpr int kAdamMaxBuffers = 8;
constexpr int kAdamMaxGroups = 255;  // distinct (multiplier, decay) pairs; id 255 = inactive
constexpr int kAdamMaxNormBlocks = 512;
constexpr size_t kAdamNormElemsPerBlock = 8192;

class AdamW {
 public:
  // cfg and schedule are assumed valid (the caller validates user flags with the CPU types).
  AdamW(const AdamWConfig& cfg, const LrSchedule& schedule);
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  // Registers params/grads [n] (device; they must outlive the optimizer). weight_decay [n] holds
  // 0/1 flags, lr_multiplier [n] the group multipliers (finite, >= 0); every element is active.
  // Returns the buffer index. Aborts on a size mismatch, more than kAdamMaxBuffers buffers or
  // kAdamMaxGroups distinct (multiplier, decay) pairs. Synchronous.
  int add_buffer(const Context& ctx, float* params, float* grads, size_t n,
                 const std::vector<uint8_t>& weight_decay,
                 const std::vector<double>& lr_multiplier);
  // The same with segments; elements outside every segment are inactive. Aborts on a segment
  // outside the buffer or overlapping segments.
  int add_buffer(const Context& ctx, float* params, float* grads, size_t n,
                 const std::vector<AdamSegment>& segments);

  // One optimizer step (see the file comment). external_lr: when not nullptr, a device double
  // read as the base learning rate instead of the schedule (a second optimizer sharing the
  // first one's lr()). Needs at least one registered buffer.
  void step(const Context& ctx, const double* external_lr = nullptr);

  // Device memory written by step(): copy what is reported into mapped pinned memory.
  const AdamWStats* stats() const { return stats_.data(); }
  const double* lr() const { return &stats_.data()->lr; }
  const AdamWCounters* counters() const { return counters_.data(); }

  int buffers() const { return static_cast<int>(buffers_.size()); }
  size_t buffer_size(int b) const { return buffers_[static_cast<size_t>(b)].n; }
  const AdamWConfig& config() const { return cfg_; }
  const LrSchedule& schedule() const { return schedule_; }

  // Synchronous state transfer (copies on ctx's stream, then waits). upload_state asserts that
  // the vectors match the registered buffers.
  AdamWHostState download_state(const Context& ctx) const;
  void upload_state(const Context& ctx, const AdamWHostState& state);
  // Host copy of the last step's stats (synchronous; tests and diagnostics).
  AdamWStats download_stats(const Context& ctx) const;

 private:
  struct Buffer {
    float* params = nullptr;
    float* grads = nullptr;
    size_t n = 0;
    size_t start = 0;                // first element in the concatenated index space
    DeviceBuffer<float> m, v;        // moments, the buffer's layout
    DeviceBuffer<uint8_t> group_id;  // per element; kAdamMaxGroups = inactive
  };
  int add_buffer_ids(const Context& ctx, float* params, float* grads, size_t n,
                     const std::vector<uint8_t>& ids);
  uint8_t group_of(double multiplier, bool decay);

  AdamWConfig cfg_;
  LrSchedule schedule_;
  std::vector<Buffer> buffers_;
  size_t total_ = 0;  // elements over all buffers
  std::vector<double> group_multiplier_;
  std::vector<int> group_decay_;
  DeviceBuffer<double> group_multiplier_dev_;  // [kAdamMaxGroups]
  DeviceBuffer<int> group_decay_dev_;          // [kAdamMaxGroups]
  DeviceBuffer<float> group_coef_;             // [2][kAdamMaxGroups]: step size, decay factor
  DeviceBuffer<double> partials_;              // [kAdamMaxNormBlocks]
  DeviceBuffer<AdamWStats> stats_;
  DeviceBuffer<AdamWCounters> counters_;
  DeviceBuffer<AdamWStepCoef> coef_;
};

}  // namespace fxt::gpu
