#include "features/sequences.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace fxt {
namespace {

// ts[t] - ts[prev] in units of unit_ns; a negative gap counts as 0.
float elapsed_units(const StoreReader& store, uint64_t t, uint64_t prev, double unit_ns) {
  const int64_t gap = store.ts_ns[t] - store.ts_ns[prev];
  return static_cast<float>(static_cast<double>(std::max<int64_t>(gap, 0)) / unit_ns);
}

// Explicit split ranges: ordered, inside the dataset of n snapshots, separated by >= gap.
Status check_explicit_ranges(const SplitConfig& sp, uint64_t n, uint64_t gap) {
  const GlobalRange r[3] = {sp.train_range, sp.validation_range, sp.test_range};
  for (int i = 0; i < 3; ++i) {
    const char* name = split_name(static_cast<Split>(i));
    if (r[i].begin > r[i].end || r[i].end > n) {
      return UsageError("{} range [{}, {}) is not inside the dataset's {} snapshots", name,
                        r[i].begin, r[i].end, n);
    }
    if (i < 2 && r[i].size() == 0) {
      return UsageError("{} range [{}, {}) is empty", name, r[i].begin, r[i].end);
    }
  }
  for (int i = 1; i < 3; ++i) {
    if (i == 2 && r[2].size() == 0) break;
    if (r[i].begin < r[i - 1].end + gap) {
      return UsageError(
          "{} range begins at {}, less than the purge gap {} after the {} range's end {}",
          split_name(static_cast<Split>(i)), r[i].begin, gap, split_name(static_cast<Split>(i - 1)),
          r[i - 1].end);
    }
  }
  return Status::Ok();
}

}  // namespace

const char* split_name(Split split) {
  switch (split) {
    case Split::kTrain:
      return "train";
    case Split::kValidation:
      return "validation";
    default:
      return "test";
  }
}

Result<Dataset> Dataset::open(const std::vector<std::string>& dirs, const DatasetConfig& config) {
  std::vector<StoreReader> readers;
  for (const auto& dir : dirs) {
    FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(dir));
    readers.push_back(std::move(r));
  }
  return build(std::move(readers), config);
}

Result<Dataset> Dataset::build(std::vector<StoreReader> readers, const DatasetConfig& config) {
  const SequenceConfig& sc = config.sequence;
  const SplitConfig& sp = config.split;
  if (readers.empty()) return UsageError("a dataset needs at least one store");
  if (sc.window < 1) return UsageError("sequence window must be >= 1 (got {})", sc.window);
  if (sc.stride < 1) return UsageError("decision stride must be >= 1 (got {})", sc.stride);
  if (!sp.explicit_ranges &&
      (!(sp.train > 0) || !(sp.validation >= 0) || sp.train + sp.validation > 1.0))
    return UsageError(
        "split fractions train {} validation {}: need train > 0, validation >= 0 "
        "and train + validation <= 1",
        sp.train, sp.validation);
  FXT_RETURN_IF_ERROR(validate_label_config(config.labels));

  Dataset ds;
  ds.config_ = config;
  FeatureConfig fc;
  fc.stride = sc.stride;
  fc.threads = config.threads;
  for (auto& r : readers) {
    Store s;
    s.reader = std::move(r);
    s.offset = ds.total_;
    FXT_RETURN_IF_ERROR(compute_features(s.reader, fc, &s.features));
    FXT_RETURN_IF_ERROR(compute_labels(s.reader, config.labels, &s.labels));
    ds.total_ += s.reader.size();
    ds.stores_.push_back(std::move(s));
  }

  // Horizons count raw snapshots; max(h) x S is at least that whatever the stride.
  const int max_h = *std::max_element(config.labels.horizons.begin(), config.labels.horizons.end());
  ds.gap_ = static_cast<uint64_t>(max_h) * static_cast<uint64_t>(sc.stride);
  const uint64_t n = ds.total_;
  if (sp.explicit_ranges) {
    FXT_RETURN_IF_ERROR(check_explicit_ranges(sp, n, ds.gap_));
    ds.ranges_[0] = sp.train_range;
    ds.ranges_[1] = sp.validation_range;
    ds.ranges_[2] = sp.test_range;
  } else {
    const auto n_train = static_cast<uint64_t>(sp.train * static_cast<double>(n));
    const auto n_val_end =
        std::min(n, static_cast<uint64_t>((sp.train + sp.validation) * static_cast<double>(n)));
    ds.ranges_[0] = {0, n_train};
    ds.ranges_[1] = {std::min(n_train + ds.gap_, n_val_end), n_val_end};
    ds.ranges_[2] = {std::min(n_val_end + ds.gap_, n), n};
  }

  const auto stride = static_cast<uint64_t>(sc.stride);
  const auto k = static_cast<uint64_t>(sc.window);
  const uint64_t span = (k - 1) * stride;  // last position - first position
  for (uint32_t si = 0; si < ds.stores_.size(); ++si) {
    const Store& s = ds.stores_[si];
    const uint64_t ns = s.reader.size();
    // clean_run[t]: how many consecutive positions t, t+S, ... are neither crossed nor locked.
    std::vector<uint32_t> clean_run;
    if (sc.skip_crossed) {
      clean_run.assign(ns, 0);
      for (uint64_t t = ns; t-- > 0;) {
        if (s.reader.flags[t] & (kFlagCrossed | kFlagLocked)) continue;
        clean_run[t] = 1 + (t + stride < ns ? clean_run[t + stride] : 0);
      }
    }
    for (int split = 0; split < 3; ++split) {
      const GlobalRange g = ds.ranges_[split];
      const uint64_t lo = std::max(g.begin, s.offset) - s.offset;
      const uint64_t hi = std::min(g.end, s.offset + ns);
      if (hi <= s.offset || lo + s.offset >= hi) continue;
      const uint64_t hi_local = hi - s.offset;
      for (uint64_t a = lo; a + span < hi_local; ++a) {
        if (sc.skip_crossed && clean_run[a] < k) continue;
        ds.anchors_[split].push_back({si, a});
      }
    }
  }
  return ds;
}

