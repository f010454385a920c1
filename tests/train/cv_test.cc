// Purged walk-forward cross-validation (src/train/cv.h): hand-computed fold plans, an
// exhaustive no-leak check of every fold's windows and labels on small stores (both schemes, by
// store and by block), the paired bootstrap against bootstrap_metrics and rows.bin. Whole CV
// runs (resumption, controllers per fold, the command line) are in tests/cli/cv_run_test.cc.
#include "train/cv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/random.h"
#include "data/store.h"
#include "features/sequences.h"
#include "test_util.h"
#include "train/metrics.h"
#include "train/run_record.h"
#include "train/trainer.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;

using R = GlobalRange;

FoldPlanConfig plan_config(int folds, CvScheme scheme, uint64_t purge, uint64_t embargo,
                           uint64_t min_span, FoldUnit unit = FoldUnit::kAuto,
                           int train_blocks = 0) {
  FoldPlanConfig c;
  c.folds = folds;
  c.scheme = scheme;
  c.unit = unit;
  c.train_blocks = train_blocks;
  c.purge = purge;
  c.embargo = embargo;
  c.min_span = min_span;
  return c;
}

void expect_fold(const Fold& f, R train, R val, R test, size_t first, size_t end, R ltrain, R lval,
                 R ltest) {
  EXPECT_EQ(f.train, train) << "fold " << f.index << " train [" << f.train.begin << ", "
                            << f.train.end << ")";
  EXPECT_EQ(f.validation, val) << "fold " << f.index << " validation [" << f.validation.begin
                               << ", " << f.validation.end << ")";
  EXPECT_EQ(f.test, test) << "fold " << f.index;
  EXPECT_EQ(f.first_store, first) << "fold " << f.index;
  EXPECT_EQ(f.end_store, end) << "fold " << f.index;
  EXPECT_EQ(f.local_train, ltrain) << "fold " << f.index;
  EXPECT_EQ(f.local_validation, lval) << "fold " << f.index;
  EXPECT_EQ(f.local_test, ltest) << "fold " << f.index;
}

// ---- the plan ----------------------------------------------------------------------------------

TEST(CvPlan, HandComputedByStore) {
  // Stores of 100, 120, 90, 110, 100 snapshots start at 0, 100, 220, 310, 420 (total 520).
  // 2 folds by store (5 >= 2 + 2): W = 5 - 2 - 1 = 2 training stores; gap = 10 + 2.
  const std::vector<uint64_t> sizes = {100, 120, 90, 110, 100};
  auto p = plan_folds(sizes, plan_config(2, CvScheme::kWalkForward, 10, 2, 5));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->unit, FoldUnit::kStore);
  EXPECT_EQ(p->train_blocks, 2);
  EXPECT_EQ(p->gap, 12u);
  ASSERT_EQ(p->folds.size(), 2u);
  // Fold 0: train stores 0-1 cut 12 short of store 2, validation store 2 cut 12 short of
  // store 3, test store 3 whole.
  expect_fold(p->folds[0], {0, 208}, {220, 298}, {310, 420}, 0, 4, {0, 208}, {220, 298},
              {310, 420});
  // Fold 1 slides by one store: it opens stores 1-4, local ranges start at store 1 (100).
  expect_fold(p->folds[1], {100, 298}, {310, 408}, {420, 520}, 1, 5, {0, 198}, {210, 308},
              {320, 420});

  auto e = plan_folds(sizes, plan_config(2, CvScheme::kExpanding, 10, 2, 5));
  ASSERT_TRUE(e.ok());
  expect_fold(e->folds[0], {0, 208}, {220, 298}, {310, 420}, 0, 4, {0, 208}, {220, 298},
              {310, 420});
  expect_fold(e->folds[1], {0, 298}, {310, 408}, {420, 520}, 0, 5, {0, 298}, {310, 408},
              {420, 520});
  const nlohmann::json j = p->to_json();
  EXPECT_EQ(j["unit"], "store");
  EXPECT_EQ(j["folds"][1]["train"], nlohmann::json::array({100, 298}));
  EXPECT_EQ(j["folds"][1]["local"]["test"], nlohmann::json::array({320, 420}));

  // An explicit W = 1 uses the last 2 + 1 + 1 stores for walk-forward folds.
  auto w1 =
      plan_folds(sizes, plan_config(2, CvScheme::kWalkForward, 10, 0, 5, FoldUnit::kStore, 1));
  ASSERT_TRUE(w1.ok()) << w1.status().message();
  expect_fold(w1->folds[0], {100, 210}, {220, 300}, {310, 420}, 1, 4, {0, 110}, {120, 200},
              {210, 320});
}

