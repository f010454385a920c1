#include "train/stacking.h"

#include "train/logistic_fit.h"

namespace fxt {

nlohmann::json LogitStack::to_json() const {
  nlohmann::json hs = nlohmann::json::array();
  for (size_t h = 0; h < horizons.size(); ++h) {
    nlohmann::json w = nlohmann::json::object();
    for (size_t i = 0; i < inputs.size(); ++i) w[inputs[i]] = weights[h][i];
    hs.push_back(
        {{"horizon", horizons[h]}, {"rows", rows[h]}, {"weights", w}, {"bias", weights[h].back()}});
  }
  return {{"inputs", inputs}, {"penalty", kStackPenalty}, {"horizons", hs}};
}

Result<LogitStack> fit_logit_stack(const std::vector<std::string>& names,
                                   const std::vector<std::span<const float>>& inputs,
                                   std::span<const uint8_t> labels, std::span<const uint8_t> mask,
                                   std::span<const int> horizons) {
  const size_t nh = horizons.size(), p = inputs.size();
  if (p == 0 || names.size() != p || nh == 0 || labels.size() != mask.size() ||
      labels.size() % nh != 0) {
    return InvalidInput("stack: {} inputs, {} names, {} labels and {} mask cells for {} horizons",
                        p, names.size(), labels.size(), mask.size(), nh);
  }
  const size_t n = labels.size() / nh;
  for (size_t i = 0; i < p; ++i) {
    if (inputs[i].size() != labels.size()) {
      return InvalidInput("stack: {} has {} logits for {} label cells", names[i], inputs[i].size(),
                          labels.size());
    }
  }
  LogitStack s;
  s.inputs = names;
  s.horizons.assign(horizons.begin(), horizons.end());
  for (size_t h = 0; h < nh; ++h) {
    // The design matrix of this horizon's labelled rows only (the others carry no label).
    DesignMatrix x;
    x.cols = static_cast<int64_t>(p);
    std::vector<uint8_t> y;
    int64_t positives = 0;
    for (size_t r = 0; r < n; ++r) {
      const size_t at = r * nh + h;
      if (mask[at] == 0) continue;
      for (size_t i = 0; i < p; ++i) x.values.push_back(static_cast<double>(inputs[i][at]));
      y.push_back(labels[at]);
      positives += labels[at];
    }
    x.rows = static_cast<int64_t>(y.size());
    if (positives == 0 || positives == x.rows) {
      return InvalidInput(
          "stack: horizon {} has {} labelled validation rows, {} of them up: a stack needs both "
          "classes",
          horizons[h], x.rows, positives);
    }
    const std::vector<uint8_t> every(y.size(), 1);
    FXT_ASSIGN_OR_RETURN(LogisticSolution sol, fit_logistic(x, y, every, kStackPenalty));
    std::vector<double> w = sol.weights;
    w.push_back(sol.bias);
    s.weights.push_back(std::move(w));
    s.rows.push_back(x.rows);
  }
  return s;
}

std::vector<float> apply_logit_stack(const LogitStack& stack,
                                     const std::vector<std::span<const float>>& inputs) {
  const size_t nh = stack.horizons.size(), p = stack.inputs.size();
  const size_t cells = inputs.empty() ? 0 : inputs[0].size();
  std::vector<float> out(cells);
  for (size_t at = 0; at < cells; ++at) {
    const std::vector<double>& w = stack.weights[at % nh];
    double z = w[p];
    for (size_t i = 0; i < p; ++i) z += w[i] * static_cast<double>(inputs[i][at]);
    out[at] = static_cast<float>(z);
  }
  return out;
}

}  // namespace fxt
