// The baselines of DESIGN §6 (src/train/logistic_fit.h, gbdt.h, baselines.h, comparison.h): the
// exact logistic solution against an independent solve, GBDT determinism and fit, the split
// holding against a label-leaking feature, checkpoint round trips and the verdict lines.
#include "train/baselines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "test_util.h"
#include "train/comparison.h"
#include "train/logistic_fit.h"
#include "train/metrics.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;

double sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// Standard normal (Box-Muller).
double normal(Rng& rng) {
  const double u = 1.0 - rng.unit(), v = rng.unit();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

// A small separable-with-noise problem: y ~ Bernoulli(sigmoid(1.5 x0 - 2 x1 + 0.3)).
void make_problem(int n, uint64_t seed, DesignMatrix* x, std::vector<uint8_t>* y) {
  Rng rng(seed);
  x->rows = n;
  x->cols = 3;
  x->values.resize(static_cast<size_t>(n) * 3);
  y->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double* r = x->values.data() + static_cast<size_t>(i) * 3;
    for (int j = 0; j < 3; ++j) r[j] = normal(rng);
    (*y)[static_cast<size_t>(i)] = rng.unit() < sigmoid(1.5 * r[0] - 2.0 * r[1] + 0.3) ? 1 : 0;
  }
}

// The penalised objective's gradient, computed here independently of the solver.
std::vector<double> gradient(const LogisticSolution& s, const DesignMatrix& x,
                             const std::vector<uint8_t>& y, const std::vector<uint8_t>& w,
                             double lambda) {
  std::vector<double> g(static_cast<size_t>(x.cols) + 1, 0.0);
  double n = 0;
  for (int64_t i = 0; i < x.rows; ++i) {
    if (w[static_cast<size_t>(i)] == 0) continue;
    n += 1;
    const double r = sigmoid(logistic_logit(s, x.row(i))) - y[static_cast<size_t>(i)];
    for (int64_t j = 0; j < x.cols; ++j) g[static_cast<size_t>(j)] += r * x.row(i)[j];
    g.back() += r;
  }
  for (int64_t j = 0; j < x.cols; ++j) {
    g[static_cast<size_t>(j)] =
        g[static_cast<size_t>(j)] / n + lambda * s.weights[static_cast<size_t>(j)];
  }
  g.back() /= n;
  return g;
}

TEST(LogisticFit, MatchesAnIndependentGradientDescentSolve) {
  DesignMatrix x;
  std::vector<uint8_t> y;
  make_problem(400, 3, &x, &y);
  std::vector<uint8_t> w(y.size(), 1);
  w[5] = w[17] = 0;  // rows left out must not count
  const double lambda = 0.01;
  auto s = fit_logistic(x, y, w, lambda);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_LT(s->gradient_norm, 1e-8);
  EXPECT_LE(s->iterations, 15);  // Newton converges quadratically
  for (double g : gradient(*s, x, y, w, lambda)) EXPECT_NEAR(g, 0.0, 1e-8);

  // Independent solve: plain gradient descent (step 1 / L, L = max eigenvalue bound) for
  // many iterations from zero, which converges linearly to the same unique optimum.
  LogisticSolution gd;
  gd.weights.assign(3, 0.0);
  for (int it = 0; it < 20000; ++it) {
    const std::vector<double> g = gradient(gd, x, y, w, lambda);
    for (size_t j = 0; j < 3; ++j) gd.weights[j] -= 1.5 * g[j];
    gd.bias -= 1.5 * g[3];
  }
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(s->weights[j], gd.weights[j], 1e-6) << j;
  EXPECT_NEAR(s->bias, gd.bias, 1e-6);
  // The truth is recovered in sign and rough size (shrunk by the penalty).
  EXPECT_GT(s->weights[0], 0.8);
  EXPECT_LT(s->weights[1], -1.1);
  EXPECT_NEAR(s->weights[2], 0.0, 0.3);

  // A warm start reaches the same optimum.
  auto again = fit_logistic(x, y, w, lambda, {}, &gd);
  ASSERT_TRUE(again.ok());
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(again->weights[j], s->weights[j], 1e-7);
}