TEST(CvPlan, HandComputedByBlock) {
  // One store of 1000: 2 folds + 1 + W = 3 -> 6 blocks at 0, 166, 333, 500, 666, 833, 1000.
  auto p = plan_folds({1000}, plan_config(2, CvScheme::kWalkForward, 20, 0, 10));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->unit, FoldUnit::kBlock);
  EXPECT_EQ(p->train_blocks, 3);
  ASSERT_EQ(p->blocks.size(), 6u);
  EXPECT_EQ(p->blocks[1], (R{166, 333}));
  EXPECT_EQ(p->blocks[5], (R{833, 1000}));
  expect_fold(p->folds[0], {0, 480}, {500, 646}, {666, 833}, 0, 1, {0, 480}, {500, 646},
              {666, 833});
  expect_fold(p->folds[1], {166, 646}, {666, 813}, {833, 1000}, 0, 1, {166, 646}, {666, 813},
              {833, 1000});
  auto e = plan_folds({1000}, plan_config(2, CvScheme::kExpanding, 20, 0, 10));
  ASSERT_TRUE(e.ok());
  expect_fold(e->folds[1], {0, 646}, {666, 813}, {833, 1000}, 0, 1, {0, 646}, {666, 813},
              {833, 1000});

  // Blocks across stores of 100, 500, 300 (offsets 0, 100, 600): 2 folds, W = 1 -> 4 blocks
  // of 225. Fold 1 trains on block 1 [225, 450) inside store 1 and tests on [675, 900) in
  // store 2, so it opens stores 1-2 and its local ranges start at 100; fold 0 tests on
  // [450, 675), which reaches into store 2, so it opens all three.
  auto s = plan_folds({100, 500, 300},
                      plan_config(2, CvScheme::kWalkForward, 10, 0, 10, FoldUnit::kBlock, 1));
  ASSERT_TRUE(s.ok()) << s.status().message();
  expect_fold(s->folds[0], {0, 215}, {225, 440}, {450, 675}, 0, 3, {0, 215}, {225, 440},
              {450, 675});
  expect_fold(s->folds[1], {225, 440}, {450, 665}, {675, 900}, 1, 3, {125, 340}, {350, 565},
              {575, 800});
}

TEST(CvPlan, ImpossiblePlansAreOneLineErrors) {
  auto one_line = [](const Status& s, const std::string& want) {
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.exit_code(), 2) << s.message();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  };
  // By store: 3 stores cannot hold 2 folds (need 2 + 1 + 1).
  one_line(
      plan_folds({100, 100, 100}, plan_config(2, CvScheme::kWalkForward, 5, 0, 4, FoldUnit::kStore))
          .status(),
      "needs at least 4 stores (got 3)");
  // By block: 5 folds + 1 + 3 = 9 blocks of 11 < gap 10 + window 16.
  one_line(plan_folds({100}, plan_config(5, CvScheme::kWalkForward, 10, 0, 16)).status(),
           "--folds 5 cuts 100 snapshots into 9 blocks of about 11");
  one_line(plan_folds({100}, plan_config(0, CvScheme::kWalkForward, 10, 0, 16)).status(),
           "--folds must be >= 1");
  // By store, a validation store (fold 1's: store 2) shorter than the gap plus a window.
  one_line(plan_folds({100, 100, 20, 100},
                      plan_config(2, CvScheme::kWalkForward, 10, 0, 16, FoldUnit::kStore))
               .status(),
           "fold 1: the validation range [200, 210) holds 10 snapshots");
}

// ---- exhaustive no-leak check ------------------------------------------------------------------

constexpr int64_t kTick = 250'000'000;
constexpr int64_t kBase = 5'000'000'000'000;

