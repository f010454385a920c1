#include "report/cv_section.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/chart.h"
#include "report/eval_section.h"
#include "report/html.h"
#include "report/oracle_section.h"

namespace fxt::report {

using nlohmann::json;

// cv.json of `fxt cv` (src/train/cv.h, docs/CV.md): per_fold (fold, test range, rows, auc
// {model, logreg, base_rate} per horizon, mean_auc), pooled (Metrics of the three predictors
// over every fold's test rows), comparison (per horizon: pooled AUCs with paired-bootstrap
// intervals, the model - logistic difference and folds won) and mean. Read defensively: a
// missing piece leaves its cells empty rather than failing the report.
Result<std::string> cv_html(const std::string& dir, const std::string& sid, Headline* headline) {
  FXT_ASSIGN_OR_RETURN(json cv, read_json_file(dir + "/cv.json"));
  if (!cv.is_object()) return InvalidInput("{}/cv.json: expected a JSON object", dir);
  const std::vector<int> hs = horizons_of(cv);
  const json& per_fold = field(cv, "per_fold");
  const json& pooled = field(cv, "pooled");
  const json& comparison = field(cv, "comparison");
  const json& mean = field(cv, "mean");
  const size_t n_folds = per_fold.is_array() ? per_fold.size() : 0;
  std::string out = fmt::format(
      "<p class=\"fxt-meta\">{} folds, {} by {}, {} training block(s), gap {} snapshots (purge "
      "{} + embargo {}); pooled over {} test rows</p>\n",
      n_folds, html_escape(scalar_text(field(cv, "scheme"))),
      html_escape(scalar_text(field(cv, "unit"))),
      html_escape(scalar_text(field(cv, "train_blocks"))),
      html_escape(scalar_text(field(cv, "gap"))), html_escape(scalar_text(field(cv, "purge"))),
      html_escape(scalar_text(field(cv, "embargo"))),
      html_escape(scalar_text(field(pooled, "rows"))));

  const char* who[] = {"model", "best_baseline", "base_rate"};
  const char* names[] = {"model", "best baseline", "base rate"};
  Table t;
  t.id = sid + "-folds";
  t.caption = "Per-fold test AUC (each fold trained fresh, early-stopped on its validation block)";
  t.header = {"fold",         "test range", "rows", "mean AUC model", "mean AUC best baseline",
              "mean AUC base"};
  for (int h : hs) t.header.push_back(horizon_name(h) + " model");
  for (int h : hs) t.header.push_back(horizon_name(h) + " best baseline");
  std::vector<Series> fold_series(3);
  for (size_t w = 0; w < 3; ++w) fold_series[w] = make_series(names[w]);
  fold_series[2].dashed = true;
  for (size_t k = 0; k < n_folds; ++k) {
    const json& f = per_fold[k];
    const json& fold_no = field(f, "fold");
    const double x = fold_no.is_number() ? num(fold_no) : static_cast<double>(k);
    const json& test = field(f, "test");
    std::vector<std::string> row = {
        fold_no.is_null() ? std::to_string(k) : scalar_text(fold_no),
        test.is_array() && test.size() == 2
            ? fmt::format("[{}, {})", scalar_text(test[0]), scalar_text(test[1]))
            : "",
        scalar_text(field(f, "rows"))};
    for (size_t w = 0; w < 3; ++w) {
      const double m = num(field(f, "mean_auc"), who[w]);
      row.push_back(format_fixed(m, 4));
      fold_series[w].x.push_back(x);
      fold_series[w].y.push_back(m);
    }
    for (size_t w = 0; w < 2; ++w) {
      const json& aucs = field(field(f, "auc"), who[w]);
      for (size_t i = 0; i < hs.size(); ++i) {
        row.push_back(format_fixed(aucs.is_array() && i < aucs.size() ? num(aucs[i]) : kNaN, 4));
      }
    }
    t.rows.push_back(std::move(row));
  }

  Table p;
  p.id = sid + "-pooled";
  p.caption = "Pooled over the folds' test rows, with paired block-bootstrap 95% intervals";
  p.header = {"horizon",           "labelled",      "AUC model",
              "AUC best baseline", "AUC base rate", "model − best baseline",
              "best baseline",     "folds won"};
  ChartSpec bars;
  bars.id = sid + "-pooled-chart";
  bars.title = "Pooled test AUC per horizon (95% intervals)";
  bars.y_label = "ROC AUC";
  std::vector<Series> bar_series(3);
  for (size_t w = 0; w < 3; ++w) {
    bar_series[w] = make_series(names[w]);
    bar_series[w].style = SeriesStyle::kBars;
  }
  double lo_all = 0.5;
  for (size_t i = 0; comparison.is_array() && i < comparison.size(); ++i) {
    const json& c = comparison[i];
    const int h = c.contains("horizon") && c["horizon"].is_number_integer()
                      ? c["horizon"].get<int>()
                      : (i < hs.size() ? hs[i] : 0);
    auto [mlo, mhi] = interval_pair(field(c, "model_auc_ci"));
    auto [llo, lhi] = interval_pair(field(c, "best_baseline_auc_ci"));
    auto [dlo, dhi] = interval_pair(field(c, "diff_ci"));
    p.rows.push_back({horizon_name(h), scalar_text(field(c, "n_valid")),
                      format_with_interval(num(c, "model_auc"), mlo, mhi),
                      format_with_interval(num(c, "best_baseline_auc"), llo, lhi),
                      format_fixed(num(c, "base_rate_auc"), 4),
                      format_with_interval(num(c, "diff"), dlo, dhi),
                      scalar_text(field(c, "best_baseline")),
                      fmt::format("{}/{}", scalar_text(field(c, "folds_model_wins")),
                                  scalar_text(field(c, "folds_compared")))});
    bars.categories.push_back(horizon_name(h));
    const double ys[] = {num(c, "model_auc"), num(c, "best_baseline_auc"), num(c, "base_rate_auc")};
    const double los[] = {mlo, llo, kNaN}, his[] = {mhi, lhi, kNaN};
    for (size_t w = 0; w < 3; ++w) {
      bar_series[w].x.push_back(static_cast<double>(i));
      bar_series[w].y.push_back(ys[w]);
      bar_series[w].lo.push_back(los[w]);
      bar_series[w].hi.push_back(his[w]);
      for (double v : {ys[w], los[w]}) {
        if (std::isfinite(v)) lo_all = std::min(lo_all, v);
      }
    }
  }
  if (mean.is_object()) {
    auto [dlo, dhi] = interval_pair(field(mean, "diff_ci"));
    p.rows.push_back({"mean", "", format_fixed(num(mean, "model_auc"), 4),
                      format_fixed(num(mean, "best_baseline_auc"), 4),
                      format_fixed(num(mean, "base_rate_auc"), 4),
                      format_with_interval(num(mean, "diff"), dlo, dhi), "", ""});
  }
  bars.series = bar_series;
  bars.y_min = std::max(0.0, std::floor((lo_all - 0.05) * 20) / 20);

  ChartSpec c;
  c.id = sid + "-folds-chart";
  c.title = "Test mean AUC per fold";
  c.x_label = "fold";
  c.y_label = "mean ROC AUC";
  c.x_axis = XAxis::kInteger;
  c.series = fold_series;
  for (size_t w = 0; w < 3; ++w) {
    Series m = fold_series[w];
    m.name.clear();
    m.style = SeriesStyle::kMarkers;
    m.color = palette_color(w);
    c.series.push_back(std::move(m));
  }
  out += "<div class=\"fxt-grid\">\n" + figure(render_chart(c)) + figure(render_chart(bars)) +
         "</div>\n";
  out += render_table(t);
  out += render_table(p);
  out += verdict_html(comparison);
  out += verdict_html(field(field(cv, "stacked"), "horizons"));  // the model stack, when pooled
  out += oracle_html(field(cv, "oracle"), sid, "pooled test rows");  // synthetic markets only

  headline->push_back({"folds", std::to_string(n_folds)});
  headline->push_back({"mean AUC model", format_fixed(num(mean, "model_auc"), 4)});
  headline->push_back({"mean AUC best baseline", format_fixed(num(mean, "best_baseline_auc"), 4)});
  return out;
}

}  // namespace fxt::report
