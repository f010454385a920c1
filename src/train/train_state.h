// Internal to src/train (not public API): the state a training run carries from step to step
// and saves in its checkpoints, the model behind it (Net), checkpoint loading and the identities
// of the stores a run read. train(), evaluate() and predict() all start from a TrainState.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "features/sequences.h"
#include "model/loss.h"
#include "model/params.h"
#include "model/perception.h"
#include "train/baselines.h"
#include "train/checkpoint.h"
#include "train/logistic_fallback.h"
#include "train/optimizer.h"
#include "train/train_config.h"
#if FXT_HAVE_CUDA
#include "gpu/train_step.h"
#endif

namespace fxt::train_detail {

using model::ControllerState;
using model::CpuContext;

// "1,2,3": horizon lists in messages.
std::string join_ints(const std::vector<int>& v);

// The feature_stats section of a checkpoint; `where` names the file in errors.
nlohmann::json stats_to_json(const FeatureStats& st);
Result<FeatureStats> stats_from_json(const nlohmann::json& j, const std::string& where);

// The perception model behind one interface: a flat parameter buffer, forward to logits
// [B*K, H] and a backward that overwrites the gradient buffer. (A baseline-only run, --model
// logreg|gbdt, has no Net parameters: its model is a fitted baseline, train/baselines.h.)
class Net {
 public:
  explicit Net(const TrainConfig& c) {
    pc_ = c.perception_config();
    if (c.model == ModelKind::kPerception) {
      specs_ = model::perception_param_specs(pc_);
      size_ = model::perception_layout(pc_).total;
    }
  }
  size_t size() const { return size_; }
  const model::PerceptionConfig& config() const { return pc_; }
  const std::vector<model::ModelParamSpec>& specs() const { return specs_; }
  int horizons() const { return pc_.horizons; }

  void init(float* p, uint64_t seed) const { model::perception_init(pc_, p, seed); }
#if FXT_HAVE_CUDA
  // Forward passes then run on the GPU with the parameters at device_params (a TrainStep's, kept
  // current by the trainer) or, when null, a device copy of `host` (evaluation, prediction);
  // their matrix products in `precision`.
  void use_gpu(const float* device_params, const std::vector<float>& host, Precision precision) {
    if (!gpu_) gpu_ = std::make_unique<gpu::InferenceGpu>(pc_);
    gpu_->set_precision(precision);
    if (device_params != nullptr) {
      gpu_->use_params(device_params);
    } else {
      gpu_->set_params(host);
    }
  }
#endif
  bool on_gpu() const {
#if FXT_HAVE_CUDA
    return gpu_ != nullptr;
#else
    return false;
#endif
  }

  // Logits [B*K, H], valid until the next forward.
  // dt [B*K]: the CfC's per-position time steps (`--cfc-time real`), or null for S.
  const float* forward(CpuContext& ctx, const float* p, const float* x, const float* dt, int b,
                       int k, int stride) {
#if FXT_HAVE_CUDA
    if (gpu_) {
      gpu_->forward(x, dt, b, k, stride, /*last=*/false, &logits_);
      return logits_.data();
    }
#endif
    ws_.resize(pc_, b, k);
    model::perception_forward(pc_, ctx, p, x, static_cast<float>(stride), dt, &ws_);
    return ws_.logits.data();
  }
  // Logits [B, H] at each sequence's last position only (scoring), valid until the next forward.
  const float* forward_last(CpuContext& ctx, const float* p, const float* x, const float* dt, int b,
                            int k, int stride) {
#if FXT_HAVE_CUDA
    if (gpu_) {
      gpu_->forward(x, dt, b, k, stride, /*last=*/true, &logits_);
      return logits_.data();
    }
#endif
    ws_.resize(pc_, b, k);
    model::perception_forward_last(pc_, ctx, p, x, static_cast<float>(stride), dt, &ws_);
    return ws_.logits.data();
  }
  // Backward of the last forward (its workspace holds the batch shape).
  void backward(CpuContext& ctx, const float* p, const float* x, const float* dt, int stride,
                const float* dlogits, const float* lambda, float* grads) {
    model::perception_backward(pc_, ctx, p, x, static_cast<float>(stride), dt, dlogits, lambda,
                               &ws_, grads, static_cast<float*>(nullptr));
  }