TEST(LogisticFit, ReusingTheHessianReachesThePlainNewtonOptimumWithFewerMatrices) {
  // A wider problem (the GAM's shape: many correlated columns) fit down the default path both
  // ways: the same penalty, the same coefficients to the tolerance's scale, fewer O(n p^2)
  // products.
  const int n = 3000, p = 24;
  Rng rng(21);
  DesignMatrix xt, xv;
  std::vector<uint8_t> yt, yv;
  for (DesignMatrix* x : {&xt, &xv}) {
    std::vector<uint8_t>* y = x == &xt ? &yt : &yv;
    x->rows = n;
    x->cols = p;
    x->values.resize(static_cast<size_t>(n) * p);
    for (int i = 0; i < n; ++i) {
      double* r = x->values.data() + static_cast<size_t>(i) * p;
      const double u = normal(rng);
      for (int j = 0; j < p; ++j) r[j] = std::max(0.0, u - (j - p / 2) * 0.2) + 0.3 * normal(rng);
      y->push_back(rng.unit() < sigmoid(2.0 * std::abs(u) - 1.5 + r[0] - r[p - 1]) ? 1 : 0);
    }
  }
  const std::vector<uint8_t> wt(yt.size(), 1), wv(yv.size(), 1);
  const std::vector<double> grid = default_lambda_grid();
  LogisticOptions plain;
  plain.reuse_hessian = false;
  auto a = fit_logistic_path(xt, yt, wt, xv, yv, wv, grid);
  auto b = fit_logistic_path(xt, yt, wt, xv, yv, wv, grid, plain);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->best.lambda, b->best.lambda);
  EXPECT_LT(a->best.gradient_norm, 1e-8);
  EXPECT_LT(b->best.gradient_norm, 1e-8);
  EXPECT_EQ(b->best.hessians, b->best.iterations);  // plain Newton: one matrix per step
  EXPECT_LT(a->best.hessians, b->best.hessians);
  for (int j = 0; j < p; ++j)
    EXPECT_NEAR(a->best.weights[static_cast<size_t>(j)], b->best.weights[static_cast<size_t>(j)],
                1e-6)
        << j;
  EXPECT_NEAR(a->best.bias, b->best.bias, 1e-6);
  for (size_t i = 0; i < grid.size(); ++i)
    EXPECT_NEAR(a->validation_log_loss[i], b->validation_log_loss[i], 1e-8) << i;
}

TEST(LogisticFit, PathPicksThePenaltyWithTheLowestValidationLoss) {
  DesignMatrix xt, xv;
  std::vector<uint8_t> yt, yv;
  make_problem(300, 5, &xt, &yt);
  make_problem(300, 6, &xv, &yv);
  std::vector<uint8_t> wt(yt.size(), 1), wv(yv.size(), 1);
  const std::vector<double> grid = default_lambda_grid();
  auto p = fit_logistic_path(xt, yt, wt, xv, yv, wv, grid);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->validation_log_loss.size(), grid.size());
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    if (p->validation_log_loss[i] < p->validation_log_loss[best]) best = i;
  }
  EXPECT_EQ(p->best.lambda, grid[best]);
  EXPECT_NEAR(logistic_log_loss(p->best, xv, yv, wv), p->validation_log_loss[best], 1e-12);
}

TEST(LogisticFit, RefusesEmptyOrBadInput) {
  DesignMatrix x;
  std::vector<uint8_t> y;
  make_problem(10, 1, &x, &y);
  const std::vector<uint8_t> none(10, 0), all(10, 1);
  EXPECT_FALSE(fit_logistic(x, y, none, 0.1).ok());
  EXPECT_FALSE(fit_logistic(x, y, all, 0.0).ok());
  EXPECT_FALSE(fit_logistic(x, y, std::vector<uint8_t>(9, 1), 0.1).ok());
}

// XOR of two signs: no linear signal, trees find it.
void xor_rows(int n, uint64_t seed, std::vector<float>* x, std::vector<float>* y) {
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    const double a = normal(rng), b = normal(rng);
    x->push_back(static_cast<float>(a));
    x->push_back(static_cast<float>(b));
    const bool up = (a > 0) != (b > 0);
    y->push_back((rng.unit() < (up ? 0.9 : 0.1)) ? 1.0f : 0.0f);
  }
}

