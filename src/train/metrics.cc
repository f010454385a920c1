#include "train/metrics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

namespace fxt {
namespace {

constexpr double kNaN = HorizonMetrics::kNaN;

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  double e = std::exp(z);
  return e / (1.0 + e);
}

// One valid row of one horizon, in ascending score order after prepare().
struct Row {
  double loss = 0;      // log loss of this row
  double sq_error = 0;  // (p - y)^2
  uint32_t row = 0;     // index into the original rows (bootstrap weights)
  uint8_t label = 0;    // 0 or 1
  uint8_t new_tie = 0;  // 1 when this score differs from the previous row's
};

struct Prepared {
  std::vector<Row> rows;  // sorted by score
  HorizonMetrics point;   // the metrics on all rows (weights 1)
};

// Log loss of one row: from the logit when it is finite (exact, no clamp), else from the
// clamped probability.
double row_log_loss(double score, double p, uint8_t y, ScoreKind kind) {
  if (kind == ScoreKind::kLogit && std::isfinite(score)) {
    // softplus(z) - y·z, written to avoid overflow.
    return std::max(score, 0.0) - score * y + std::log1p(std::exp(-std::abs(score)));
  }
  double pc = std::clamp(p, kProbClamp, 1.0 - kProbClamp);
  return y != 0 ? -std::log(pc) : -std::log1p(-pc);
}

// AUC of rows sorted by score (sorted_rows_auc in metrics.h) with weight(row) per row.
template <typename WeightFn>
double sorted_auc(const std::vector<Row>& rows, WeightFn weight) {
  return sorted_rows_auc(
      rows.size(), [&](size_t k) { return rows[k].label != 0; },
      [&](size_t k) { return rows[k].new_tie != 0; }, [&](size_t k) { return weight(rows[k]); });
}

// Scores row r of a strided [rows][stride] array; fills the point metrics and (when
// `keep_rows`) the sorted rows for resampling.
template <typename T>
Prepared prepare(const T* scores, const uint8_t* labels, const uint8_t* mask, size_t n_rows,
                 size_t stride, ScoreKind kind, int horizon) {
  Prepared out;
  HorizonMetrics& m = out.point;
  m.horizon = horizon;
  struct Key {
    T score;
    uint32_t index;  // into out.rows before sorting
  };
  std::vector<Key> keys;
  keys.reserve(n_rows);
  out.rows.reserve(n_rows);

  std::array<double, kCalibrationBins> bin_p{}, bin_y{};
  std::array<int64_t, kCalibrationBins> bin_n{};
  double sum_loss = 0, sum_sq = 0;
  int64_t correct = 0;
  for (size_t i = 0; i < n_rows; ++i) {
    size_t at = i * stride;
    if (mask != nullptr && mask[at] == 0) continue;
    T s = scores[at];
    if (std::isnan(s)) {
      ++m.n_nan_scores;
      continue;
    }
    uint8_t y = labels[at] != 0 ? 1 : 0;
    double sd = static_cast<double>(s);
    double p = kind == ScoreKind::kLogit ? sigmoid(sd) : sd;
    Row r;
    r.loss = row_log_loss(sd, p, y, kind);
    r.sq_error = (p - y) * (p - y);
    r.row = static_cast<uint32_t>(i);
    r.label = y;
    sum_loss += r.loss;
    sum_sq += r.sq_error;
    correct += ((p > 0.5) == (y != 0)) ? 1 : 0;
    m.n_positive += y;
    // Bin b holds [b/10, (b+1)/10); p = 1 (and anything out of range) goes to an end bin.
    int b = std::clamp(static_cast<int>(std::floor(p * kCalibrationBins)), 0, kCalibrationBins - 1);
    bin_p[b] += p;
    bin_y[b] += y;
    ++bin_n[b];
    keys.push_back({s, static_cast<uint32_t>(out.rows.size())});
    out.rows.push_back(r);
  }
  m.n_valid = static_cast<int64_t>(out.rows.size());

  for (int b = 0; b < kCalibrationBins; ++b) {
    ReliabilityBin& rb = m.reliability[b];
    rb.lo = static_cast<double>(b) / kCalibrationBins;
    rb.hi = static_cast<double>(b + 1) / kCalibrationBins;
    rb.count = bin_n[b];
    if (bin_n[b] > 0) {
      rb.mean_predicted = bin_p[b] / static_cast<double>(bin_n[b]);
      rb.observed_frequency = bin_y[b] / static_cast<double>(bin_n[b]);
    }
  }
  if (m.n_valid == 0) return out;

  auto n = static_cast<double>(m.n_valid);
  m.positive_rate = static_cast<double>(m.n_positive) / n;
  m.log_loss = sum_loss / n;
  m.brier = sum_sq / n;
  m.accuracy = static_cast<double>(correct) / n;
  m.ece = 0;
  for (const ReliabilityBin& rb : m.reliability) {
    if (rb.count > 0) {
      m.ece +=
          static_cast<double>(rb.count) / n * std::abs(rb.mean_predicted - rb.observed_frequency);
    }
  }

  // Stable order of equal scores keeps the result independent of the sort's tie handling
  // (it does not matter for the AUC, but the bootstrap sums follow this order).
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return a.score < b.score || (a.score == b.score && a.index < b.index);
  });
  std::vector<Row> sorted;
  sorted.reserve(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    Row r = out.rows[keys[k].index];
    r.new_tie = (k == 0 || keys[k].score != keys[k - 1].score) ? 1 : 0;
    sorted.push_back(r);
  }
  out.rows = std::move(sorted);
  m.auc = sorted_auc(out.rows, [](const Row&) { return uint64_t{1}; });
  return out;
}

