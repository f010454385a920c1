// Conversions between the GPU loss types (C++17, gpu/loss.h) and the CPU reference types of
// model/loss.h (C++20): the trainer and the tests move controller state between the two.
#include <cassert>

#include "gpu/loss.h"
#include "model/loss.h"

namespace fxt::gpu {

LossConfig to_gpu_config(const model::LossConfig& cfg) {
  LossConfig g;
  switch (cfg.weighting) {
    case model::HorizonWeighting::kUniform:
      g.weighting = HorizonWeighting::kUniform;
      break;
    case model::HorizonWeighting::kKendallClosed:
      g.weighting = HorizonWeighting::kKendallClosed;
      break;
    case model::HorizonWeighting::kKendall:
      g.weighting = HorizonWeighting::kKendall;
      break;
  }
  g.trunk_lambda = cfg.trunk_lambda;
  g.ema_alpha = cfg.ema_alpha;
  g.zmax_alpha = cfg.zmax_alpha;
  g.min_log_sigma = cfg.min_log_sigma;
  return g;
}

ControllerHost to_controller_host(const model::ControllerState& state) {
  ControllerHost h;
  h.ema = state.ema;
  h.zmax = state.zmax;
  h.ema_initialized = state.ema_initialized;
  h.zmax_initialized = state.zmax_initialized;
  h.step = state.step;
  return h;
}

model::ControllerState to_model_state(const ControllerHost& host) {
  model::ControllerState s(static_cast<int>(host.ema.size()));
  s.ema = host.ema;
  s.zmax = host.zmax;
  s.ema_initialized = host.ema_initialized;
  s.zmax_initialized = host.zmax_initialized;
  s.step = host.step;
  return s;
}

}  // namespace fxt::gpu
