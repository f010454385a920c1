// Stacks: per horizon, a logistic regression over the logits of other predictors, fit on a
// sample of the validation split and scored on the test split (docs/BASELINES.md "Stacks").
//
// Two stacks answer one question each (fxt eval, fxt cv, the quickstart, the report):
// - the baseline stack: every baseline's logit. It is itself a baseline (named
//   kBaselineStackName) and enters "best baseline" like the others, so the model has to beat
//   the best *combination* of the baselines a practitioner would try, not only the best single.
// - the model stack ("stacked"): the same inputs plus the deep model's logit. stacked − best
//   baseline (the baseline stack included) measures what the deep model adds to everything the
//   baselines know; the model alone is still reported and compared on its own.
// Each fit is the penalised logistic optimum (fit_logistic(), logistic_fit.h, at a small fixed
// penalty kStackPenalty) on the rows whose label is defined at that horizon, with every weight
// constrained to be >= 0 (Breiman's stacked regressions: without the constraint, a few thousand
// validation rows of a real market gave weights like +1.9 and -1.2 on two near-identical
// baselines that lost 0.05 AUC on the test rows; docs/BASELINES.md "Stacks"). Deterministic.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt {

inline constexpr const char* kBaselineStackName = "baseline_stack";
inline constexpr double kStackPenalty = 1e-4;  // L2 on the weights (logits are O(1)-O(10))

struct LogitStack {
  std::vector<std::string> inputs;           // names of the stacked predictors, in column order
  std::vector<int> horizons;                 // [H]
  std::vector<std::vector<double>> weights;  // [H][inputs + 1]: one weight (>= 0) per input, bias
  std::vector<int64_t> rows;                 // [H] labelled rows each horizon was fit on
  nlohmann::json to_json() const;
};

// Fits one stack per horizon. inputs[i]: [rows][H] logits of predictor names[i]; labels and
// mask: [rows][H] (0/1). Errors (exit code 2): no input, mismatched sizes, a horizon with no
// labelled row or only one class.
Result<LogitStack> fit_logit_stack(const std::vector<std::string>& names,
                                   const std::vector<std::span<const float>>& inputs,
                                   std::span<const uint8_t> labels, std::span<const uint8_t> mask,
                                   std::span<const int> horizons);

// The stack's logits [rows][H] from its inputs, in the order fit_logit_stack() received them.
std::vector<float> apply_logit_stack(const LogitStack& stack,
                                     const std::vector<std::span<const float>>& inputs);

// The two stacks of an evaluation: over the baselines' logits, and over those and the model's.
struct Stacks {
  LogitStack baselines;  // inputs: the baselines' names
  LogitStack model;      // inputs: the baselines' names, then "model"
};

// Fits both on validation rows: baselines[i] ([rows][H]) are names[i]'s logits, model the
// model's; labels and mask as fit_logit_stack's.
Result<Stacks> fit_stacks(const std::vector<std::string>& names,
                          const std::vector<std::vector<float>>& baselines,
                          std::span<const float> model, std::span<const uint8_t> labels,
                          std::span<const uint8_t> mask, std::span<const int> horizons);

// Both stacks' logits on other rows with the same inputs: {baseline stack, model stack}.
std::pair<std::vector<float>, std::vector<float>> apply_stacks(
    const Stacks& stacks, const std::vector<std::vector<float>>& baselines,
    std::span<const float> model);

}  // namespace fxt