void finish_mean_auc(Metrics& m) {
  double sum = 0;
  m.auc_defined = 0;
  for (const HorizonMetrics& h : m.horizons) {
    if (std::isnan(h.auc)) continue;
    sum += h.auc;
    ++m.auc_defined;
  }
  m.mean_auc = m.auc_defined > 0 ? sum / m.auc_defined : kNaN;
}

// Shape checks shared by the multi-horizon entry points; returns the row count.
Result<size_t> check_shapes(const char* what, size_t n_scores, size_t n_labels, size_t n_mask,
                            size_t n_horizons) {
  if (n_horizons == 0) return InvalidInput("{}: no horizons given", what);
  if (n_labels % n_horizons != 0) {
    return InvalidInput("{}: {} labels is not a multiple of {} horizons", what, n_labels,
                        n_horizons);
  }
  if (n_scores != n_labels) {
    return InvalidInput("{}: {} scores but {} labels", what, n_scores, n_labels);
  }
  if (n_mask != 0 && n_mask != n_labels) {
    return InvalidInput("{}: {} mask entries but {} labels", what, n_mask, n_labels);
  }
  size_t rows = n_labels / n_horizons;
  if (rows > UINT32_MAX) return InvalidInput("{}: {} rows is more than 2^32-1", what, rows);
  return rows;
}

template <typename T>
Result<Metrics> compute_metrics_impl(std::span<const T> scores, std::span<const uint8_t> labels,
                                     std::span<const uint8_t> mask, std::span<const int> horizons,
                                     ScoreKind kind) {
  FXT_ASSIGN_OR_RETURN(size_t rows, check_shapes("compute_metrics", scores.size(), labels.size(),
                                                 mask.size(), horizons.size()));
  Metrics m;
  for (size_t h = 0; h < horizons.size(); ++h) {
    m.horizons.push_back(prepare(scores.data() + h, labels.data() + h,
                                 mask.empty() ? nullptr : mask.data() + h, rows, horizons.size(),
                                 kind, horizons[h])
                             .point);
  }
  finish_mean_auc(m);
  return m;
}

template <typename T>
HorizonMetrics horizon_metrics_impl(std::span<const T> scores, std::span<const uint8_t> labels,
                                    std::span<const uint8_t> mask, ScoreKind kind, int horizon) {
  assert(labels.size() == scores.size());
  assert(mask.empty() || mask.size() == scores.size());
  assert(scores.size() <= UINT32_MAX);
  return prepare(scores.data(), labels.data(), mask.empty() ? nullptr : mask.data(), scores.size(),
                 1, kind, horizon)
      .point;
}

