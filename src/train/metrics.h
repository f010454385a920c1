// Evaluation metrics for binary direction labels (DESIGN §6).
//
// Per horizon, over the rows whose label is valid (mask != 0): ROC AUC (exact, tied
// scores get the average rank), log loss, Brier score, accuracy at 0.5, expected
// calibration error over 10 equal-width bins with its reliability table, the number of
// valid labels and the positive rate; the mean AUC over horizons whose AUC is defined.
// The constant (base-rate) predictor is scored by the same code, and block-bootstrap
// confidence intervals resample blocks of consecutive rows (labels of nearby rows
// overlap, so a block must be at least a horizon long).
//
// Multi-horizon inputs are row-major [rows][horizons] arrays, as the heads emit them.
// Scores are probabilities or logits (ScoreKind); labels are 0/1 (any nonzero = 1);
// an empty mask means every row is valid. Rows whose score is NaN are excluded and
// counted (n_nan_scores) so that a diverged model is visible rather than hidden.
//
// Everything is O(n log n) (one sort per horizon) and single-threaded unless a thread
// count is given; results do not depend on the thread count. Thread-compatible: no
// shared state.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/random.h"
#include "core/status.h"

namespace fxt {

inline constexpr int kCalibrationBins = 10;
// Probabilities are clamped to [kProbClamp, 1 - kProbClamp] for the log loss.
inline constexpr double kProbClamp = 1e-7;

enum class ScoreKind { kProbability, kLogit };

struct ReliabilityBin {
  double lo = 0, hi = 0;  // predicted-probability range [lo, hi); the last bin includes 1
  int64_t count = 0;
  double mean_predicted = std::numeric_limits<double>::quiet_NaN();      // NaN when empty
  double observed_frequency = std::numeric_limits<double>::quiet_NaN();  // NaN when empty
};

struct HorizonMetrics {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  int horizon = 0;           // label horizon in snapshots (0 = not given)
  int64_t n_valid = 0;       // rows scored: mask set and score not NaN
  int64_t n_positive = 0;    // of which label 1
  int64_t n_nan_scores = 0;  // rows with a valid label but a NaN score (excluded)
  double positive_rate = kNaN;
  double auc = kNaN;  // NaN when only one class is present
  double log_loss = kNaN;
  double brier = kNaN;
  double accuracy = kNaN;  // predicted 1 when p > 0.5
  double ece = kNaN;       // Σ_b (count_b / n) · |mean_predicted_b − observed_frequency_b|
  std::array<ReliabilityBin, kCalibrationBins> reliability{};

  // NaN values are written as null.
  nlohmann::json to_json() const;
};

struct Metrics {
  std::vector<HorizonMetrics> horizons;
  double mean_auc = HorizonMetrics::kNaN;  // over horizons with a defined AUC
  int auc_defined = 0;                     // how many horizons entered mean_auc

