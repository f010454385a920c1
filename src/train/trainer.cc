// Training loop, evaluation and prediction on the CPU backend (see trainer.h).
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "core/device_info.h"
#include "core/fault.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/random.h"
#include "data/synth_oracle.h"
#include "features/features.h"
#include "features/labels.h"
#include "model/params.h"
#include "train/comparison.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/run_record.h"
#if FXT_HAVE_CUDA
#include "gpu/batch.h"
#include "gpu/train_step.h"
#endif

namespace fxt {

namespace fs = std::filesystem;
using model::ControllerState;
using model::CpuContext;
using model::In;
using model::LossConfig;
using model::Out;
using model::Shape;

const char* model_kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::kLogReg:
      return "logreg";
    case ModelKind::kGbdt:
      return "gbdt";
    default:
      return "perception";
  }
}

namespace {

Result<ModelKind> parse_model_kind(const std::string& s) {
  if (s == "perception") return ModelKind::kPerception;
  if (s == "logreg") return ModelKind::kLogReg;
  if (s == "gbdt") return ModelKind::kGbdt;
  return UsageError("--model must be perception, logreg or gbdt (got '{}')", s);
}

// Early-stopping metric: "val_loss" (lower is better), "mean_auc" or "auc_h<h>" (higher).
struct StopMetric {
  bool lower_is_better = true;
  int horizon_index = -1;  // for auc_h<h>
};
Result<StopMetric> parse_stop_metric(const std::string& s, const std::vector<int>& horizons) {
  if (s == "val_loss") return StopMetric{true, -1};
  if (s == "mean_auc") return StopMetric{false, -1};
  if (s.rfind("auc_h", 0) == 0) {
    for (size_t i = 0; i < horizons.size(); ++i) {
      if (s == fmt::format("auc_h{}", horizons[i])) return StopMetric{false, static_cast<int>(i)};
    }
  }
  return UsageError(
      "--early-stop must be val_loss, mean_auc or auc_h<h> for a trained horizon h "
      "(got '{}')",
      s);
}

// The sampler seed of global step s: splitmix64 of (seed, s), so no sampler state is carried.
uint64_t seed_for_step(uint64_t seed, int64_t step) {
  uint64_t state = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(step);
  return splitmix64(&state);  // = the (step+1)-th output of splitmix64 seeded with `seed`
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    fmt::format_to(std::back_inserter(s), "{}{}", i ? "," : "", v[i]);
  return s;
}

nlohmann::json stats_to_json(const FeatureStats& st) {
  nlohmann::json j;
  j["names"] = nlohmann::json::array();
  for (const char* n : feature_names()) j["names"].push_back(n);
  j["mean"] = st.mean;
  j["std"] = st.stddev;
  j["count"] = st.count;
  nlohmann::json dropped = nlohmann::json::array();
  for (int k = 0; k < kFeatureDim; ++k) {
    if (st.dropped[static_cast<size_t>(k)]) dropped.push_back(k);
  }
  j["dropped"] = std::move(dropped);
  return j;
}

Result<FeatureStats> stats_from_json(const nlohmann::json& j, const std::string& where) {
  FeatureStats st;
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto sd = j.at("std").get<std::vector<double>>();
    const auto count = j.at("count").get<std::vector<uint64_t>>();
    if (mean.size() != kFeatureDim || sd.size() != kFeatureDim || count.size() != kFeatureDim) {
      return InvalidInput("{}: feature_stats must hold {} values per field", where, kFeatureDim);
    }
    // Standardisation divides by std: a zero or non-finite value would write NaN everywhere.
    for (int k = 0; k < kFeatureDim; ++k) {
      const auto i = static_cast<size_t>(k);
      if (!std::isfinite(mean[i]) || !std::isfinite(sd[i]) || !(sd[i] > 0)) {
        return InvalidInput("{}: feature_stats slot {}: mean {} std {} (expected finite, std > 0)",
                            where, k, mean[i], sd[i]);
      }
    }
    std::copy(mean.begin(), mean.end(), st.mean.begin());
    std::copy(sd.begin(), sd.end(), st.stddev.begin());
    std::copy(count.begin(), count.end(), st.count.begin());
    for (int k : j.value("dropped", std::vector<int>{})) {
      if (k < 0 || k >= kFeatureDim) {
        return InvalidInput("{}: feature_stats.dropped holds slot {} (expected 0-{})", where, k,
                            kFeatureDim - 1);
      }
      st.dropped[static_cast<size_t>(k)] = true;
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: bad feature_stats section: {}", where, e.what());
  }
  return st;
}

std::vector<int64_t> shape64(const std::vector<int>& s) {
  return {s.begin(), s.end()};
}

// The perception model behind one interface: a flat parameter buffer, forward to logits
// [B*K, H] and a backward that overwrites the gradient buffer. (A baseline-only run, --model
// logreg|gbdt, has no Net parameters: its model is a fitted baseline, train/baselines.h.)
class Net {
 public:
  explicit Net(const TrainConfig& c) {
    pc_ = c.perception;
    pc_.features = kFeatureDim;
    pc_.horizons = static_cast<int>(c.horizons.size());
    if (c.model == ModelKind::kPerception) {
      specs_ = model::perception_param_specs(pc_);
      size_ = model::perception_layout(pc_).total;
    }
  }
  size_t size() const { return size_; }
  const std::vector<model::ModelParamSpec>& specs() const { return specs_; }
  int horizons() const { return pc_.horizons; }

