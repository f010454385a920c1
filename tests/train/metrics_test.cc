// Evaluation metrics: hand-computed AUC with ties, masks, one-class NaN, log loss, Brier,
// accuracy, ECE and the reliability table, logits versus probabilities, the base-rate
// predictor, a deterministic block bootstrap, and a timing print for a million rows.
#include <chrono>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "train/metrics.h"

namespace fxt {
namespace {

using Bytes = std::vector<uint8_t>;
using Doubles = std::vector<double>;

TEST(Auc, DistinctScores) {
  // Positives 0.35 (beats 0.1, loses to 0.4) and 0.8 (beats both): 3 of 4 pairs.
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.1, 0.4, 0.35, 0.8}, Bytes{0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.1, 0.2, 0.8, 0.9}, Bytes{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.9, 0.8, 0.2, 0.1}, Bytes{0, 0, 1, 1}), 0.0);
}

TEST(Auc, TiesCountHalf) {
  // Positive 0.5 ties both negatives (0.5 + 0.5), positive 0.9 beats both (2): 3/4.
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.5, 0.5, 0.5, 0.9}, Bytes{0, 1, 0, 1}), 0.75);
  // Everything tied: 0.5.
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.5, 0.5, 0.5, 0.5}, Bytes{0, 1, 0, 1}), 0.5);
  // Midranks: 0.1 -> 1, the three 0.3 -> 3, 0.9 -> 5; positive rank sum 3 + 3 + 5 = 11;
  // U = 11 - 3·4/2 = 5; AUC = 5 / (3·2).
  EXPECT_DOUBLE_EQ(roc_auc(Doubles{0.1, 0.3, 0.3, 0.3, 0.9}, Bytes{0, 1, 0, 1, 1}), 5.0 / 6.0);
  // Float scores take the same path.
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{0.1f, 0.3f, 0.3f, 0.3f, 0.9f}, Bytes{0, 1, 0, 1, 1}),
                   5.0 / 6.0);
}

TEST(Auc, MaskRespected) {
  Doubles s{0.1, 0.4, 0.35, 0.8, 0.99};
  Bytes y{0, 0, 1, 1, 0};
  // Unmasked, the negative 0.99 beats both positives: (1 + 2) / 6.
  EXPECT_DOUBLE_EQ(roc_auc(s, y), 0.5);
  EXPECT_DOUBLE_EQ(roc_auc(s, y, Bytes{1, 1, 1, 1, 0}), 0.75);
  // Labels other than 0 count as positive.
  EXPECT_DOUBLE_EQ(roc_auc(s, Bytes{0, 0, 7, 1, 0}, Bytes{1, 1, 1, 1, 0}), 0.75);
}

TEST(Auc, OneClassIsNaN) {
  EXPECT_TRUE(std::isnan(roc_auc(Doubles{0.1, 0.2, 0.3}, Bytes{1, 1, 1})));
  EXPECT_TRUE(std::isnan(roc_auc(Doubles{0.1, 0.2, 0.3}, Bytes{0, 0, 0})));
  // Both classes present but the only negative masked out.
  EXPECT_TRUE(std::isnan(roc_auc(Doubles{0.1, 0.2, 0.3}, Bytes{0, 1, 1}, Bytes{0, 1, 1})));
  EXPECT_TRUE(std::isnan(roc_auc(Doubles{}, Bytes{})));
}

// p = {0.15, 0.65, 0.92, 0.45, 0.62}, y = {0, 1, 1, 1, 0}: no value on a bin edge.
const Doubles kP{0.15, 0.65, 0.92, 0.45, 0.62};
const Bytes kY{0, 1, 1, 1, 0};