// A store of n snapshots whose mid walks so that labels of every horizon are mostly defined;
// every 17th snapshot is crossed (anchors over it are skipped).
std::string make_store(const std::string& dir, int n, int salt) {
  StoreInfo info;
  info.source_format = "test";
  info.tick_px = kTick;
  info.has_trades = true;
  auto w = StoreWriter::create(dir, info);
  EXPECT_TRUE(w.ok());
  int64_t ts = 1'000'000'000;
  for (int i = 0; i < n; ++i) {
    const int bid = (i * 7 + salt) % 5;
    const bool crossed = i % 17 == 3 + salt % 5;
    Snapshot s;
    s.ts_ns = ts += 1000;
    s.bid_px[0] = kBase + bid * kTick;
    s.bid_sz[0] = 5;
    s.ask_px[0] = kBase + (crossed ? bid - 1 : bid + 1) * kTick;
    s.ask_sz[0] = 5;
    s.mark_crossed_or_locked();
    w->on_snapshot(s);
  }
  EXPECT_TRUE(w->finish().ok());
  return dir;
}

// Every anchor of split `early` (positions and valid labels) ends before the later range
// begins, with the purge and the whole gap in between; windows stay in one store and inside
// their split. `offsets` are the global starts of the dataset's stores.
void check_no_leak(const Dataset& ds, const std::vector<uint64_t>& offsets, Split early,
                   const GlobalRange& later, uint64_t purge, uint64_t gap, int max_h,
                   const std::string& what) {
  const auto k = static_cast<uint64_t>(ds.config().sequence.window);
  const auto s = static_cast<uint64_t>(ds.config().sequence.stride);
  const auto& hz = ds.config().labels.horizons;
  const GlobalRange own = ds.range(early);
  ASSERT_FALSE(ds.anchors(early).empty()) << what << " " << split_name(early);
  for (const Anchor& a : ds.anchors(early)) {
    const auto& st = ds.store(a.store);
    ASSERT_LT(a.start + (k - 1) * s, st.reader.size()) << what << ": window crosses a store";
    for (uint64_t p = 0; p < k; ++p) {
      const uint64_t t = a.start + p * s;
      const uint64_t local = st.offset + t;  // in the fold's dataset
      const uint64_t g = offsets[a.store] + t;
      ASSERT_TRUE(local >= own.begin && local < own.end) << what;
      ASSERT_LT(g + purge, later.begin) << what << " position " << g;
      ASSERT_LT(g + gap, later.begin) << what << " position " << g;
      for (size_t h = 0; h < hz.size(); ++h) {
        if (st.labels.mask[t * hz.size() + h] == 0) continue;
        const auto hh = static_cast<uint64_t>(hz[h]);
        ASSERT_LT(t + hh, st.reader.size()) << what << ": a label crosses the store's end";
        ASSERT_LT(g + hh, later.begin) << what << ": label of " << g << " reaches " << g + hh;
      }
    }
    ASSERT_LE(offsets[a.store] + a.start + (k - 1) * s + static_cast<uint64_t>(max_h),
              later.begin - 1)
        << what;
  }
}