TEST(Gbdt, DeterministicForASeedAndLearnsANonLinearRule) {
  if (!gbdt_available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  std::vector<float> xt, yt, xv, yv;
  xor_rows(4000, 1, &xt, &yt);
  xor_rows(2000, 2, &xv, &yv);
  GbdtParams p;
  p.threads = 2;
  auto a = fit_gbdt(xt, yt, xv, yv, 2, p);
  auto b = fit_gbdt(xt, yt, xv, yv, 2, p);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->bytes, b->bytes);  // bit-identical model for the same seed and data
  EXPECT_EQ(a->rounds, b->rounds);
  EXPECT_GT(a->rounds, 1);
  EXPECT_LT(a->rounds, p.max_rounds);  // stopped early on the validation loss
  auto lg = gbdt_logits(*a, xv, 2, 1);
  ASSERT_TRUE(lg.ok()) << lg.status().message();
  std::vector<uint8_t> labels(yv.begin(), yv.end());
  EXPECT_GT(roc_auc(std::span<const float>(*lg), labels), 0.85);
  // The logistic model cannot see XOR.
  DesignMatrix dx;
  dx.rows = 4000;
  dx.cols = 2;
  dx.values.assign(xt.begin(), xt.end());
  std::vector<uint8_t> ly(yt.begin(), yt.end()), lw(ly.size(), 1);
  auto lin = fit_logistic(dx, ly, lw, 1e-3);
  ASSERT_TRUE(lin.ok());
  std::vector<float> ll;
  for (size_t i = 0; i < yv.size(); ++i) {
    const double row[2] = {xv[2 * i], xv[2 * i + 1]};
    ll.push_back(static_cast<float>(logistic_logit(*lin, row)));
  }
  EXPECT_LT(roc_auc(std::span<const float>(ll), labels), 0.6);
}

// The baselines' fits run one per worker with XGBoost on one thread: the model must be the one
// a multi-threaded fit gives, byte for byte.
TEST(Gbdt, ModelBytesDoNotDependOnTheThreadCount) {
  if (!gbdt_available()) GTEST_SKIP() << "this build has no XGBoost (libxgboost-dev)";
  std::vector<float> xt, yt, xv, yv;
  xor_rows(20000, 5, &xt, &yt);
  xor_rows(4000, 6, &xv, &yv);
  GbdtParams p;
  p.threads = 1;
  auto one = fit_gbdt(xt, yt, xv, yv, 2, p);
  p.threads = 2;
  auto two = fit_gbdt(xt, yt, xv, yv, 2, p);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(one->rounds, two->rounds);
  EXPECT_EQ(one->bytes, two->bytes);
}

class BaselinesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::scratch_dir());
    const auto s = test::run_fxt("synth -q --events 20000 --seed 3 --out " + *dir_ + "/m.dbn.zst");
    ASSERT_EQ(s.exit_code, 0) << s.output;
    const auto i = test::run_fxt("ingest -q " + *dir_ + "/m.dbn.zst --out " + *dir_ + "/store");
    ASSERT_EQ(i.exit_code, 0) << i.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static DatasetConfig config() {
    DatasetConfig d;
    d.sequence.window = 16;
    d.labels.horizons = {10, 30};
    return d;
  }
  static std::string* dir_;
};
std::string* BaselinesTest::dir_ = nullptr;

