// The captured training step and GPU inference (gpu/train_step.h).
#include "gpu/train_step.h"

#include <cassert>
#include <string_view>

#include "gpu/batch.h"
#include "gpu/step_sums.h"

namespace fxt::gpu {

namespace {

void zero_async(const Context& ctx, float* p, size_t n) {
  if (n) FXT_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), ctx.stream()));
}

template <typename T>
void upload_async_sync(const Context& ctx, T* dst, const T* src, size_t n) {
  if (!n) return;
  FXT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyHostToDevice, ctx.stream()));
  ctx.sync();
}

template <typename T>
std::vector<T> download_sync(const Context& ctx, const T* src, size_t n) {
  std::vector<T> out(n);
  if (!n) return out;
  FXT_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  return out;
}

}  // namespace

void perception_adam_tables(const std::vector<model::ModelParamSpec>& specs, size_t total,
                            double mult_mamba, double mult_cfc, double mult_heads,
                            std::vector<uint8_t>* decay, std::vector<double>* mult) {
  decay->assign(total, 0);
  mult->assign(total, 1.0);
  for (const model::ModelParamSpec& s : specs) {
    double m = 1.0;
    if (s.group == model::kGroupMamba) m = mult_mamba;
    if (s.group == model::kGroupCfc) m = mult_cfc;
    if (s.group == model::kGroupHeads) m = mult_heads;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      (*decay)[i] = s.weight_decay ? 1 : 0;
      (*mult)[i] = m;
    }
  }
}

TrainStep::TrainStep(const TrainStepConfig& cfg, int device)
    : cfg_(cfg),
      ctx_(std::make_unique<Context>(device)),
      model_(cfg.model),
      horizons_(cfg.model.horizons),
      kendall_(cfg.loss.weighting == HorizonWeighting::kKendall),
      ctrl_(cfg.model.horizons),
      loss_out_(cfg.model.horizons),
      report_(static_cast<size_t>(kSumLossH + cfg.model.horizons)) {
  ctx_->set_precision(cfg.precision);
  const int b = cfg.batch, k = cfg.window, f = cfg.model.features, nh = horizons_;
  const size_t r = static_cast<size_t>(b) * static_cast<size_t>(k);
  model_.resize(b, k);
  anchors_.resize(static_cast<size_t>(b));
  x_.resize(r * f);
  y_.resize(r * nh);
  m_.resize(r * nh);
  dt_.resize(r);
  dlogits_.resize(r * nh);

  const size_t total = model_.layout().total;
  params_.resize(total);
  grads_.resize(total);
  params_.zero();
  grads_.zero();
  opt_ = std::make_unique<AdamW>(cfg.adamw, cfg.schedule);
  std::vector<uint8_t> decay;
  std::vector<double> mult;
  perception_adam_tables(model::perception_param_specs(cfg.model), total, cfg.lr_mult_mamba,
                         cfg.lr_mult_cfc, cfg.lr_mult_heads, &decay, &mult);
  opt_->add_buffer(*ctx_, params_.data(), grads_.data(), total, decay, mult);
  if (kendall_) {
    log_sigma_.resize(static_cast<size_t>(nh));
    dlog_sigma_.resize(static_cast<size_t>(nh));
    log_sigma_.zero();
    dlog_sigma_.zero();
    // The CPU registers "loss.log_sigma" in group "loss" (multiplier 1), no decay.
    opt_->add_buffer(*ctx_, log_sigma_.data(), dlog_sigma_.data(), static_cast<size_t>(nh),
                     std::vector<uint8_t>(static_cast<size_t>(nh), 0),
                     std::vector<double>(static_cast<size_t>(nh), 1.0));
  }
  sums_.resize(report_.size());
  sums_.zero();
}

TrainStep::~TrainStep() {
  if (ctx_) cudaStreamSynchronize(ctx_->stream());
}

