#include "report/oracle_section.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/chart.h"
#include "report/html.h"
#include "report/section_util.h"

namespace fxt::report {

using nlohmann::json;

namespace {

// A share of the gap with its interval, in percent: "56 % [31 %, 80 %]".
std::string share_cell(const json& e, const char* key, const char* ci_key) {
  const double s = num(e, key);
  if (!std::isfinite(s)) return "–";
  auto [lo, hi] = interval_pair(field(e, ci_key));
  if (!std::isfinite(lo) || !std::isfinite(hi)) return fmt::format("{:.0f} %", 100 * s);
  return fmt::format("{:.0f} % [{:.0f} %, {:.0f} %]", 100 * s, 100 * lo, 100 * hi);
}

}  // namespace

std::string oracle_html(const json& oracle, const std::string& sid, const std::string& which) {
  const json& hs = field(oracle, "horizons");
  if (!oracle.is_object() || !hs.is_array() || hs.empty()) return "";
  const bool stacked = field(hs[0], "stacked_auc").is_number();
  std::string out = fmt::format(
      "<h4>The ceiling: the synthetic market's oracle</h4>\n<p class=\"fxt-meta\">The oracle "
      "knows the generator's latent state and computes each direction probability by Monte Carlo "
      "({} continuations per row and horizon; docs/SYNTH.md). Scored on {} {}; the model, {}the "
      "best baseline on exactly those rows. The gap share is (model − best baseline) / (oracle − "
      "best baseline), its interval over the same block-bootstrap replicates.</p>\n",
      html_escape(scalar_text(field(oracle, "paths"))),
      html_escape(scalar_text(field(oracle, "rows"))), html_escape(which),
      stacked ? "the stacked model and " : "");
  Table t;
  t.id = sid + "-oracle";
  t.caption = "AUC on the oracle's rows [block-bootstrap 95% intervals] and the gap recovered";
  t.header = {"horizon", "oracle", "model", "best baseline", "AUC", "gap recovered by the model"};
  if (stacked) {
    t.header.emplace_back("stacked");
    t.header.emplace_back("gap recovered, stacked");
  }
  ChartSpec c;
  c.id = sid + "-oracle-chart";
  c.title = "AUC on the oracle's rows (95% intervals)";
  c.y_label = "ROC AUC";
  const char* names[] = {"best baseline", "model", "stacked", "oracle"};
  const char* keys[] = {"best_baseline_auc", "model_auc", "stacked_auc", "oracle_auc"};
  const char* ci_keys[] = {"best_baseline_ci", "model_ci", nullptr, "oracle_ci"};
  std::vector<Series> series(4);
  double lo_all = 1.0;
  for (size_t i = 0; i < hs.size(); ++i) {
    const json& e = hs[i];
    const std::string h = horizon_name(static_cast<int>(num(e, "horizon")));
    c.categories.push_back(h);
    auto [olo, ohi] = interval_pair(field(e, "oracle_ci"));
    auto [mlo, mhi] = interval_pair(field(e, "model_ci"));
    auto [blo, bhi] = interval_pair(field(e, "best_baseline_ci"));
    std::vector<std::string> row = {h,
                                    format_with_interval(num(e, "oracle_auc"), olo, ohi),
                                    format_with_interval(num(e, "model_auc"), mlo, mhi),
                                    scalar_text(field(e, "best_baseline")),
                                    format_with_interval(num(e, "best_baseline_auc"), blo, bhi),
                                    share_cell(e, "gap_recovered", "gap_recovered_ci")};
    if (stacked) {
      row.push_back(format_fixed(num(e, "stacked_auc"), 4));
      row.push_back(share_cell(e, "stacked_gap_recovered", "stacked_gap_recovered_ci"));
    }
    t.rows.push_back(std::move(row));
    for (size_t w = 0; w < 4; ++w) {
      Series& s = series[w];
      s.x.push_back(static_cast<double>(i));
      s.y.push_back(num(e, keys[w]));
      if (std::isfinite(s.y.back())) lo_all = std::min(lo_all, s.y.back());
      if (ci_keys[w] != nullptr) {
        auto [lo, hi] = interval_pair(field(e, ci_keys[w]));
        s.lo.push_back(lo);
        s.hi.push_back(hi);
        if (std::isfinite(lo)) lo_all = std::min(lo_all, lo);
      }
    }
  }
  for (size_t w = 0; w < 4; ++w) {
    if (w == 2 && !stacked) continue;
    series[w].name = names[w];
    series[w].style = SeriesStyle::kBars;
    series[w].color = palette_color(w);
    c.series.push_back(std::move(series[w]));
  }
  // AUC differences are small: the axis starts a little below the lowest value, not at 0.
  c.y_min = std::max(0.0, std::floor((lo_all - 0.02) * 50) / 50);
  out += render_table(t);
  out += "<div class=\"fxt-grid\">\n" + figure(render_chart(c)) + "</div>\n";
  return out;
}

}  // namespace fxt::report