void expect_hand_example(const HorizonMetrics& m) {
  EXPECT_EQ(m.n_valid, 5);
  EXPECT_EQ(m.n_positive, 3);
  EXPECT_DOUBLE_EQ(m.positive_rate, 0.6);
  // Positives 0.65 and 0.92 beat both negatives, 0.45 beats 0.15 only: 5/6.
  EXPECT_NEAR(m.auc, 5.0 / 6.0, 1e-15);
  double ll =
      -(std::log(0.85) + std::log(0.65) + std::log(0.92) + std::log(0.45) + std::log(0.38)) / 5;
  EXPECT_NEAR(m.log_loss, ll, 1e-12);
  // (0.15² + 0.35² + 0.08² + 0.55² + 0.62²) / 5 = 0.8383 / 5.
  EXPECT_NEAR(m.brier, 0.16766, 1e-12);
  // Right: 0.15→0, 0.65→1, 0.92→1; wrong: 0.45→0 (y 1), 0.62→1 (y 0).
  EXPECT_DOUBLE_EQ(m.accuracy, 0.6);
  // Bins 1: {0.15|0}, 4: {0.45|1}, 6: {0.65|1, 0.62|0}, 9: {0.92|1}.
  // ECE = (0.15 + 0.55 + 2·|0.635 − 0.5| + 0.08) / 5 = 1.05 / 5.
  EXPECT_NEAR(m.ece, 0.21, 1e-12);
  const auto& r = m.reliability;
  for (int b : {0, 2, 3, 5, 7, 8}) {
    EXPECT_EQ(r[b].count, 0) << b;
    EXPECT_TRUE(std::isnan(r[b].mean_predicted)) << b;
  }
  EXPECT_EQ(r[1].count, 1);
  EXPECT_NEAR(r[1].mean_predicted, 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(r[1].observed_frequency, 0.0);
  EXPECT_EQ(r[6].count, 2);
  EXPECT_NEAR(r[6].mean_predicted, 0.635, 1e-12);
  EXPECT_DOUBLE_EQ(r[6].observed_frequency, 0.5);
  EXPECT_EQ(r[9].count, 1);
  EXPECT_DOUBLE_EQ(r[9].observed_frequency, 1.0);
  EXPECT_DOUBLE_EQ(r[6].lo, 0.6);
  EXPECT_DOUBLE_EQ(r[6].hi, 0.7);
}

TEST(HorizonMetrics, HandComputedFromProbabilities) {
  HorizonMetrics m = horizon_metrics(kP, kY);
  expect_hand_example(m);
  EXPECT_EQ(m.n_nan_scores, 0);
}

TEST(HorizonMetrics, SameFromLogits) {
  Doubles z;
  for (double p : kP) z.push_back(std::log(p / (1 - p)));
  expect_hand_example(horizon_metrics(z, kY, {}, ScoreKind::kLogit));
}

TEST(HorizonMetrics, MaskAndNaNScoresExcluded) {
  Doubles p = kP;
  Bytes y = kY;
  Bytes mask(5, 1);
  p.push_back(0.99);  // masked
  y.push_back(0);
  mask.push_back(0);
  p.push_back(std::nan(""));  // valid label, NaN score
  y.push_back(1);
  mask.push_back(1);
  HorizonMetrics m = horizon_metrics(p, y, mask);
  expect_hand_example(m);
  EXPECT_EQ(m.n_nan_scores, 1);
}

TEST(HorizonMetrics, LogLossClampAndLogitExactness) {
  // p = 1 for a negative: clamped to 1 − 1e-7.
  HorizonMetrics m = horizon_metrics(Doubles{1.0}, Bytes{0});
  EXPECT_NEAR(m.log_loss, -std::log(1e-7), 1e-6);
  EXPECT_EQ(m.reliability[9].count, 1);  // p = 1 lands in the last bin
  // A logit of 40 for a negative costs softplus(40) ≈ 40, not the clamped 16.1.
  m = horizon_metrics(Doubles{40.0}, Bytes{0}, {}, ScoreKind::kLogit);
  EXPECT_NEAR(m.log_loss, 40.0, 1e-12);
  // Infinite logits fall back to the clamped probability.
  m = horizon_metrics(Doubles{INFINITY}, Bytes{0}, {}, ScoreKind::kLogit);
  EXPECT_NEAR(m.log_loss, -std::log(1e-7), 1e-6);
  // Accuracy at exactly 0.5 predicts 0.
  m = horizon_metrics(Doubles{0.5, 0.5}, Bytes{0, 1});
  EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
  EXPECT_NEAR(m.log_loss, std::log(2.0), 1e-15);
  EXPECT_DOUBLE_EQ(m.brier, 0.25);
}

TEST(HorizonMetrics, NoValidRows) {
  HorizonMetrics m = horizon_metrics(Doubles{0.3, 0.4}, Bytes{0, 1}, Bytes{0, 0});
  EXPECT_EQ(m.n_valid, 0);
  EXPECT_TRUE(std::isnan(m.auc));
  EXPECT_TRUE(std::isnan(m.log_loss));
  EXPECT_TRUE(std::isnan(m.ece));
  nlohmann::json j = m.to_json();
  EXPECT_TRUE(j["auc"].is_null());
  EXPECT_EQ(j["n_valid"], 0);
  EXPECT_EQ(j["reliability"].size(), 10u);
}

TEST(Metrics, RowMajorHorizonsAndMeanAuc) {
  // Horizon 10 is the AUC example (0.75); horizon 50 has one class (NaN, left out).
  Doubles s0{0.1, 0.4, 0.35, 0.8}, s1{0.2, 0.3, 0.4, 0.5};
  Bytes y0{0, 0, 1, 1}, y1{1, 1, 1, 1};
  Doubles scores;
  Bytes labels;
  for (size_t i = 0; i < 4; ++i) {
    scores.insert(scores.end(), {s0[i], s1[i]});
    labels.insert(labels.end(), {y0[i], y1[i]});
  }
  std::vector<int> horizons{10, 50};
  auto m = compute_metrics(scores, labels, {}, horizons);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->horizons.size(), 2u);
  EXPECT_EQ(m->horizons[0].horizon, 10);
  EXPECT_DOUBLE_EQ(m->horizons[0].auc, 0.75);
  EXPECT_TRUE(std::isnan(m->horizons[1].auc));
  EXPECT_DOUBLE_EQ(m->horizons[1].positive_rate, 1.0);
  EXPECT_DOUBLE_EQ(m->mean_auc, 0.75);
  EXPECT_EQ(m->auc_defined, 1);
  nlohmann::json j = m->to_json();
  EXPECT_DOUBLE_EQ(j["mean_auc"].get<double>(), 0.75);
  EXPECT_TRUE(j["horizons"][1]["auc"].is_null());

  auto bad = compute_metrics(scores, Bytes(7, 0), {}, horizons);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "compute_metrics: 7 labels is not a multiple of 2 horizons");
  bad = compute_metrics(scores, labels, Bytes(3, 1), horizons);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "compute_metrics: 3 mask entries but 8 labels");
}