TEST_F(BaselinesTest, FitOnTrainingRowsOnlyALeakInValidationIsNotLearned) {
  auto ds = Dataset::open({*dir_ + "/store"}, config());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ds->standardise_features(ds->measure_train_stats());
  // Slot 39 becomes the h10 label (+-1) on every validation-range snapshot and 0 elsewhere:
  // a model fit on validation rows would read the answer from it.
  auto& s = const_cast<Dataset::Store&>(ds->store(0));
  const GlobalRange v = ds->range(Split::kValidation);
  for (uint64_t t = 0; t < s.reader.size(); ++t) {
    const bool in_val = t >= v.begin && t < v.end;
    s.features[t * 40 + 39] = in_val ? (s.labels.y[t * 2] != 0 ? 1.0f : -1.0f) : 0.0f;
  }
  BaselineConfig bc;
  bc.lags = 2;
  bc.max_fit_rows = 4000;  // small and quick: thinned training rows
  bc.gbdt_max_fit_rows = 4000;
  bc.gbdt_params.max_rounds = 60;
  const std::vector<int> hz = {10, 30};
  auto b = Baselines::fit(*ds, hz, bc, 2);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->fitted().size(), gbdt_available() ? 4u : 2u);
  EXPECT_EQ(b->fitted()[0].name, "logreg");
  EXPECT_EQ(b->fitted()[1].name, gbdt_available() ? "gbdt" : "logreg_lags");
  // The logistic weight on the leaking slot is exactly 0 (a constant column in training).
  const FittedBaseline* lr = b->find("logreg");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->logistic[0].weights[39], 0.0);
  // Scored on the validation rows, no baseline reaches the leak's perfect AUC.
  std::vector<uint64_t> ends;
  for (uint64_t t = v.begin; t < v.end; ++t) ends.push_back(t);
  std::vector<uint8_t> y, m;
  for (uint64_t t : ends) {
    y.push_back(s.labels.y[t * 2]);
    m.push_back(s.labels.mask[t * 2]);
  }
  for (size_t i = 0; i < b->fitted().size(); ++i) {
    auto lg = b->score(i, s.features.data(), ends, 1, 1);
    ASSERT_TRUE(lg.ok()) << lg.status().message();
    std::vector<float> h10;
    for (size_t r = 0; r < ends.size(); ++r) h10.push_back((*lg)[r * 2]);
    const double auc = roc_auc(std::span<const float>(h10), y, m);
    EXPECT_LT(auc, 0.9) << b->fitted()[i].name;
    if (b->fitted()[i].name == "logreg") {
      EXPECT_GT(auc, 0.55);  // it learns the book's signal
    }
  }

  // Checkpoint round trip: the same logits after save + load.
  Checkpoint ck;
  nlohmann::json meta;
  b->save(&ck, &meta);
  auto back = Baselines::load(ck, meta, 2);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->fitted().size(), b->fitted().size());
  for (size_t i = 0; i < b->fitted().size(); ++i) {
    auto l1 = b->score(i, s.features.data(), ends, 1, 1);
    auto l2 = back->score(i, s.features.data(), ends, 1, 1);
    ASSERT_TRUE(l1.ok() && l2.ok());
    EXPECT_EQ(*l1, *l2) << b->fitted()[i].name;
  }
  // Refitting gives identical checkpoint tensors (deterministic).
  auto again = Baselines::fit(*ds, hz, bc, 2);
  ASSERT_TRUE(again.ok());
  Checkpoint ck2;
  nlohmann::json meta2;
  again->save(&ck2, &meta2);
  ASSERT_EQ(ck2.tensors.size(), ck.tensors.size());
  for (size_t i = 0; i < ck.tensors.size(); ++i) {
    EXPECT_EQ(ck2.tensors[i].data, ck.tensors[i].data) << ck.tensors[i].name;
  }
}

// Each family is fit under its own cap: the logistic families on max_fit_rows thinned rows, the
// GBDTs on gbdt_max_fit_rows; a config written before the GBDT's own cap reads it as the one cap.
TEST_F(BaselinesTest, TheGbdtHasItsOwnRowCap) {
  auto ds = Dataset::open({*dir_ + "/store"}, config());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ds->standardise_features(ds->measure_train_stats());
  BaselineConfig bc;
  bc.lags = 1;
  bc.max_fit_rows = 2000;
  bc.gbdt_max_fit_rows = 8000;
  bc.gbdt_params.max_rounds = 20;
  const std::vector<int> hz = {10, 30};
  auto b = Baselines::fit(*ds, hz, bc, 2);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const FittedBaseline* lr = b->find("logreg");
  ASSERT_NE(lr, nullptr);
  // Thinning by a whole stride keeps at most the cap and more than half of it (the store's
  // training split holds ~14,000 rows).
  EXPECT_LE(lr->train_rows, 2000);
  EXPECT_GT(lr->train_rows, 1000);
  if (gbdt_available()) {
    const FittedBaseline* gb = b->find("gbdt");
    ASSERT_NE(gb, nullptr);
    EXPECT_LE(gb->train_rows, 8000);
    EXPECT_GT(gb->train_rows, 4000);
    EXPECT_GT(gb->validation_rows, lr->validation_rows);
  }
  nlohmann::json j = bc.to_json();
  EXPECT_EQ(j.at("gbdt_max_fit_rows").get<int64_t>(), 8000);
  j.erase("gbdt_max_fit_rows");
  auto old = BaselineConfig::from_json(j);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->gbdt_max_fit_rows, 2000);
  bc.gbdt_max_fit_rows = 999;
  EXPECT_EQ(bc.validate().code(), StatusCode::kUsage);
}

