// Scoring passes on the GPU (gpu/window_scorer.h).
#include "gpu/window_scorer.h"

#include <algorithm>
#include <string>

#include "gpu/batch.h"

namespace fxt::gpu {

WindowScorer::WindowScorer(const model::PerceptionConfig& cfg, const ScoringShape& shape,
                           int device)
    : ctx_(device),
      model_(cfg),
      shape_(shape),
      ends_host_(static_cast<size_t>(std::max(shape.batch, 1))),
      logits_host_(static_cast<size_t>(std::max(shape.batch, 1)) *
                   static_cast<size_t>(cfg.horizons)) {
  if (shape.batch < 1 || shape.window < 1 || shape.stride < 1) {
    cuda_fail("WindowScorer", "batch, window and stride must be >= 1", __FILE__, __LINE__);
  }
  const size_t b = static_cast<size_t>(shape.batch), k = static_cast<size_t>(shape.window);
  model_.resize(shape.batch, shape.window);
  x_.resize(b * k * static_cast<size_t>(cfg.features));
  if (shape.elapsed) dt_.resize(b * k);
  ends_.resize(b);
  params_.resize(model_.layout().total);
}

WindowScorer::~WindowScorer() { cudaStreamSynchronize(ctx_.stream()); }

void WindowScorer::set_precision(Precision p) {
  ctx_.set_precision(p);
  graph_.reset();
}

void WindowScorer::set_params(const std::vector<float>& host) {
  if (host.size() != params_.size()) {
    cuda_fail("WindowScorer::set_params", "parameter count differs from the model's layout",
              __FILE__, __LINE__);
  }
  params_.upload(host);
}

void WindowScorer::upload_rows(const float* features, const float* elapsed, uint64_t rows) {
  const size_t f = static_cast<size_t>(model_.config().features);
  rows_.resize(rows * f);
  rows_.upload(features, rows * f);
  if (shape_.elapsed) {
    elapsed_.resize(rows);
    elapsed_.upload(elapsed, rows);
  }
  rows_n_ = rows;
  graph_.reset();  // the rows may have moved: capture again
}

void WindowScorer::capture() {
  const size_t b = static_cast<size_t>(shape_.batch);
  const size_t nh = static_cast<size_t>(model_.config().horizons);
  float* dt = shape_.elapsed ? dt_.data() : nullptr;
  const auto stride = static_cast<float>(shape_.stride);
  // Warm-up outside the capture (cuBLAS picks its kernels on first use).
  model_.forward_last(ctx_, params_.data(), x_.data(), stride, dt);
  ctx_.sync();
  graph_.capture(ctx_, [&] {
    FXT_CUDA_CHECK(cudaMemcpyAsync(ends_.data(), ends_host_.host(), b * sizeof(uint64_t),
                                   cudaMemcpyHostToDevice, ctx_.stream()));
    gather_scoring_windows(ctx_, ends_.data(), shape_.batch, shape_.window, shape_.stride,
                           model_.config().features, rows_.data(),
                           shape_.elapsed ? elapsed_.data() : nullptr, x_.data(), dt);
    model_.forward_last(ctx_, params_.data(), x_.data(), stride, dt);
    FXT_CUDA_CHECK(cudaMemcpyAsync(logits_host_.host(), model_.logits(), b * nh * sizeof(float),
                                   cudaMemcpyDeviceToHost, ctx_.stream()));
  });
}

void WindowScorer::score(const uint64_t* ends, size_t n, float* logits) {
  if (n == 0) return;
  if (rows_n_ == 0) cuda_fail("WindowScorer::score", "no rows uploaded", __FILE__, __LINE__);
  if (!graph_.ready()) {
    // The staging must hold valid ends before the warm-up forward reads x: row 0 everywhere.
    std::fill(ends_host_.host(), ends_host_.host() + shape_.batch, uint64_t{0});
    x_.zero();
    if (shape_.elapsed) dt_.zero();
    capture();
  }
  const size_t b = static_cast<size_t>(shape_.batch);
  const size_t nh = static_cast<size_t>(model_.config().horizons);
  for (size_t e0 = 0; e0 < n; e0 += b) {
    const size_t nb = std::min(n - e0, b);
    uint64_t* stage = ends_host_.host();
    for (size_t i = 0; i < nb; ++i) {
      if (ends[e0 + i] >= rows_n_) {
        cuda_fail("WindowScorer::score",
                  ("end " + std::to_string(ends[e0 + i]) + " is past the " +
                   std::to_string(rows_n_) + " uploaded rows")
                      .c_str(),
                  __FILE__, __LINE__);
      }
      stage[i] = ends[e0 + i];
    }
    // A short last pass repeats its last end: computed and dropped.
    std::fill(stage + nb, stage + b, stage[nb - 1]);
    graph_.launch(ctx_);
    ctx_.sync();
    std::copy_n(logits_host_.host(), nb * nh, logits + e0 * nh);
  }
}

}  // namespace fxt::gpu