TEST(CvNoLeak, EveryWindowAndLabelOfEveryFold) {
  const std::string root = test::scratch_dir();
  const std::vector<std::vector<int>> datasets = {
      {40, 55, 37, 61, 48}, {300}, {90, 80, 130}, {70, 70, 70, 70, 70, 70}};
  int checked_folds = 0;
  for (size_t d = 0; d < datasets.size(); ++d) {
    std::vector<std::string> dirs;
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < datasets[d].size(); ++i) {
      dirs.push_back(make_store(root + "/d" + std::to_string(d) + "s" + std::to_string(i),
                                datasets[d][i], static_cast<int>(i + d)));
      sizes.push_back(static_cast<uint64_t>(datasets[d][i]));
    }
    std::vector<uint64_t> all_offsets{0};
    for (uint64_t s : sizes) all_offsets.push_back(all_offsets.back() + s);
    for (int folds : {1, 2, 3}) {
      for (CvScheme scheme : {CvScheme::kWalkForward, CvScheme::kExpanding}) {
        for (FoldUnit unit : {FoldUnit::kStore, FoldUnit::kBlock}) {
          for (int stride : {1, 2}) {
            for (uint64_t embargo : {uint64_t{0}, uint64_t{3}}) {
              for (int train_blocks : {0, 1}) {
                const int window = 3, max_h = 5;
                const auto purge = static_cast<uint64_t>(max_h * stride);
                const uint64_t span = static_cast<uint64_t>((window - 1) * stride) + 1;
                auto plan = plan_folds(
                    sizes, plan_config(folds, scheme, purge, embargo, span, unit, train_blocks));
                if (!plan.ok()) continue;  // too few stores or too short blocks: not a plan
                for (const Fold& f : plan->folds) {
                  const std::string what =
                      "dataset " + std::to_string(d) + " folds " + std::to_string(folds) + " " +
                      cv_scheme_name(scheme) + " " + fold_unit_name(unit) + " stride " +
                      std::to_string(stride) + " embargo " + std::to_string(embargo) + " W " +
                      std::to_string(train_blocks) + " fold " + std::to_string(f.index);
                  DatasetConfig c;
                  c.sequence.window = window;
                  c.sequence.stride = stride;
                  c.labels.horizons = {2, max_h};
                  c.split.explicit_ranges = true;
                  c.split.train_range = f.local_train;
                  c.split.validation_range = f.local_validation;
                  c.split.test_range = f.local_test;
                  std::vector<std::string> fold_dirs(
                      dirs.begin() + static_cast<std::ptrdiff_t>(f.first_store),
                      dirs.begin() + static_cast<std::ptrdiff_t>(f.end_store));
                  auto ds = Dataset::open(fold_dirs, c);
                  ASSERT_TRUE(ds.ok()) << what << ": " << ds.status().message();
                  EXPECT_EQ(ds->range(Split::kTrain), f.local_train) << what;
                  EXPECT_EQ(ds->range(Split::kValidation), f.local_validation) << what;
                  EXPECT_EQ(ds->range(Split::kTest), f.local_test) << what;
                  // Local + the first store's offset = global.
                  EXPECT_EQ(f.train.begin - f.local_train.begin, all_offsets[f.first_store]);
                  if (f.index == folds - 1) {
                    EXPECT_EQ(f.test.end, all_offsets.back()) << what << ": test ends the data";
                  }
                  std::vector<uint64_t> offsets(
                      all_offsets.begin() + static_cast<std::ptrdiff_t>(f.first_store),
                      all_offsets.end());
                  check_no_leak(*ds, offsets, Split::kTrain, f.validation, purge, plan->gap, max_h,
                                what + " train->validation");
                  check_no_leak(*ds, offsets, Split::kTrain, f.test, purge, plan->gap, max_h,
                                what + " train->test");
                  check_no_leak(*ds, offsets, Split::kValidation, f.test, purge, plan->gap, max_h,
                                what + " validation->test");
                  if (HasFatalFailure()) return;
                  ++checked_folds;
                }
                // Test blocks of consecutive folds tile the end of the data without overlap.
                for (size_t i = 1; i < plan->folds.size(); ++i) {
                  EXPECT_EQ(plan->folds[i].test.begin, plan->folds[i - 1].test.end);
                }
              }
            }
          }
        }
      }
    }
  }
  // Every (layout, folds, scheme, unit, stride, embargo, W) that is a valid plan: 592 folds.
  EXPECT_EQ(checked_folds, 592);
}

TEST(CvNoLeak, DatasetRejectsRangesWithoutThePurgeGap) {
  const std::string dir = make_store(test::scratch_dir() + "/s", 200, 0);
  DatasetConfig c;
  c.sequence.window = 3;
  c.labels.horizons = {2, 5};
  c.split.explicit_ranges = true;
  c.split.train_range = {0, 100};
  c.split.validation_range = {104, 150};  // 4 < purge 5
  c.split.test_range = {155, 200};
  auto ds = Dataset::open({dir}, c);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("validation range begins at 104, less than the purge gap 5"),
            std::string::npos)
      << ds.status().message();
  c.split.validation_range = {105, 150};
  c.split.test_range = {154, 201};
  ds = Dataset::open({dir}, c);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("test range [154, 201) is not inside"), std::string::npos)
      << ds.status().message();
  c.split.test_range = {155, 200};
  ds = Dataset::open({dir}, c);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->range(Split::kValidation), (R{105, 150}));
}

TEST(CvConfig, ExplicitRangesRoundTripThroughTheTrainingConfig) {
  TrainConfig c;
  EXPECT_FALSE(c.to_json().contains("split_ranges"));  // the default form is unchanged
  c.split.explicit_ranges = true;
  c.split.train_range = {5, 1000};
  c.split.validation_range = {7000, 9000};
  c.split.test_range = {15000, 20000};
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j["split_ranges"]["validation"], nlohmann::json::array({7000, 9000}));
  auto back = TrainConfig::from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->split.explicit_ranges);
  EXPECT_EQ(back->split.train_range, (R{5, 1000}));
  EXPECT_EQ(back->split.test_range, (R{15000, 20000}));
  EXPECT_EQ(back->to_json(), j);
  EXPECT_TRUE(back->validate().ok());
  back->split.validation_range = {9000, 9000};
  EXPECT_FALSE(back->validate().ok());
}