// The GAM on the PLE encoding (--baselines ...,gam): slot 38 carries the h10 label only through
// its magnitude (|v| = 1.5 for an up-move, 0.5 otherwise, the sign a hash of t), a U-shape no
// linear model reads and a per-feature shape does. Its edges are the training rows' quantiles,
// its columns x then enc(x), its logit by hand, and a checkpoint round trip scores the same.
TEST_F(BaselinesTest, GamReadsAPerFeatureShapeTheLogisticCannot) {
  auto ds = Dataset::open({*dir_ + "/store"}, config());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ds->standardise_features(ds->measure_train_stats());
  auto& s = const_cast<Dataset::Store&>(ds->store(0));
  for (uint64_t t = 0; t < s.reader.size(); ++t) {
    const float mag = s.labels.y[t * 2] != 0 ? 1.5f : 0.5f;
    // A hashed sign: the training rows are thinned by a fixed stride, which a plain parity
    // would alias.
    s.features[t * 40 + 38] = ((t * 2654435761u) >> 9) % 2 != 0 ? mag : -mag;
  }
  BaselineConfig bc;
  bc.lags = 1;
  bc.gbdt = false;
  bc.gam = true;
  bc.gam_bins = 6;
  bc.max_fit_rows = 4000;
  const std::vector<int> hz = {10, 30};
  auto b = Baselines::fit(*ds, hz, bc, 2);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->fitted().size(), 2u);
  const FittedBaseline* gam = b->find("gam");
  ASSERT_NE(gam, nullptr);
  EXPECT_EQ(gam->ple_bins, 6);
  EXPECT_EQ(gam->columns(), 40 * 7);
  EXPECT_EQ(gam->ple_edges, training_ple_edges(*ds, 6, 4000));
  ASSERT_EQ(gam->logistic[0].weights.size(), 280u);
  // Slot 38's edges: its four values, the rest padded.
  const float* e38 = gam->ple_edges.data() + 38 * 7;
  EXPECT_EQ(std::vector<float>(e38, e38 + 4), (std::vector<float>{-1.5f, -0.5f, 0.5f, 1.5f}));
  EXPECT_EQ(e38[6], 1.5f);

  const GlobalRange v = ds->range(Split::kValidation);
  std::vector<uint64_t> ends;
  std::vector<uint8_t> y, m;
  for (uint64_t t = v.begin; t < v.end; ++t) {
    ends.push_back(t);
    y.push_back(s.labels.y[t * 2]);
    m.push_back(s.labels.mask[t * 2]);
  }
  auto auc_of = [&](const Baselines& bs, const std::string& name) {
    for (size_t i = 0; i < bs.fitted().size(); ++i) {
      if (bs.fitted()[i].name != name) continue;
      auto lg = bs.score(i, s.features.data(), ends, 1, 1);
      EXPECT_TRUE(lg.ok());
      std::vector<float> h10;
      for (size_t r = 0; r < ends.size(); ++r) h10.push_back((*lg)[r * 2]);
      return roc_auc(std::span<const float>(h10), y, m);
    }
    return -1.0;
  };
  const double auc_gam = auc_of(*b, "gam"), auc_lr = auc_of(*b, "logreg");
  std::printf("validation h10 AUC: gam %.4f, logreg %.4f\n", auc_gam, auc_lr);
  EXPECT_GT(auc_gam, 0.99);
  EXPECT_LT(auc_lr, 0.9);

  // One row's logit by hand: bias + w . x + w_enc . clip((x - e_t) / (e_t+1 - e_t), 0, 1).
  const uint64_t t0 = ends[17];
  const float* x = s.features.data() + t0 * 40;
  const LogisticSolution& sol = gam->logistic[1];
  double z = sol.bias;
  for (int i = 0; i < 40; ++i) {
    z += sol.weights[static_cast<size_t>(i)] * x[i];
    const float* e = gam->ple_edges.data() + i * 7;
    for (int t = 0; t < 6; ++t) {
      const float enc =
          e[t + 1] > e[t] ? std::clamp((x[i] - e[t]) / (e[t + 1] - e[t]), 0.0f, 1.0f) : 0.0f;
      z += sol.weights[static_cast<size_t>(40 + i * 6 + t)] * enc;
    }
  }
  const size_t gi = static_cast<size_t>(gam - b->fitted().data());
  auto one = b->score(gi, s.features.data(), std::span<const uint64_t>(&t0, 1), 1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR((*one)[1], z, 1e-5);

  Checkpoint ck;
  nlohmann::json meta;
  b->save(&ck, &meta);
  EXPECT_NE(ck.find("baseline.gam.edges"), nullptr);
  auto back = Baselines::load(ck, meta, 2);
  ASSERT_TRUE(back.ok()) << back.status().message();
  auto l1 = b->score(gi, s.features.data(), ends, 1, 1);
  auto l2 = back->score(gi, s.features.data(), ends, 1, 1);
  ASSERT_TRUE(l1.ok() && l2.ok());
  EXPECT_EQ(*l1, *l2);
  // The horizons' logistic fits run one per thread: one thread gives the same coefficients.
  auto one_thread = Baselines::fit(*ds, hz, bc, 1);
  ASSERT_TRUE(one_thread.ok());
  for (size_t i = 0; i < 2; ++i) {
    for (size_t h = 0; h < 2; ++h) {
      EXPECT_EQ(one_thread->fitted()[i].logistic[h].weights, b->fitted()[i].logistic[h].weights);
      EXPECT_EQ(one_thread->fitted()[i].logistic[h].bias, b->fitted()[i].logistic[h].bias);
    }
  }
}

