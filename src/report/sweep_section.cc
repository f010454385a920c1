#include "report/sweep_section.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "report/chart.h"
#include "report/html.h"
#include "report/section_util.h"

namespace fxt::report {
namespace {

using json = nlohmann::json;

double stat(const json& lane, const char* key) {
  const json& s = lane["stats"];
  return s.contains(key) && s[key].is_number() ? s[key].get<double>() : kNaN;
}

std::string param_text(const json& lane, const std::string& key) {
  const json& p = lane["params"];
  if (!p.contains(key)) return "";
  return p[key].is_string() ? p[key].get<std::string>() : p[key].dump();
}

// A diverging cell colour for v in [-m, m]: red below zero, green above, white at zero.
std::string cell_colour(double v, double m) {
  if (!std::isfinite(v) || !(m > 0)) return "#f4f4f4";
  const double t = std::min(1.0, std::fabs(v) / m);
  const int fade = static_cast<int>(std::lround(255 - 120 * t));
  return v < 0 ? fmt::format("#ff{:02x}{:02x}", fade, fade)
               : fmt::format("#{:02x}ff{:02x}", fade, fade);
}

// Distinct values of a key in lane order.
std::vector<std::string> values_of(const json& results, const std::string& key) {
  std::vector<std::string> out;
  for (const json& lane : results) {
    const std::string v = param_text(lane, key);
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

std::string heatmap(const json& results, const std::string& sid, const std::string& kx,
                    const std::string& ky) {
  const std::vector<std::string> xs = values_of(results, kx), ys = values_of(results, ky);
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> sums;
  for (const json& lane : results) {
    const double pnl = stat(lane, "total_pnl");
    if (!std::isfinite(pnl)) continue;
    auto& s = sums[{param_text(lane, kx), param_text(lane, ky)}];
    s.first += pnl;
    ++s.second;
  }
  double m = 0;
  for (const auto& [k, s] : sums) m = std::max(m, std::fabs(s.first / s.second));
  std::string out = fmt::format(
      "<table class=\"fxt-table\" id=\"{}-heatmap\"><caption>Mean total PnL by {} (rows) and {} "
      "(columns), over the other parameters</caption>\n<tr><th>{} \\ {}</th>",
      sid, html_escape(ky), html_escape(kx), html_escape(ky), html_escape(kx));
  for (const std::string& x : xs) out += "<th>" + html_escape(x) + "</th>";
  out += "</tr>\n";
  for (const std::string& y : ys) {
    out += "<tr><td>" + html_escape(y) + "</td>";
    for (const std::string& x : xs) {
      auto it = sums.find({x, y});
      const double v = it == sums.end() ? kNaN : it->second.first / it->second.second;
      out += fmt::format("<td style=\"background:{}\" data-value=\"{}\">{}</td>", cell_colour(v, m),
                         std::isfinite(v) ? fmt::format("{}", v) : "", format_number(v, 5));
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

Result<std::string> sweep_html(const std::string& dir, const std::string& sid,
                               const std::vector<std::string>& axes,
                               std::vector<std::pair<std::string, std::string>>* headline) {
  const std::string path = dir + "/sweep.json";
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") ||
      !doc["results"].is_array() || !doc.contains("keys") || !doc["keys"].is_array())
    return InvalidInput("{}: not a sweep.json (expected the keys results and keys)", path);
  const json& results = doc["results"];
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].is_object() || !results[i].contains("params") ||
        !results[i]["params"].is_object() || !results[i].contains("stats") ||
        !results[i]["stats"].is_object())
      return InvalidInput("{}: results[{}]: expected an object with params and stats", path, i);
  std::vector<std::string> keys;
  for (const json& k : doc["keys"])
    if (k.is_string()) keys.push_back(k.get<std::string>());

  std::string out;
  // Heatmap over two keys that vary.
  std::vector<std::string> varying;
  for (const std::string& k : keys)
    if (values_of(results, k).size() > 1) varying.push_back(k);
  std::vector<std::string> chosen = axes;
  for (const std::string& k : chosen)
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      return UsageError("--sweep-axes: '{}' is not a key of {} (keys: {})", k, path,
                        fmt::format("{}", fmt::join(keys, ", ")));
  // Default: the first two [grid] keys (sweep.json's grid_axes), else any two that vary.
  for (const json& k : doc.value("grid_axes", json::array()))
    if (chosen.size() < 2 && k.is_string() && axes.empty() &&
        std::find(varying.begin(), varying.end(), k.get<std::string>()) != varying.end())
      chosen.push_back(k.get<std::string>());
  for (const std::string& k : varying)
    if (chosen.size() < 2 && axes.empty() &&
        std::find(chosen.begin(), chosen.end(), k) == chosen.end())
      chosen.push_back(k);
  if (chosen.size() == 2) out += heatmap(results, sid, chosen[0], chosen[1]);

  // The Pareto front in the drawdown / Sharpe (or PnL) plane.
  bool any_sharpe = false;
  for (const json& lane : results)
    any_sharpe = any_sharpe || std::isfinite(stat(lane, "sharpe_annualised"));
  const char* y_key = any_sharpe ? "sharpe_annualised" : "total_pnl";
  Series all = make_series("lanes", {}, {}, SeriesStyle::kMarkers);
  all.color = "#bbbbbb";
  Series front = make_series("Pareto front", {}, {}, SeriesStyle::kMarkers);
  for (const json& lane : results) {
    Series& s = lane.value("pareto", false) ? front : all;
    s.x.push_back(stat(lane, "max_drawdown"));
    s.y.push_back(stat(lane, y_key));
  }
  ChartSpec chart;
  chart.id = sid + "-pareto";
  chart.title =
      fmt::format("Pareto front of Sharpe, max drawdown and turnover ({} lanes)", results.size());
  chart.x_label = "max drawdown";
  chart.y_label = any_sharpe ? "Sharpe (daily, annualised)" : "total PnL (every Sharpe is null)";
  chart.series = {all, front};
  out += figure(render_chart(chart));

  // The best lanes: --top's order when given, else the front.
  std::vector<size_t> best;
  const json& listed = doc.contains("top") && doc["top"].is_array() && !doc["top"].empty()
                           ? doc["top"]
                           : doc.value("pareto_front", json::array());
  for (const json& i : listed)
    if (i.is_number_unsigned() && i.get<size_t>() < results.size()) best.push_back(i.get<size_t>());
  Table bt;
  bt.id = sid + "-best";
  bt.caption = doc.contains("top") && !doc["top"].empty() ? "Best lanes by Sharpe (--top)"
                                                          : "Lanes on the Pareto front";
  bt.header = {"lane"};
  bt.header.insert(bt.header.end(), keys.begin(), keys.end());
  for (const char* c : {"total PnL", "Sharpe", "max drawdown", "turnover", "fills"})
    bt.header.push_back(c);
  for (size_t k = 0; k < best.size() && k < 25; ++k) {
    const json& lane = results[best[k]];
    std::vector<std::string> row = {std::to_string(best[k])};
    for (const std::string& key : keys) row.push_back(param_text(lane, key));
    for (const char* s :
         {"total_pnl", "sharpe_annualised", "max_drawdown", "turnover", "trades"})
      row.push_back(format_number(stat(lane, s), 6));
    bt.rows.push_back(std::move(row));
  }
  out += render_table(bt);

  // Queue-model band: lanes equal in every key but the queue model.
  if (std::find(keys.begin(), keys.end(), "queue") != keys.end()) {
    std::map<std::string, std::vector<size_t>> groups;
    std::vector<std::string> order;
    for (size_t i = 0; i < results.size(); ++i) {
      std::string id;
      for (const std::string& k : keys)
        if (k != "queue") id += k + "=" + param_text(results[i], k) + " ";
      if (!groups.count(id)) order.push_back(id);
      groups[id].push_back(i);
    }
    Table band;
    band.id = sid + "-band";
    band.caption = "Queue-model band of total PnL: each parameter set under every queue model";
    band.header = {"parameters", "models", "min", "max", "spread"};
    for (const std::string& id : order) {
      const std::vector<size_t>& g = groups[id];
      if (g.size() < 2) continue;
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (size_t i : g) {
        const double v = stat(results[i], "total_pnl");
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      band.rows.push_back({id.empty() ? "(all)" : id.substr(0, id.size() - 1),
                           std::to_string(g.size()), format_number(lo, 6), format_number(hi, 6),
                           format_number(hi - lo, 6)});
    }
    if (!band.rows.empty()) out += render_table(band);
  }

  headline->push_back({"lanes", std::to_string(results.size())});
  headline->push_back(
      {"Pareto lanes", std::to_string(doc.value("pareto_front", json::array()).size())});
  if (!best.empty())
    headline->push_back({"best lane PnL", format_number(stat(results[best[0]], "total_pnl"), 6)});
  return out;
}

}  // namespace fxt::report