// ---- pooled statistics -------------------------------------------------------------------------

TEST(CvPairedBootstrap, ResamplesTheRowsOfBootstrapMetrics) {
  const std::vector<int> hz = {3, 7};
  const size_t rows = 600;
  std::vector<float> a(rows * 2), b(rows * 2), neg(rows * 2);
  std::vector<uint8_t> y(rows * 2), m(rows * 2);
  Rng rng(11);
  for (size_t i = 0; i < rows * 2; ++i) {
    y[i] = rng.uniform(2) != 0 ? 1 : 0;
    m[i] = rng.uniform(10) != 0 ? 1 : 0;
    a[i] = static_cast<float>(rng.uniform_real(-1, 1) + 0.6 * y[i]);
    b[i] = static_cast<float>(rng.uniform(4)) + (y[i] != 0 && rng.uniform(3) == 0 ? 1.0f : 0.0f);
    neg[i] = -a[i];
  }
  BootstrapOptions o;
  o.replicates = 60;
  o.seed = 5;
  o.threads = 2;
  auto p = paired_auc_bootstrap(a, b, y, m, hz, o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->block_rows, 7);
  auto ba = bootstrap_metrics(std::span<const float>(a), y, m, hz, ScoreKind::kLogit, o);
  auto bb = bootstrap_metrics(std::span<const float>(b), y, m, hz, ScoreKind::kLogit, o);
  ASSERT_TRUE(ba.ok() && bb.ok());
  for (size_t h = 0; h < 2; ++h) {
    const auto& ph = p->horizons[h];
    // Same resampled rows, same arithmetic: identical intervals (b has many tied scores).
    EXPECT_EQ(ph.a.lo, ba->horizons[h].auc.lo);
    EXPECT_EQ(ph.a.hi, ba->horizons[h].auc.hi);
    EXPECT_EQ(ph.b.lo, bb->horizons[h].auc.lo);
    EXPECT_EQ(ph.b.hi, bb->horizons[h].auc.hi);
    std::vector<float> ca, cb;
    std::vector<uint8_t> cy, cm;
    for (size_t r = 0; r < rows; ++r) {
      ca.push_back(a[r * 2 + h]);
      cb.push_back(b[r * 2 + h]);
      cy.push_back(y[r * 2 + h]);
      cm.push_back(m[r * 2 + h]);
    }
    EXPECT_DOUBLE_EQ(ph.auc_a, roc_auc(std::span<const float>(ca), cy, cm));
    EXPECT_DOUBLE_EQ(ph.auc_b, roc_auc(std::span<const float>(cb), cy, cm));
    EXPECT_DOUBLE_EQ(ph.diff, ph.auc_a - ph.auc_b);
    EXPECT_LE(ph.d.lo, ph.d.hi);
    EXPECT_EQ(ph.d.replicates, 60);
  }
  // Against itself the difference is exactly 0; against its negation AUC(-a) = 1 - AUC(a), so
  // the difference is 2 AUC(a) - 1 in every replicate and its percentiles follow.
  auto same = paired_auc_bootstrap(a, a, y, m, hz, o);
  auto flip = paired_auc_bootstrap(a, neg, y, m, hz, o);
  ASSERT_TRUE(same.ok() && flip.ok());
  for (size_t h = 0; h < 2; ++h) {
    EXPECT_EQ(same->horizons[h].d.lo, 0.0);
    EXPECT_EQ(same->horizons[h].d.hi, 0.0);
    EXPECT_NEAR(flip->horizons[h].d.lo, 2 * ba->horizons[h].auc.lo - 1, 1e-12);
    EXPECT_NEAR(flip->horizons[h].d.hi, 2 * ba->horizons[h].auc.hi - 1, 1e-12);
  }
  EXPECT_NEAR(flip->mean_diff, (2 * p->horizons[0].auc_a - 1 + 2 * p->horizons[1].auc_a - 1) / 2,
              1e-12);
  EXPECT_FALSE(paired_auc_bootstrap(a, b, std::span<const uint8_t>(y).first(10), m, hz, o).ok());
}

