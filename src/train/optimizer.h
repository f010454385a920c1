// AdamW with global gradient-norm clipping and the warm-up + cosine learning-rate schedule
// (DESIGN §5), CPU reference. docs/OPTIMIZER.md has the formulas and defaults.
//
// The optimizer updates parameters that live in caller-owned flat float buffers (llm.c style):
// each registered buffer comes with its gradient buffer of the same layout, the ParamSpec list
// that names its tensors (offset, size, shape, weight-decay flag) and, optionally, a parallel
// list of learning-rate group names ("mamba", "cfc", "heads", ...). Several buffers may be
// registered: the model's parameters, and small extra sets such as the learned log sigma_h of
// the `kendall` horizon weighting. Only the elements covered by a ParamSpec are read or updated.
//
// One step: (1) the global L2 norm of every gradient element, summed in double in registration
// order (buffer, then spec, then element), hence bit-reproducible; (2) when it exceeds
// max_grad_norm the gradients are scaled in place by max_grad_norm / norm; (3) the AdamW update
// of every parameter with lr = lr_step * group multiplier. A step whose norm is not finite is
// skipped entirely (parameters, moments and step counter unchanged) and reported as such.
//
// The state (step counter, first and second moments) round-trips through a Checkpoint: tensors
// "adam.m/<param>" and "adam.v/<param>" (f32, the parameter's shape) and optimizer["step"].
// A run restored from a checkpoint continues bit for bit as if it had never stopped.
//
// Thread-compatible: one AdamW belongs to one training loop; it allocates only when buffers are
// registered, never in step().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/mamba2.h"  // ParamSpec
#include "train/checkpoint.h"

namespace fxt {

// Linear warm-up to peak_lr, then cosine decay to min_lr_ratio * peak_lr at total_steps and
// constant afterwards. `step` is the 0-based index of the update about to be applied:
//   step < W:        lr = peak * (step + 1) / W
//   W <= step < T:   lr = peak * (r + (1 - r) * (1 + cos(pi * (step - W) / (T - W))) / 2)
//   step >= T:       lr = peak * r
// (r = min_lr_ratio, W = warmup_steps, T = total_steps; when T == W the decay is a drop to r
// at T.)
struct LrSchedule {
  double peak_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double min_lr_ratio = 0.1;

  // peak_lr > 0 and finite, warmup_steps >= 0, total_steps >= warmup_steps,
  // min_lr_ratio in [0, 1].
  Status validate() const;
  double lr_at(int64_t step) const;
};

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled; only parameters whose ParamSpec says weight_decay
  double max_grad_norm = 1.0;  // global clipping threshold; <= 0 turns clipping off
  // Learning-rate multiplier per group name; a group not listed gets 1.
  std::vector<std::pair<std::string, double>> group_lr_multipliers;

  // Betas in [0, 1), eps > 0, weight_decay >= 0, multipliers finite and >= 0, names unique.
  Status validate() const;
  double multiplier(const std::string& group) const;
};

struct StepStats {
  double grad_norm = 0.0;   // before clipping
  double clip_scale = 1.0;  // factor the gradients were multiplied by (1 when not clipped)
  double lr = 0.0;          // the step's base learning rate (before group multipliers)
  bool applied = false;     // false when the norm was not finite and the step was skipped
};

class AdamW {
 public:
  // cfg must validate (asserted: the caller checks user-supplied flags with validate()).
  explicit AdamW(AdamWConfig cfg = {});

  // Registers a parameter buffer and its gradient buffer (same size; both must outlive the
  // optimizer or the next registration of a replacement). `groups` is empty (every tensor in
  // the default group "") or holds one group name per spec. Fails on an empty or duplicate
  // tensor name (across all buffers), a spec outside the buffer, overlapping specs, a size that
  // is not the product of the shape, or mismatched list sizes. Moments start at zero.
  Status add_params(std::span<float> params, std::span<float> grads,
                    std::vector<model::ParamSpec> specs, std::vector<std::string> groups = {});

  // Clips the gradients (in place) and applies one AdamW update with base learning rate lr
  // (typically LrSchedule::lr_at(step())). Increments step() unless skipped.
  StepStats step(double lr);

  // Updates applied so far (the bias-correction exponent of the last update).
  int64_t step_count() const { return step_; }
  const AdamWConfig& config() const { return cfg_; }

  // Writes optimizer["step"], optimizer["adamw"] (the hyper-parameters, informational) and the
  // moment tensors of every registered parameter into ckpt (replacing same-named tensors).
  void save_state(Checkpoint* ckpt) const;
  // Restores step and moments for every registered parameter from ckpt; on any missing
  // tensor, shape or dtype mismatch or a bad step value it fails and leaves the state unchanged.
  Status load_state(const Checkpoint& ckpt);

  // The state as plain vectors, for the CUDA backend (which keeps it on the device and writes
  // checkpoints through this optimizer): the step count and, per registered buffer, the first
  // and second moments in the buffer's layout. import_state fails, changing nothing, when the
  // sizes differ from the registered buffers or the step is negative.
  void export_state(int64_t* step, std::vector<std::vector<float>>* m,
                    std::vector<std::vector<float>>* v) const;
  Status import_state(int64_t step, const std::vector<std::vector<float>>& m,
                      const std::vector<std::vector<float>>& v);

  // Read access for tests and diagnostics: moments of buffer b (same layout as its params).
  std::span<const float> first_moment(int b) const { return buffers_[static_cast<size_t>(b)].m; }
  std::span<const float> second_moment(int b) const { return buffers_[static_cast<size_t>(b)].v; }

 private:
  struct Buffer {
    std::span<float> params;
    std::span<float> grads;
    std::vector<model::ParamSpec> specs;
    std::vector<double> lr_multiplier;  // per spec
    std::vector<float> m, v;            // same layout as params
  };

  AdamWConfig cfg_;
  std::vector<Buffer> buffers_;
  int64_t step_ = 0;
};

}  // namespace fxt