  void init(float* p, uint64_t seed) const { model::perception_init(pc_, p, seed); }
#if FXT_HAVE_CUDA
  // Forward passes then run on the GPU with the parameters at device_params (a TrainStep's, kept
  // current by the trainer) or, when null, a device copy of `host` (evaluation, prediction).
  void use_gpu(const float* device_params, const std::vector<float>& host) {
    if (!gpu_) gpu_ = std::make_unique<gpu::InferenceGpu>(pc_);
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
  Status setup() {
    const int nh = static_cast<int>(cfg.horizons.size());
    // The one reset mechanism of the controllers (sigma, lambda, EMAs): every fresh run, and so
    // every fxt cv fold, starts from the freshly constructed state; only load() restores one.
    ctrl.reset();
    if (!perception()) return Status::Ok();  // a baseline-only run has no trained parameters
    params.assign(net.size(), 0.0f);
    grads.assign(net.size(), 0.0f);
    net.init(params.data(), cfg.seed);
    std::vector<model::ParamSpec> specs;
    std::vector<std::string> groups;
    for (const model::ModelParamSpec& s : net.specs()) {
      specs.push_back(s);
      groups.push_back(s.group);
    }
    FXT_RETURN_IF_ERROR(opt.add_params(params, grads, specs, groups));
    kendall = cfg.weighting == model::HorizonWeighting::kKendall;
    if (kendall) {
      log_sigma.assign(static_cast<size_t>(nh), 0.0f);
      dlog_sigma.assign(static_cast<size_t>(nh), 0.0f);
      model::ParamSpec ls;
      ls.name = "loss.log_sigma";
      ls.size = static_cast<size_t>(nh);
      ls.shape = {nh};
      FXT_RETURN_IF_ERROR(opt.add_params(log_sigma, dlog_sigma, {ls}, {"loss"}));
    }
    return Status::Ok();
  }

  Checkpoint to_checkpoint() const {
    Checkpoint ck;
    ck.config = cfg.to_json();
    ck.feature_stats = stats_to_json(stats);
    ck.controller = ctrl.to_json();
    if (perception()) opt.save_state(&ck);
    for (const model::ModelParamSpec& s : net.specs()) {
      ck.set_f32(s.name, shape64(s.shape),
                 std::span<const float>(params).subspan(s.offset, s.size));
    }
    if (kendall) ck.set_f32("loss.log_sigma", {static_cast<int64_t>(log_sigma.size())}, log_sigma);
    nlohmann::json meta;
    baselines.save(&ck, &meta);
    meta["store_dirs"] = stores;
    meta["store_checksums"] = store_ids;
    meta["store_instruments"] = store_instruments;
    meta["base_rates"] = base_rates;
    meta["cfc_time_unit_ns"] = cfc_time_unit_ns;
    meta["epoch"] = epoch;
    meta["step"] = step;
    meta["best_epoch"] = best_epoch;
    meta["best_value"] = best_value;
    meta["bad_epochs"] = bad_epochs;
    meta["stopped"] = stopped;
    meta["model"] = model_kind_name(cfg.model);
    ck.meta = meta;
    return ck;
  }

  // Restores from a checkpoint whose layout must equal this state's.
  Status load(const Checkpoint& ck) {
    {
      // The model's layout is fixed by the config; the baselines' tensors vary with their fit
      // (tree counts) and are checked by Baselines::load.
      Checkpoint model_part = ck;
      std::erase_if(model_part.tensors,
                    [](const NamedTensor& t) { return Baselines::is_baseline_tensor(t.name); });
      FXT_RETURN_IF_ERROR(check_compatible(to_checkpoint(), model_part));
    }
    for (const model::ModelParamSpec& s : net.specs()) {
      FXT_RETURN_IF_ERROR(ck.read_f32_into(s.name, shape64(s.shape),
                                           std::span<float>(params).subspan(s.offset, s.size)));
    }
    if (kendall) {
      const int64_t n = static_cast<int64_t>(log_sigma.size());
      FXT_RETURN_IF_ERROR(ck.read_f32_into("loss.log_sigma", std::vector<int64_t>{n}, log_sigma));
    }
    if (perception()) FXT_RETURN_IF_ERROR(opt.load_state(ck));
    FXT_ASSIGN_OR_RETURN(
        ctrl, ControllerState::from_json(ck.controller, static_cast<int>(cfg.horizons.size())));
    FXT_ASSIGN_OR_RETURN(stats, stats_from_json(ck.feature_stats, ck.source));
    try {
      const nlohmann::json& m = ck.meta;
      FXT_ASSIGN_OR_RETURN(baselines,
                           Baselines::load(ck, m, static_cast<int>(cfg.horizons.size())));
      stores = m.at("store_dirs").get<std::vector<std::string>>();
      store_ids = m.value("store_checksums", std::vector<std::string>{});
      store_instruments = m.value("store_instruments", nlohmann::json::array());
      base_rates = m.at("base_rates").get<std::vector<double>>();
      cfc_time_unit_ns = m.value("cfc_time_unit_ns", 0.0);
      epoch = m.at("epoch").get<int>();
      step = m.at("step").get<int64_t>();
      best_epoch = m.at("best_epoch").get<int>();
      best_value = m.at("best_value").get<double>();
      bad_epochs = m.at("bad_epochs").get<int>();
      stopped = m.at("stopped").get<bool>();
    } catch (const nlohmann::json::exception& e) {
      return InvalidInput("{}: bad meta section: {}", ck.source, e.what());
    }
    if (base_rates.size() != cfg.horizons.size()) {
      return InvalidInput("{}: base_rates has {} values for {} horizons", ck.source,
                          base_rates.size(), cfg.horizons.size());
    }
    return Status::Ok();
  }
};

// Reads a checkpoint and rebuilds the state it describes.
Result<std::unique_ptr<TrainState>> load_state(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(Checkpoint ck, read_checkpoint(path));
  FXT_ASSIGN_OR_RETURN(TrainConfig cfg, TrainConfig::from_json(ck.config));
  if (Status s = cfg.validate(); !s.ok()) {
    return InvalidInput("{}: bad config section: {}", path, s.message());
  }
  auto st = std::make_unique<TrainState>(cfg);
  FXT_RETURN_IF_ERROR(st->setup());
  if (Status s = st->load(ck); !s.ok()) return InvalidInput("{}", s.message());
  return st;
}

// Exit 1 with the step where the loss (or a weight) stopped being finite; the run directory
// keeps the checkpoints of the last good epoch.
Status diverged(int64_t step, double value, const std::string& last_path) {
  return InternalError(
      "training diverged at step {} (loss {}); lower --lr{}", step, value,
      fs::exists(last_path) ? "; " + last_path + " holds the last good epoch" : std::string());
}

// The identity of each store: the CRC32 of its meta.json, which holds every column's CRC32
// (checked against the data on open), so a store replaced in place gets another identity.
Result<std::vector<std::string>> store_identities(const std::vector<std::string>& dirs) {
  std::vector<std::string> ids;
  for (const std::string& d : dirs) {
    if (!fs::exists(d + "/meta.json")) return NotFound("{}: not a store (no meta.json)", d);
    FXT_ASSIGN_OR_RETURN(std::string id, file_checksum(d + "/meta.json"));
    ids.push_back(std::move(id));
  }
  return ids;
}

// What predict compares between a store and the training stores: symbol and tick.
nlohmann::json instrument_of(const nlohmann::json& store_meta) {
  const nlohmann::json inst = store_meta.value("instrument", nlohmann::json::object());
  return {{"symbol", inst.value("symbol", std::string())}, {"tick_px", inst.value("tick_px", 0)}};
}

// A model trained on one instrument scores another silently wrong (ticks, spreads and sizes
// are in its features): warn when the store's symbol or tick is none of the training stores'.
void warn_if_other_instrument(const nlohmann::json& trained, const StoreReader& store,
                              const std::string& store_dir) {
  const nlohmann::json now = instrument_of(store.meta());
  if (trained.empty() || std::find(trained.begin(), trained.end(), now) != trained.end()) return;
  log_warn("{}: instrument {} (tick {}) differs from the training stores' ({} tick {}): the "
           "predictions may not mean what they meant in training",
           store_dir, now["symbol"].get<std::string>(),
           static_cast<double>(now["tick_px"].get<int64_t>()) * 1e-9,
           trained[0]["symbol"].get<std::string>(),
           static_cast<double>(trained[0]["tick_px"].get<int64_t>()) * 1e-9);
}

// Refuses a checkpoint whose stores were replaced since it was written (checkpoints from
// before store_checksums existed are not checked).
Status check_same_stores(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& recorded, const std::string& ckpt) {
  if (recorded.empty()) return Status::Ok();
  FXT_ASSIGN_OR_RETURN(const std::vector<std::string> now, store_identities(dirs));
  for (size_t i = 0; i < now.size() && i < recorded.size(); ++i) {
    if (now[i] != recorded[i]) {
      return InvalidInput(
          "{}: store changed since {} was written (meta.json {} then, {} now): it was replaced "
          "in place",
          dirs[i], ckpt, recorded[i], now[i]);
    }
  }
  return Status::Ok();
}

double bce(float x, float y) {
  const double xd = x;
  return std::max(xd, 0.0) - xd * y + std::log1p(std::exp(-std::abs(xd)));
}

// Validation (DESIGN §6): every position of the non-overlapping validation windows.
struct ValResult {
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean over horizons of pooled BCE
  std::vector<double> loss_h;
  Metrics metrics;
  int64_t rows = 0;
};

// Windows per forward pass when scoring: the configured eval batch on the CPU; on the GPU at
// least 1024 (one window's result does not depend on the others in its pass).
size_t scoring_batch(const Net& net, const TrainConfig& c) {
  const auto b = static_cast<size_t>(c.eval_batch);
  return net.on_gpu() ? std::max<size_t>(b, 1024) : b;
}

// A baseline-only run's validation: the model baseline at every position of the same windows.
Status baseline_window_scores(TrainState& st, const Dataset& ds, const std::vector<Anchor>& anchors,
                              std::vector<float>* scores, std::vector<float>* y,
                              std::vector<float>* m) {
  const TrainConfig& c = st.cfg;
  const size_t nh = c.horizons.size(), k = static_cast<size_t>(c.window);
  y->resize(anchors.size() * k * nh);
  m->resize(y->size());
  scores->resize(y->size());
  std::vector<float> x(k * kFeatureDim);
  for (size_t i = 0; i < anchors.size(); ++i) {
    ds.gather(anchors[i], x.data(), y->data() + i * k * nh, m->data() + i * k * nh);
  }
  // One scoring call per store (XGBoost loads its model once per call).
  for (size_t s = 0; s < ds.store_count(); ++s) {
    std::vector<uint64_t> ends;
    std::vector<size_t> at;
    for (size_t i = 0; i < anchors.size(); ++i) {
      if (anchors[i].store != s) continue;
      for (size_t p = 0; p < k; ++p) {
        ends.push_back(anchors[i].start + p * static_cast<uint64_t>(c.stride));
        at.push_back(i * k + p);
      }
    }
    if (ends.empty()) continue;
    FXT_ASSIGN_OR_RETURN(std::vector<float> lg,
                         st.baselines.score(st.model_baseline(), ds.store(s).features.data(), ends,
                                            c.stride, c.threads));
    for (size_t r = 0; r < at.size(); ++r) {
      std::copy_n(lg.data() + r * nh, nh, scores->data() + at[r] * nh);
    }
  }
  return Status::Ok();
}

// Pooled masked BCE per horizon, its mean over the horizons with labels, and the metrics of
// validation logits `sc` with float labels and masks, all row-major [rows][H].
Result<ValResult> summarise_validation(const std::vector<float>& sc, const std::vector<float>& yf,
                                       const std::vector<float>& mf,
                                       const std::vector<int>& horizons) {
  const size_t nh = horizons.size();
  ValResult r;
  r.rows = static_cast<int64_t>(sc.size() / nh);
  std::vector<uint8_t> labels(yf.size()), mask(mf.size());
  std::vector<double> sum(nh, 0.0), cnt(nh, 0.0);
  for (size_t i = 0; i < yf.size(); ++i) {
    labels[i] = yf[i] != 0.0f ? 1 : 0;
    mask[i] = mf[i] != 0.0f ? 1 : 0;
    if (mask[i] != 0) {
      sum[i % nh] += bce(sc[i], yf[i]);
      cnt[i % nh] += 1.0;
    }
  }
  double total = 0.0;
  int defined = 0;
  for (size_t h = 0; h < nh; ++h) {
    const double l = cnt[h] > 0 ? sum[h] / cnt[h] : std::numeric_limits<double>::quiet_NaN();
    r.loss_h.push_back(l);
    if (cnt[h] > 0) {
      total += l;
      ++defined;
    }
  }
  if (defined > 0) r.loss = total / defined;
  FXT_ASSIGN_OR_RETURN(r.metrics, compute_metrics(std::span<const float>(sc), labels, mask,
                                                  horizons, ScoreKind::kLogit));
  return r;
}

Result<ValResult> validate_epoch(TrainState& st, const Dataset& ds, CpuContext& ctx) {
  const TrainConfig& c = st.cfg;
  const int nh = static_cast<int>(c.horizons.size());
  const int k = c.window;
  const std::vector<Anchor> anchors = ds.evaluation_anchors(Split::kValidation);
  if (anchors.empty()) return InvalidInput("the validation split has no clean window");
  std::vector<float> scores, ys, ms;
  if (!st.perception()) {
    FXT_RETURN_IF_ERROR(baseline_window_scores(st, ds, anchors, &scores, &ys, &ms));
    return summarise_validation(scores, ys, ms, c.horizons);
  }
  const size_t rows_per = static_cast<size_t>(k);
  std::vector<float> x, y, m, dt;
  const size_t per_pass = scoring_batch(st.net, c);
  for (size_t a0 = 0; a0 < anchors.size(); a0 += per_pass) {
    const size_t nb = std::min(anchors.size() - a0, per_pass);
    x.resize(nb * rows_per * kFeatureDim);
    y.resize(nb * rows_per * static_cast<size_t>(nh));
    m.resize(y.size());
    dt.resize(nb * rows_per);
    for (size_t b = 0; b < nb; ++b) {
      ds.gather(anchors[a0 + b], x.data() + b * rows_per * kFeatureDim,
                y.data() + b * rows_per * nh, m.data() + b * rows_per * nh);
      if (c.cfc_time_real)
        ds.gather_elapsed(anchors[a0 + b], st.cfc_time_unit_ns, dt.data() + b * rows_per);
    }
    const float* lg =
        st.net.forward(ctx, st.params.data(), x.data(), c.cfc_time_real ? dt.data() : nullptr,
                       static_cast<int>(nb), k, c.stride);
    scores.insert(scores.end(), lg, lg + y.size());
    ys.insert(ys.end(), y.begin(), y.end());
    ms.insert(ms.end(), m.begin(), m.end());
  }
  return summarise_validation(scores, ys, ms, c.horizons);
}

// Training positive rate per horizon (the base-rate predictor), over the training range.
Result<std::vector<double>> train_base_rates(const Dataset& ds, int nh) {
  const GlobalRange g = ds.range(Split::kTrain);
  std::vector<uint8_t> y, m;
  for (size_t i = 0; i < ds.store_count(); ++i) {
    const Dataset::Store& s = ds.store(i);
    const uint64_t n = s.reader.size();
    const uint64_t lo = std::max(g.begin, s.offset), hi = std::min(g.end, s.offset + n);
    for (uint64_t t = lo; t < hi; ++t) {
      const size_t r = static_cast<size_t>(t - s.offset) * static_cast<size_t>(nh);
      y.insert(y.end(), s.labels.y.begin() + static_cast<std::ptrdiff_t>(r),
               s.labels.y.begin() + static_cast<std::ptrdiff_t>(r + nh));
      m.insert(m.end(), s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r),
               s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r + nh));
    }
  }
  FXT_ASSIGN_OR_RETURN(std::vector<double> rates, positive_rates(y, m, static_cast<size_t>(nh)));
  // A horizon without a single training label would train on nothing: refuse before work.
  for (size_t h = 0; h < rates.size(); ++h) {
    if (!std::isfinite(rates[h])) {
      return InvalidInput(
          "horizon {}: every training label is masked (--min-move-ticks {} exceeds every mid "
          "move in the training range); lower --min-move-ticks",
          ds.config().labels.horizons[h], ds.config().labels.min_move_ticks);
    }
  }
  return rates;
}

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Keeps the metrics.jsonl lines of epochs <= last_epoch (a resumed run rewrites the rest).
Status truncate_metrics(const std::string& path, int last_epoch) {
  if (!fs::exists(path)) return Status::Ok();
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::istringstream in(text);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("epoch")) continue;
    if (j["epoch"].get<int>() <= last_epoch) kept += line + "\n";
  }
  return write_file_atomic(path, kept);
}