// Adds one circular block bootstrap draw of `rows` rows to `weights` (zeroed by the caller).
void draw_blocks(SplitMix64& rng, size_t rows, size_t block, std::vector<uint32_t>& weights) {
  for (size_t taken = 0; taken < rows; taken += block) {
    size_t len = std::min(block, rows - taken);
    size_t start = rng.below(rows);
    size_t first = std::min(len, rows - start);  // up to the end, then wrap to 0
    for (size_t j = 0; j < first; ++j) ++weights[start + j];
    for (size_t j = 0; j < len - first; ++j) ++weights[j];
  }
}

Interval interval_of(std::vector<double> values, const BootstrapOptions& o) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  Interval iv;
  iv.replicates = static_cast<int>(values.size());
  iv.lo = percentile(values, o.lo_percentile);
  iv.hi = percentile(values, o.hi_percentile);
  return iv;
}

template <typename T>
Result<BootstrapResult> bootstrap_impl(std::span<const T> scores, std::span<const uint8_t> labels,
                                       std::span<const uint8_t> mask, std::span<const int> horizons,
                                       ScoreKind kind, const BootstrapOptions& o) {
  FXT_ASSIGN_OR_RETURN(size_t rows, check_shapes("bootstrap_metrics", scores.size(), labels.size(),
                                                 mask.size(), horizons.size()));
  if (o.replicates <= 0) return InvalidInput("bootstrap_metrics: replicates must be positive");
  if (!(o.lo_percentile >= 0 && o.lo_percentile <= o.hi_percentile && o.hi_percentile <= 100)) {
    return InvalidInput("bootstrap_metrics: percentiles {} and {} are not 0 <= lo <= hi <= 100",
                        o.lo_percentile, o.hi_percentile);
  }
  const size_t n_h = horizons.size();
  BootstrapResult res;
  res.replicates = o.replicates;
  res.seed = o.seed;
  int64_t block = std::max<int64_t>(o.block_rows, 1);
  for (int h : horizons) block = std::max<int64_t>(block, h);
  res.block_rows = block;
  res.horizons.resize(n_h);
  if (rows == 0) return res;

  // The horizons' sorted rows are independent: prepared on up to o.threads threads.
  std::vector<Prepared> prep(n_h);
  for_replicate_ranges(n_h, o.threads, [&](size_t h0, size_t h1) {
    for (size_t h = h0; h < h1; ++h) {
      prep[h] = prepare(scores.data() + h, labels.data() + h,
                        mask.empty() ? nullptr : mask.data() + h, rows, n_h, kind, horizons[h]);
    }
  });

  // One seed per replicate, drawn up front: replicate r is the same on any thread.
  const auto reps = static_cast<size_t>(o.replicates);
  std::vector<uint64_t> seeds(reps);
  SplitMix64 seeder(o.seed);
  for (uint64_t& s : seeds) s = seeder.next();

  // stats[(r * n_h + h) * 3 + {0 auc, 1 log loss, 2 brier}]
  std::vector<double> stats(reps * n_h * 3, kNaN);
  auto run = [&](size_t r_begin, size_t r_end) {
    std::vector<uint32_t> w(rows);
    for (size_t r = r_begin; r < r_end; ++r) {
      std::fill(w.begin(), w.end(), 0u);
      SplitMix64 rng(seeds[r]);
      draw_blocks(rng, rows, static_cast<size_t>(block), w);
      for (size_t h = 0; h < n_h; ++h) {
        const std::vector<Row>& rs = prep[h].rows;
        double* out = &stats[(r * n_h + h) * 3];
        out[0] = sorted_auc(rs, [&](const Row& x) { return uint64_t{w[x.row]}; });
        double sum_w = 0, sum_loss = 0, sum_sq = 0;
        for (const Row& x : rs) {
          auto wx = static_cast<double>(w[x.row]);
          sum_w += wx;
          sum_loss += wx * x.loss;
          sum_sq += wx * x.sq_error;
        }
        if (sum_w > 0) {
          out[1] = sum_loss / sum_w;
          out[2] = sum_sq / sum_w;
        }
      }
    }
  };
  for_replicate_ranges(reps, o.threads, run);

  std::vector<double> mean_auc(reps, kNaN);
  for (size_t r = 0; r < reps; ++r) {
    double sum = 0;
    int defined = 0;
    for (size_t h = 0; h < n_h; ++h) {
      double a = stats[(r * n_h + h) * 3];
      if (std::isnan(a)) continue;
      sum += a;
      ++defined;
    }
    if (defined > 0) mean_auc[r] = sum / defined;
  }
  for (size_t h = 0; h < n_h; ++h) {
    for (int k = 0; k < 3; ++k) {
      std::vector<double> v(reps);
      for (size_t r = 0; r < reps; ++r) v[r] = stats[(r * n_h + h) * 3 + static_cast<size_t>(k)];
      Interval iv = interval_of(std::move(v), o);
      (k == 0   ? res.horizons[h].auc
       : k == 1 ? res.horizons[h].log_loss
                : res.horizons[h].brier) = iv;
    }
  }
  res.mean_auc = interval_of(std::move(mean_auc), o);
  return res;
}

