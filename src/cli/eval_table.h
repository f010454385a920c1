// The per-horizon comparison table of an evaluation (model vs logistic baseline vs base rate),
// printed by `fxt eval` and `fxt quickstart`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fxt::cli {

// `eval` is the JSON of fxt::evaluate(). One row per horizon with AUC, log loss and Brier for
// the three predictors, the number of labelled rows, then the mean AUC (and its bootstrap
// interval when present).
std::string format_eval_table(const nlohmann::json& eval);

}  // namespace fxt::cli