Status append_line(const std::string& path, const std::string& line) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  if (!f) return IoError("cannot open {} for appending", path);
  f << line << '\n';
  f.flush();
  if (!f) return IoError("cannot write {}", path);
  return Status::Ok();
}

// Scores snapshot `ends` (local indices of one store, features n x 40 standardised) with the
// inference window ending at each: model logits [n_ends, H] at the last position (for a
// baseline-only run, the model baseline's logits at those snapshots). `progress`, when given,
// advances by the snapshots scored.
Status score_inference(TrainState& st, CpuContext& ctx, const StoreReader& store,
                       const float* features, const std::vector<uint64_t>& ends,
                       std::vector<float>* model_logits, Progress* progress = nullptr) {
  const TrainConfig& c = st.cfg;
  if (!st.perception()) {
    FXT_ASSIGN_OR_RETURN(*model_logits, st.baselines.score(st.model_baseline(), features, ends,
                                                           c.stride, c.threads));
    if (progress != nullptr) progress->advance(ends.size());
    return Status::Ok();
  }
  const int nh = static_cast<int>(c.horizons.size());
  const int k = c.window;
  const size_t batch = scoring_batch(st.net, c);
  std::vector<uint64_t> idx(static_cast<size_t>(k));
  std::vector<float> x, dt;
  model_logits->assign(ends.size() * static_cast<size_t>(nh), 0.0f);
  for (size_t e0 = 0; e0 < ends.size(); e0 += batch) {
    const size_t nb = std::min(ends.size() - e0, batch);
    x.resize(nb * static_cast<size_t>(k) * kFeatureDim);
    dt.resize(nb * static_cast<size_t>(k));
    for (size_t b = 0; b < nb; ++b) {
      window_positions(ends[e0 + b], k, c.stride, idx.data());
      if (c.cfc_time_real) {
        window_elapsed(store, idx.data(), k, c.stride, st.cfc_time_unit_ns,
                       dt.data() + b * static_cast<size_t>(k));
      }
      for (int p = 0; p < k; ++p) {
        std::copy_n(features + idx[static_cast<size_t>(p)] * kFeatureDim, kFeatureDim,
                    x.data() + (b * static_cast<size_t>(k) + static_cast<size_t>(p)) * kFeatureDim);
      }
    }
    const float* lg =
        st.net.forward_last(ctx, st.params.data(), x.data(), c.cfc_time_real ? dt.data() : nullptr,
                            static_cast<int>(nb), k, c.stride);
    std::copy_n(lg, nb * static_cast<size_t>(nh),
                model_logits->data() + e0 * static_cast<size_t>(nh));
    if (progress != nullptr) progress->advance(nb);
  }
  return Status::Ok();
}

