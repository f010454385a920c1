#include "model/loss.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace fxt::model {

const char* horizon_weighting_name(HorizonWeighting w) {
  switch (w) {
    case HorizonWeighting::kUniform:
      return "uniform";
    case HorizonWeighting::kKendallClosed:
      return "kendall-closed";
    case HorizonWeighting::kKendall:
      return "kendall";
  }
  return "?";
}

Result<HorizonWeighting> parse_horizon_weighting(std::string_view name) {
  for (HorizonWeighting w :
       {HorizonWeighting::kUniform, HorizonWeighting::kKendallClosed, HorizonWeighting::kKendall}) {
    if (name == horizon_weighting_name(w)) return w;
  }
  return UsageError("unknown horizon weighting '{}': expected uniform, kendall-closed or kendall",
                    name);
}

// ---- controller state ---------------------------------------------------------------------------

void ControllerState::reset() {
  *this = ControllerState(horizons());
}

nlohmann::json ControllerState::to_json() const {
  return {{"ema", ema},
          {"zmax", zmax},
          {"ema_initialized", ema_initialized},
          {"zmax_initialized", zmax_initialized},
          {"step", step}};
}

Result<ControllerState> ControllerState::from_json(const nlohmann::json& j, int horizons) {
  ControllerState s(horizons);
  const char* keys[] = {"ema", "zmax", "ema_initialized", "zmax_initialized", "step"};
  if (!j.is_object()) return InvalidInput("controller state: expected a JSON object");
  for (const char* k : keys) {
    if (!j.contains(k)) return InvalidInput("controller state: missing key '{}'", k);
  }
  const auto& ema = j.at("ema");
  if (!ema.is_array() || ema.size() != static_cast<size_t>(horizons)) {
    return InvalidInput("controller state: 'ema' must be an array of {} numbers", horizons);
  }
  for (size_t h = 0; h < ema.size(); ++h) {
    if (!ema[h].is_number()) return InvalidInput("controller state: ema[{}] is not a number", h);
    s.ema[h] = ema[h].get<double>();
  }
  if (!j.at("zmax").is_number() || !j.at("ema_initialized").is_boolean() ||
      !j.at("zmax_initialized").is_boolean() || !j.at("step").is_number_integer()) {
    return InvalidInput("controller state: zmax (number), *_initialized (bool), step (integer)");
  }
  s.zmax = j.at("zmax").get<double>();
  s.ema_initialized = j.at("ema_initialized").get<bool>();
  s.zmax_initialized = j.at("zmax_initialized").get<bool>();
  s.step = j.at("step").get<int64_t>();
  return s;
}

void horizon_zscores(const ControllerState& state, std::span<double> z) {
  const size_t nh = state.ema.size();
  assert(z.size() == nh);
  std::fill(z.begin(), z.end(), 0.0);
  if (!state.ema_initialized || nh == 0) return;
  double mean = 0;
  for (double e : state.ema) mean += e;
  mean /= static_cast<double>(nh);
  double var = 0;
  for (double e : state.ema) var += (e - mean) * (e - mean);
  const double sd = std::sqrt(var / static_cast<double>(nh));  // population std
  if (!(sd > 1e-12 * (std::abs(mean) + 1e-30))) return;        // all equal: z = 0
  for (size_t h = 0; h < nh; ++h) z[h] = (state.ema[h] - mean) / sd;
}

void update_controllers(const LossConfig& cfg, std::span<const double> loss_h,
                        ControllerState& state) {
  const size_t nh = state.ema.size();
  assert(loss_h.size() == nh);
  for (size_t h = 0; h < nh; ++h) {
    state.ema[h] = state.ema_initialized
                       ? (1.0 - cfg.ema_alpha) * state.ema[h] + cfg.ema_alpha * loss_h[h]
                       : loss_h[h];
  }
  state.ema_initialized = true;
  std::vector<double> z(nh);
  horizon_zscores(state, z);
  double zabs = 0;
  for (double v : z) zabs = std::max(zabs, std::abs(v));
  state.zmax =
      state.zmax_initialized ? (1.0 - cfg.zmax_alpha) * state.zmax + cfg.zmax_alpha * zabs : zabs;
  state.zmax_initialized = true;
  ++state.step;
}

void trunk_lambdas(const LossConfig& cfg, const ControllerState& state, std::span<double> lambda) {
  std::fill(lambda.begin(), lambda.end(), 1.0);
  if (!cfg.trunk_lambda || !state.zmax_initialized || !(state.zmax > 0)) return;
  std::vector<double> z(lambda.size());
  horizon_zscores(state, z);
  for (size_t h = 0; h < lambda.size(); ++h) {
    lambda[h] = std::clamp(1.0 + z[h] / state.zmax, 1.0, 2.0);
  }
}

double closed_log_sigma(const LossConfig& cfg, double ema) {
  // ema <= 0 (a horizon with no loss yet) gives -inf, clamped to the floor.
  return std::max(cfg.min_log_sigma, 0.5 * std::log(ema));
}

// ---- masked BCE ---------------------------------------------------------------------------------