std::vector<Anchor> Dataset::sample_train(Rng& rng, size_t count) const {
  const auto& pool = anchors_[0];
  std::vector<Anchor> out;
  if (pool.empty()) return out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(pool[rng.uniform(pool.size())]);
  return out;
}

std::vector<Anchor> Dataset::evaluation_anchors(Split split) const {
  const auto step = static_cast<uint64_t>(config_.sequence.window) *
                    static_cast<uint64_t>(config_.sequence.stride);
  std::vector<Anchor> out;
  for (const Anchor& a : anchors_[static_cast<int>(split)]) {
    if (!out.empty() && out.back().store == a.store && a.start < out.back().start + step) continue;
    out.push_back(a);
  }
  return out;
}

FeatureStats Dataset::measure_train_stats() const {
  FeatureStatsAccumulator acc;
  const GlobalRange g = ranges_[0];
  for (const Store& s : stores_) {
    const uint64_t ns = s.reader.size();
    const uint64_t lo = std::max(g.begin, s.offset), hi = std::min(g.end, s.offset + ns);
    if (lo < hi) acc.add(s.features.data(), lo - s.offset, hi - s.offset);
  }
  return acc.finish();
}

void Dataset::standardise_features(const FeatureStats& stats) {
  for (Store& s : stores_) standardise(stats, s.features.data(), s.reader.size());
}

void Dataset::gather(const Anchor& a, float* x, float* y, float* mask) const {
  const Store& s = stores_[a.store];
  const int nh = s.labels.horizons;
  const auto stride = static_cast<uint64_t>(config_.sequence.stride);
  for (int k = 0; k < config_.sequence.window; ++k) {
    const uint64_t t = a.start + static_cast<uint64_t>(k) * stride;
    std::copy_n(s.features.data() + t * kFeatureDim, kFeatureDim, x + k * kFeatureDim);
    for (int h = 0; h < nh; ++h) {
      y[k * nh + h] = s.labels.y[t * nh + h];
      mask[k * nh + h] = s.labels.mask[t * nh + h];
    }
  }
}

void Dataset::gather_elapsed(const Anchor& a, double unit_ns, float* dt) const {
  // A training window is regular (position k is start + k S), so every position's step is the
  // gap from the snapshot S before it: window_elapsed without building the index list.
  const StoreReader& r = stores_[a.store].reader;
  const auto s = static_cast<uint64_t>(config_.sequence.stride);
  for (int k = 0; k < config_.sequence.window; ++k) {
    const uint64_t t = a.start + static_cast<uint64_t>(k) * s;
    dt[k] = elapsed_units(r, t, t >= s ? t - s : t, unit_ns);
  }
}

double Dataset::median_train_gap_ns() const {
  const GlobalRange g = ranges_[0];
  std::vector<int64_t> gaps;
  for (const Store& s : stores_) {
    const uint64_t ns = s.reader.size();
    const uint64_t lo = std::max(g.begin, s.offset), hi = std::min(g.end, s.offset + ns);
    for (uint64_t t = lo + 1; t < hi; ++t) {
      const int64_t d = s.reader.ts_ns[t - s.offset] - s.reader.ts_ns[t - s.offset - 1];
      if (d > 0) gaps.push_back(d);
    }
  }
  if (gaps.empty()) return 0.0;
  const auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
  std::nth_element(gaps.begin(), mid, gaps.end());
  return static_cast<double>(*mid);
}

void window_elapsed(const StoreReader& store, const uint64_t* idx, int window, int stride,
                    double unit_ns, float* dt) {
  const auto s = static_cast<uint64_t>(stride);
  for (int k = 0; k < window; ++k) {
    const uint64_t t = idx[k];
    const uint64_t prev = k > 0 ? idx[k - 1] : (t >= s ? t - s : t);
    dt[k] = elapsed_units(store, t, prev, unit_ns);
  }
}

int window_positions(uint64_t end, int window, int stride, uint64_t* out) {
  const auto s = static_cast<uint64_t>(stride);
  const uint64_t available = end / s + 1;  // positions end, end-S, ... >= 0
  const int real = available < static_cast<uint64_t>(window) ? static_cast<int>(available) : window;
  const int pad = window - real;
  const uint64_t first = end - static_cast<uint64_t>(real - 1) * s;
  for (int k = 0; k < window; ++k) {
    out[k] = k < pad ? first : first + static_cast<uint64_t>(k - pad) * s;
  }
  return real;
}

}  // namespace fxt