#if FXT_HAVE_CUDA
// The CUDA backend of train() (docs/GPU.md): the standardised dataset and the whole training
// state move to the device once; epochs run as replays of the captured step; at each epoch's end
// the state comes back into TrainState, so validation, checkpoints and resume are the CPU path's.
class CudaTrainer {
 public:
  CudaTrainer(TrainState& st, const Dataset& ds, const LrSchedule& sched)
      : step_(step_config(st.cfg, sched)) {
    const TrainConfig& c = st.cfg;
    // Concatenate the stores' rows (global row = store offset + local index).
    gpu::TrainData data;
    std::vector<float> features, elapsed;
    std::vector<uint8_t> labels, masks;
    for (size_t i = 0; i < ds.store_count(); ++i) {
      const Dataset::Store& s = ds.store(i);
      features.insert(features.end(), s.features.begin(), s.features.end());
      labels.insert(labels.end(), s.labels.y.begin(), s.labels.y.end());
      masks.insert(masks.end(), s.labels.mask.begin(), s.labels.mask.end());
      if (c.cfc_time_real) {
        const uint64_t n = s.reader.size();
        std::vector<float> e(n);
        gpu::elapsed_per_row(s.reader.ts_ns.data, n, c.stride, st.cfc_time_unit_ns, e.data());
        elapsed.insert(elapsed.end(), e.begin(), e.end());
      }
    }
    for (const Anchor& a : ds.anchors(Split::kTrain)) {
      data.pool.push_back(ds.store(a.store).offset + a.start);
    }
    data.features = features.data();
    data.labels = labels.data();
    data.masks = masks.data();
    data.elapsed = c.cfc_time_real ? elapsed.data() : nullptr;
    data.rows = ds.total_snapshots();
    step_.upload_data(data);
    upload(st);
    st.net.use_gpu(step_.params(), st.params);
  }

  // Runs one epoch's steps and returns their sums (read through mapped memory).
  gpu::StepSums run_epoch(int64_t steps) {
    step_.run(steps);
    return step_.take_sums();
  }

  // Device state -> TrainState (parameters, moments, controllers).
  Status download(TrainState& st) const {
    const gpu::TrainHostState h = step_.download_state();
    st.params = h.params;
    if (st.kendall) st.log_sigma = h.log_sigma;
    FXT_RETURN_IF_ERROR(st.opt.import_state(h.opt.step, h.opt.m, h.opt.v));
    st.ctrl = gpu::to_model_state(h.controller);
    return Status::Ok();
  }

  std::string device_name() const { return step_.context().device_name(); }

 private:
  static gpu::TrainStepConfig step_config(const TrainConfig& c, const LrSchedule& sched) {
    gpu::TrainStepConfig g;
    g.model = c.perception;
    g.model.features = kFeatureDim;
    g.model.horizons = static_cast<int>(c.horizons.size());
    g.batch = c.batch;
    g.window = c.window;
    g.stride = c.stride;
    g.cfc_time_real = c.cfc_time_real;
    g.seed = c.seed;
    model::LossConfig lc;
    lc.weighting = c.weighting;
    lc.trunk_lambda = c.lambda;
    g.loss = gpu::to_gpu_config(lc);
    g.adamw.weight_decay = c.weight_decay;
    g.adamw.max_grad_norm = c.clip;
    g.schedule.peak_lr = sched.peak_lr;
    g.schedule.warmup_steps = sched.warmup_steps;
    g.schedule.total_steps = sched.total_steps;
    g.schedule.min_lr_ratio = sched.min_lr_ratio;
    g.lr_mult_mamba = c.lr_mult_mamba;
    g.lr_mult_cfc = c.lr_mult_cfc;
    g.lr_mult_heads = c.lr_mult_heads;
    g.baseline = false;  // the baselines are fit exactly before training (train/baselines.h)
    g.tf32 = c.tf32;
    return g;
  }

  // TrainState -> device (fresh or resumed state alike).
  void upload(const TrainState& st) {
    gpu::TrainHostState h;
    h.params = st.params;
    h.log_sigma = st.log_sigma;
    st.opt.export_state(&h.opt.step, &h.opt.m, &h.opt.v);
    h.opt.schedule_step = st.step;
    h.controller = gpu::to_controller_host(st.ctrl);
    step_.upload_state(h);
  }

  gpu::TrainStep step_;
};
#endif

}  // namespace

// ---- TrainConfig ------------------------------------------------------------------------------

Status TrainConfig::validate() const {
  if (steps_per_epoch < 1) return UsageError("--steps-per-epoch must be >= 1");
  if (epochs < 1) return UsageError("--epochs must be >= 1");
  if (batch < 1) return UsageError("--batch must be >= 1");
  if (window < 1) return UsageError("--seq must be >= 1");
  if (stride < 1) return UsageError("--stride must be >= 1");
  if (eval_batch < 1) return UsageError("--eval-batch must be >= 1");
  if (threads < 1) return UsageError("--threads must be >= 1");
  if (patience < 0) return UsageError("--patience must be >= 0");
  if (!(lr > 0) || !std::isfinite(lr)) return UsageError("--lr must be positive");
  if (warmup_steps < 0) return UsageError("--warmup must be >= 0");
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) return UsageError("--min-lr-ratio not in [0,1]");
  if (!(weight_decay >= 0)) return UsageError("--weight-decay must be >= 0");
  for (double m : {lr_mult_mamba, lr_mult_cfc, lr_mult_heads}) {
    if (!(m >= 0) || !std::isfinite(m)) return UsageError("--lr-mult-* must be >= 0");
  }
  if (split.explicit_ranges) {
    // Order and purge gaps are checked against the data by Dataset::build.
    if (split.train_range.size() == 0 || split.validation_range.size() == 0 ||
        split.test_range.begin > split.test_range.end) {
      return UsageError("explicit split ranges need non-empty train and validation ranges");
    }
  } else if (!(split.train > 0 && split.validation > 0 && split.train + split.validation < 1)) {
    return UsageError("--split-train and --split-val must be positive and sum to below 1");
  }
  LabelConfig lc;
  lc.horizons = horizons;
  lc.min_move_ticks = min_move_ticks;
  FXT_RETURN_IF_ERROR(validate_label_config(lc));
  for (size_t i = 0; i < drop_features.size(); ++i) {
    if (drop_features[i] < 0 || drop_features[i] >= kFeatureDim ||
        (i > 0 && drop_features[i] <= drop_features[i - 1])) {
      return UsageError("--drop-features must name distinct slots 0-{}", kFeatureDim - 1);
    }
  }
  if (static_cast<int>(drop_features.size()) == kFeatureDim) {
    return UsageError("--drop-features leaves no feature");
  }
  FXT_RETURN_IF_ERROR(parse_stop_metric(early_stop, horizons).status());
  FXT_RETURN_IF_ERROR(baselines.validate());
  if (model == ModelKind::kPerception) {
    model::PerceptionConfig pc = perception;
    pc.features = kFeatureDim;
    pc.horizons = static_cast<int>(horizons.size());
    FXT_RETURN_IF_ERROR(pc.validate());
  }
  return Status::Ok();
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j;
  j["seed"] = seed;
  j["steps_per_epoch"] = steps_per_epoch;
  j["epochs"] = epochs;
  j["batch"] = batch;
  j["window"] = window;
  j["stride"] = stride;
  j["cfc_time"] = cfc_time_real ? "real" : "stride";
  j["horizons"] = horizons;
  j["min_move_ticks"] = min_move_ticks;
  j["drop_features"] = drop_features;
  j["split_train"] = split.train;
  j["split_validation"] = split.validation;
  if (split.explicit_ranges) {  // absent in the default (fraction) form
    auto range = [](const GlobalRange& r) { return nlohmann::json::array({r.begin, r.end}); };
    j["split_ranges"] = {{"train", range(split.train_range)},
                         {"validation", range(split.validation_range)},
                         {"test", range(split.test_range)}};
  }
  j["lr"] = lr;
  j["warmup_steps"] = warmup_steps;
  j["min_lr_ratio"] = min_lr_ratio;
  j["weight_decay"] = weight_decay;
  j["clip"] = clip;
  j["lr_mult_mamba"] = lr_mult_mamba;
  j["lr_mult_cfc"] = lr_mult_cfc;
  j["lr_mult_heads"] = lr_mult_heads;
  j["weighting"] = model::horizon_weighting_name(weighting);
  j["lambda"] = lambda;
  j["early_stop"] = early_stop;
  j["patience"] = patience;
  j["model"] = model_kind_name(model);
  j["d_model"] = perception.d_model;
  j["d_state"] = perception.d_state;
  j["head_dim"] = perception.head_dim;
  j["expand"] = perception.expand;
  j["d_conv"] = perception.d_conv;
  j["head_mid"] = perception.head_mid;
  j["eval_batch"] = eval_batch;
  j["baselines"] = baselines.to_json();
  return j;
}