// Three rows of two horizons: their labels, masks and base rates (the logits are each test's).
EvalRows three_rows() {
  EvalRows r;
  r.horizons = {10, 30};
  r.base_rates = {0.25, 0.5};
  r.labels = {1, 0, 1, 1, 0, 0};
  r.mask = {1, 1, 0, 1, 1, 0};
  return r;
}

TEST(CvRows, RoundTripAndCorruption) {
  EvalRows r = three_rows();
  r.model_logits = {0.5f, -1.0f, std::nanf(""), 2.0f, 1e-30f, -0.0f};
  r.baseline_names = {"logreg", "gbdt_lags"};
  r.baseline_logits = {{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {1, 2, 3, 4, 5, 6}};
  const std::string path = test::scratch_dir() + "/rows.bin";
  ASSERT_TRUE(write_eval_rows(path, r).ok());
  auto back = read_eval_rows(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rows(), 3u);
  EXPECT_EQ(back->horizons, r.horizons);
  EXPECT_EQ(back->base_rates, r.base_rates);
  EXPECT_EQ(back->labels, r.labels);
  EXPECT_EQ(back->mask, r.mask);
  EXPECT_EQ(back->baseline_names, r.baseline_names);
  EXPECT_EQ(back->baseline_logits, r.baseline_logits);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::memcmp(&back->model_logits[i], &r.model_logits[i], sizeof(float)), 0) << i;
  }
  auto bytes = read_file(path);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(write_file_atomic(path, bytes->substr(0, bytes->size() - 1)).ok());
  auto bad = read_eval_rows(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("CRC32"), std::string::npos);
  // Every single-bit flip, anywhere (header, logits, labels, masks, the CRC itself), is
  // refused: before the CRC a flipped logit bit pooled into other AUCs with exit 0.
  for (size_t at = 0; at < bytes->size(); ++at) {
    std::string flipped = *bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (at % 8)));
    ASSERT_TRUE(write_file_atomic(path, flipped).ok());
    auto refused = read_eval_rows(path);
    ASSERT_FALSE(refused.ok()) << "byte " << at;
    EXPECT_NE(refused.status().message().find(at < 8 ? "magic" : "CRC32"), std::string::npos)
        << refused.status().message();
  }
  ASSERT_TRUE(write_file_atomic(path, "not rows").ok());
  EXPECT_NE(read_eval_rows(path).status().message().find("magic"), std::string::npos);
}

// The model stack's logits travel with the rows (version 4); a version-3 file (a fold scored
// before the stacks: no stacked flag, no stacked logits) still reads, without a stack.
TEST(CvRows, StackedLogitsRoundTripAndVersion3StillReads) {
  EvalRows r = three_rows();
  r.model_logits = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, -0.5f};
  r.baseline_names = {"gbdt_lags"};
  r.baseline_logits = {{1, 2, 3, 4, 5, 6}};
  r.stacked_logits = {-0.75f, 0.125f, 3.5f, -2.0f, 0.0f, 9.0f};
  const std::string path = test::scratch_dir() + "/rows.bin";
  ASSERT_TRUE(write_eval_rows(path, r).ok());
  auto back = read_eval_rows(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->stacked_logits, r.stacked_logits);
  EXPECT_EQ(back->baseline_logits, r.baseline_logits);
  EXPECT_EQ(back->labels, r.labels);

  // Version 3: the same rows without a stack, its header one word shorter.
  r.stacked_logits.clear();
  ASSERT_TRUE(write_eval_rows(path, r).ok());
  auto v4 = read_file(path);
  ASSERT_TRUE(v4.ok());
  std::string v3 = v4->substr(0, v4->size() - 4);  // without the CRC
  ASSERT_EQ(v3.substr(0, 8), "FXTCVRW4");
  v3[7] = '3';
  uint32_t flag = 1;
  std::memcpy(&flag, v3.data() + 16, 4);
  EXPECT_EQ(flag, 0u);
  v3.erase(16, 4);
  const uint32_t crc = crc32_update(0, v3.data(), v3.size());
  v3.append(reinterpret_cast<const char*>(&crc), sizeof(crc));
  ASSERT_TRUE(write_file_atomic(path, v3).ok());
  auto old = read_eval_rows(path);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->stacked_logits.empty());
  EXPECT_EQ(old->model_logits, r.model_logits);
  EXPECT_EQ(old->baseline_logits, r.baseline_logits);
  EXPECT_EQ(old->mask, r.mask);
}

}  // namespace
}  // namespace fxt