template <typename T>
void masked_bce_forward(In<T> logits, In<T> labels, In<T> mask, Out<T> loss_h) {
  const int64_t nh = loss_h.numel();
  const int64_t rows = logits.numel() / nh;
  assert(logits.numel() == rows * nh && labels.numel() == logits.numel());
  assert(mask.numel() == logits.numel());
  for (int64_t h = 0; h < nh; ++h) {
    T num = 0, den = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r * nh + h;
      const T x = logits[i];
      const T bce = std::max(x, T(0)) - x * labels[i] + std::log1p(std::exp(-std::abs(x)));
      num += mask[i] * bce;
      den += mask[i];
    }
    loss_h[h] = den > T(0) ? num / den : T(0);
  }
}

template <typename T>
void masked_bce_backward(In<T> logits, In<T> labels, In<T> mask, In<T> dloss_h, Out<T> dlogits) {
  const int64_t nh = dloss_h.numel();
  const int64_t rows = logits.numel() / nh;
  assert(dlogits.numel() == logits.numel());
  for (int64_t h = 0; h < nh; ++h) {
    T den = 0;
    for (int64_t r = 0; r < rows; ++r) den += mask[r * nh + h];
    if (!(den > T(0))) continue;
    const T scale = dloss_h[h] / den;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r * nh + h;
      dlogits[i] += scale * mask[i] * (sigmoid(logits[i]) - labels[i]);
    }
  }
}

// ---- horizon weighting --------------------------------------------------------------------------

template <typename T>
T combine_horizons(const LossConfig& cfg, const ControllerState& state, In<T> loss_h,
                   In<T> log_sigma, Out<T> dloss_h, Out<T> dlog_sigma) {
  const int64_t nh = loss_h.numel();
  assert(dloss_h.numel() == nh);
  T total = 0;
  for (int64_t h = 0; h < nh; ++h) {
    switch (cfg.weighting) {
      case HorizonWeighting::kUniform:
        total += loss_h[h];
        dloss_h[h] = T(1);
        break;
      case HorizonWeighting::kKendallClosed: {
        // sigma from the (detached) ema; before any update it falls back to L_h itself.
        const double ema = state.ema_initialized ? state.ema[static_cast<size_t>(h)]
                                                 : static_cast<double>(loss_h[h]);
        const T ls = static_cast<T>(closed_log_sigma(cfg, ema));
        const T w = T(0.5) * std::exp(T(-2) * ls);  // 1 / (2 sigma^2)
        total += w * loss_h[h] + ls;
        dloss_h[h] = w;
        break;
      }
      case HorizonWeighting::kKendall: {
        assert(log_sigma.numel() == nh);
        const T ls = log_sigma[h];
        const T w = T(0.5) * std::exp(T(-2) * ls);
        total += w * loss_h[h] + ls;
        dloss_h[h] = w;
        if (!dlog_sigma.empty()) dlog_sigma[h] += T(-2) * w * loss_h[h] + T(1);
        break;
      }
    }
  }
  return total;
}

template <typename T>
LossStepOutputs loss_step(const LossConfig& cfg, ControllerState& state, In<T> logits, In<T> labels,
                          In<T> mask, In<T> log_sigma, Out<T> dlogits, Out<T> dlog_sigma,
                          bool update_state) {
  const int nh = state.horizons();
  const size_t n = static_cast<size_t>(nh);
  std::vector<T> loss(n), dloss(n);
  masked_bce_forward<T>(logits, labels, mask, Out<T>(loss.data(), {nh}));
  LossStepOutputs out;
  out.loss_h.assign(loss.begin(), loss.end());
  if (update_state) update_controllers(cfg, out.loss_h, state);
  out.total = static_cast<double>(combine_horizons<T>(
      cfg, state, In<T>(loss.data(), {nh}), log_sigma, Out<T>(dloss.data(), {nh}), dlog_sigma));
  out.weight.assign(dloss.begin(), dloss.end());
  if (!dlogits.empty()) {
    masked_bce_backward<T>(logits, labels, mask, In<T>(dloss.data(), {nh}), dlogits);
  }
  out.lambda.assign(n, 1.0);
  trunk_lambdas(cfg, state, out.lambda);
  return out;
}

#define FXT_INSTANTIATE_LOSS(T)                                                                   \
  template void masked_bce_forward<T>(In<T>, In<T>, In<T>, Out<T>);                               \
  template void masked_bce_backward<T>(In<T>, In<T>, In<T>, In<T>, Out<T>);                       \
  template T combine_horizons<T>(const LossConfig&, const ControllerState&, In<T>, In<T>, Out<T>, \
                                 Out<T>);                                                         \
  template LossStepOutputs loss_step<T>(const LossConfig&, ControllerState&, In<T>, In<T>, In<T>, \
                                        In<T>, Out<T>, Out<T>, bool);

FXT_INSTANTIATE_LOSS(float)
FXT_INSTANTIATE_LOSS(double)
#undef FXT_INSTANTIATE_LOSS

}  // namespace fxt::model
