#include "cli/eval_table.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "train/comparison.h"

namespace fxt::cli {
namespace {

// A metric of horizon row i of a predictor, "—" when undefined (JSON null).
std::string cell(const nlohmann::json& predictor, size_t i, const char* key) {
  const nlohmann::json& v = predictor["horizons"][i][key];
  return v.is_number() ? fmt::format("{:.4f}", v.get<double>()) : "—";
}

std::string interval(const nlohmann::json& boot, const char* who) {
  if (!boot.contains(who)) return "";
  const nlohmann::json& m = boot[who]["mean_auc"];
  if (!m.is_object() || !m["lo"].is_number() || !m["hi"].is_number()) return "";
  return fmt::format(" [{:.4f}, {:.4f}]", m["lo"].get<double>(), m["hi"].get<double>());
}

}  // namespace

std::string format_eval_table(const nlohmann::json& eval) {
  const nlohmann::json& model = eval["model"];
  const nlohmann::json& base = eval["base_rate"];
  const nlohmann::json baselines = eval.value("baselines", nlohmann::json::object());
  // The model stack (train/stacking.h), when the evaluation fit one.
  const nlohmann::json stacked = eval.value("stacked", nlohmann::json::object());
  const bool has_stack = stacked.contains("model");
  auto width = [](const std::string& name) { return std::max<size_t>(11, name.size()); };
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{} split: {} rows, window {} at stride {}\n",
                 eval.value("split", std::string("?")), eval.value("rows", 0),
                 eval.value("window", 0), eval.value("stride", 0));
  // AUC of every predictor, then the model's and the base rate's log loss.
  fmt::format_to(it, "{:>8} {:>9} | AUC {:>7}", "horizon", "labelled", "model");
  if (has_stack) fmt::format_to(it, " {:>7}", "stacked");
  for (const auto& [name, m] : baselines.items()) fmt::format_to(it, " {:>{}}", name, width(name));
  fmt::format_to(it, " {:>7} | log loss {:>7} {:>7}\n", "base", "model", "base");
  const size_t n = model["horizons"].size();
  for (size_t i = 0; i < n; ++i) {
    fmt::format_to(it, "{:>8} {:>9} |     {:>7}", model["horizons"][i]["horizon"].get<int>(),
                   model["horizons"][i]["n_valid"].get<int64_t>(), cell(model, i, "auc"));
    if (has_stack) fmt::format_to(it, " {:>7}", cell(stacked["model"], i, "auc"));
    for (const auto& [name, m] : baselines.items())
      fmt::format_to(it, " {:>{}}", cell(m, i, "auc"), width(name));
    fmt::format_to(it, " {:>7} |          {:>7} {:>7}\n", cell(base, i, "auc"),
                   cell(model, i, "log_loss"), cell(base, i, "log_loss"));
  }
  auto mean = [](const nlohmann::json& p) {
    return p["mean_auc"].is_number() ? fmt::format("{:.4f}", p["mean_auc"].get<double>()) : "—";
  };
  const nlohmann::json boot = eval.value("bootstrap", nlohmann::json::object());
  fmt::format_to(it, "mean AUC: model {}{}", mean(model), interval(boot, "model"));
  if (has_stack) fmt::format_to(it, ", stacked {}", mean(stacked["model"]));
  for (const auto& [name, m] : baselines.items()) {
    fmt::format_to(it, ", {} {}{}", name, mean(m), interval(boot, name.c_str()));
  }
  fmt::format_to(it, ", base rate {}\n", mean(base));
  const nlohmann::json vs = eval.value("vs_best_baseline", nlohmann::json());
  if (vs.is_object()) {
    for (const auto& h : vs["horizons"]) out += h["line"].get<std::string>() + "\n";
    if (stacked.contains("vs_best_baseline")) {
      for (const auto& h : stacked["vs_best_baseline"]["horizons"]) {
        out += h["line"].get<std::string>() + "\n";
      }
    }
  } else if (baselines.empty()) {
    out += "no baseline was fit (--baselines none)\n";
  }
  const nlohmann::json oracle = eval.value("oracle", nlohmann::json());
  if (oracle.is_object()) out += oracle_lines(oracle, "these rows");
  return out;
}

}  // namespace fxt::cli