nlohmann::json interval_json(const Interval& iv) {
  return {
      {"lo", number_or_null(iv.lo)}, {"hi", number_or_null(iv.hi)}, {"replicates", iv.replicates}};
}

}  // namespace

void draw_bootstrap_blocks(SplitMix64& rng, size_t rows, size_t block,
                           std::vector<uint32_t>& weights) {
  draw_blocks(rng, rows, block, weights);
}

Interval bootstrap_interval(std::vector<double> values, const BootstrapOptions& options) {
  return interval_of(std::move(values), options);
}

void for_replicate_ranges(size_t replicates, int threads,
                          const std::function<void(size_t, size_t)>& fn) {
  if (replicates == 0) return;
  const size_t n = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, replicates);
  if (n == 1) {
    fn(0, replicates);
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < n; ++t) {
    pool.emplace_back(fn, replicates * t / n, replicates * (t + 1) / n);
  }
  for (std::thread& t : pool) t.join();
}

double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] + frac * (values[hi] - values[lo]);
}

nlohmann::json HorizonMetrics::to_json() const {
  nlohmann::json bins = nlohmann::json::array();
  for (const ReliabilityBin& b : reliability) {
    bins.push_back({{"lo", b.lo},
                    {"hi", b.hi},
                    {"count", b.count},
                    {"mean_predicted", number_or_null(b.mean_predicted)},
                    {"observed_frequency", number_or_null(b.observed_frequency)}});
  }
  return {{"horizon", horizon},
          {"n_valid", n_valid},
          {"n_positive", n_positive},
          {"n_nan_scores", n_nan_scores},
          {"positive_rate", number_or_null(positive_rate)},
          {"auc", number_or_null(auc)},
          {"log_loss", number_or_null(log_loss)},
          {"brier", number_or_null(brier)},
          {"accuracy", number_or_null(accuracy)},
          {"ece", number_or_null(ece)},
          {"reliability", std::move(bins)}};
}

nlohmann::json Metrics::to_json() const {
  nlohmann::json hs = nlohmann::json::array();
  for (const HorizonMetrics& h : horizons) hs.push_back(h.to_json());
  return {{"mean_auc", number_or_null(mean_auc)},
          {"auc_defined", auc_defined},
          {"horizons", std::move(hs)}};
}

nlohmann::json BootstrapResult::to_json() const {
  nlohmann::json hs = nlohmann::json::array();
  for (const HorizonIntervals& h : horizons) {
    hs.push_back({{"auc", interval_json(h.auc)},
                  {"log_loss", interval_json(h.log_loss)},
                  {"brier", interval_json(h.brier)}});
  }
  return {{"method", "circular-block-bootstrap"},
          {"block_rows", block_rows},
          {"replicates", replicates},
          {"seed", seed},
          {"mean_auc", interval_json(mean_auc)},
          {"horizons", std::move(hs)}};
}