Result<TrainConfig> TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  try {
    c.seed = j.at("seed").get<uint64_t>();
    c.steps_per_epoch = j.at("steps_per_epoch").get<int64_t>();
    c.epochs = j.at("epochs").get<int>();
    c.batch = j.at("batch").get<int>();
    c.window = j.at("window").get<int>();
    c.stride = j.at("stride").get<int>();
    c.cfc_time_real = j.value("cfc_time", std::string("stride")) == "real";
    c.horizons = j.at("horizons").get<std::vector<int>>();
    c.min_move_ticks = j.at("min_move_ticks").get<int64_t>();
    c.drop_features = j.value("drop_features", std::vector<int>{});
    c.split.train = j.at("split_train").get<double>();
    c.split.validation = j.at("split_validation").get<double>();
    if (j.contains("split_ranges")) {
      const nlohmann::json& r = j.at("split_ranges");
      auto range = [](const nlohmann::json& a) {
        return GlobalRange{a.at(0).get<uint64_t>(), a.at(1).get<uint64_t>()};
      };
      c.split.explicit_ranges = true;
      c.split.train_range = range(r.at("train"));
      c.split.validation_range = range(r.at("validation"));
      c.split.test_range = range(r.at("test"));
    }
    c.lr = j.at("lr").get<double>();
    c.warmup_steps = j.at("warmup_steps").get<int64_t>();
    c.min_lr_ratio = j.at("min_lr_ratio").get<double>();
    c.weight_decay = j.at("weight_decay").get<double>();
    c.clip = j.at("clip").get<double>();
    c.lr_mult_mamba = j.at("lr_mult_mamba").get<double>();
    c.lr_mult_cfc = j.at("lr_mult_cfc").get<double>();
    c.lr_mult_heads = j.at("lr_mult_heads").get<double>();
    FXT_ASSIGN_OR_RETURN(c.weighting,
                         model::parse_horizon_weighting(j.at("weighting").get<std::string>()));
    c.lambda = j.at("lambda").get<bool>();
    c.early_stop = j.at("early_stop").get<std::string>();
    c.patience = j.at("patience").get<int>();
    FXT_ASSIGN_OR_RETURN(c.model, parse_model_kind(j.at("model").get<std::string>()));
    c.perception.d_model = j.at("d_model").get<int>();
    c.perception.d_state = j.at("d_state").get<int>();
    c.perception.head_dim = j.at("head_dim").get<int>();
    c.perception.expand = j.at("expand").get<int>();
    c.perception.d_conv = j.at("d_conv").get<int>();
    c.perception.head_mid = j.at("head_mid").get<int>();
    c.eval_batch = j.at("eval_batch").get<int>();
    FXT_ASSIGN_OR_RETURN(c.baselines, BaselineConfig::from_json(j.at("baselines")));
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("bad training config: {}", e.what());
  }
  return c;
}

DatasetConfig TrainConfig::dataset_config() const {
  DatasetConfig d;
  d.sequence.window = window;
  d.sequence.stride = stride;
  d.split = split;
  d.labels.horizons = horizons;
  d.labels.min_move_ticks = min_move_ticks;
  return d;
}

// ---- train ------------------------------------------------------------------------------------

Result<TrainSummary> train(const TrainConfig& config_in, const std::vector<std::string>& store_dirs,
                           const std::string& run_dir, const TrainOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  RunRecord record("train");  // start time of this invocation, for RUN_DIR/run.json
  const std::string last_path = run_dir + "/last.ckpt", best_path = run_dir + "/best.ckpt";
  const std::string metrics_path = run_dir + "/metrics.jsonl";

  // Stores are recorded as absolute paths so eval and resume work from any directory.
  std::vector<std::string> stores;
  for (const std::string& d : store_dirs) {
    stores.push_back(fs::absolute(fs::path(d)).lexically_normal().string());
  }
  std::unique_ptr<TrainState> st;
  if (options.resume) {
    if (!fs::exists(last_path)) return NotFound("--resume: {} does not exist", last_path);
    FXT_ASSIGN_OR_RETURN(st, load_state(last_path));
    if (!stores.empty() && stores != st->stores) {
      return UsageError("--resume: the stores given differ from those of {}", last_path);
    }
    if (!config_in.horizons.empty() && config_in.horizons != st->cfg.horizons) {
      return UsageError("--resume: {} was trained for horizons {}; --horizons asks for {}",
                        last_path, join_ints(st->cfg.horizons), join_ints(config_in.horizons));
    }
    st->cfg.threads = config_in.threads;
    st->cfg.device = config_in.device;
    st->cfg.tf32 = config_in.tf32;
    FXT_RETURN_IF_ERROR(check_same_stores(st->stores, st->store_ids, last_path));
    FXT_RETURN_IF_ERROR(truncate_metrics(metrics_path, st->epoch));
  } else {
    FXT_RETURN_IF_ERROR(config_in.validate());
    if (store_dirs.empty()) return UsageError("train needs at least one --store");
    if (fs::exists(last_path)) {
      return UsageError("{} already holds a run (last.ckpt): use --resume or another --run-dir",
                        run_dir);
    }
    st = std::make_unique<TrainState>(config_in);
    st->stores = stores;
    FXT_RETURN_IF_ERROR(st->setup());
  }
  const TrainConfig& c = st->cfg;
  FXT_ASSIGN_OR_RETURN(const StopMetric stop, parse_stop_metric(c.early_stop, c.horizons));
  const int nh = static_cast<int>(c.horizons.size());

  FXT_ASSIGN_OR_RETURN(Dataset ds, Dataset::open(st->stores, c.dataset_config()));
  if (!options.resume) {
    FXT_ASSIGN_OR_RETURN(st->store_ids, store_identities(st->stores));
    for (size_t i = 0; i < ds.store_count(); ++i) {
      st->store_instruments.push_back(instrument_of(ds.store(i).reader.meta()));
    }
  }
  if (ds.anchors(Split::kTrain).empty()) {
    return InvalidInput(
        "the training split has no clean window of {} positions (stores too short "
        "for --seq/--stride/--horizons?)",
        c.window);
  }
  if (ds.evaluation_anchors(Split::kValidation).empty()) {
    return InvalidInput("the validation split has no clean window of {} positions", c.window);
  }
  if (!options.resume) {
    st->stats = ds.measure_train_stats();
    for (int k : c.drop_features) st->stats.dropped[static_cast<size_t>(k)] = true;
    if (c.cfc_time_real) {
      st->cfc_time_unit_ns = ds.median_train_gap_ns();
      if (!(st->cfc_time_unit_ns > 0)) {
        return InvalidInput("--cfc-time real: timestamps never advance in the training range");
      }
    }
    FXT_ASSIGN_OR_RETURN(st->base_rates, train_base_rates(ds, nh));
  }
  ds.standardise_features(st->stats);
  if (!options.resume) {
    // The baselines, fit once to convergence on the standardised training rows (a resumed run
    // keeps those of its checkpoint).
    const std::string only = st->perception() ? "" : model_kind_name(c.model);
    FXT_ASSIGN_OR_RETURN(st->baselines,
                         Baselines::fit(ds, c.horizons, c.baselines, c.threads, only));
  }
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return IoError("cannot create run directory {}: {}", run_dir, ec.message());
  if (!options.resume && fs::exists(metrics_path)) fs::remove(metrics_path, ec);

  CpuContext ctx(c.threads);
  LossConfig lcfg;
  lcfg.weighting = c.weighting;
  lcfg.trunk_lambda = c.lambda;
  LrSchedule sched;
  sched.peak_lr = c.lr;
  sched.total_steps = c.steps_per_epoch * c.epochs;
  sched.warmup_steps = std::min(c.warmup_steps, sched.total_steps);
  sched.min_lr_ratio = c.min_lr_ratio;
  FXT_RETURN_IF_ERROR(sched.validate());
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(c.device, c.model));
  record.set_device(backend_name(use_cuda));
#if FXT_HAVE_CUDA
  std::unique_ptr<CudaTrainer> cuda;
  if (use_cuda) cuda = std::make_unique<CudaTrainer>(*st, ds, sched);