void TrainStep::upload_data(const TrainData& data) {
  const size_t f = static_cast<size_t>(cfg_.model.features);
  const size_t nh = static_cast<size_t>(horizons_);
  features_.resize(data.rows * f);
  features_.upload(data.features, data.rows * f);
  labels_.resize(data.rows * nh);
  labels_.upload(data.labels, data.rows * nh);
  masks_.resize(data.rows * nh);
  masks_.upload(data.masks, data.rows * nh);
  if (cfg_.cfc_time_real) {
    elapsed_.resize(data.rows);
    elapsed_.upload(data.elapsed, data.rows);
  }
  pool_.resize(data.pool.size());
  pool_.upload(data.pool.data(), data.pool.size());
  graph_.reset();  // device pointers may have moved: capture again on the next run
}

void TrainStep::upload_state(const TrainHostState& s) {
  const Context& ctx = *ctx_;
  assert(s.params.size() == params_.size());
  upload_async_sync(ctx, params_.data(), s.params.data(), s.params.size());
  if (kendall_) upload_async_sync(ctx, log_sigma_.data(), s.log_sigma.data(), s.log_sigma.size());
  opt_->upload_state(ctx, s.opt);
  ctrl_.upload(ctx, s.controller);
}

TrainHostState TrainStep::download_state() const {
  const Context& ctx = *ctx_;
  TrainHostState s;
  s.params = download_sync(ctx, params_.data(), params_.size());
  if (kendall_) s.log_sigma = download_sync(ctx, log_sigma_.data(), log_sigma_.size());
  s.opt = opt_->download_state(ctx);
  s.controller = ctrl_.download(ctx);
  return s;
}

// One training step, enqueued on the stream (the body of the graph).
void TrainStep::enqueue_step() {
  const Context& ctx = *ctx_;
  const int b = cfg_.batch, k = cfg_.window, nh = horizons_, f = cfg_.model.features;
  const int rows = b * k;
  const size_t rh = static_cast<size_t>(rows) * static_cast<size_t>(nh);
  const float stride = static_cast<float>(cfg_.stride);
  // The global step: the optimizer's schedule counter (= the trainer's step), read on the
  // device by the sampler before the optimizer advances it.
  const auto* step = reinterpret_cast<const int64_t*>(&opt_->counters()->schedule_step);
  static_assert(sizeof(long long) == sizeof(int64_t));

  sample_anchors(ctx, pool_.data(), pool_.size(), cfg_.seed, step, b, anchors_.data());
  WindowShape shape;
  shape.window = k;
  shape.stride = cfg_.stride;
  shape.features = f;
  shape.horizons = nh;
  float* dt = cfg_.cfc_time_real ? dt_.data() : nullptr;
  gather_windows(ctx, anchors_.data(), b, shape, features_.data(), labels_.data(), masks_.data(),
                 cfg_.cfc_time_real ? elapsed_.data() : nullptr, x_.data(), y_.data(), m_.data(),
                 dt);
  mark("sample+gather");

  model_.forward(ctx, params_.data(), x_.data(), stride, dt);  // marks its layers
  zero_async(ctx, dlogits_.data(), rh);
  if (kendall_) zero_async(ctx, dlog_sigma_.data(), static_cast<size_t>(nh));
  loss_step(ctx, cfg_.loss, nh, rows, model_.logits(), y_.data(), m_.data(),
            kendall_ ? log_sigma_.data() : nullptr, dlogits_.data(),
            kendall_ ? dlog_sigma_.data() : nullptr, ctrl_, /*update_state=*/true, loss_out_);
  mark("loss+controllers");
  model_.backward(ctx, params_.data(), x_.data(), stride, dt, dlogits_.data(), loss_out_.lambda(),
                  grads_.data(), nullptr);  // marks its layers

  opt_->step(ctx);
  accumulate_step_sums(ctx, loss_out_.total(), loss_out_.loss_h(), nh, opt_->stats(),
                       sums_.data());
  mark("adamw+sums");
}

void TrainStep::mark(const char* phase) {
  if (timer_ != nullptr) timer_->mark(phase);
}

