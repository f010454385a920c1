// The training loss and its controllers on the GPU (DESIGN §4): model::loss_step of
// src/model/loss.h, device-resident so that it can sit inside the captured training step.
//
// One call of loss_step enqueues three kernels on ctx.stream():
//   1. masked BCE partials: the rows are cut into a fixed number of contiguous tiles (a function
//      of `rows` only); each block sums m * bce and m of its tile per horizon in double, combined
//      by an ordered shared-memory tree, into a workspace [2][tiles][H];
//   2. finalize (one block): per horizon an ordered warp reduction over the tiles, then one
//      thread runs the serial part exactly as the CPU does: L_h, the controller update (when
//      update_state), combine_horizons (total, weights, kendall's dlog_sigma) and the trunk
//      lambdas;
//   3. masked BCE backward: dlogits[r, h] += w_h / sum_r m * m (sigmoid(x) - y), elementwise.
// No floating-point atomics, no allocation, no host synchronisation, no host branch on device
// data: the same inputs give the same bytes, and the step can be captured in a CUDA Graph.
//
// Precision mirrors model::loss_step<float>: the per-element BCE and everything after L_h run in
// float with the CPU's operation order (no FMA contraction), the row sums in double (more
// accurate than the CPU's serial float sum, which is the only parity gap), the controller state
// in double. Outputs stay in device memory (LossOutputs); the caller copies the scalars it
// reports into mapped pinned memory (gpu::MappedHost) with cudaMemcpyAsync inside the graph.
//
// C++17-clean (included by .cu files): the conversions to and from model:: types are declared
// against forward declarations and defined in loss.cc (C++20).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/runtime.h"

namespace fxt::model {
struct LossConfig;
struct ControllerState;
}  // namespace fxt::model

namespace fxt::gpu {

// Same meaning and values as model::HorizonWeighting.
enum class HorizonWeighting : int { kUniform = 0, kKendallClosed = 1, kKendall = 2 };

// model::LossConfig as a plain struct (passed to the kernels by value).
struct LossConfig {
  HorizonWeighting weighting = HorizonWeighting::kKendallClosed;
  bool trunk_lambda = true;                        // false: lambda_h = 1
  double ema_alpha = 0.01;                         // EMA of L_h
  double zmax_alpha = 0.01;                        // EMA of max_h |z_h|
  double min_log_sigma = -0.69314718055994530942;  // log 0.5, kendall-closed floor
};

// The scalar part of the controller state as it lies in device memory (same layout on host and
// device).
struct ControllerScalars {
  double zmax;           // EMA of max_h |z_h|
  long long step;        // controller updates so far
  int ema_initialized;   // 0 / 1
  int zmax_initialized;  // 0 / 1
};

// Host copy of the controller state in plain arrays (model::ControllerState's fields).
struct ControllerHost {
  std::vector<double> ema;  // [H]
  double zmax = 0.0;
  bool ema_initialized = false;
  bool zmax_initialized = false;
  int64_t step = 0;
};

// Controller state in device memory: ema [H] and the scalars, double precision.
class DeviceControllerState {
 public:
  // A fresh state (as model::ControllerState(horizons)); synchronous.
  explicit DeviceControllerState(int horizons);

  int horizons() const { return horizons_; }
  double* ema() { return ema_.data(); }
  const double* ema() const { return ema_.data(); }
  ControllerScalars* scalars() { return scalars_.data(); }
  const ControllerScalars* scalars() const { return scalars_.data(); }

  // Copies on ctx's stream, then waits for it (so they order after the queued steps). Setup,
  // checkpoints and tests only; never inside a captured step. upload asserts ema.size() == H.
  void upload(const Context& ctx, const ControllerHost& host);
  ControllerHost download(const Context& ctx) const;
  void reset(const Context& ctx);  // back to the fresh state (a new CV fold)

 private:
  int horizons_ = 0;
  DeviceBuffer<double> ema_;
  DeviceBuffer<ControllerScalars> scalars_;
};

// Outputs of loss_step plus its workspace, allocated once for H horizons (any row count).
class LossOutputs {
 public:
  explicit LossOutputs(int horizons);

  int horizons() const { return horizons_; }
  double* total() { return total_.data(); }    // [1] the loss
  double* loss_h() { return loss_h_.data(); }  // [H] L_h (the float value, widened)
  float* weight() { return weight_.data(); }   // [H] d total / d L_h
  float* lambda() { return lambda_.data(); }   // [H] trunk-gradient scale for the heads' backward
  const double* total() const { return total_.data(); }
  const double* loss_h() const { return loss_h_.data(); }
  const float* weight() const { return weight_.data(); }
  const float* lambda() const { return lambda_.data(); }

  // Workspace of loss_step (contents undefined between calls): row-tile partials
  // [2][kLossMaxTiles][H] and the backward's per-horizon scale and mask count [2][H].
  double* partials() { return partials_.data(); }
  float* backward_coef() { return backward_coef_.data(); }

  // Host copy for tests and reporting (copies on ctx's stream, then waits for it).
  struct Host {
    double total = 0.0;
    std::vector<double> loss_h, weight, lambda;  // [H]
  };
  Host download(const Context& ctx) const;

 private:
  int horizons_ = 0;
  DeviceBuffer<double> total_, loss_h_, partials_;
  DeviceBuffer<float> weight_, lambda_, backward_coef_;
};

// Row tiles of the BCE reduction: ceil(rows / kLossRowsPerTile), clamped to [1, kLossMaxTiles].
constexpr int kLossRowsPerTile = 256;
constexpr int kLossMaxTiles = 128;
constexpr int kLossMaxHorizons = 256;

// model::loss_step<float> on the device. logits, labels, mask [rows, H] (mask and labels 0/1);
// log_sigma [H] the kendall parameter (nullptr unless cfg.weighting is kendall); dlogits
// [rows, H] += the BCE gradient (nullptr: skipped, e.g. validation); dlog_sigma [H] += kendall's
// gradient (nullptr: skipped). state is updated when update_state (validation passes false).
// Writes every output of `out`. 1 <= H <= kLossMaxHorizons, rows >= 0.
void loss_step(const Context& ctx, const LossConfig& cfg, int horizons, int rows,
               const float* logits, const float* labels, const float* mask, const float* log_sigma,
               float* dlogits, float* dlog_sigma, DeviceControllerState& state, bool update_state,
               LossOutputs& out);

// Validation's loss: the forward only (no controller update, no gradients).
inline void loss_forward(const Context& ctx, const LossConfig& cfg, int horizons, int rows,
                         const float* logits, const float* labels, const float* mask,
                         const float* log_sigma, DeviceControllerState& state, LossOutputs& out) {
  loss_step(ctx, cfg, horizons, rows, logits, labels, mask, log_sigma, nullptr, nullptr, state,
            /*update_state=*/false, out);
}

// ---- conversions to and from the CPU reference types (loss.cc) ----------------------------------
LossConfig to_gpu_config(const model::LossConfig& cfg);
ControllerHost to_controller_host(const model::ControllerState& state);
model::ControllerState to_model_state(const ControllerHost& host);

}  // namespace fxt::gpu
