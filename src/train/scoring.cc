// Validation and inference scoring (see scoring.h).
#include "train/scoring.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "features/features.h"
#if FXT_HAVE_CUDA
#include "gpu/batch.h"
#include "gpu/window_scorer.h"
#endif

namespace fxt::train_detail {

namespace {

double bce(float x, float y) {
  const double xd = x;
  return std::max(xd, 0.0) - xd * y + std::log1p(std::exp(-std::abs(xd)));
}

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

#if FXT_HAVE_CUDA
// score_inference on the GPU: the store's standardised rows (and, with --cfc-time real, its
// per-row elapsed time) uploaded once, then passes of gpu::WindowScorer — windows gathered on
// the device, heads at the last position, one graph replay per pass. Equal to the host path's
// logits to float tolerance (tests/gpu/window_scorer_train_test.cc, es_mbo_train_test.cc).
constexpr int kGpuScoringBatch = 4096;  // windows per pass (bench predict's best pass size)

Status score_inference_gpu(const TrainState& st, const StoreReader& store, const float* features,
                           const std::vector<uint64_t>& ends, std::vector<float>* model_logits,
                           Progress* progress) {
  const TrainConfig& c = st.cfg;
  const size_t nh = c.horizons.size();
  gpu::ScoringShape shape;
  shape.window = c.window;
  shape.stride = c.stride;
  shape.batch = std::max(c.eval_batch, kGpuScoringBatch);
  shape.elapsed = c.cfc_time_real;
  gpu::WindowScorer scorer(st.net.config(), shape);
  scorer.set_precision(c.precision);
  scorer.set_params(st.params);
  const uint64_t rows = store.size();
  std::vector<float> elapsed;
  if (c.cfc_time_real) {
    elapsed.resize(rows);
    gpu::elapsed_per_row(store.ts_ns.data, rows, c.stride, st.cfc_time_unit_ns, elapsed.data());
  }
  scorer.upload_rows(features, c.cfc_time_real ? elapsed.data() : nullptr, rows);
  model_logits->assign(ends.size() * nh, 0.0f);
  const auto batch = static_cast<size_t>(shape.batch);
  for (size_t e0 = 0; e0 < ends.size(); e0 += batch) {
    const size_t nb = std::min(ends.size() - e0, batch);
    scorer.score(ends.data() + e0, nb, model_logits->data() + e0 * nh);
    if (progress != nullptr) progress->advance(nb);
  }
  return Status::Ok();
}
#endif

}  // namespace

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

Status score_inference(TrainState& st, CpuContext& ctx, const StoreReader& store,
                       const float* features, const std::vector<uint64_t>& ends,
                       std::vector<float>* model_logits, Progress* progress) {
  const TrainConfig& c = st.cfg;
  if (!st.perception()) {
    FXT_ASSIGN_OR_RETURN(*model_logits, st.baselines.score(st.model_baseline(), features, ends,
                                                           c.stride, c.threads));
    if (progress != nullptr) progress->advance(ends.size());
    return Status::Ok();
  }
#if FXT_HAVE_CUDA
  if (st.net.on_gpu()) return score_inference_gpu(st, store, features, ends, model_logits, progress);
#endif
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

}  // namespace fxt::train_detail
