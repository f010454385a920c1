#include "model/logreg.h"

#include <algorithm>
#include <cassert>

namespace fxt::model {

Status logreg_validate(const LogRegConfig& cfg) {
  if (cfg.features < 1)
    return InvalidInput("logreg needs at least one feature, got {}", cfg.features);
  if (cfg.horizons < 1)
    return InvalidInput("logreg needs at least one horizon, got {}", cfg.horizons);
  return Status::Ok();
}

LogRegLayout logreg_layout(const LogRegConfig& cfg) {
  LogRegLayout l;
  const auto h = static_cast<std::size_t>(cfg.horizons);
  const auto f = static_cast<std::size_t>(cfg.features);
  l.weight = 0;
  l.bias = h * f;
  l.total = l.bias + h;
  return l;
}

std::vector<ParamSpec> logreg_param_specs(const LogRegConfig& cfg) {
  const LogRegLayout l = logreg_layout(cfg);
  const auto h = static_cast<std::size_t>(cfg.horizons);
  return {
      {"logreg.weight",
       l.weight,
       h * static_cast<std::size_t>(cfg.features),
       {cfg.horizons, cfg.features},
       true},
      {"logreg.bias", l.bias, h, {cfg.horizons}, false},
  };
}

template <typename T>
void logreg_init(const LogRegConfig& cfg, T* params) {
  std::fill(params, params + logreg_layout(cfg).total, T(0));
}

namespace {

template <typename T>
TensorView<const T> weight_view(const LogRegConfig& cfg, const T* params) {
  return {params + logreg_layout(cfg).weight, Shape{cfg.horizons, cfg.features}};
}
template <typename T>
TensorView<const T> bias_view(const LogRegConfig& cfg, const T* params) {
  return {params + logreg_layout(cfg).bias, Shape{cfg.horizons}};
}

}  // namespace

template <typename T>
void logreg_forward(CpuContext& ctx, const LogRegConfig& cfg, const T* params, In<T> x,
                    Out<T> logits) {
  assert(x.rank() == 2 && x.dim(1) == cfg.features);
  assert(logits.rank() == 2 && logits.dim(0) == x.dim(0) && logits.dim(1) == cfg.horizons);
  linear_forward<T>(ctx, x, weight_view(cfg, params), bias_view(cfg, params), logits);
}

template <typename T>
void logreg_backward(CpuContext& ctx, const LogRegConfig& cfg, const T* params, In<T> x,
                     In<T> dlogits, T* grads, Out<T> dx) {
  assert(x.rank() == 2 && x.dim(1) == cfg.features);
  assert(dlogits.rank() == 2 && dlogits.dim(0) == x.dim(0) && dlogits.dim(1) == cfg.horizons);
  const LogRegLayout l = logreg_layout(cfg);
  Out<T> dw(grads + l.weight, Shape{cfg.horizons, cfg.features});
  Out<T> db(grads + l.bias, Shape{cfg.horizons});
  linear_backward<T>(ctx, x, weight_view(cfg, params), dlogits, dx, dw, db);
}

#define FXT_INSTANTIATE_LOGREG(T)                                                                \
  template void logreg_init<T>(const LogRegConfig&, T*);                                         \
  template void logreg_forward<T>(CpuContext&, const LogRegConfig&, const T*, In<T>, Out<T>);    \
  template void logreg_backward<T>(CpuContext&, const LogRegConfig&, const T*, In<T>, In<T>, T*, \
                                   Out<T>);
FXT_INSTANTIATE_LOGREG(float)
FXT_INSTANTIATE_LOGREG(double)
#undef FXT_INSTANTIATE_LOGREG

}  // namespace fxt::model
