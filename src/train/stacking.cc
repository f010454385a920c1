#include "train/stacking.h"

#include <algorithm>
#include <cmath>

#include "train/logistic_fit.h"

namespace fxt {
namespace {

// The penalised logistic optimum over x [rows][p] with every weight >= 0 (the bias free), by an
// active set: fit the free inputs (fit_logistic), drop the most negative weight while one is
// negative, then add back the held-at-zero input whose gradient most wants it positive, until
// neither applies (the KKT conditions of the constrained problem). Returns p weights, then
// the bias. p <= 16 inputs, so the loop is short; it is bounded all the same.
Result<std::vector<double>> fit_non_negative(const std::vector<double>& x,
                                             const std::vector<uint8_t>& y, size_t p) {
  const size_t rows = y.size();
  const std::vector<uint8_t> every(rows, 1);
  std::vector<bool> free(p, true);
  std::vector<double> w(p + 1, 0.0);
  for (size_t round = 0; round < 4 * p + 4; ++round) {
    std::vector<size_t> cols;
    for (size_t i = 0; i < p; ++i) {
      if (free[i]) cols.push_back(i);
    }
    std::fill(w.begin(), w.end(), 0.0);
    if (cols.empty()) {  // the bias alone: the log-odds of the rows' positive rate
      double up = 0;
      for (uint8_t v : y) up += v;
      w[p] = std::log(up / (static_cast<double>(rows) - up));
    } else {
      DesignMatrix d;
      d.rows = static_cast<int64_t>(rows);
      d.cols = static_cast<int64_t>(cols.size());
      d.values.reserve(rows * cols.size());
      for (size_t r = 0; r < rows; ++r) {
        for (size_t i : cols) d.values.push_back(x[r * p + i]);
      }
      FXT_ASSIGN_OR_RETURN(LogisticSolution sol, fit_logistic(d, y, every, kStackPenalty));
      for (size_t k = 0; k < cols.size(); ++k) w[cols[k]] = sol.weights[k];
      w[p] = sol.bias;
    }
    // The most negative free weight leaves the free set.
    size_t worst = p;
    for (size_t i : cols) {
      if (w[i] < 0 && (worst == p || w[i] < w[worst])) worst = i;
    }
    if (worst < p) {
      free[worst] = false;
      continue;
    }
    // d objective / d w_j at w_j = 0 for the held inputs: (1/n) sum (sigmoid(z) - y) x_j.
    std::vector<double> grad(p, 0.0);
    for (size_t r = 0; r < rows; ++r) {
      double z = w[p];
      for (size_t i = 0; i < p; ++i) z += w[i] * x[r * p + i];
      const double e = 1.0 / (1.0 + std::exp(-z)) - y[r];
      for (size_t i = 0; i < p; ++i) {
        if (!free[i]) grad[i] += e * x[r * p + i];
      }
    }
    size_t best = p;
    for (size_t i = 0; i < p; ++i) {
      if (!free[i] && grad[i] / static_cast<double>(rows) < -1e-7 &&
          (best == p || grad[i] < grad[best])) {
        best = i;
      }
    }
    if (best == p) return w;
    free[best] = true;
  }
  return InternalError("stack: the non-negative fit did not settle in {} rounds", 4 * p + 4);
}

}  // namespace

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
    // This horizon's labelled rows only (the others carry no label), every input as a column.
    std::vector<double> x;
    std::vector<uint8_t> y;
    int64_t positives = 0;
    for (size_t r = 0; r < n; ++r) {
      const size_t at = r * nh + h;
      if (mask[at] == 0) continue;
      for (size_t i = 0; i < p; ++i) x.push_back(static_cast<double>(inputs[i][at]));
      y.push_back(labels[at]);
      positives += labels[at];
    }
    const auto rows = static_cast<int64_t>(y.size());
    if (positives == 0 || positives == rows) {
      return InvalidInput(
          "stack: horizon {} has {} labelled validation rows, {} of them up: a stack needs both "
          "classes",
          horizons[h], rows, positives);
    }
    FXT_ASSIGN_OR_RETURN(std::vector<double> w, fit_non_negative(x, y, p));
    s.weights.push_back(std::move(w));
    s.rows.push_back(rows);
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

namespace {

std::vector<std::span<const float>> spans(const std::vector<std::vector<float>>& baselines) {
  return {baselines.begin(), baselines.end()};
}

}  // namespace

Result<Stacks> fit_stacks(const std::vector<std::string>& names,
                          const std::vector<std::vector<float>>& baselines,
                          std::span<const float> model, std::span<const uint8_t> labels,
                          std::span<const uint8_t> mask, std::span<const int> horizons) {
  Stacks s;
  std::vector<std::span<const float>> in = spans(baselines);
  FXT_ASSIGN_OR_RETURN(s.baselines, fit_logit_stack(names, in, labels, mask, horizons));
  std::vector<std::string> with_model = names;
  with_model.emplace_back("model");
  in.push_back(model);
  FXT_ASSIGN_OR_RETURN(s.model, fit_logit_stack(with_model, in, labels, mask, horizons));
  return s;
}

std::pair<std::vector<float>, std::vector<float>> apply_stacks(
    const Stacks& stacks, const std::vector<std::vector<float>>& baselines,
    std::span<const float> model) {
  std::vector<std::span<const float>> in = spans(baselines);
  std::vector<float> b = apply_logit_stack(stacks.baselines, in);
  in.push_back(model);
  return {std::move(b), apply_logit_stack(stacks.model, in)};
}

}  // namespace fxt