TEST(Metrics, BaseRatePredictor) {
  // Training: 1 positive of 4 (horizon 1); 3 of 4 with one masked → 2/3 (horizon 2).
  Bytes train{1, 1, 0, 1, 0, 0, 0, 1};
  Bytes train_mask{1, 1, 1, 1, 1, 1, 1, 0};
  auto rates = positive_rates(train, train_mask, 2);
  ASSERT_TRUE(rates.ok());
  EXPECT_DOUBLE_EQ((*rates)[0], 0.25);
  EXPECT_DOUBLE_EQ((*rates)[1], 2.0 / 3.0);

  Bytes test{1, 0, 0, 1, 0, 1};  // horizon 1: {1, 0, 0}; horizon 2: {0, 1, 1}
  std::vector<int> horizons{1, 2};
  auto m = base_rate_metrics(*rates, test, {}, horizons);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const HorizonMetrics& h0 = m->horizons[0];
  EXPECT_DOUBLE_EQ(h0.auc, 0.5);  // all scores tie
  EXPECT_NEAR(h0.log_loss, -(std::log(0.25) + 2 * std::log(0.75)) / 3, 1e-15);
  EXPECT_NEAR(h0.brier, (0.75 * 0.75 + 2 * 0.25 * 0.25) / 3, 1e-15);
  EXPECT_NEAR(h0.accuracy, 2.0 / 3.0, 1e-15);  // predicts 0 everywhere
  EXPECT_NEAR(h0.ece, std::abs(0.25 - 1.0 / 3.0), 1e-15);
  EXPECT_NEAR(m->horizons[1].accuracy, 2.0 / 3.0, 1e-15);  // predicts 1 everywhere
  EXPECT_DOUBLE_EQ(m->mean_auc, 0.5);
}

TEST(Percentile, LinearInterpolation) {
  Doubles v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile(v, 2.5), 1.075);
  Doubles empty;
  EXPECT_TRUE(std::isnan(percentile(empty, 50)));
}

TEST(SplitMix64, ReferenceStream) {
  SplitMix64 r(1234567);
  EXPECT_EQ(r.next(), 6457827717110365317ULL);
  EXPECT_EQ(r.next(), 3203168211198807973ULL);
  EXPECT_EQ(r.next(), 9817491932198370423ULL);
  SplitMix64 b(9);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(b.below(7), 7u);
}