 private:
  model::PerceptionConfig pc_;
  std::vector<model::ModelParamSpec> specs_;
  size_t size_ = 0;
  model::PerceptionWorkspace<float> ws_;
  std::vector<float> logits_;
#if FXT_HAVE_CUDA
  std::unique_ptr<gpu::InferenceGpu> gpu_;
#endif
};

// Everything a step reads and a checkpoint holds. Buffers are registered with the optimizers,
// so the object is never moved after construction (held by unique_ptr).
struct TrainState {
  TrainConfig cfg;
  std::vector<std::string> stores;
  std::vector<std::string> store_ids;  // CRC32 of each store's meta.json (its column CRCs)
  nlohmann::json store_instruments = nlohmann::json::array();  // {symbol, tick_px} per store
  FeatureStats stats;
  std::vector<double> base_rates;
  double cfc_time_unit_ns = 0;  // `--cfc-time real`: the median snapshot gap of training
  Net net;
  std::vector<float> params, grads;
  bool kendall = false;
  std::vector<float> log_sigma, dlog_sigma;  // kendall only
  AdamW opt;
  ControllerState ctrl;
  Baselines baselines;  // fit once at the start of a run (train/baselines.h)
  // --input-skip logreg: the logistic the model started from (train/logistic_fallback.h);
  // empty when the fallback is off or the checkpoint predates it.
  LogisticStart logistic_start;
  // Loop position and early stopping.
  int epoch = 0;
  int64_t step = 0;
  int best_epoch = 0;
  double best_value = 0.0;
  int bad_epochs = 0;
  bool stopped = false;

  static AdamWConfig adam_config(const TrainConfig& c, bool groups) {
    AdamWConfig a;
    a.weight_decay = c.weight_decay;
    a.max_grad_norm = c.clip;
    if (groups) {
      a.group_lr_multipliers = {{std::string(model::kGroupMamba), c.lr_mult_mamba},
                                {std::string(model::kGroupCfc), c.lr_mult_cfc},
                                {std::string(model::kGroupHeads), c.lr_mult_heads}};
    }
    return a;
  }

  explicit TrainState(const TrainConfig& c)
      : cfg(c), net(c), opt(adam_config(c, true)), ctrl(static_cast<int>(c.horizons.size())) {}

  bool perception() const { return cfg.model == ModelKind::kPerception; }
  // The baseline that is the model of a --model logreg|gbdt run ("logreg" or "gbdt").
  size_t model_baseline() const {
    const std::string name = model_kind_name(cfg.model);
    for (size_t i = 0; i < baselines.fitted().size(); ++i) {
      if (baselines.fitted()[i].name == name) return i;
    }
    return 0;
  }

  // Fresh parameters and registration with the optimizers.
  Status setup();
  Checkpoint to_checkpoint() const;
  // The same with other values of the model's parameters (the logistic fallback's best.ckpt).
  Checkpoint to_checkpoint(const std::vector<float>& model_params) const;
  // Restores from a checkpoint whose layout must equal this state's.
  Status load(const Checkpoint& ck);
};

// Reads a checkpoint and rebuilds the state it describes.
Result<std::unique_ptr<TrainState>> load_state(const std::string& path);

// The identity of each store: the CRC32 of its meta.json, which holds every column's CRC32
// (checked against the data on open), so a store replaced in place gets another identity.
Result<std::vector<std::string>> store_identities(const std::vector<std::string>& dirs);

// What predict compares between a store and the training stores: symbol and tick.
nlohmann::json instrument_of(const nlohmann::json& store_meta);

// A model trained on one instrument scores another silently wrong (ticks, spreads and sizes
// are in its features): warn when the store's symbol or tick is none of the training stores'.
void warn_if_other_instrument(const nlohmann::json& trained, const StoreReader& store,
                              const std::string& store_dir);

// Refuses a checkpoint whose stores were replaced since it was written (checkpoints from
// before store_checksums existed are not checked).
Status check_same_stores(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& recorded, const std::string& ckpt);

}  // namespace fxt::train_detail