double roc_auc(std::span<const float> scores, std::span<const uint8_t> labels,
               std::span<const uint8_t> mask) {
  return horizon_metrics_impl(scores, labels, mask, ScoreKind::kProbability, 0).auc;
}
double roc_auc(std::span<const double> scores, std::span<const uint8_t> labels,
               std::span<const uint8_t> mask) {
  return horizon_metrics_impl(scores, labels, mask, ScoreKind::kProbability, 0).auc;
}

HorizonMetrics horizon_metrics(std::span<const float> scores, std::span<const uint8_t> labels,
                               std::span<const uint8_t> mask, ScoreKind kind, int horizon) {
  return horizon_metrics_impl(scores, labels, mask, kind, horizon);
}
HorizonMetrics horizon_metrics(std::span<const double> scores, std::span<const uint8_t> labels,
                               std::span<const uint8_t> mask, ScoreKind kind, int horizon) {
  return horizon_metrics_impl(scores, labels, mask, kind, horizon);
}

Result<Metrics> compute_metrics(std::span<const float> scores, std::span<const uint8_t> labels,
                                std::span<const uint8_t> mask, std::span<const int> horizons,
                                ScoreKind kind) {
  return compute_metrics_impl(scores, labels, mask, horizons, kind);
}
Result<Metrics> compute_metrics(std::span<const double> scores, std::span<const uint8_t> labels,
                                std::span<const uint8_t> mask, std::span<const int> horizons,
                                ScoreKind kind) {
  return compute_metrics_impl(scores, labels, mask, horizons, kind);
}

Result<std::vector<double>> positive_rates(std::span<const uint8_t> labels,
                                           std::span<const uint8_t> mask, size_t num_horizons) {
  FXT_ASSIGN_OR_RETURN(size_t rows, check_shapes("positive_rates", labels.size(), labels.size(),
                                                 mask.size(), num_horizons));
  std::vector<int64_t> n(num_horizons, 0), pos(num_horizons, 0);
  for (size_t i = 0; i < rows * num_horizons; ++i) {
    if (!mask.empty() && mask[i] == 0) continue;
    size_t h = i % num_horizons;
    ++n[h];
    pos[h] += labels[i] != 0 ? 1 : 0;
  }
  std::vector<double> rates(num_horizons, kNaN);
  for (size_t h = 0; h < num_horizons; ++h) {
    if (n[h] > 0) rates[h] = static_cast<double>(pos[h]) / static_cast<double>(n[h]);
  }
  return rates;
}

Result<Metrics> base_rate_metrics(std::span<const double> base_rates,
                                  std::span<const uint8_t> labels, std::span<const uint8_t> mask,
                                  std::span<const int> horizons) {
  if (base_rates.size() != horizons.size()) {
    return InvalidInput("base_rate_metrics: {} base rates for {} horizons", base_rates.size(),
                        horizons.size());
  }
  FXT_ASSIGN_OR_RETURN(size_t rows, check_shapes("base_rate_metrics", labels.size(), labels.size(),
                                                 mask.size(), horizons.size()));
  // The same code path as a model: a constant score column per horizon.
  std::vector<double> scores(rows * horizons.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = base_rates[i % horizons.size()];
  return compute_metrics_impl(std::span<const double>(scores), labels, mask, horizons,
                              ScoreKind::kProbability);
}

Result<BootstrapResult> bootstrap_metrics(std::span<const float> scores,
                                          std::span<const uint8_t> labels,
                                          std::span<const uint8_t> mask,
                                          std::span<const int> horizons, ScoreKind kind,
                                          const BootstrapOptions& options) {
  return bootstrap_impl(scores, labels, mask, horizons, kind, options);
}
Result<BootstrapResult> bootstrap_metrics(std::span<const double> scores,
                                          std::span<const uint8_t> labels,
                                          std::span<const uint8_t> mask,
                                          std::span<const int> horizons, ScoreKind kind,
                                          const BootstrapOptions& options) {
  return bootstrap_impl(scores, labels, mask, horizons, kind, options);
}

}  // namespace fxt
