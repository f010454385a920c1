// Sequences and time splits of DESIGN §2.6, over a dataset of one or more stores.
//
// A sample is K positions at decision stride S: snapshots a, a+S, ..., a+(K-1)S of one
// store (anchor a), with features and labels at every position. The stores of a dataset
// are taken in the order given (time order) and their snapshots concatenated; the split
// cuts that sequence by fraction into train | gap | validation | gap | test, each purge gap
// being max(horizons) x S snapshots, so no training label (which looks at most max(h)
// snapshots ahead) sees a validation snapshot, and likewise validation -> test. Explicit
// ranges (SplitConfig::explicit_ranges, used by the folds of fxt cv) replace the fractions
// and must leave at least the same gaps. An anchor
// belongs to a split when all K positions lie inside the split's range and inside one
// store, so no window and no label crosses a store boundary (labels are masked at store
// ends). Anchors whose window holds a crossed or locked snapshot are skipped by default.
// Training anchors are drawn uniformly from the split's anchors with a seeded xoshiro256**;
// evaluation anchors walk the split in order without overlap; inference windows end at
// every snapshot (shorter at a store's start: see window_positions()).
// Thread-safety: a built Dataset is immutable and may be read from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "data/store.h"
#include "features/features.h"
#include "features/labels.h"

namespace fxt {

enum class Split { kTrain = 0, kValidation = 1, kTest = 2 };
const char* split_name(Split split);

struct SequenceConfig {
  int window = 64;  // K positions
  int stride = 1;   // S snapshots between positions
  bool skip_crossed = true;
};

// A half-open range of the dataset's concatenated snapshot index.
struct GlobalRange {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end > begin ? end - begin : 0; }
  bool operator==(const GlobalRange& o) const { return begin == o.begin && end == o.end; }
};

struct SplitConfig {
  double train = 0.70, validation = 0.15;  // test gets the rest
  // Explicit ranges (fxt cv folds) instead of the fractions: [begin, end) of the concatenated
  // index for each split, in time order, each later range beginning at least the purge gap
  // (max(horizons) x S) after the earlier one ends; train and validation non-empty, test may be
  // empty; every end within the dataset. Validated by Dataset::build.
  bool explicit_ranges = false;
  GlobalRange train_range, validation_range, test_range;
};

// A window: store index and its first snapshot; position k is start + k * stride.
struct Anchor {
  uint32_t store = 0;
  uint64_t start = 0;
  bool operator==(const Anchor& o) const { return store == o.store && start == o.start; }
};

struct DatasetConfig {
  SequenceConfig sequence;
  SplitConfig split;
  LabelConfig labels;
  int threads = 1;  // of the feature computation (the dataset does not depend on it)
};

class Dataset {
 public:
  struct Store {
    StoreReader reader;
    uint64_t offset = 0;          // first global index
    std::vector<float> features;  // n x 40, raw (NaN = undefined) until standardise()
    Labels labels;
  };

  // Opens the stores (in this order) and computes their features and labels.
  static Result<Dataset> open(const std::vector<std::string>& dirs, const DatasetConfig& config);
  static Result<Dataset> build(std::vector<StoreReader> readers, const DatasetConfig& config);

  const DatasetConfig& config() const { return config_; }
  size_t store_count() const { return stores_.size(); }
  const Store& store(size_t i) const { return stores_[i]; }
  uint64_t total_snapshots() const { return total_; }
  uint64_t purge_gap() const { return gap_; }
  GlobalRange range(Split split) const { return ranges_[static_cast<int>(split)]; }

  // Every anchor whose window lies in the split (and is clean, with skip_crossed), in order.
  const std::vector<Anchor>& anchors(Split split) const {
    return anchors_[static_cast<int>(split)];
  }
  // `count` training anchors drawn uniformly (with replacement) from anchors(kTrain).
  std::vector<Anchor> sample_train(Rng& rng, size_t count) const;
  // Non-overlapping anchors of a split in order: each next one starts at or after the
  // previous window's end (start + K x S).
  std::vector<Anchor> evaluation_anchors(Split split) const;

  // Mean/std over the training range's defined values; standardise() applies them to
  // every store (undefined -> 0, clipped to +-10).
  FeatureStats measure_train_stats() const;
  void standardise_features(const FeatureStats& stats);

  // Copies one window: x (K x 40), y and mask (K x H, as float 0/1).
  void gather(const Anchor& a, float* x, float* y, float* mask) const;
  // The window's elapsed times (K values, window_elapsed) in units of unit_ns.
  void gather_elapsed(const Anchor& a, double unit_ns, float* dt) const;

  // Median of the positive one-snapshot timestamp gaps over the training range, in ns; 0 when
  // the timestamps never advance there. The time unit of `--cfc-time real` (DESIGN §3.4).
  double median_train_gap_ns() const;

 private:
  DatasetConfig config_;
  std::vector<Store> stores_;
  uint64_t total_ = 0, gap_ = 0;
  GlobalRange ranges_[3];
  std::vector<Anchor> anchors_[3];
};

// The snapshots of the inference window of K positions at stride S ending at `end`
// (live use: every snapshot is scored with the window ending at it). Near a store's
// start fewer than K positions exist; the window is left-padded by repeating its first
// position, and the number of real positions is returned. out receives K indices.
int window_positions(uint64_t end, int window, int stride, uint64_t* out);

// Elapsed time into each position of a window (`--cfc-time real`), in units of unit_ns:
// dt[0] = ts[idx[0]] - ts[idx[0] - stride] (0 within a store's first `stride` snapshots),
// dt[k] = ts[idx[k]] - ts[idx[k-1]]; a negative gap counts as 0, so the padded positions of
// an inference window (repeats of its first snapshot) leave the CfC state unchanged.
void window_elapsed(const StoreReader& store, const uint64_t* idx, int window, int stride,
                    double unit_ns, float* dt);

}  // namespace fxt
