#include "report/eval_section.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/chart.h"
#include "report/html.h"
#include "report/oracle_section.h"

namespace fxt::report {

using nlohmann::json;

namespace {

// Per-horizon statistic `key` of a Metrics JSON ({"horizons": [{...}]}).
double horizon_stat(const json& metrics, size_t i, const char* key) {
  const json& hs = field(metrics, "horizons");
  if (!hs.is_array() || i >= hs.size()) return kNaN;
  return num(hs[i], key);
}
// The bootstrap interval {lo, hi} of a statistic; NaN when absent.
std::pair<double, double> interval(const json& boot, size_t i, const char* key) {
  const json* iv = nullptr;
  if (i == static_cast<size_t>(-1)) {
    iv = &field(boot, key);
  } else {
    const json& hs = field(boot, "horizons");
    if (hs.is_array() && i < hs.size()) iv = &field(hs[i], key);
  }
  if (iv == nullptr) return {kNaN, kNaN};
  return {num(*iv, "lo"), num(*iv, "hi")};
}

// Every baseline's AUC per horizon (the families of train/baselines.h), with intervals.
std::string baselines_html(const json& ev, const std::vector<int>& hs, const std::string& sid) {
  const json& bs = field(ev, "baselines");
  if (!bs.is_object() || bs.empty()) return "<p class=\"fxt-meta\">No baseline was fit.</p>\n";
  Table t;
  t.id = sid + "-baselines";
  t.caption =
      "AUC of every baseline on the same rows (fit to convergence on the training rows; "
      "[block-bootstrap 95% intervals])";
  t.header = {"horizon", "model"};
  const json& stacked = field(field(ev, "stacked"), "model");  // the model stack, when fit
  if (stacked.is_object()) t.header.emplace_back("stacked");
  for (const auto& [name, m] : bs.items()) t.header.push_back(name);
  const json& boot = field(ev, "bootstrap");
  for (size_t i = 0; i < hs.size(); ++i) {
    auto [mlo, mhi] = interval(field(boot, "model"), i, "auc");
    std::vector<std::string> row = {
        horizon_name(hs[i]),
        format_with_interval(horizon_stat(field(ev, "model"), i, "auc"), mlo, mhi)};
    if (stacked.is_object()) row.push_back(format_fixed(horizon_stat(stacked, i, "auc"), 4));
    for (const auto& [name, m] : bs.items()) {
      auto [lo, hi] = interval(field(boot, name), i, "auc");
      row.push_back(format_with_interval(horizon_stat(m, i, "auc"), lo, hi));
    }
    t.rows.push_back(std::move(row));
  }
  return render_table(t);
}

}  // namespace

// One plain verdict line per horizon (train/comparison.h): "model beats the best baseline: ...".
std::string verdict_html(const json& entries) {
  if (!entries.is_array() || entries.empty()) return "";
  std::string out = "<ul class=\"fxt-verdicts\">\n";
  for (const json& e : entries) {
    const json& line = field(e, "line");
    if (!line.is_string()) continue;
    const bool yes = scalar_text(field(e, "verdict")) == "yes";
    out += fmt::format("<li class=\"fxt-verdict fxt-verdict-{}\">{}</li>\n", yes ? "yes" : "no",
                       html_escape(line.get<std::string>()));
  }
  return out + "</ul>\n";
}

std::string eval_html(const json& ev, const std::string& sid, Headline* headline) {
  const std::vector<int> hs = horizons_of(ev);
  const json &model = field(ev, "model"), &base = field(ev, "base_rate");
  const json& bm = field(field(ev, "bootstrap"), "model");
  const json& vs = field(ev, "vs_best_baseline");
  // The best baseline of each horizon (highest AUC on these rows, train/comparison.h) as one
  // predictor: its metrics and intervals per horizon.
  json best = {{"horizons", json::array()},
               {"mean_auc", field(field(vs, "mean"), "best_baseline_auc")}};
  json bl = {{"horizons", json::array()}};
  for (size_t i = 0; i < hs.size(); ++i) {
    const json& e = field(vs, "horizons").is_array() && i < field(vs, "horizons").size()
                        ? field(vs, "horizons")[i]
                        : json();
    const std::string name = scalar_text(field(e, "best_baseline"));
    const json& bh = field(field(field(ev, "baselines"), name), "horizons");
    const json& ch = field(field(field(ev, "bootstrap"), name), "horizons");
    best["horizons"].push_back(bh.is_array() && i < bh.size() ? bh[i] : json());
    bl["horizons"].push_back(ch.is_array() && i < ch.size() ? ch[i] : json());
  }
  const json& logreg = best;
  std::string out;
  out += fmt::format(
      "<p class=\"fxt-meta\">{} split, {} rows scored, window {} at stride {}, model {}; "
      "checkpoint {}</p>\n",
      html_escape(scalar_text(field(ev, "split"))), html_escape(scalar_text(field(ev, "rows"))),
      html_escape(scalar_text(field(ev, "window"))), html_escape(scalar_text(field(ev, "stride"))),
      html_escape(scalar_text(field(ev, "model_kind"))),
      html_escape(scalar_text(field(ev, "checkpoint"))));

  // Per-horizon metrics with intervals.
  Table t;
  t.id = sid + "-metrics";
  t.caption =
      "Per-horizon metrics on the same rows (model, best baseline of each horizon, base rate); "
      "[block-bootstrap 95% intervals]";
  t.header = {"horizon",
              "labelled",
              "AUC model",
              "AUC best baseline",
              "AUC base",
              "log loss model",
              "log loss best baseline",
              "log loss base",
              "Brier model",
              "Brier best baseline",
              "Brier base",
              "ECE model",
              "ECE best baseline"};
  for (size_t i = 0; i < hs.size(); ++i) {
    auto [mlo, mhi] = interval(bm, i, "auc");
    auto [llo, lhi] = interval(bl, i, "auc");
    auto [mllo, mlhi] = interval(bm, i, "log_loss");
    auto [lllo, llhi] = interval(bl, i, "log_loss");
    t.rows.push_back({horizon_name(hs[i]), format_number(horizon_stat(model, i, "n_valid"), 9),
                      format_with_interval(horizon_stat(model, i, "auc"), mlo, mhi),
                      format_with_interval(horizon_stat(logreg, i, "auc"), llo, lhi),
                      format_fixed(horizon_stat(base, i, "auc"), 4),
                      format_with_interval(horizon_stat(model, i, "log_loss"), mllo, mlhi),
                      format_with_interval(horizon_stat(logreg, i, "log_loss"), lllo, llhi),
                      format_fixed(horizon_stat(base, i, "log_loss"), 4),
                      format_fixed(horizon_stat(model, i, "brier"), 4),
                      format_fixed(horizon_stat(logreg, i, "brier"), 4),
                      format_fixed(horizon_stat(base, i, "brier"), 4),
                      format_fixed(horizon_stat(model, i, "ece"), 4),
                      format_fixed(horizon_stat(logreg, i, "ece"), 4)});
  }
  {
    auto [mlo, mhi] = interval(bm, static_cast<size_t>(-1), "mean_auc");
    auto [llo, lhi] = interval(bl, static_cast<size_t>(-1), "mean_auc");
    t.rows.push_back({"mean", "", format_with_interval(num(model, "mean_auc"), mlo, mhi),
                      format_with_interval(num(logreg, "mean_auc"), llo, lhi),
                      format_fixed(num(base, "mean_auc"), 4), "", "", "", "", "", "", "", ""});
  }
  out += render_table(t);
  out += baselines_html(ev, hs, sid);
  out += verdict_html(field(vs, "horizons"));
  // The model stacked with the baselines (train/stacking.h), when the evaluation fit it.
  out += verdict_html(field(field(field(ev, "stacked"), "vs_best_baseline"), "horizons"));
  out += oracle_html(field(ev, "oracle"), sid, "test rows");  // synthetic markets only

  // Lift over the baselines.
  Table lift;
  lift.id = sid + "-lift";
  lift.caption = "Lift of the model: AUC difference and relative log-loss reduction";
  lift.header = {"horizon",
                 "AUC − best baseline",
                 "AUC − base rate",
                 "log loss vs best baseline",
                 "log loss vs base rate",
                 "Brier skill vs base rate"};
  std::vector<double> x, lift_auc_l, lift_auc_b, ll_l, ll_b;
  std::vector<std::string> cats;
  for (size_t i = 0; i < hs.size(); ++i) {
    const double am = horizon_stat(model, i, "auc"), al = horizon_stat(logreg, i, "auc"),
                 ab = horizon_stat(base, i, "auc");
    const double lm = horizon_stat(model, i, "log_loss"), ll = horizon_stat(logreg, i, "log_loss"),
                 lb = horizon_stat(base, i, "log_loss");
    const double bsm = horizon_stat(model, i, "brier"), bsb = horizon_stat(base, i, "brier");
    const double rl = 100 * (ll - lm) / ll, rb = 100 * (lb - lm) / lb;
    lift.rows.push_back({horizon_name(hs[i]), format_fixed(am - al, 4), format_fixed(am - ab, 4),
                         format_fixed(rl, 2) + " %", format_fixed(rb, 2) + " %",
                         format_fixed(1 - bsm / bsb, 4)});
    cats.push_back(horizon_name(hs[i]));
    x.push_back(static_cast<double>(i));
    lift_auc_l.push_back(am - al);
    lift_auc_b.push_back(am - ab);
    ll_l.push_back(rl);
    ll_b.push_back(rb);
  }
  out += render_table(lift);

  // AUC bars with intervals, and the lift bars.
  std::string grid;
  {
    ChartSpec c;
    c.id = sid + "-auc";
    c.title = "AUC per horizon (95% block-bootstrap intervals)";
    c.y_label = "ROC AUC";
    c.categories = cats;
    double lo_all = 0.5;
    const char* names[] = {"model", "best baseline", "base rate"};
    const json* metrics[] = {&model, &logreg, &base};
    const json* boots[] = {&bm, &bl, nullptr};
    for (int w = 0; w < 3; ++w) {
      Series s;
      s.name = names[w];
      s.style = SeriesStyle::kBars;
      for (size_t i = 0; i < hs.size(); ++i) {
        s.x.push_back(static_cast<double>(i));
        s.y.push_back(horizon_stat(*metrics[w], i, "auc"));
        if (boots[w] != nullptr) {
          auto [lo, hi] = interval(*boots[w], i, "auc");
          s.lo.push_back(lo);
          s.hi.push_back(hi);
          if (std::isfinite(lo)) lo_all = std::min(lo_all, lo);
        }
        if (std::isfinite(s.y.back())) lo_all = std::min(lo_all, s.y.back());
      }
      c.series.push_back(std::move(s));
    }
    // AUC differences are small: the axis starts a little below the lowest value, not at 0.
    c.y_min = std::max(0.0, std::floor((lo_all - 0.05) * 20) / 20);
    grid += figure(render_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-lift-chart";
    c.title = "Log-loss reduction of the model (%)";
    c.y_label = "% of the baseline's log loss";
    c.categories = cats;
    c.series.push_back(make_series("vs best baseline", x, ll_l, SeriesStyle::kBars));
    c.series.push_back(make_series("vs base rate", x, ll_b, SeriesStyle::kBars));
    c.series[0].color = palette_color(1);
    c.series[1].color = palette_color(2);
    grid += figure(render_chart(c));
  }
  out += "<div class=\"fxt-grid\">\n" + grid + "</div>\n";

  // Reliability diagrams, one per horizon, with their tables.
  out += "<h4>Reliability (predicted probability vs observed frequency, 10 bins)</h4>\n";
  out += "<div class=\"fxt-grid\">\n";
  for (size_t i = 0; i < hs.size(); ++i) {
    const std::string h = horizon_name(hs[i]);
    ChartSpec c;
    c.id = sid + "-reliability-" + h;
    c.title = "Reliability " + h;
    c.x_label = "mean predicted";
    c.y_label = "observed frequency";
    c.width = 330;
    c.height = 320;
    c.x_min = c.y_min = 0.0;
    c.x_max = c.y_max = 1.0;
    Series diag = make_series("", {0, 1}, {0, 1});
    diag.color = "#aaaaaa";
    diag.dashed = true;
    c.series.push_back(diag);
    Table rt;
    rt.id = sid + "-reliability-table-" + h;
    rt.header = {"bin", "n model", "pred", "obs", "n best baseline", "pred", "obs"};
    const json* who[] = {&model, &logreg};
    const char* names[] = {"model", "best baseline"};
    std::vector<json> bins(2);
    for (int w = 0; w < 2; ++w) {
      const json& hsj = field(*who[w], "horizons");
      bins[static_cast<size_t>(w)] =
          hsj.is_array() && i < hsj.size() ? field(hsj[i], "reliability") : json();
      Series s;
      s.name = names[w];
      s.color = palette_color(static_cast<size_t>(w));
      for (const json& b : bins[static_cast<size_t>(w)]) {
        if (num(b, "count") > 0) {
          s.x.push_back(num(b, "mean_predicted"));
          s.y.push_back(num(b, "observed_frequency"));
        }
      }
      c.series.push_back(s);
      Series m = s;
      m.name.clear();
      m.style = SeriesStyle::kMarkers;
      c.series.push_back(std::move(m));
    }
    const size_t nb =
        std::max(bins[0].is_array() ? bins[0].size() : 0, bins[1].is_array() ? bins[1].size() : 0);
    for (size_t b = 0; b < nb; ++b) {
      std::vector<std::string> row;
      const json& first = bins[0].is_array() && b < bins[0].size() ? bins[0][b] : bins[1][b];
      row.push_back(format_fixed(num(first, "lo"), 1) + "–" + format_fixed(num(first, "hi"), 1));
      for (int w = 0; w < 2; ++w) {
        const json& bj =
            bins[static_cast<size_t>(w)].is_array() && b < bins[static_cast<size_t>(w)].size()
                ? bins[static_cast<size_t>(w)][b]
                : json();
        row.push_back(format_number(num(bj, "count"), 9));
        row.push_back(format_fixed(num(bj, "mean_predicted"), 3));
        row.push_back(format_fixed(num(bj, "observed_frequency"), 3));
      }
      rt.rows.push_back(std::move(row));
    }
    out += figure(render_chart(c), render_table(rt));
  }
  out += "</div>\n";

  headline->push_back({"rows scored", scalar_text(field(ev, "rows"))});
  headline->push_back({"mean AUC model", format_fixed(num(model, "mean_auc"), 4)});
  headline->push_back({"mean AUC best baseline", format_fixed(num(logreg, "mean_auc"), 4)});
  return out;
}

}  // namespace fxt::report