#endif

  const int b = c.batch, k = c.window;
  const size_t rows = static_cast<size_t>(b) * static_cast<size_t>(k);
  std::vector<float> x(rows * kFeatureDim), y(rows * static_cast<size_t>(nh)), m(y.size());
  std::vector<float> dlogits(y.size()), lambda_f(static_cast<size_t>(nh));
  std::vector<float> dt(rows);
  const float* dt_or_null = c.cfc_time_real ? dt.data() : nullptr;
  const auto R = static_cast<int64_t>(rows);
  const Shape rh{R, nh};

  nlohmann::json epoch_seconds = nlohmann::json::array();
  int epochs_here = 0;
  // A baseline-only run (--model logreg|gbdt) has one "epoch": its fit, then validation.
  const bool trains = st->perception();
  const int epochs = trains ? c.epochs : 1;
  while (!st->stopped && st->epoch < epochs &&
         (options.stop_after_epochs <= 0 || epochs_here < options.stop_after_epochs)) {
    const auto t_epoch = Clock::now();
    double loss_sum = 0.0, norm_sum = 0.0, lr = 0.0;
    std::vector<double> loss_h_sum(static_cast<size_t>(nh), 0.0);
    int64_t skipped = 0;
#if FXT_HAVE_CUDA
    if (cuda) {
      // The whole epoch as replays of the captured step; the sums come back at its end.
      const gpu::StepSums sums = cuda->run_epoch(c.steps_per_epoch);
      loss_sum = sums.loss;
      norm_sum = sums.grad_norm;
      skipped = sums.skipped;
      for (int h = 0; h < nh; ++h)
        loss_h_sum[static_cast<size_t>(h)] = sums.loss_h[static_cast<size_t>(h)];
      st->step += c.steps_per_epoch;
      lr = sched.lr_at(st->step - 1);
      FXT_RETURN_IF_ERROR(cuda->download(*st));
    }
#endif
    for (int64_t i = 0; trains && !use_cuda && i < c.steps_per_epoch; ++i) {
      Rng rng(seed_for_step(c.seed, st->step));
      const std::vector<Anchor> anchors = ds.sample_train(rng, static_cast<size_t>(b));
      for (int j = 0; j < b; ++j) {
        const size_t o = static_cast<size_t>(j) * static_cast<size_t>(k);
        ds.gather(anchors[static_cast<size_t>(j)], x.data() + o * kFeatureDim, y.data() + o * nh,
                  m.data() + o * nh);
        if (c.cfc_time_real) {
          ds.gather_elapsed(anchors[static_cast<size_t>(j)], st->cfc_time_unit_ns, dt.data() + o);
        }
      }
      const float* lg =
          st->net.forward(ctx, st->params.data(), x.data(), dt_or_null, b, k, c.stride);
      std::fill(dlogits.begin(), dlogits.end(), 0.0f);
      std::fill(st->dlog_sigma.begin(), st->dlog_sigma.end(), 0.0f);
      const model::LossStepOutputs out = model::loss_step<float>(
          lcfg, st->ctrl, In<float>(lg, rh), In<float>(y.data(), rh), In<float>(m.data(), rh),
          st->kendall ? In<float>(st->log_sigma.data(), Shape{nh}) : In<float>(),
          Out<float>(dlogits.data(), rh),
          st->kendall ? Out<float>(st->dlog_sigma.data(), Shape{nh}) : Out<float>());
      for (int h = 0; h < nh; ++h)
        lambda_f[static_cast<size_t>(h)] = static_cast<float>(out.lambda[static_cast<size_t>(h)]);
      st->net.backward(ctx, st->params.data(), x.data(), dt_or_null, c.stride, dlogits.data(),
                       lambda_f.data(), st->grads.data());
      lr = sched.lr_at(st->step);
      const StepStats ss = st->opt.step(lr);
      if (!ss.applied) ++skipped;
      if (!std::isfinite(out.total)) return diverged(st->step + 1, out.total, last_path);
      loss_sum += out.total;
      norm_sum += ss.grad_norm;
      for (int h = 0; h < nh; ++h)
        loss_h_sum[static_cast<size_t>(h)] += out.loss_h[static_cast<size_t>(h)];
      ++st->step;
      fault_point("train.step");
    }
    // Nothing of a diverged epoch is written: last.ckpt stays the last good epoch.
    if (!std::isfinite(loss_sum)) return diverged(st->step, loss_sum, last_path);
    if (const auto bad = std::find_if_not(st->params.begin(), st->params.end(),
                                          [](float v) { return std::isfinite(v); });
        bad != st->params.end()) {
      return diverged(st->step, static_cast<double>(*bad), last_path);
    }
    ++st->epoch;
    ++epochs_here;
    FXT_ASSIGN_OR_RETURN(ValResult val, validate_epoch(*st, ds, ctx));

    // Early stopping: the first epoch always becomes the best; a NaN value never improves;
    // best_value of a NaN first epoch is the worst finite sentinel (JSON holds no NaN).
    double value = val.loss;
    if (stop.horizon_index >= 0) {
      value = val.metrics.horizons[static_cast<size_t>(stop.horizon_index)].auc;
    } else if (!stop.lower_is_better) {
      value = val.metrics.mean_auc;
    }
    const bool improved = st->best_epoch == 0 ||
                          (std::isfinite(value) && (stop.lower_is_better ? value < st->best_value
                                                                         : value > st->best_value));
    if (improved) {
      st->best_epoch = st->epoch;
      st->best_value = std::isfinite(value) ? value : (stop.lower_is_better ? 1e300 : -1e300);
      st->bad_epochs = 0;
    } else {
      ++st->bad_epochs;
      if (c.patience > 0 && st->bad_epochs >= c.patience) st->stopped = true;
    }

    const double secs = std::chrono::duration<double>(Clock::now() - t_epoch).count();
    epoch_seconds.push_back(secs);
    nlohmann::json line;
    line["epoch"] = st->epoch;
    line["step"] = st->step;
    const double steps_run = trains ? static_cast<double>(c.steps_per_epoch) : 0.0;
    line["train_loss"] = num(loss_sum / steps_run);
    nlohmann::json tl = nlohmann::json::array(), vl = nlohmann::json::array(),
                   auc = nlohmann::json::object();
    for (int h = 0; h < nh; ++h) {
      tl.push_back(num(loss_h_sum[static_cast<size_t>(h)] / steps_run));
      vl.push_back(num(val.loss_h[static_cast<size_t>(h)]));
      auc[fmt::format("h{}", c.horizons[static_cast<size_t>(h)])] =
          num(val.metrics.horizons[static_cast<size_t>(h)].auc);
    }
    line["train_loss_h"] = tl;
    line["val_loss"] = num(val.loss);
    line["val_loss_h"] = vl;
    line["val_auc"] = auc;
    line["val_mean_auc"] = num(val.metrics.mean_auc);
    line["val_rows"] = val.rows;
    std::vector<double> lam(static_cast<size_t>(nh)), sigma(static_cast<size_t>(nh));
    model::trunk_lambdas(lcfg, st->ctrl, lam);
    for (int h = 0; h < nh; ++h) {
      const auto hs = static_cast<size_t>(h);
      double ls = st->kendall ? st->log_sigma[hs] : 0.0;
      if (c.weighting == model::HorizonWeighting::kKendallClosed) {
        ls = st->ctrl.ema_initialized ? model::closed_log_sigma(lcfg, st->ctrl.ema[hs]) : 0.0;
      }
      sigma[hs] = std::exp(ls);
    }
    line["controller"] = {
        {"ema", st->ctrl.ema}, {"zmax", st->ctrl.zmax}, {"lambda", lam}, {"sigma", sigma}};
    line["lr"] = lr;
    line["grad_norm"] = num(norm_sum / steps_run);
    line["skipped_steps"] = skipped;
    line["improved"] = improved;
    line["seconds"] = secs;
    // The epoch's line goes first and its checkpoints after: a kill in between leaves a line
    // past last.ckpt, which resume drops (truncate_metrics) and writes again, so no epoch's
    // record is ever lost.
    FXT_RETURN_IF_ERROR(append_line(metrics_path, line.dump()));
    fault_point("train.line_written");
    const Checkpoint ck = st->to_checkpoint();
    if (improved) FXT_RETURN_IF_ERROR(write_checkpoint(best_path, ck));
    FXT_RETURN_IF_ERROR(write_checkpoint(last_path, ck));
    fault_point("train.epoch_written");
    log_info("epoch {} step {}: train {:.5f} val {:.5f} mean AUC {:.4f} ({:.1f} s)", st->epoch,
             st->step, loss_sum / steps_run, val.loss, val.metrics.mean_auc, secs);
  }

  // RUN_DIR/run.json through the run registry (train/run_record.h, docs/RUNS.md); rewritten by
  // every invocation. The headline metrics: the early-stopping best and the last epoch's val
  // mean AUC, read back from metrics.jsonl so a resumed run that trains no epoch still has it.
  nlohmann::json last_val_mean_auc = nullptr;
  if (auto text = read_file(metrics_path); text.ok()) {
    std::istringstream in(*text);
    std::string line, last;
    while (std::getline(in, line)) {
      if (!line.empty()) last = line;
    }
    const nlohmann::json j = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) last_val_mean_auc = j.value("val_mean_auc", nlohmann::json());
  }
  record.set_config(c.to_json());
  for (const std::string& d : st->stores) FXT_RETURN_IF_ERROR(record.add_input_store(d));
  record.set("store_dirs", st->stores);
  record.set("threads", c.threads);
  record.set("resumed", options.resume);
  record.set("epochs_completed", st->epoch);
  record.set("steps_completed", st->step);
  record.set("best_epoch", st->best_epoch);
  record.set("stopped_early", st->stopped);
  record.set("baselines", st->baselines.summary());
  record.set("timings",
             {{"total_seconds", std::chrono::duration<double>(Clock::now() - t_start).count()},
              {"epoch_seconds", epoch_seconds}});
  record.set_metrics({{"best_epoch", st->best_epoch},
                      {"best_value", st->best_value},
                      {"val_mean_auc", last_val_mean_auc}});
  FXT_RETURN_IF_ERROR(record.write(run_dir));

  TrainSummary sum;
  sum.epochs_run = st->epoch;
  sum.steps = st->step;
  sum.best_epoch = st->best_epoch;
  sum.best_value = st->best_value;
  sum.stopped_early = st->stopped;
  return sum;
}

