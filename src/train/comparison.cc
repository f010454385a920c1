#include "train/comparison.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "train/cv.h"

namespace fxt {
namespace {

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}
nlohmann::json interval(const Interval& i) {
  return nlohmann::json::array({num(i.lo), num(i.hi)});
}
double get(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : std::nan("");
}

}  // namespace

std::string share_text(double share, const Interval& ci) {
  if (!std::isfinite(share)) return "n/a";
  if (!std::isfinite(ci.lo) || !std::isfinite(ci.hi)) return fmt::format("{:.0f}%", 100 * share);
  return fmt::format("{:.0f}% [{:.0f}%, {:.0f}%]", 100 * share, 100 * ci.lo, 100 * ci.hi);
}

std::string verdict_line(const nlohmann::json& e) {
  const double d = get(e.value("diff", nlohmann::json())), lo = get(e["diff_ci"][0]),
               hi = get(e["diff_ci"][1]);
  std::string tail;
  if (e.value("verdict", "") != "yes") {
    tail = hi < 0 ? " (the baseline is better)" : " (within noise)";
  }
  return fmt::format(
      "h{}: {} beats the best baseline ({} {:.4f}): {}, {:+.4f} [{:+.4f}, {:+.4f}]{}",
      e.value("horizon", 0), e.value("subject", std::string("model")),
      e.value("best_baseline", std::string("?")),
      get(e.value("best_baseline_auc", nlohmann::json())), e.value("verdict", std::string("no")), d,
      lo, hi, tail);
}

Result<nlohmann::json> compare_with_baselines(
    std::span<const float> model, const std::vector<std::string>& names,
    const std::vector<std::vector<float>>& baselines, std::span<const uint8_t> labels,
    std::span<const uint8_t> mask, std::span<const int> horizons, const BootstrapOptions& options,
    const std::string& subject) {
  const size_t nh = horizons.size();
  if (baselines.empty() || names.size() != baselines.size()) {
    return InvalidInput("compare_with_baselines: {} names for {} baselines", names.size(),
                        baselines.size());
  }
  for (const std::vector<float>& b : baselines) {
    if (b.size() != model.size()) {
      return InvalidInput("compare_with_baselines: {} baseline scores for {} model scores",
                          b.size(), model.size());
    }
  }
  // AUC of every baseline per horizon; the best one's scores form one composite array.
  std::vector<size_t> best(nh, 0);
  std::vector<double> best_auc(nh, -1.0);
  // The baselines' metrics are independent: on up to options.threads threads.
  std::vector<Result<Metrics>> metrics(baselines.size(), Metrics{});
  for_replicate_ranges(baselines.size(), options.threads, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      metrics[i] = compute_metrics(std::span<const float>(baselines[i]), labels, mask, horizons,
                                   ScoreKind::kLogit);
    }
  });
  for (size_t i = 0; i < baselines.size(); ++i) {
    FXT_ASSIGN_OR_RETURN(const Metrics m, std::move(metrics[i]));
    for (size_t h = 0; h < nh; ++h) {
      const double a = m.horizons[h].auc;
      if (std::isfinite(a) && a > best_auc[h]) {
        best_auc[h] = a;
        best[h] = i;
      }
    }
  }
  std::vector<float> composite(model.size());
  for (size_t r = 0; r < model.size() / nh; ++r) {
    for (size_t h = 0; h < nh; ++h) composite[r * nh + h] = baselines[best[h]][r * nh + h];
  }
  FXT_ASSIGN_OR_RETURN(PairedAucResult p,
                       paired_auc_bootstrap(model, composite, labels, mask, horizons, options));
  nlohmann::json out;
  nlohmann::json hs = nlohmann::json::array();
  double sum_m = 0, sum_b = 0;
  int defined = 0;
  for (size_t h = 0; h < nh; ++h) {
    const PairedAucHorizon& ph = p.horizons[h];
    nlohmann::json e = {{"horizon", horizons[h]},
                        {"subject", subject},
                        {"model_auc", num(ph.auc_a)},
                        {"best_baseline", names[best[h]]},
                        {"best_baseline_auc", num(ph.auc_b)},
                        {"diff", num(ph.diff)},
                        {"diff_ci", interval(ph.d)},
                        {"model_ci", interval(ph.a)},
                        {"best_baseline_ci", interval(ph.b)},
                        {"verdict", std::isfinite(ph.d.lo) && ph.d.lo > 0 ? "yes" : "no"}};
    e["line"] = verdict_line(e);
    hs.push_back(e);
    if (std::isfinite(ph.diff)) {
      sum_m += ph.auc_a;
      sum_b += ph.auc_b;
      ++defined;
    }
  }
  out["horizons"] = hs;
  out["mean"] = {{"model_auc", num(defined > 0 ? sum_m / defined : std::nan(""))},
                 {"best_baseline_auc", num(defined > 0 ? sum_b / defined : std::nan(""))},
                 {"diff", num(p.mean_diff)},
                 {"diff_ci", interval(p.mean_d)}};
  out["block_rows"] = p.block_rows;
  out["replicates"] = p.replicates;
  return out;
}