TEST(LaggedRow, RepeatsTheFirstSnapshotAtAStoreStart) {
  std::vector<float> f(5 * 40);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i / 40);  // row index
  std::vector<float> out(3 * 40);
  lagged_row(f.data(), 4, 3, 2, out.data());  // positions 0, 2, 4
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[40], 2.0f);
  EXPECT_EQ(out[80], 4.0f);
  lagged_row(f.data(), 1, 3, 1, out.data());  // positions -1 -> 0, 0, 1
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[40], 0.0f);
  EXPECT_EQ(out[80], 1.0f);
}

TEST(Comparison, VerdictFollowsThePairedInterval) {
  // 4000 rows, one horizon: the model ranks by the label, the two baselines are noise and a
  // weaker signal; then the roles swap.
  Rng rng(9);
  std::vector<float> good, weak, noise;
  std::vector<uint8_t> y, m;
  for (int i = 0; i < 4000; ++i) {
    const uint8_t l = rng.unit() < 0.5 ? 1 : 0;
    y.push_back(l);
    m.push_back(1);
    good.push_back(static_cast<float>((l ? 1.0 : -1.0) + normal(rng)));
    weak.push_back(static_cast<float>((l ? 0.3 : -0.3) + normal(rng)));
    noise.push_back(static_cast<float>(normal(rng)));
  }
  BootstrapOptions bo;
  bo.replicates = 200;
  const std::vector<int> hz = {5};
  auto yes = compare_with_baselines(good, {"noise", "weak"}, {noise, weak}, y, m, hz, bo);
  ASSERT_TRUE(yes.ok()) << yes.status().message();
  const auto& e = (*yes)["horizons"][0];
  EXPECT_EQ(e["best_baseline"], "weak");
  EXPECT_EQ(e["verdict"], "yes");
  EXPECT_GT(e["diff_ci"][0].get<double>(), 0.0);
  EXPECT_EQ(e["line"].get<std::string>().rfind("h5: model beats the best baseline (weak ", 0), 0u)
      << e["line"];
  auto no = compare_with_baselines(weak, {"good", "noise"}, {good, noise}, y, m, hz, bo);
  ASSERT_TRUE(no.ok());
  const auto& f = (*no)["horizons"][0];
  EXPECT_EQ(f["best_baseline"], "good");
  EXPECT_EQ(f["verdict"], "no");
  EXPECT_NE(f["line"].get<std::string>().find("(the baseline is better)"), std::string::npos);
}

