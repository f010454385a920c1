#include "cli/eval_table.h"

#include <iterator>

#include <fmt/format.h>

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
  const nlohmann::json& logreg = eval["logreg"];
  const nlohmann::json& base = eval["base_rate"];
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{} split: {} rows, window {} at stride {}\n",
                 eval.value("split", std::string("?")), eval.value("rows", 0),
                 eval.value("window", 0), eval.value("stride", 0));
  fmt::format_to(it, "{:>8} {:>9} | {:>7} {:>7} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>7} {:>7}\n",
                 "horizon", "labelled", "AUC", "", "", "log loss", "", "", "Brier", "", "");
  fmt::format_to(it, "{:>8} {:>9} | {:>7} {:>7} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>7} {:>7}\n",
                 "", "", "model", "logreg", "base", "model", "logreg", "base", "model", "logreg",
                 "base");
  const size_t n = model["horizons"].size();
  for (size_t i = 0; i < n; ++i) {
    fmt::format_to(it, "{:>8} {:>9} | {:>7} {:>7} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>7} {:>7}\n",
                   model["horizons"][i]["horizon"].get<int>(),
                   model["horizons"][i]["n_valid"].get<int64_t>(), cell(model, i, "auc"),
                   cell(logreg, i, "auc"), cell(base, i, "auc"), cell(model, i, "log_loss"),
                   cell(logreg, i, "log_loss"), cell(base, i, "log_loss"), cell(model, i, "brier"),
                   cell(logreg, i, "brier"), cell(base, i, "brier"));
  }
  auto mean = [](const nlohmann::json& p) {
    return p["mean_auc"].is_number() ? fmt::format("{:.4f}", p["mean_auc"].get<double>()) : "—";
  };
  const nlohmann::json boot = eval.value("bootstrap", nlohmann::json::object());
  fmt::format_to(it, "mean AUC: model {}{}, logreg {}{}, base rate {}\n", mean(model),
                 interval(boot, "model"), mean(logreg), interval(boot, "logreg"), mean(base));
  return out;
}

}  // namespace fxt::cli
