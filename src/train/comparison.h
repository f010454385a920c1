// Model against its baselines on the same rows (DESIGN §6): which baseline is best at each
// horizon, model - best baseline with a paired block-bootstrap interval, and a plain verdict.
//
// The best baseline of a horizon is the one with the highest AUC on the rows compared. Choosing
// it on those same rows favours the baseline, never the model: a "yes" means the model beats
// every baseline, not the one picked beforehand. Verdict per horizon: "yes" when the 95 %
// interval of model - best baseline lies above 0, "no" otherwise (the line says whether the
// baseline is significantly better, or the difference is within noise). Used by fxt eval
// (evaluate()), fxt cv (pooled folds), the report and the quickstart.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "train/metrics.h"

namespace fxt {

// What the stacked model is called in verdict lines (train/stacking.h).
inline constexpr const char* kStackedSubject = "the model stacked with the baselines";

// scores: [rows][H] logits each; names[i] goes with baselines[i]. options.replicates > 0.
// subject names the compared predictor in the lines ("model", or kStackedSubject).
// JSON: {"horizons": [{horizon, subject, model_auc, best_baseline, best_baseline_auc, diff, diff_ci
// [lo, hi], model_ci, verdict, line}], "mean": {model_auc, best_baseline_auc, diff, diff_ci},
// "block_rows", "replicates"}.
Result<nlohmann::json> compare_with_baselines(
    std::span<const float> model, const std::vector<std::string>& names,
    const std::vector<std::vector<float>>& baselines, std::span<const uint8_t> labels,
    std::span<const uint8_t> mask, std::span<const int> horizons, const BootstrapOptions& options,
    const std::string& subject = "model");

// "h30: model beats the best baseline (gbdt_lags 0.9012): yes, +0.0120 [+0.0040, +0.0200]"
std::string verdict_line(const nlohmann::json& horizon_entry);

// The oracle against the model and the best baseline on the oracle's rows (a subset of the
// compared rows): oracle probabilities [rows][H] (NaN columns for horizons it did not cover),
// the model's and the best baseline's (composite) logits, labels and mask of those rows.
// JSON: {"rows", "horizons": [{horizon, oracle_auc, oracle_ci, model_auc, model_ci,
// best_baseline, best_baseline_auc, best_baseline_ci, gap_recovered, gap_recovered_ci, line}]};
// gap_recovered = (model - best baseline) / (oracle - best baseline), its interval the same ratio
// over the paired block-bootstrap replicates (all three scorers resampled together; a replicate
// whose oracle does not beat the best baseline is dropped). row_spacing: snapshots between
// consecutive rows, so the bootstrap blocks still span a horizon of snapshots (ceil(h / spacing)
// rows). With `stacked` (the model stack's logits on the same rows), each horizon also gets
// stacked_auc, stacked_gap_recovered and stacked_gap_recovered_ci (the same gap, closed by the
// stack) and its line says both. Every scorer is compared on the rows where all are defined.
Result<nlohmann::json> compare_with_oracle(
    std::span<const double> oracle, std::span<const float> model,
    std::span<const float> best_baseline, const std::vector<std::string>& best_names,
    std::span<const uint8_t> labels, std::span<const uint8_t> mask, std::span<const int> horizons,
    int64_t row_spacing, const BootstrapOptions& options, std::span<const float> stacked = {});

// A gap share as printed: "56% [31%, 80%]"; "n/a" when the share is undefined.
std::string share_text(double share, const Interval& ci);

// The printed oracle section (compare_with_oracle's JSON plus "paths"): a header naming how many
// of `which` rows it scored, then one line per horizon.
std::string oracle_lines(const nlohmann::json& oracle, const std::string& which);

}  // namespace fxt
