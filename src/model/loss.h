// Training loss and its controllers (DESIGN §4), CPU reference.
//
// Per horizon h, a masked binary cross-entropy over all positions, from logits:
//   bce(x, y) = max(x, 0) - x y + log1p(exp(-|x|));  L_h = sum m bce / sum m  (0 if sum m = 0).
// Horizon weighting combines the L_h into the total:
//   uniform         total = sum_h L_h
//   kendall-closed  log s_h = max(log 0.5, 1/2 log ema_h); total = sum_h L_h / (2 s_h^2) + log s_h,
//                   s_h a constant in the gradient (the default)
//   kendall         log s_h a learned parameter (no weight decay), same formula, with gradient.
// The trunk-gradient controller: z_h = z-score of ema_h across horizons (population std; z = 0
// when the std vanishes), zmax = EMA of max_h |z_h|, lambda_h = clamp(1 + z_h / zmax, 1, 2);
// lambda_h scales only what head h sends into the trunk (head_backward's trunk_scale).
// Both EMAs take their first value as is, then alpha = 0.01.
//
// Controller state is double precision host memory here; the CUDA backend keeps a device copy.
// Reductions run serially in row order, so the loss is deterministic.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/ops.h"

namespace fxt::model {

enum class HorizonWeighting { kUniform, kKendallClosed, kKendall };
const char* horizon_weighting_name(HorizonWeighting w);  // "uniform", "kendall-closed", "kendall"
Result<HorizonWeighting> parse_horizon_weighting(std::string_view name);

struct LossConfig {
  HorizonWeighting weighting = HorizonWeighting::kKendallClosed;
  bool trunk_lambda = true;                        // --no-lambda turns it off (lambda_h = 1)
  double ema_alpha = 0.01;                         // EMA of L_h
  double zmax_alpha = 0.01;                        // EMA of max_h |z_h|
  double min_log_sigma = -0.69314718055994530942;  // log 0.5
};

// Controller state: saved in checkpoints, reset per CV fold.
struct ControllerState {
  std::vector<double> ema;  // [H] EMA of L_h
  double zmax = 0.0;        // EMA of max_h |z_h|
  bool ema_initialized = false;
  bool zmax_initialized = false;
  int64_t step = 0;  // controller updates so far

  ControllerState() = default;
  explicit ControllerState(int horizons) : ema(static_cast<size_t>(horizons), 0.0) {}
  int horizons() const { return static_cast<int>(ema.size()); }
  void reset();  // back to the freshly constructed state, same H

  // {"ema": [..H], "zmax": x, "ema_initialized": b, "zmax_initialized": b, "step": n}
  nlohmann::json to_json() const;
  static Result<ControllerState> from_json(const nlohmann::json& j, int horizons);
};

// Feeds one step's detached per-horizon losses into the EMAs (ema first, then zmax).
void update_controllers(const LossConfig& cfg, std::span<const double> loss_h,
                        ControllerState& state);
// z_h of the current ema (0 before the first update).
void horizon_zscores(const ControllerState& state, std::span<double> z);
// lambda_h from the current state; all ones when cfg.trunk_lambda is off or before any update.
void trunk_lambdas(const LossConfig& cfg, const ControllerState& state, std::span<double> lambda);
// log sigma_h of kendall-closed from the current ema.
double closed_log_sigma(const LossConfig& cfg, double ema);

// ---- masked BCE ---------------------------------------------------------------------------------
// logits, labels, mask [R, H] (mask 0/1, labels 0/1); loss_h [H] overwritten.
template <typename T>
void masked_bce_forward(In<T> logits, In<T> labels, In<T> mask, Out<T> loss_h);
// dlogits[r, h] += dloss_h[h] * m (sigmoid(x) - y) / sum_r m.
template <typename T>
void masked_bce_backward(In<T> logits, In<T> labels, In<T> mask, In<T> dloss_h, Out<T> dlogits);

// ---- horizon weighting --------------------------------------------------------------------------
// total from loss_h [H] under cfg.weighting and state; dloss_h [H] overwritten with
// d total / d L_h; for kendall, log_sigma [H] is the parameter and dlog_sigma [H] += its
// gradient (both may be empty otherwise).
template <typename T>
T combine_horizons(const LossConfig& cfg, const ControllerState& state, In<T> loss_h,
                   In<T> log_sigma, Out<T> dloss_h, Out<T> dlog_sigma);

// ---- one training step's loss -------------------------------------------------------------------
struct LossStepOutputs {
  double total = 0.0;
  std::vector<double> loss_h;  // [H] L_h
  std::vector<double> weight;  // [H] d total / d L_h
  std::vector<double> lambda;  // [H] trunk-gradient scale for head_backward
};
// masked_bce_forward, then (when update_state) update_controllers, then combine_horizons,
// masked_bce_backward into dlogits (+=) and the lambdas. Validation passes update_state = false.
template <typename T>
LossStepOutputs loss_step(const LossConfig& cfg, ControllerState& state, In<T> logits, In<T> labels,
                          In<T> mask, In<T> log_sigma, Out<T> dlogits, Out<T> dlog_sigma,
                          bool update_state = true);

}  // namespace fxt::model