// Autocorrelated labels: a slow random walk decides the sign, the score sees it noisily.
struct Synthetic {
  std::vector<float> scores;  // [rows][2]
  Bytes labels, mask;
};
Synthetic make_synthetic(size_t rows, uint64_t seed) {
  Synthetic s;
  SplitMix64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
  double walk = 0;
  for (size_t i = 0; i < rows; ++i) {
    walk = 0.98 * walk + (uniform() - 0.5);
    for (int h = 0; h < 2; ++h) {
      bool up = walk + 0.3 * (uniform() - 0.5) > 0;
      double logit = (up ? 0.6 : -0.6) + 2.0 * (uniform() - 0.5) * (h + 1);
      s.scores.push_back(static_cast<float>(logit));
      s.labels.push_back(up ? 1 : 0);
      s.mask.push_back(uniform() < 0.95 ? 1 : 0);
    }
  }
  return s;
}

TEST(Bootstrap, DeterministicAndContainsPointEstimate) {
  Synthetic d = make_synthetic(20000, 3);
  std::vector<int> horizons{10, 100};
  auto point = compute_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit);
  ASSERT_TRUE(point.ok());

  BootstrapOptions o;
  o.replicates = 100;
  o.seed = 42;
  o.block_rows = 20;  // raised to the largest horizon
  auto a = bootstrap_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->block_rows, 100);
  o.threads = 3;
  auto b = bootstrap_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit, o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->to_json().dump(), b->to_json().dump());  // same seed, any thread count

  for (size_t h = 0; h < 2; ++h) {
    const HorizonIntervals& iv = a->horizons[h];
    const HorizonMetrics& pm = point->horizons[h];
    EXPECT_EQ(iv.auc.replicates, 100);
    EXPECT_LT(iv.auc.lo, pm.auc) << h;
    EXPECT_GT(iv.auc.hi, pm.auc) << h;
    EXPECT_LT(iv.log_loss.lo, pm.log_loss) << h;
    EXPECT_GT(iv.log_loss.hi, pm.log_loss) << h;
    EXPECT_LT(iv.brier.lo, pm.brier) << h;
    EXPECT_GT(iv.brier.hi, pm.brier) << h;
    EXPECT_LT(iv.auc.hi - iv.auc.lo, 0.1) << h;
  }
  EXPECT_LT(a->mean_auc.lo, point->mean_auc);
  EXPECT_GT(a->mean_auc.hi, point->mean_auc);

  o.seed = 43;
  auto c = bootstrap_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->horizons[0].auc.lo, c->horizons[0].auc.lo);

  o.replicates = 0;
  EXPECT_FALSE(bootstrap_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit, o).ok());
}

TEST(Bootstrap, BlocksWiderThanRowsAndOneClass) {
  BootstrapOptions o;
  o.replicates = 10;
  std::vector<int> horizons{50};
  auto r = bootstrap_metrics(Doubles{0.2, 0.4, 0.6}, Bytes{1, 1, 1}, {}, horizons,
                             ScoreKind::kProbability, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->horizons[0].auc.replicates, 0);  // never defined
  EXPECT_TRUE(std::isnan(r->horizons[0].auc.lo));
  EXPECT_EQ(r->horizons[0].log_loss.replicates, 10);
  EXPECT_TRUE(r->to_json()["horizons"][0]["auc"]["lo"].is_null());
}

TEST(Metrics, MillionRowTiming) {
  const size_t rows = 1000000;
  Synthetic d = make_synthetic(rows, 11);
  std::vector<int> horizons{10, 100};
  auto t0 = std::chrono::steady_clock::now();
  auto m = compute_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(m.ok());
  BootstrapOptions o;
  o.replicates = 50;
  o.threads = 2;
  auto b = bootstrap_metrics(d.scores, d.labels, d.mask, horizons, ScoreKind::kLogit, o);
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.ok());
  auto ms = [](auto dt) { return std::chrono::duration<double, std::milli>(dt).count(); };
  fmt::print(
      "[ timing ] metrics, {} rows x {} horizons: {:.0f} ms; bootstrap {} replicates: "
      "{:.0f} ms; auc {:.4f} [{:.4f}, {:.4f}]\n",
      rows, horizons.size(), ms(t1 - t0), o.replicates, ms(t2 - t1), m->horizons[0].auc,
      b->horizons[0].auc.lo, b->horizons[0].auc.hi);
}

}  // namespace
}  // namespace fxt