// ---- evaluate / predict -----------------------------------------------------------------------

Result<bool> resolve_cuda(const std::string& device, ModelKind model) {
  if (device != "auto" && device != "cpu" && device != "cuda") {
    return UsageError("--device must be auto, cpu or cuda (got '{}')", device);
  }
  if (device == "cpu") return false;
  const bool have_gpu = cuda_compiled() && !list_cuda_devices().empty();
  if (device == "auto") return have_gpu && model == ModelKind::kPerception;
  if (!cuda_compiled()) return UsageError("--device cuda: this build has no CUDA backend");
  if (!have_gpu) return UsageError("--device cuda: no CUDA device is available");
  if (model != ModelKind::kPerception) {
    return UsageError("--device cuda: --model logreg runs on the CPU only");
  }
  return true;
}

std::string backend_name(bool cuda) {
  if (!cuda) return "cpu";
  const std::vector<CudaDevice> d = list_cuda_devices();
  return d.empty() ? "cuda" : d.front().name;
}

Result<EvalSplit> parse_eval_split(const std::string& name) {
  if (name == "test") return EvalSplit::kTest;
  if (name == "validation") return EvalSplit::kValidation;
  if (name == "all") return EvalSplit::kAll;
  return UsageError("--split must be test, validation or all (got '{}')", name);
}

namespace {

// The synthetic market's oracle on evenly spaced rows of an evaluation (EvalOptions::oracle_*):
// the store must be the one the config generated (one store, as many snapshots as events).
Result<nlohmann::json> oracle_section(const EvalOptions& o, const Dataset& ds, GlobalRange g,
                                      const TrainConfig& c, const std::vector<std::string>& names,
                                      const std::vector<std::vector<float>>& base_scores,
                                      const std::vector<float>& model_scores,
                                      const std::vector<uint8_t>& labels,
                                      const std::vector<uint8_t>& mask,
                                      const nlohmann::json& comparison) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(o.oracle_config));
  const auto cj = nlohmann::json::parse(text, nullptr, false);
  if (cj.is_discarded()) return InvalidInput("{}: not JSON", o.oracle_config);
  FXT_ASSIGN_OR_RETURN(SynthConfig sc, synth_config_from_json(cj, o.oracle_config));
  if (ds.store_count() != 1 || ds.store(0).reader.size() != sc.events) {
    return UsageError(
        "--oracle {}: the evaluated data must be the one store generated from it ({} events; "
        "got {} store(s), {} snapshots)",
        o.oracle_config, sc.events, ds.store_count(), ds.total_snapshots());
  }
  if (o.oracle_rows < 1 || o.oracle_paths < 1 || o.oracle_max_horizon < 1) {
    return UsageError("--oracle-rows, --oracle-paths and --oracle-max-horizon must be >= 1");
  }
  const size_t nh = c.horizons.size(), rows = model_scores.size() / nh;
  const size_t n = std::min<size_t>(rows, static_cast<size_t>(o.oracle_rows));
  std::vector<size_t> picked;
  std::vector<uint64_t> events;
  for (size_t k = 0; k < n; ++k) {
    const size_t r = k * rows / n;
    picked.push_back(r);
    events.push_back(g.begin + r);  // one store: global index = local index
  }
  std::vector<int> covered;
  for (int h : c.horizons) {
    if (h <= o.oracle_max_horizon) covered.push_back(h);
  }
  if (covered.empty()) return UsageError("--oracle-max-horizon is below every horizon");
  OracleOptions oo;
  oo.paths = o.oracle_paths;
  oo.threads = c.threads;
  Progress progress("oracle", events.size(), "rows");
  FXT_ASSIGN_OR_RETURN(std::vector<double> op, synth_oracle(sc, events, covered, oo, &progress));
  progress.finish();
  // The picked rows of every array, all horizons (NaN oracle where not covered).
  std::vector<double> oracle(n * nh, std::nan(""));
  std::vector<float> ms(n * nh), bs(n * nh);
  std::vector<uint8_t> ys(n * nh), ks(n * nh);
  std::vector<std::string> best_names(nh);
  for (size_t h = 0; h < nh; ++h) {
    best_names[h] = comparison["horizons"][h]["best_baseline"].get<std::string>();
  }
  for (size_t k = 0; k < n; ++k) {
    size_t ci = 0;
    for (size_t h = 0; h < nh; ++h) {
      const size_t at = picked[k] * nh + h, to = k * nh + h;
      const size_t b =
          static_cast<size_t>(std::find(names.begin(), names.end(), best_names[h]) - names.begin());
      ms[to] = model_scores[at];
      bs[to] = base_scores[b][at];
      ys[to] = labels[at];
      ks[to] = mask[at];
      if (c.horizons[h] <= o.oracle_max_horizon) oracle[to] = op[k * covered.size() + ci++];
    }
  }
  BootstrapOptions bo;
  bo.replicates = 200;
  bo.threads = c.threads;
  const auto spacing = static_cast<int64_t>(std::max<size_t>(1, rows / n));
  FXT_ASSIGN_OR_RETURN(nlohmann::json out, compare_with_oracle(oracle, ms, bs, best_names, ys, ks,
                                                               c.horizons, spacing, bo));
  out["paths"] = o.oracle_paths;
  out["config"] = o.oracle_config;
  return out;
}

}  // namespace

Result<nlohmann::json> evaluate(const std::string& checkpoint_path,
                                const std::vector<std::string>& store_dirs,
                                const EvalOptions& options, EvalRows* rows) {
  FXT_ASSIGN_OR_RETURN(std::unique_ptr<TrainState> st, load_state(checkpoint_path));
  TrainConfig& c = st->cfg;
  c.threads = options.threads;
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(options.device, c.model));
#if FXT_HAVE_CUDA
  if (use_cuda) st->net.use_gpu(nullptr, st->params);