TEST(Comparison, OracleGapShareAndItsInterval) {
  // 3000 rows, two horizons: a latent z; the oracle's probability is the label's own
  // (sigmoid(2z)), the best baseline sees z through heavy noise, the model through less.
  Rng rng(21);
  const std::vector<int> hz = {5, 20};
  std::vector<double> oracle;
  std::vector<float> oracle_logit, model, best;
  std::vector<uint8_t> y, m;
  for (int i = 0; i < 3000; ++i) {
    for (size_t h = 0; h < hz.size(); ++h) {
      const double z = normal(rng), p = 1 / (1 + std::exp(-2 * z));
      oracle.push_back(p);
      oracle_logit.push_back(static_cast<float>(std::log(p / (1 - p))));
      y.push_back(rng.unit() < p ? 1 : 0);
      m.push_back(rng.uniform(20) != 0 ? 1 : 0);
      model.push_back(static_cast<float>(z + 0.4 * normal(rng)));
      best.push_back(static_cast<float>(z + 1.2 * normal(rng)));
    }
  }
  BootstrapOptions bo;
  bo.replicates = 100;
  bo.threads = 2;
  const std::vector<std::string> names = {"weak", "weak"};
  auto r = compare_with_oracle(oracle, model, best, names, y, m, hz, 1, bo);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)["horizons"].size(), 2u);
  for (size_t h = 0; h < hz.size(); ++h) {
    const auto& e = (*r)["horizons"][h];
    std::vector<float> oh, mh, bh;
    std::vector<uint8_t> yh, kh;
    for (size_t i = 0; i < y.size() / 2; ++i) {
      oh.push_back(oracle_logit[i * 2 + h]);
      mh.push_back(model[i * 2 + h]);
      bh.push_back(best[i * 2 + h]);
      yh.push_back(y[i * 2 + h]);
      kh.push_back(m[i * 2 + h]);
    }
    const double o = roc_auc(std::span<const float>(oh), yh, kh),
                 a = roc_auc(std::span<const float>(mh), yh, kh),
                 b = roc_auc(std::span<const float>(bh), yh, kh);
    ASSERT_GT(o, a);
    ASSERT_GT(a, b);
    EXPECT_NEAR(e["oracle_auc"].get<double>(), o, 1e-12);
    EXPECT_NEAR(e["model_auc"].get<double>(), a, 1e-12);
    EXPECT_NEAR(e["best_baseline_auc"].get<double>(), b, 1e-12);
    const double share = (a - b) / (o - b);
    EXPECT_NEAR(e["gap_recovered"].get<double>(), share, 1e-12);
    const double lo = e["gap_recovered_ci"][0].get<double>(),
                 hi = e["gap_recovered_ci"][1].get<double>();
    EXPECT_LT(lo, share);
    EXPECT_GT(hi, share);
    EXPECT_GT(hi - lo, 0.02);  // 3000 rows do not pin a share down
    EXPECT_NE(e["line"].get<std::string>().find(share_text(share, Interval{lo, hi})),
              std::string::npos)
        << e["line"];
  }
  // A model equal to the best baseline recovers exactly none of the gap in every replicate, one
  // equal to the oracle all of it.
  auto none = compare_with_oracle(oracle, best, best, names, y, m, hz, 1, bo);
  auto all = compare_with_oracle(oracle, oracle_logit, best, names, y, m, hz, 1, bo);
  ASSERT_TRUE(none.ok() && all.ok());
  for (size_t h = 0; h < hz.size(); ++h) {
    EXPECT_EQ((*none)["horizons"][h]["gap_recovered_ci"], nlohmann::json::array({0.0, 0.0}));
    EXPECT_EQ((*all)["horizons"][h]["gap_recovered_ci"], nlohmann::json::array({1.0, 1.0}));
  }
  EXPECT_EQ(share_text(0.564, Interval{0.31, 0.8}), "56% [31%, 80%]");
  EXPECT_EQ(share_text(std::nan(""), Interval{}), "n/a");
}

}  // namespace
}  // namespace fxt