std::vector<std::pair<std::string, double>> TrainStep::profile_phases(int n) {
  PhaseTimer timer(*ctx_);
  model_.set_marker([&timer](const char* layer) { timer.mark(layer); });
  timer_ = &timer;
  for (int i = 0; i < n; ++i) {
    timer.begin();
    enqueue_step();
    timer.end(1.0 / static_cast<double>(n));
  }
  timer_ = nullptr;
  model_.set_marker(nullptr);
  take_sums();  // the profiled steps are not part of any epoch's report
  return timer.totals();
}

void TrainStep::run(int64_t n) {
  if (n <= 0) return;
  if (!graph_.ready()) graph_.capture(*ctx_, [this] { enqueue_step(); });
  for (int64_t i = 0; i < n; ++i) graph_.launch(*ctx_);
}

void TrainStep::run_uncaptured(int64_t n) {
  for (int64_t i = 0; i < n; ++i) enqueue_step();
}

StepSums TrainStep::take_sums() {
  const Context& ctx = *ctx_;
  FXT_CUDA_CHECK(cudaMemcpyAsync(report_.host(), sums_.data(), sums_.size() * sizeof(double),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  const double* v = report_.host();
  StepSums s;
  s.steps = static_cast<int64_t>(v[kSumSteps]);
  s.loss = v[kSumLoss];
  s.grad_norm = v[kSumGradNorm];
  s.skipped = static_cast<int64_t>(v[kSumSkipped]);
  s.loss_h.assign(v + kSumLossH, v + kSumLossH + horizons_);
  FXT_CUDA_CHECK(cudaMemsetAsync(sums_.data(), 0, sums_.size() * sizeof(double), ctx.stream()));
  return s;
}

// ---- inference --------------------------------------------------------------------------------

InferenceGpu::InferenceGpu(const model::PerceptionConfig& cfg, int device)
    : ctx_(std::make_unique<Context>(device)), model_(cfg) {}

InferenceGpu::~InferenceGpu() {
  if (ctx_) cudaStreamSynchronize(ctx_->stream());
}

void InferenceGpu::set_params(const std::vector<float>& host) {
  own_params_.upload(host);
  params_ = own_params_.data();
}

void InferenceGpu::use_params(const float* device_params) {
  params_ = device_params;
}

void InferenceGpu::forward(const float* x, const float* dt, int b, int k, int stride, bool last,
                           std::vector<float>* out) {
  const Context& ctx = *ctx_;
  const model::PerceptionConfig& c = model_.config();
  // Buffers only grow, so a smaller final batch reuses them.
  if (b > model_.batch() || k != model_.seq_len()) model_.resize(b, k);
  const int cap = model_.batch();
  const size_t r = static_cast<size_t>(b) * static_cast<size_t>(k);
  // A grown buffer starts zeroed, so rows past the first batch's windows are defined.
  if (x_.size() < static_cast<size_t>(cap) * k * c.features) {
    x_.resize(static_cast<size_t>(cap) * k * c.features);
    x_.zero();
  }
  if (dt != nullptr && dt_.size() < static_cast<size_t>(cap) * k) {
    dt_.resize(static_cast<size_t>(cap) * k);
    dt_.zero();
  }
  // Only the b windows are uploaded: in a short final batch the rows past them hold an earlier
  // batch's windows, which are computed and dropped (every window is independent).
  x_.upload(x, r * static_cast<size_t>(c.features));
  if (dt != nullptr) dt_.upload(dt, r);
  const float s = static_cast<float>(stride);
  if (last) {
    model_.forward_last(ctx, params_, x_.data(), s, dt != nullptr ? dt_.data() : nullptr);
  } else {
    model_.forward(ctx, params_, x_.data(), s, dt != nullptr ? dt_.data() : nullptr);
  }
  const size_t n = (last ? static_cast<size_t>(b) : r) * static_cast<size_t>(c.horizons);
  out->resize(n);
  FXT_CUDA_CHECK(cudaMemcpyAsync(out->data(), model_.logits(), n * sizeof(float),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
}

}  // namespace fxt::gpu