#endif
  if (!options.expect_horizons.empty() && options.expect_horizons != c.horizons) {
    return UsageError("{} was trained for horizons {}; --horizons asks for {}", checkpoint_path,
                      join_ints(c.horizons), join_ints(options.expect_horizons));
  }
  const std::vector<std::string> dirs = store_dirs.empty() ? st->stores : store_dirs;
  if (store_dirs.empty()) {
    FXT_RETURN_IF_ERROR(check_same_stores(st->stores, st->store_ids, checkpoint_path));
  }
  DatasetConfig dc = c.dataset_config();
  // --split all ignores the split, so a CV fold's explicit ranges need not fit other stores.
  if (options.split == EvalSplit::kAll) dc.split = SplitConfig{};
  FXT_ASSIGN_OR_RETURN(Dataset ds, Dataset::open(dirs, dc));
  ds.standardise_features(st->stats);  // the training statistics, never re-measured
  const int nh = static_cast<int>(c.horizons.size());
  GlobalRange g{0, ds.total_snapshots()};
  if (options.split == EvalSplit::kTest) g = ds.range(Split::kTest);
  if (options.split == EvalSplit::kValidation) g = ds.range(Split::kValidation);

  CpuContext ctx(c.threads);
  const std::vector<FittedBaseline>& fitted = st->baselines.fitted();
  std::vector<float> model_scores, ml;
  std::vector<std::vector<float>> base_scores(fitted.size());
  std::vector<uint8_t> labels, mask;
  Progress progress("eval", g.end - g.begin, "snap");
  for (size_t i = 0; i < ds.store_count(); ++i) {
    const Dataset::Store& s = ds.store(i);
    const uint64_t n = s.reader.size();
    const uint64_t lo = std::max(g.begin, s.offset), hi = std::min(g.end, s.offset + n);
    if (lo >= hi) continue;
    std::vector<uint64_t> ends;
    for (uint64_t t = lo; t < hi; ++t) ends.push_back(t - s.offset);
    FXT_RETURN_IF_ERROR(
        score_inference(*st, ctx, s.reader, s.features.data(), ends, &ml, &progress));
    model_scores.insert(model_scores.end(), ml.begin(), ml.end());
    for (size_t b = 0; b < fitted.size(); ++b) {
      FXT_ASSIGN_OR_RETURN(std::vector<float> bl,
                           st->baselines.score(b, s.features.data(), ends, c.stride, c.threads));
      base_scores[b].insert(base_scores[b].end(), bl.begin(), bl.end());
    }
    const size_t r0 = static_cast<size_t>(ends.front()) * static_cast<size_t>(nh);
    const size_t r1 = static_cast<size_t>(ends.back() + 1) * static_cast<size_t>(nh);
    labels.insert(labels.end(), s.labels.y.begin() + static_cast<std::ptrdiff_t>(r0),
                  s.labels.y.begin() + static_cast<std::ptrdiff_t>(r1));
    mask.insert(mask.end(), s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r0),
                s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r1));
  }
  if (model_scores.empty()) {
    return InvalidInput("no snapshot to evaluate in the {} split of the given stores",
                        options.split == EvalSplit::kTest         ? "test"
                        : options.split == EvalSplit::kValidation ? "validation"
                                                                  : "whole");
  }
  progress.finish();
  FXT_ASSIGN_OR_RETURN(Metrics mm, compute_metrics(std::span<const float>(model_scores), labels,
                                                   mask, c.horizons, ScoreKind::kLogit));
  nlohmann::json baseline_metrics = nlohmann::json::object();
  std::vector<std::string> names;
  for (size_t b = 0; b < fitted.size(); ++b) {
    names.push_back(fitted[b].name);
    FXT_ASSIGN_OR_RETURN(Metrics m, compute_metrics(std::span<const float>(base_scores[b]), labels,
                                                    mask, c.horizons, ScoreKind::kLogit));
    baseline_metrics[fitted[b].name] = m.to_json();
  }
  FXT_ASSIGN_OR_RETURN(Metrics bm, base_rate_metrics(st->base_rates, labels, mask, c.horizons));
  nlohmann::json ci = nlohmann::json::object();
  nlohmann::json comparison;
  if (options.bootstrap > 0) {
    BootstrapOptions bo;
    bo.replicates = options.bootstrap;
    bo.seed = options.bootstrap_seed;
    bo.threads = c.threads;
    FXT_ASSIGN_OR_RETURN(BootstrapResult mb,
                         bootstrap_metrics(std::span<const float>(model_scores), labels, mask,
                                           c.horizons, ScoreKind::kLogit, bo));
    ci["model"] = mb.to_json();
    for (size_t b = 0; b < fitted.size(); ++b) {
      FXT_ASSIGN_OR_RETURN(BootstrapResult lb,
                           bootstrap_metrics(std::span<const float>(base_scores[b]), labels, mask,
                                             c.horizons, ScoreKind::kLogit, bo));
      ci[fitted[b].name] = lb.to_json();
    }
    if (!fitted.empty()) {
      FXT_ASSIGN_OR_RETURN(comparison, compare_with_baselines(model_scores, names, base_scores,
                                                              labels, mask, c.horizons, bo));
    }
  }
  nlohmann::json oracle;
  if (!options.oracle_config.empty()) {
    if (!comparison.is_object()) {
      return UsageError("--oracle needs the baselines and bootstrap intervals (--bootstrap > 0)");
    }
    FXT_ASSIGN_OR_RETURN(oracle, oracle_section(options, ds, g, c, names, base_scores, model_scores,
                                                labels, mask, comparison));
  }
  nlohmann::json j;
  j["checkpoint"] = checkpoint_path;
  j["store_dirs"] = dirs;
  j["split"] = options.split == EvalSplit::kTest         ? "test"
               : options.split == EvalSplit::kValidation ? "validation"
                                                         : "all";
  j["rows"] = model_scores.size() / static_cast<size_t>(nh);
  j["horizons"] = c.horizons;
  j["window"] = c.window;
  j["stride"] = c.stride;
  j["model_kind"] = model_kind_name(c.model);
  j["device"] = backend_name(use_cuda);
  j["base_rates"] = st->base_rates;
  j["model"] = mm.to_json();
  j["baselines"] = baseline_metrics;
  j["baseline_fits"] = st->baselines.summary(/*with_timings=*/false);
  j["base_rate"] = bm.to_json();
  j["bootstrap"] = ci;
  j["vs_best_baseline"] = comparison;
  if (!oracle.is_null()) j["oracle"] = oracle;
  if (rows != nullptr) {
    rows->horizons = c.horizons;
    rows->base_rates = st->base_rates;
    rows->model_logits = std::move(model_scores);
    rows->baseline_names = std::move(names);
    rows->baseline_logits = std::move(base_scores);
    rows->labels = std::move(labels);
    rows->mask = std::move(mask);
  }
  return j;
}

Status predict(const std::string& checkpoint_path, const std::string& store_dir,
               const std::string& out_csv, int threads, const std::string& device) {
  FXT_ASSIGN_OR_RETURN(std::unique_ptr<TrainState> st, load_state(checkpoint_path));
  const TrainConfig& c = st->cfg;
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(device, c.model));
#if FXT_HAVE_CUDA
  if (use_cuda) st->net.use_gpu(nullptr, st->params);
#endif
  (void)use_cuda;
  FXT_ASSIGN_OR_RETURN(StoreReader store, StoreReader::open(store_dir));
  warn_if_other_instrument(st->store_instruments, store, store_dir);
  FeatureConfig fc;
  fc.stride = c.stride;
  std::vector<float> features;
  FXT_RETURN_IF_ERROR(compute_features(store, fc, &features));
  const uint64_t n = store.size();
  standardise(st->stats, features.data(), n);
  CpuContext ctx(threads);
  const int nh = static_cast<int>(c.horizons.size());
  FXT_ASSIGN_OR_RETURN(BufferedFileWriter w, BufferedFileWriter::create(out_csv));
  std::string line = "ts_ns";
  for (int h : c.horizons) fmt::format_to(std::back_inserter(line), ",p_h{}", h);
  line += '\n';
  FXT_RETURN_IF_ERROR(w.write(line));
  constexpr uint64_t kChunk = 4096;  // snapshots scored per pass (bounded memory)
  std::vector<uint64_t> ends;
  std::vector<float> logits;
  Progress progress("predict", n, "snap");
  for (uint64_t t0 = 0; t0 < n; t0 += kChunk) {
    ends.clear();
    for (uint64_t t = t0; t < std::min(n, t0 + kChunk); ++t) ends.push_back(t);
    FXT_RETURN_IF_ERROR(
        score_inference(*st, ctx, store, features.data(), ends, &logits, &progress));
    for (size_t i = 0; i < ends.size(); ++i) {
      line.clear();
      fmt::format_to(std::back_inserter(line), "{}", store.ts_ns[ends[i]]);
      for (int h = 0; h < nh; ++h) {
        const float p =
            model::sigmoid(logits[i * static_cast<size_t>(nh) + static_cast<size_t>(h)]);
        fmt::format_to(std::back_inserter(line), ",{}", p);
      }
      line += '\n';
      FXT_RETURN_IF_ERROR(w.write(line));
    }
  }
  FXT_RETURN_IF_ERROR(w.commit());
  progress.finish();
  return Status::Ok();
}

}  // namespace fxt
