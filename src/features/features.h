// The 40 per-snapshot features of DESIGN §2.4 (CPU reference) and their standardisation.
//
// compute_features() makes one pass over a store in snapshot order and writes an n x 40
// row-major matrix of RAW values. A slot whose value is undefined at a snapshot (an empty
// side, zero depth, d = 0, an EMA not yet started) holds NaN; standardise() maps NaN to the
// training mean, i.e. 0. docs/FEATURES.md gives every slot's formula, units and undefined
// rule. The previous position is p = max(t - stride, 0): p = t at the first snapshot, and
// p = 0 for 0 < t < stride. EMAs are updated at every snapshot whatever the stride.
// All arithmetic is float64; prices are integer tick offsets before anything is rounded.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/store.h"

namespace fxt {

constexpr int kFeatureDim = 40;

// Column names of the 40 slots, in slot order (CSV headers, reports).
const std::array<const char*, kFeatureDim>& feature_names();

struct FeatureConfig {
  int stride = 1;   // decision stride S (>= 1): the previous position is t - S
  int threads = 1;  // of the per-row pass (the features do not depend on it)
};

// Raw features, n x 40 row-major, NaN = undefined. Fails on a store without a positive
// tick size or on a bad stride.
Status compute_features(const StoreReader& store, const FeatureConfig& config,
                        std::vector<float>* out);
// The same in float64 (tests compare against hand-computed rows without rounding).
Status compute_features_f64(const StoreReader& store, const FeatureConfig& config,
                            std::vector<double>* out);

// Per-slot mean and standard deviation over the defined (finite) values of a row range.
struct FeatureStats {
  std::array<double, kFeatureDim> mean{};
  std::array<double, kFeatureDim> stddev{};   // 1 where the slot is constant
  std::array<uint64_t, kFeatureDim> count{};  // defined values seen per slot
  // Slots left out of the model (`--drop-features`): standardise() sets them to 0, the
  // training mean, exactly as for an undefined value.
  std::array<bool, kFeatureDim> dropped{};
};

// "26,27" or feature names ("tod_sin,tod_cos"), in any mix -> sorted unique slot numbers.
Result<std::vector<int>> parse_feature_slots(const std::string& text);

constexpr double kFeatureClip = 10.0;

// Measures stats on rows [begin, end) of an n x 40 matrix. A slot with no defined value
// gets mean 0; a slot with std 0 (or fewer than two values) gets std 1.
FeatureStats measure_feature_stats(const float* rows, uint64_t begin, uint64_t end);
// Accumulates into running sums so stats can span several stores (the training range of a
// dataset). finish() turns the sums into mean/std.
class FeatureStatsAccumulator {
 public:
  void add(const float* rows, uint64_t begin, uint64_t end);
  FeatureStats finish() const;

 private:
  // Shifted sums (shift = first value seen) keep the variance accurate for offset data.
  std::array<double, kFeatureDim> shift_{}, sum_{}, sum_sq_{};
  std::array<uint64_t, kFeatureDim> count_{};
};

// In place: x <- clip((x - mean)/std, +-10); NaN/Inf (undefined) <- 0. Never leaves NaN/Inf.
void standardise(const FeatureStats& stats, float* rows, uint64_t n_rows);

}  // namespace fxt