  nlohmann::json to_json() const;
};

// ---- the AUC's arithmetic, shared by the bootstrap here and `fxt cv`'s paired bootstrap ----

// AUC of n rows already sorted by score, from integer weights (1 for the point estimate): each
// positive counts the negatives strictly below it plus half the negatives tied with it.
// label(k) and new_tie(k) (row k's score differs from row k − 1's) describe sorted row k,
// weight(k) its weight; `twice_u` stays an exact integer (weights sum to at most 2^32 rows), so
// every caller gets the same bits. NaN unless both classes have weight.
template <typename LabelFn, typename NewTieFn, typename WeightFn>
double sorted_rows_auc(size_t n, LabelFn label, NewTieFn new_tie, WeightFn weight) {
  uint64_t twice_u = 0, neg_below = 0, tie_pos = 0, tie_neg = 0, pos = 0;
  for (size_t k = 0; k < n; ++k) {
    if (new_tie(k)) {
      twice_u += 2 * tie_pos * neg_below + tie_pos * tie_neg;
      neg_below += tie_neg;
      pos += tie_pos;
      tie_pos = tie_neg = 0;
    }
    const uint64_t w = weight(k);
    if (label(k)) {
      tie_pos += w;
    } else {
      tie_neg += w;
    }
  }
  twice_u += 2 * tie_pos * neg_below + tie_pos * tie_neg;
  neg_below += tie_neg;
  pos += tie_pos;
  if (pos == 0 || neg_below == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(twice_u) /
         (2.0 * static_cast<double>(pos) * static_cast<double>(neg_below));
}

// ---- single horizon --------------------------------------------------------------
// Preconditions (programmer errors, asserted): labels.size() == scores.size() and
// mask is empty or the same size.

// Exact ROC AUC (Mann–Whitney U with midranks); NaN unless both classes are present.
double roc_auc(std::span<const float> scores, std::span<const uint8_t> labels,
               std::span<const uint8_t> mask = {});
double roc_auc(std::span<const double> scores, std::span<const uint8_t> labels,
               std::span<const uint8_t> mask = {});

HorizonMetrics horizon_metrics(std::span<const float> scores, std::span<const uint8_t> labels,
                               std::span<const uint8_t> mask = {},
                               ScoreKind kind = ScoreKind::kProbability, int horizon = 0);
HorizonMetrics horizon_metrics(std::span<const double> scores, std::span<const uint8_t> labels,
                               std::span<const uint8_t> mask = {},
                               ScoreKind kind = ScoreKind::kProbability, int horizon = 0);

// ---- several horizons: row-major [rows][horizons.size()] ------------------------------

Result<Metrics> compute_metrics(std::span<const float> scores, std::span<const uint8_t> labels,
                                std::span<const uint8_t> mask, std::span<const int> horizons,
                                ScoreKind kind = ScoreKind::kProbability);
Result<Metrics> compute_metrics(std::span<const double> scores, std::span<const uint8_t> labels,
                                std::span<const uint8_t> mask, std::span<const int> horizons,
                                ScoreKind kind = ScoreKind::kProbability);

// Positive rate per horizon over valid rows (the base rate of a training set); NaN for a
// horizon without valid labels. Shapes as for compute_metrics.
Result<std::vector<double>> positive_rates(std::span<const uint8_t> labels,
                                           std::span<const uint8_t> mask, size_t num_horizons);

// Metrics of the constant predictor p_h = base_rates[h] (the training positive rate) on
// the given rows. Its AUC is 0.5 whenever both classes are present (all scores tie).
Result<Metrics> base_rate_metrics(std::span<const double> base_rates,
                                  std::span<const uint8_t> labels, std::span<const uint8_t> mask,
                                  std::span<const int> horizons);

// ---- block bootstrap ---------------------------------------------------------------

struct BootstrapOptions {
  int replicates = 200;
  // Rows per block; raised to the largest horizon (0 = the largest horizon). Rows are
  // assumed to be in time order, one row per snapshot step.
  int64_t block_rows = 0;
  uint64_t seed = 1;
  double lo_percentile = 2.5;
  double hi_percentile = 97.5;
  int threads = 1;  // results are identical for any thread count
};

struct Interval {
  double lo = HorizonMetrics::kNaN, hi = HorizonMetrics::kNaN;
  int replicates = 0;  // replicates in which the statistic was defined
};

struct HorizonIntervals {
  Interval auc, log_loss, brier;
};

struct BootstrapResult {
  std::vector<HorizonIntervals> horizons;
  Interval mean_auc;  // the same resampled rows for every horizon in a replicate
  int64_t block_rows = 0;
  int replicates = 0;
  uint64_t seed = 0;

  nlohmann::json to_json() const;
};

// Circular block bootstrap: each replicate draws ceil(rows / block) block starts
// uniformly, takes `block` consecutive rows from each (wrapping around the end) and
// truncates to `rows` rows. Replicate r uses its own splitmix64 stream derived from
// (seed, r), so results are reproducible and independent of threads. Percentiles by
// linear interpolation between order statistics.
Result<BootstrapResult> bootstrap_metrics(std::span<const float> scores,
                                          std::span<const uint8_t> labels,
                                          std::span<const uint8_t> mask,
                                          std::span<const int> horizons, ScoreKind kind,
                                          const BootstrapOptions& options);
Result<BootstrapResult> bootstrap_metrics(std::span<const double> scores,
                                          std::span<const uint8_t> labels,
                                          std::span<const uint8_t> mask,
                                          std::span<const int> horizons, ScoreKind kind,
                                          const BootstrapOptions& options);

// The p-th percentile (0..100) of values, linear interpolation (R type 7); NaN when empty.
// Reorders `values`.
double percentile(std::vector<double>& values, double p);

// The pieces of bootstrap_metrics, for other resampled statistics (the paired CV comparison)
// that must draw exactly the same rows:
// one circular block draw of `rows` rows added to `weights` (zeroed by the caller);
void draw_bootstrap_blocks(SplitMix64& rng, size_t rows, size_t block,
                           std::vector<uint32_t>& weights);
// the [lo, hi] percentile interval of the replicates' values (NaN replicates dropped);
Interval bootstrap_interval(std::vector<double> values, const BootstrapOptions& options);
// fn(r0, r1) over [0, replicates) cut into min(threads, replicates) contiguous ranges, one
// thread each (results must depend on the replicate only, so any thread count agrees).
void for_replicate_ranges(size_t replicates, int threads,
                          const std::function<void(size_t, size_t)>& fn);

}  // namespace fxt
