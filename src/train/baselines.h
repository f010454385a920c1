// The baselines a quant tries first (DESIGN §6), fit to convergence independently of the deep
// model, on exactly the rows the model trains on, and scored on exactly the rows it is scored on.
//
// Four baselines, per horizon, on the standardised features (training statistics, dropped slots
// held at 0, exactly the model's input):
//   logreg       L2 logistic regression solved exactly (train/logistic_fit.h), the penalty chosen
//                on validation log loss, on the snapshot's own 40 features;
//   logreg_lags  the same on the features of the last `lags` positions (t, t-S, ..., oldest first),
//                so "value from the sequence" is told apart from "value from non-linearity";
//   gbdt         gradient-boosted trees (XGBoost hist, early stopping on validation; train/gbdt.h);
//   gbdt_lags    the same on the lagged features;
//   gam          (opt-in: --baselines ...,gam) the same exact logistic on the snapshot's 40
//                features and their piecewise-linear encoding (model/ple.h, gam_bins quantile
//                intervals per feature, edges from training_ple_edges): a generalised additive
//                model, one continuous piecewise-linear shape per feature. What the perception
//                model's PLE path contains (--input-skip gam starts the model from it).
// Training rows: every position of every clean training window (the union of the positions the
// model's sampler can draw); validation rows: every position of the non-overlapping validation
// windows (the rows the model's validation scores). Above a family's cap (max_fit_rows for the
// logistic families, gbdt_max_fit_rows for the GBDTs) a split's rows are thinned by a fixed
// stride (deterministic; neighbouring rows are near-duplicates). Positions before a
// store's start repeat its first snapshot, as inference windows do (window_positions).
//
// The logistic fits (logreg, logreg_lags, gam) run one horizon per thread and do not depend on
// the thread count; the GBDT is deterministic for a configuration and thread count. The fitted
// baselines live in the checkpoint (tensors "baseline.<name>.*", a summary in meta) so eval, cv
// and predict score them without refitting.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "features/sequences.h"
#include "train/checkpoint.h"
#include "train/gbdt.h"
#include "train/logistic_fit.h"

namespace fxt {

enum class BaselineKind { kLogistic, kGbdt };

struct BaselineConfig {
  bool logreg = true;
  bool gbdt = true;              // off (with a note) when the build has no XGBoost
  bool gam = false;              // the GAM on the PLE encoding (opt-in: 40 (K + 1) columns)
  int gam_bins = 16;             // K of the GAM's encoding (2..64)
  int lags = 4;                  // positions of the lag variants; 1 = no lag variants
  // Training (and validation) rows a baseline is fit on at most, thinned by a fixed stride above
  // (0 = every row): the logistic families (logreg, logreg_lags, gam; their fits saturate early
  // and cost most), and the GBDTs, which keep gaining from rows (docs/BASELINES.md "Rows").
  int64_t max_fit_rows = 50000;
  int64_t gbdt_max_fit_rows = 1000000;
  GbdtParams gbdt_params;

  Status validate() const;
  nlohmann::json to_json() const;
  static Result<BaselineConfig> from_json(const nlohmann::json& j);
};

// "logreg,gbdt", "logreg", "gbdt", "gam" (any list of them), "none" -> which families are fit.
Status parse_baseline_families(const std::string& text, BaselineConfig* cfg);

struct FittedBaseline {
  std::string name;  // "logreg", "logreg_lags", "gbdt", "gbdt_lags", "gam"
  BaselineKind kind = BaselineKind::kLogistic;
  int lags = 1;
  int ple_bins = 0;                        // gam: K; its columns are x then enc(x)
  std::vector<float> ple_edges;            // gam: [40, K + 1]
  std::vector<LogisticSolution> logistic;  // per horizon (kLogistic)
  std::vector<GbdtModel> gbdt;             // per horizon (kGbdt)
  int64_t train_rows = 0, validation_rows = 0;
  double fit_seconds = 0.0;
  int64_t columns() const { return static_cast<int64_t>(lags) * 40 * (1 + ple_bins); }
};

class Baselines {
 public:
  // Fits every configured baseline on ds (features already standardised). `only`, when not
  // empty, restricts the fit to baselines of that family ("logreg" or "gbdt": --model logreg).
  static Result<Baselines> fit(const Dataset& ds, std::span<const int> horizons,
                               const BaselineConfig& cfg, int threads,
                               const std::string& only = "");

  bool empty() const { return fitted_.empty(); }
  const std::vector<FittedBaseline>& fitted() const { return fitted_; }
  const FittedBaseline* find(const std::string& name) const;

  // Logits [ends.size(), H] of baseline i for the snapshots `ends` (local indices of one store
  // whose standardised features, n x 40, are `features`).
  Result<std::vector<float>> score(size_t i, const float* features, std::span<const uint64_t> ends,
                                   int stride, int threads) const;

  // Tensors "baseline.<name>.weight" [H, cols] f64, ".bias" [H] f64 (logistic) or ".h<i>" u8
  // (XGBoost bytes, per horizon); meta["baselines"] = summary().
  void save(Checkpoint* ck, nlohmann::json* meta) const;
  static Result<Baselines> load(const Checkpoint& ck, const nlohmann::json& meta, int horizons);
  static bool is_baseline_tensor(const std::string& name) {
    return name.rfind("baseline.", 0) == 0;
  }

  // Per baseline: name, kind, lags, rows, per-horizon penalty / iterations / rounds and
  // validation log loss; with timings, also the fit's wall seconds (run.json and eval only:
  // checkpoints hold no timings, so their bytes depend only on inputs and seed).
  nlohmann::json summary(bool with_timings = true) const;

 private:
  std::vector<FittedBaseline> fitted_;
  int horizons_ = 0;
};

// PLE edges [40, bins + 1] (model::ple_edges_from_sample per feature) of the standardised
// features over the baselines' training rows: every position of every clean training window,
// thinned by a fixed stride to max_rows (0 = every row). Deterministic.
std::vector<float> training_ple_edges(const Dataset& ds, int bins, int64_t max_rows);

// The lagged feature row of snapshot t (local index): lags x 40 values, oldest position first.
void lagged_row(const float* features, uint64_t t, int lags, int stride, float* out);

}  // namespace fxt