Result<nlohmann::json> compare_with_oracle(
    std::span<const double> oracle, std::span<const float> model,
    std::span<const float> best_baseline, const std::vector<std::string>& best_names,
    std::span<const uint8_t> labels, std::span<const uint8_t> mask, std::span<const int> horizons,
    int64_t row_spacing, const BootstrapOptions& options, std::span<const float> stacked) {
  const size_t nh = horizons.size();
  std::vector<int> block_horizons;
  for (int h : horizons) {
    block_horizons.push_back(static_cast<int>(std::max<int64_t>(
        1, (h + std::max<int64_t>(row_spacing, 1) - 1) / std::max<int64_t>(row_spacing, 1))));
  }
  // The oracle as logits (clamped so a unanimous 0 or 1 stays finite and keeps its rank).
  std::vector<float> ol(oracle.size());
  for (size_t i = 0; i < oracle.size(); ++i) {
    const double p = std::clamp(oracle[i], 1e-6, 1 - 1e-6);
    ol[i] = std::isnan(oracle[i]) ? std::nanf("") : static_cast<float>(std::log(p / (1 - p)));
  }
  // One mask for every scorer: the paired bootstraps then resample the same valid rows with the
  // same blocks, so replicate r's oracle AUC is the same in each and the gap share
  // (model - best) / (oracle - best) can be formed replicate by replicate.
  std::vector<uint8_t> common(labels.size());
  for (size_t i = 0; i < common.size(); ++i) {
    common[i] = (mask.empty() || mask[i] != 0) && !std::isnan(ol[i]) && !std::isnan(model[i]) &&
                !std::isnan(best_baseline[i]) && (stacked.empty() || !std::isnan(stacked[i]));
  }
  auto against_oracle = [&](std::span<const float> scores) {
    return paired_auc_bootstrap(ol, scores, labels, common, block_horizons, options);
  };
  FXT_ASSIGN_OR_RETURN(PairedAucResult om, against_oracle(model));
  FXT_ASSIGN_OR_RETURN(PairedAucResult ob, against_oracle(best_baseline));
  PairedAucResult os;
  if (!stacked.empty()) {
    FXT_ASSIGN_OR_RETURN(os, against_oracle(stacked));
  }
  const auto reps = static_cast<size_t>(om.replicates);
  // Horizon h's share of the gap closed by a scorer (its paired result against the oracle), and
  // the share's interval over the replicates. A replicate whose oracle does not beat the best
  // baseline has no share (NaN, dropped; the interval's replicate count says how many remained).
  auto share = [&](const PairedAucResult& o, size_t h, Interval* ci) {
    std::vector<double> shares(reps);
    for (size_t r = 0; r < reps; ++r) {
      const size_t at = r * nh + h;
      const double g = o.replicate_a[at] - ob.replicate_b[at];
      shares[r] = g > 0 ? (o.replicate_b[at] - ob.replicate_b[at]) / g : std::nan("");
    }
    *ci = bootstrap_interval(std::move(shares), options);
    const double b = ob.horizons[h].auc_b, gap = o.horizons[h].auc_a - b;
    return gap > 0 ? (o.horizons[h].auc_b - b) / gap : std::nan("");
  };
  nlohmann::json hs = nlohmann::json::array();
  for (size_t h = 0; h < nh; ++h) {
    const PairedAucHorizon& p = om.horizons[h];
    if (std::isnan(p.auc_a)) continue;  // a horizon the oracle did not cover
    const double b = ob.horizons[h].auc_b;
    Interval share_ci;
    const double recovered = share(om, h, &share_ci);
    nlohmann::json e = {
        {"horizon", horizons[h]},          {"oracle_auc", num(p.auc_a)},
        {"oracle_ci", interval(p.a)},      {"model_auc", num(p.auc_b)},
        {"model_ci", interval(p.b)},       {"best_baseline", best_names[h]},
        {"best_baseline_auc", num(b)},     {"best_baseline_ci", interval(ob.horizons[h].b)},
        {"gap_recovered", num(recovered)}, {"gap_recovered_ci", interval(share_ci)}};
    std::string line = fmt::format(
        "h{}: oracle {:.4f} [{:.4f}, {:.4f}] | model {:.4f} | best baseline ({}) {:.4f} | the "
        "model recovers {} of the gap",
        horizons[h], p.auc_a, p.a.lo, p.a.hi, p.auc_b, best_names[h], b,
        share_text(recovered, share_ci));
    if (!stacked.empty()) {
      Interval stacked_ci;
      const double s = share(os, h, &stacked_ci);
      e["stacked_auc"] = num(os.horizons[h].auc_b);
      e["stacked_gap_recovered"] = num(s);
      e["stacked_gap_recovered_ci"] = interval(stacked_ci);
      line += fmt::format("; stacked {:.4f}, {}", os.horizons[h].auc_b, share_text(s, stacked_ci));
    }
    e["line"] = line;
    hs.push_back(e);
  }
  return nlohmann::json{{"rows", labels.size() / nh}, {"horizons", hs}};
}

std::string oracle_lines(const nlohmann::json& oracle, const std::string& which) {
  std::string out = fmt::format(
      "oracle (the synthetic market's ceiling) on {} of {}, {} moved continuations per row and "
      "horizon:\n",
      oracle["rows"].get<int64_t>(), which, oracle["paths"].get<int>());
  for (const auto& h : oracle["horizons"]) out += "  " + h["line"].get<std::string>() + "\n";
  return out;
}

}  // namespace fxt
