#include "report/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "core/text.h"
#include "report/chart.h"
#include "report/html.h"
#include "report/sweep_section.h"

namespace fxt::report {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Reading inputs: JSON and CSV files with one-line errors naming the file and the position.

Result<json> read_json_file(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidInput("{}: not valid JSON at byte {}: {}", path, e.byte, e.what());
  }
}

// A number at j[key] (NaN when missing, null or not a number).
double num(const json& j, const char* key) {
  if (!j.is_object()) return kNaN;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNaN;
  return it->get<double>();
}
double num(const json& j) {
  return j.is_number() ? j.get<double>() : kNaN;
}

// j[key] when it exists, else a static null.
const json& field(const json& j, std::string_view key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A run.json field, wherever a record keeps it: top level, "extra" or "metrics" (the common
// run record of src/train/run_record.h nests command-specific fields under "extra").
const json& run_field(const json& run, std::string_view key) {
  for (const json* j : {&run, &field(run, "extra"), &field(run, "metrics")}) {
    const json& v = field(*j, key);
    if (!v.is_null()) return v;
  }
  return field(run, key);
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number()) return format_number(v.get<double>(), 6);
  if (v.is_null()) return "\u2013";
  if (v.is_array()) {
    std::string s;
    for (const json& e : v) s += (s.empty() ? "" : ", ") + scalar_text(e);
    return s;
  }
  return v.dump();
}

// A run.json value in its unit: an integer `*_ns` as a duration (an epoch timestamp, past
// 1973, as a UTC time), an integer `tick_px` / `*_px` as a decimal price (1e-9 units);
// objects key by key with the unit's suffix dropped ("feed 1 ms, entry 0 s").
std::string unit_text(const std::string& key, const json& v) {
  const bool ns = key.ends_with("_ns"), px = key == "tick_px" || key.ends_with("_px");
  if (v.is_object()) {
    std::string s;
    for (const auto& [k, x] : v.items()) {
      const bool unit = (k.ends_with("_ns") || k.ends_with("_px")) && x.is_number_integer();
      s += (s.empty() ? "" : ", ") + (unit ? k.substr(0, k.size() - 3) : k) + " " + unit_text(k, x);
    }
    return s;
  }
  if (ns && v.is_number_integer()) {
    const auto t = v.get<int64_t>();
    if (t >= 100'000'000'000'000'000) return utc_text(t, 3);
    return duration_text(static_cast<double>(t) * 1e-9);
  }
  if (px && v.is_number_integer()) {
    return format_number(static_cast<double>(v.get<int64_t>()) / 1e9, 9);
  }
  return scalar_text(v);
}

// Numeric columns (and string columns) of a CSV file with a header line, by column name.
struct Csv {
  std::map<std::string, std::vector<double>> numbers;
  std::map<std::string, std::vector<std::string>> strings;
  size_t rows = 0;
};

Result<Csv> read_csv(const std::string& path, const std::vector<std::string>& numeric,
                     const std::vector<std::string>& text = {}) {
  FXT_ASSIGN_OR_RETURN(std::string body, read_file(path));
  Csv csv;
  size_t pos = 0, line_no = 0;
  std::vector<std::string> header;
  std::vector<int> num_index, text_index;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string> fields = split_fields(line, ',');
    if (header.empty()) {
      header = std::move(fields);
      auto find = [&](const std::string& name) -> int {
        auto it = std::find(header.begin(), header.end(), name);
        return it == header.end() ? -1 : static_cast<int>(it - header.begin());
      };
      for (const std::string& name : numeric) {
        const int i = find(name);
        if (i < 0) return InvalidInput("{}:1: no column '{}' in the header", path, name);
        num_index.push_back(i);
      }
      for (const std::string& name : text) {
        const int i = find(name);
        if (i < 0) return InvalidInput("{}:1: no column '{}' in the header", path, name);
        text_index.push_back(i);
      }
      continue;
    }
    if (fields.size() != header.size()) {
      return InvalidInput("{}:{}: {} fields, expected {} as in the header", path, line_no,
                          fields.size(), header.size());
    }
    for (size_t k = 0; k < numeric.size(); ++k) {
      const std::string& f = fields[static_cast<size_t>(num_index[k])];
      char* stop = nullptr;
      const double v = std::strtod(f.c_str(), &stop);
      if (f.empty() || stop != f.c_str() + f.size()) {
        return InvalidInput("{}:{}: bad number '{}' in column {}", path, line_no, f, numeric[k]);
      }
      csv.numbers[numeric[k]].push_back(v);
    }
    for (size_t k = 0; k < text.size(); ++k) {
      csv.strings[text[k]].push_back(fields[static_cast<size_t>(text_index[k])]);
    }
    ++csv.rows;
  }
  if (header.empty()) return InvalidInput("{}: empty file (expected a header line)", path);
  for (const std::string& name : numeric) csv.numbers[name];  // present even with no rows
  for (const std::string& name : text) csv.strings[name];
  return csv;
}

bool is_eval_json(const json& j) {
  return j.is_object() && j.contains("model") && j.contains("base_rate") && j.contains("horizons");
}

// ---------------------------------------------------------------------------------------------
// Sections.

// Headline metrics of a section for the comparison table, in display order.
using Headline = std::vector<std::pair<std::string, std::string>>;

struct Section {
  std::string id, kind, path, html;
  Headline headline;
};

std::string figure(const std::string& svg, const std::string& extra = "") {
  return "<figure class=\"fxt-figure\">" + svg + extra + "</figure>\n";
}

std::string horizon_name(int h) {
  return fmt::format("h{}", h);
}

std::vector<int> horizons_of(const json& j) {
  std::vector<int> hs;
  for (const json& h : field(j, "horizons")) {
    if (h.is_number_integer()) hs.push_back(h.get<int>());
  }
  return hs;
}

// --- evaluation --------------------------------------------------------------------------------

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
  for (const auto& [name, m] : bs.items()) t.header.push_back(name);
  const json& boot = field(ev, "bootstrap");
  for (size_t i = 0; i < hs.size(); ++i) {
    auto [mlo, mhi] = interval(field(boot, "model"), i, "auc");
    std::vector<std::string> row = {
        horizon_name(hs[i]),
        format_with_interval(horizon_stat(field(ev, "model"), i, "auc"), mlo, mhi)};
    for (const auto& [name, m] : bs.items()) {
      auto [lo, hi] = interval(field(boot, name), i, "auc");
      row.push_back(format_with_interval(horizon_stat(m, i, "auc"), lo, hi));
    }
    t.rows.push_back(std::move(row));
  }
  return render_table(t);
}

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

// --- training ----------------------------------------------------------------------------------

Result<std::vector<json>> read_metrics_jsonl(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::vector<json> epochs;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    try {
      json j = json::parse(line);
      if (!j.is_object()) return InvalidInput("{}:{}: expected a JSON object", path, line_no);
      epochs.push_back(std::move(j));
    } catch (const json::parse_error& e) {
      return InvalidInput("{}:{}: not valid JSON at byte {}: {}", path, line_no, e.byte, e.what());
    }
  }
  if (epochs.empty()) return InvalidInput("{}: no epochs (empty metrics file)", path);
  return epochs;
}

// Per-horizon traces of `key` (an array per epoch, or an object {"h30": ..} per epoch).
std::vector<Series> horizon_traces(const std::vector<json>& epochs, const std::vector<int>& hs,
                                   const std::string& outer, const std::string& inner) {
  std::vector<Series> out;
  for (size_t i = 0; i < hs.size(); ++i) {
    Series s;
    s.name = horizon_name(hs[i]);
    for (const json& e : epochs) {
      const json& v = inner.empty() ? field(e, outer) : field(field(e, outer), inner);
      double y = kNaN;
      if (v.is_array() && i < v.size()) y = num(v[i]);
      if (v.is_object()) y = num(field(v, horizon_name(hs[i])));
      s.x.push_back(num(e, "epoch"));
      s.y.push_back(y);
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> train_html(const std::string& dir, const std::string& sid, Headline* headline) {
  FXT_ASSIGN_OR_RETURN(std::vector<json> epochs, read_metrics_jsonl(dir + "/metrics.jsonl"));
  json run;
  if (fs::exists(dir + "/run.json")) {
    FXT_ASSIGN_OR_RETURN(run, read_json_file(dir + "/run.json"));
  }
  const json& config = field(run, "config");
  std::vector<int> hs = horizons_of(config);
  if (hs.empty()) {  // no run.json: the horizons from the first epoch's val_auc keys
    for (const auto& [k, v] : field(epochs.front(), "val_auc").items()) {
      if (k.size() > 1 && k[0] == 'h') hs.push_back(std::atoi(k.c_str() + 1));
    }
    std::sort(hs.begin(), hs.end());
  }
  std::string out;
  const json& best_epoch = run_field(run, "best_epoch");
  out += fmt::format(
      "<p class=\"fxt-meta\">{} epochs, best epoch {}{}; model {}, horizons {}</p>\n",
      epochs.size(), html_escape(scalar_text(best_epoch)),
      run_field(run, "stopped_early").is_boolean() && run_field(run, "stopped_early").get<bool>()
          ? " (stopped early)"
          : "",
      html_escape(scalar_text(field(config, "model"))),
      html_escape(scalar_text(field(config, "horizons"))));

  std::string grid;
  {
    ChartSpec c;
    c.id = sid + "-loss";
    c.title = "Loss per epoch (mean BCE over horizons)";
    c.x_label = "epoch";
    c.y_label = "loss";
    c.x_axis = XAxis::kInteger;
    Series tr = make_series("train"), va = make_series("validation"),
           bl = make_series("logistic train");
    bl.dashed = true;
    for (const json& e : epochs) {
      const double ep = num(e, "epoch");
      double t = num(e, "train_loss");
      const json& th = field(e, "train_loss_h");
      if (th.is_array() && !th.empty()) {  // per-horizon BCE: comparable with val_loss
        double sum = 0;
        for (const json& v : th) sum += num(v);
        t = sum / static_cast<double>(th.size());
      }
      tr.x.push_back(ep);
      tr.y.push_back(t);
      va.x.push_back(ep);
      va.y.push_back(num(e, "val_loss"));
      if (e.contains("baseline_train_loss") && !hs.empty()) {
        bl.x.push_back(ep);
        bl.y.push_back(num(e, "baseline_train_loss") / static_cast<double>(hs.size()));
      }
    }
    c.series = {tr, va};
    if (!bl.x.empty()) c.series.push_back(bl);
    grid += figure(render_zoomable_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-val-auc";
    c.title = "Validation AUC per horizon";
    c.x_label = "epoch";
    c.y_label = "ROC AUC";
    c.x_axis = XAxis::kInteger;
    c.series = horizon_traces(epochs, hs, "val_auc", "");
    Series mean = make_series("mean");
    mean.dashed = true;
    mean.color = "#333333";
    for (const json& e : epochs) {
      mean.x.push_back(num(e, "epoch"));
      mean.y.push_back(num(e, "val_mean_auc"));
    }
    c.series.push_back(mean);
    grid += figure(render_zoomable_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-sigma";
    c.title = "Controller: horizon weight scale \u03c3_h";
    c.x_label = "epoch";
    c.y_label = "\u03c3_h";
    c.x_axis = XAxis::kInteger;
    c.series = horizon_traces(epochs, hs, "controller", "sigma");
    grid += figure(render_zoomable_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-lambda";
    c.title = "Controller: trunk-gradient scale \u03bb_h";
    c.x_label = "epoch";
    c.y_label = "\u03bb_h";
    c.x_axis = XAxis::kInteger;
    c.series = horizon_traces(epochs, hs, "controller", "lambda");
    grid += figure(render_zoomable_chart(c));
  }
  out += "<div class=\"fxt-grid\">\n" + grid + "</div>\n";

  Table t;
  t.id = sid + "-epochs";
  t.caption = "Epochs";
  t.header = {"epoch", "step",      "train loss", "val loss", "val mean AUC",
              "lr",    "grad norm", "skipped",    "improved", "seconds"};
  double best_val = kNaN, last_auc = kNaN;
  for (const json& e : epochs) {
    t.rows.push_back({scalar_text(field(e, "epoch")), scalar_text(field(e, "step")),
                      format_fixed(num(e, "train_loss"), 5), format_fixed(num(e, "val_loss"), 5),
                      format_fixed(num(e, "val_mean_auc"), 4), format_number(num(e, "lr"), 3),
                      format_number(num(e, "grad_norm"), 4), scalar_text(field(e, "skipped_steps")),
                      scalar_text(field(e, "improved")), format_fixed(num(e, "seconds"), 1)});
    const double v = num(e, "val_loss");
    if (std::isfinite(v) && !(v >= best_val)) best_val = v;
    last_auc = num(e, "val_mean_auc");
  }
  out += render_table(t);

  if (config.is_object()) {
    Table ct;
    ct.id = sid + "-config";
    ct.caption = "Configuration (run.json)";
    ct.header = {"key", "value"};
    for (const auto& [k, v] : config.items()) ct.rows.push_back({k, unit_text(k, v)});
    for (const char* k : {"git_revision", "build_type", "device", "threads"}) {
      const json& v = run_field(run, k);
      if (!v.is_null()) ct.rows.push_back({k, scalar_text(v)});
    }
    out += render_table(ct);
  }

  headline->push_back({"epochs", std::to_string(epochs.size())});
  headline->push_back({"best val loss", format_fixed(best_val, 5)});
  headline->push_back({"last val mean AUC", format_fixed(last_auc, 4)});

  // An evaluation written into the run directory belongs to this run.
  if (fs::exists(dir + "/eval.json")) {
    FXT_ASSIGN_OR_RETURN(json ev, read_json_file(dir + "/eval.json"));
    if (is_eval_json(ev)) {
      out += "<h3>Evaluation (eval.json)</h3>\n" + eval_html(ev, sid + "-eval", headline);
    }
  }
  return out;
}

// --- cross-validation --------------------------------------------------------------------------

// An interval stored as [lo, hi] (cv.json) or {"lo", "hi"} (eval.json); NaN when absent.
std::pair<double, double> interval_pair(const json& iv) {
  if (iv.is_array() && iv.size() == 2) return {num(iv[0]), num(iv[1])};
  return {num(iv, "lo"), num(iv, "hi")};
}

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

  headline->push_back({"folds", std::to_string(n_folds)});
  headline->push_back({"mean AUC model", format_fixed(num(mean, "model_auc"), 4)});
  headline->push_back({"mean AUC best baseline", format_fixed(num(mean, "best_baseline_auc"), 4)});
  return out;
}

// --- backtest ----------------------------------------------------------------------------------

struct ModelRun {
  std::string name, dir;
  json stats;
};

const char* const kStatRows[][2] = {
    {"total_pnl", "total PnL"},
    {"sharpe_daily_annualised", "Sharpe (daily, annualised)"},
    {"sharpe_annualised", "Sharpe (annualised, as it applies)"},
    {"sharpe_basis", "Sharpe computed on"},
    {"sharpe_per_trade", "Sharpe per round trip"},
    {"sortino", "Sortino"},
    {"max_drawdown", "max drawdown"},
    {"return_over_drawdown", "return / drawdown"},
    {"trades", "fills"},
    {"round_trips", "round trips"},
    {"turnover", "turnover"},
    {"volume", "volume"},
    {"fill_ratio", "fill ratio"},
    {"maker_share", "maker share"},
    {"fees", "fees"},
    {"mean_holding_ns", "mean holding (s)"},
    {"orders", "orders"},
    {"events", "events"},
    {"final_position", "final position"},
    {"days", "days"},
};

std::string stat_text(const json& stats, const std::string& key) {
  const json& v = field(stats, key);
  if (v.is_string()) return v.get<std::string>();
  if (key == "mean_holding_ns") return format_number(num(v) / 1e9, 4);
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  return format_number(num(v), 6);
}

Result<std::string> backtest_html(const std::string& dir, const std::string& sid,
                                  const ReportOptions& opt, Headline* headline) {
  FXT_ASSIGN_OR_RETURN(json stats, read_json_file(dir + "/stats.json"));
  json run;
  if (fs::exists(dir + "/run.json")) {
    FXT_ASSIGN_OR_RETURN(run, read_json_file(dir + "/run.json"));
  }
  std::vector<ModelRun> runs;
  const json& names = field(stats, "queue_models");
  if (names.is_array() && !names.empty()) {
    for (const json& n : names) {
      std::string name = n.is_string() ? n.get<std::string>() : n.dump();
      std::string sub = name;
      std::replace(sub.begin(), sub.end(), ':', '-');  // queue_model_dir_name
      runs.push_back({name, dir + "/" + sub, field(field(stats, "models"), name)});
    }
  } else {
    // One run: its queue model from run.json, or "l3-fifo" when it replayed exact queues
    // (use_l3 and every store holds MBO events: run_backtest_spec's rule).
    const json& config = field(run, "config");
    const json& qm = field(config, "queue_models");
    std::string name = qm.is_array() && qm.size() == 1 ? scalar_text(qm[0]) : "result";
    const json& stores = run_field(run, "store_dirs");
    bool exact = field(config, "use_l3").is_boolean() && field(config, "use_l3").get<bool>() &&
                 stores.is_array() && !stores.empty();
    for (const json& st : stores) {
      std::error_code ec;
      exact = exact && st.is_string() &&
              fs::file_size(st.get<std::string>() + "/event_ts_ns.bin", ec) > 0 && !ec;
    }
    if (exact) name = "l3-fifo";
    runs.push_back({name, dir, stats});
  }
  const json& strategy = run_field(run, "strategy");
  std::string out =
      fmt::format("<p class=\"fxt-meta\">strategy {}; stores {}; {} queue model{}: {}</p>\n",
                  html_escape(scalar_text(field(strategy, "name"))),
                  html_escape(scalar_text(run_field(run, "store_dirs"))), runs.size(),
                  runs.size() == 1 ? "" : "s", html_escape(scalar_text([&] {
                    json n = json::array();
                    for (const ModelRun& r : runs) n.push_back(r.name);
                    return n;
                  }())));

  // Per-model series from equity.csv and fills.csv.
  struct Curves {
    std::vector<double> t, equity, drawdown, position, mid;
    std::vector<double> buy_t, buy_px, sell_t, sell_px;
  };
  std::vector<Curves> curves(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    FXT_ASSIGN_OR_RETURN(
        Csv eq, read_csv(runs[r].dir + "/equity.csv", {"ts_ns", "position", "mid", "equity"}));
    Curves& c = curves[r];
    c.t = eq.numbers["ts_ns"];
    c.equity = eq.numbers["equity"];
    c.position = eq.numbers["position"];
    c.mid = eq.numbers["mid"];
    double peak = 0;  // stats.h: the running peak starts at 0 (a run starts flat, no cash)
    for (double e : c.equity) {
      peak = std::max(peak, e);
      c.drawdown.push_back(e - peak);
    }
    if (r == 0) {
      FXT_ASSIGN_OR_RETURN(Csv fills,
                           read_csv(runs[r].dir + "/fills.csv", {"ts_ns", "px"}, {"side"}));
      for (size_t i = 0; i < fills.rows; ++i) {
        const bool buy = fills.strings["side"][i] == "buy";
        (buy ? c.buy_t : c.sell_t).push_back(fills.numbers["ts_ns"][i]);
        (buy ? c.buy_px : c.sell_px).push_back(fills.numbers["px"][i]);
      }
    }
  }

  auto thinned = [&](std::vector<double> x, std::vector<double> y, std::string name) {
    downsample_min_max(&x, &y, opt.max_points);
    Series s;
    s.name = std::move(name);
    s.x = std::move(x);
    s.y = std::move(y);
    return s;
  };
  std::string grid;
  {
    ChartSpec c;
    c.id = sid + "-equity";
    c.title = runs.size() > 1 ? "Equity (marked at mid), one line per queue model"
                              : "Equity (marked at mid)";
    c.x_axis = XAxis::kTimeNs;
    c.x_label = "time (UTC)";
    c.y_label = "equity";
    c.y_include_zero = true;
    for (size_t r = 0; r < runs.size(); ++r) {
      c.series.push_back(thinned(curves[r].t, curves[r].equity, runs[r].name));
    }
    grid += figure(render_zoomable_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-drawdown";
    c.title = "Drawdown (equity − running peak)";
    c.x_axis = XAxis::kTimeNs;
    c.x_label = "time (UTC)";
    c.y_label = "drawdown";
    c.y_include_zero = true;
    for (size_t r = 0; r < runs.size(); ++r) {
      c.series.push_back(thinned(curves[r].t, curves[r].drawdown, runs[r].name));
    }
    grid += figure(render_zoomable_chart(c));
  }
  {
    ChartSpec c;
    c.id = sid + "-position";
    c.title = "Position (" + runs[0].name + ")";
    c.x_axis = XAxis::kTimeNs;
    c.x_label = "time (UTC)";
    c.y_label = "position";
    c.y_include_zero = true;
    Series s = thinned(curves[0].t, curves[0].position, "position");
    s.style = SeriesStyle::kStep;
    c.series.push_back(std::move(s));
    grid += figure(render_zoomable_chart(c));
  }
  {
    const Curves& cv = curves[0];
    // Fills beyond max_points per side: every k-th, deterministically.
    auto every_kth = [&](const std::vector<double>& t, const std::vector<double>& p,
                         std::vector<double>* ot, std::vector<double>* op) {
      const size_t k = std::max<size_t>(1, (t.size() + opt.max_points - 1) / opt.max_points);
      for (size_t i = 0; i < t.size(); i += k) {
        ot->push_back(t[i]);
        op->push_back(p[i]);
      }
      return k;
    };
    Series buys = make_series("buy fills"), sells = make_series("sell fills");
    buys.style = sells.style = SeriesStyle::kMarkers;
    buys.marker = Marker::kTriangleUp;
    sells.marker = Marker::kTriangleDown;
    buys.color = "#2ca02c";
    sells.color = "#d62728";
    const size_t kb = every_kth(cv.buy_t, cv.buy_px, &buys.x, &buys.y);
    const size_t ks = every_kth(cv.sell_t, cv.sell_px, &sells.x, &sells.y);
    ChartSpec c;
    c.id = sid + "-fills";
    c.title = fmt::format(
        "Fills on the mid price ({}: {} buys, {} sells{})", runs[0].name, cv.buy_t.size(),
        cv.sell_t.size(),
        std::max(kb, ks) > 1 ? fmt::format(", every {}th shown", std::max(kb, ks)) : "");
    c.x_axis = XAxis::kTimeNs;
    c.x_label = "time (UTC)";
    c.y_label = "price";
    Series mid = thinned(cv.t, cv.mid, "mid");
    mid.color = "#7f7f7f";
    c.series = {mid, buys, sells};
    c.width = 1170;
    c.height = 340;
    grid += figure(render_zoomable_chart(c));
  }
  out += "<div class=\"fxt-grid\">\n" + grid + "</div>\n";

  Table st;
  st.id = sid + "-stats";
  st.caption = "Statistics (stats.json)";
  st.header = {"statistic"};
  for (const ModelRun& r : runs) st.header.push_back(r.name);
  for (const auto& row : kStatRows) {
    bool any = false;
    for (const ModelRun& r : runs) any = any || r.stats.contains(row[0]);
    if (!any) continue;
    std::vector<std::string> cells = {row[1]};
    for (const ModelRun& r : runs) cells.push_back(stat_text(r.stats, row[0]));
    st.rows.push_back(std::move(cells));
  }
  out += render_table(st);

  const json& band = field(stats, "model_risk_band");
  if (band.is_object()) {
    Table bt;
    bt.id = sid + "-band";
    bt.caption = "Queue-model risk band: the same backtest under each queue model";
    bt.header = {"statistic", "min", "max", "spread"};
    for (const ModelRun& r : runs) bt.header.push_back(r.name);
    for (const auto& row : kStatRows) {
      const json& b = field(band, row[0]);
      if (!b.is_object()) continue;
      std::vector<std::string> cells = {row[1], format_number(num(b, "min"), 6),
                                        format_number(num(b, "max"), 6),
                                        format_number(num(b, "spread"), 6)};
      for (const ModelRun& r : runs) {
        cells.push_back(format_number(num(field(b, "values"), r.name.c_str()), 6));
      }
      bt.rows.push_back(std::move(cells));
    }
    out += render_table(bt);
    headline->push_back(
        {"PnL band spread", format_number(num(field(band, "total_pnl"), "spread"), 6)});
  }

  const json& params = field(strategy, "params");
  if (params.is_object() && !params.empty()) {
    Table pt;
    pt.id = sid + "-params";
    pt.caption = "Strategy parameters (run.json)";
    pt.header = {"parameter", "value"};
    for (const auto& [k, v] : params.items()) pt.rows.push_back({k, unit_text(k, v)});
    const json& config = field(run, "config");
    for (const char* k : {"latency", "fees", "queue_models", "instrument"}) {
      if (config.contains(k)) pt.rows.push_back({k, unit_text(k, config[k])});
    }
    out += render_table(pt);
  }

  const json& s0 = runs[0].stats;
  headline->insert(headline->begin(), {{"strategy", scalar_text(field(strategy, "name"))},
                                       {"total PnL", stat_text(s0, "total_pnl")},
                                       {"Sharpe", stat_text(s0, "sharpe_annualised") + " (" +
                                                      s0.value("sharpe_basis", "-") + ")"},
                                       {"max drawdown", stat_text(s0, "max_drawdown")},
                                       {"fills", stat_text(s0, "trades")}});
  return out;
}

// --- reinforcement learning (docs/RL.md) ---------------------------------------------------------

// An `fxt rl train` run: the learning curve from metrics.jsonl and, when RUN_DIR/rl_eval.json
// (`fxt rl eval --out RUN_DIR/rl_eval.json`) compares the policy with a closed form, the
// comparison table and the mean inventory paths of both.
Result<std::string> rl_html(const std::string& dir, const std::string& sid, Headline* headline) {
  FXT_ASSIGN_OR_RETURN(std::vector<json> lines, read_metrics_jsonl(dir + "/metrics.jsonl"));
  json run;
  if (fs::exists(dir + "/run.json")) {
    FXT_ASSIGN_OR_RETURN(run, read_json_file(dir + "/run.json"));
  }
  const json& agent = field(field(run, "config"), "agent");
  const json& env = field(field(run, "config"), "env");
  std::string out = fmt::format("<p class=\"fxt-meta\">env {}, agent {}{}</p>\n",
                                html_escape(scalar_text(field(env, "name"))),
                                html_escape(scalar_text(field(agent, "algo"))),
                                field(agent, "munchausen").is_boolean() &&
                                        field(agent, "munchausen").get<bool>()
                                    ? " (Munchausen)"
                                    : "");
  Series train = make_series("training return (last 100 episodes)");
  Series greedy = make_series("greedy evaluation");
  for (const json& l : lines) {
    train.x.push_back(num(l, "step"));
    train.y.push_back(num(l, "episodic_return"));
    if (std::isfinite(num(l, "eval_return"))) {
      greedy.x.push_back(num(l, "step"));
      greedy.y.push_back(num(l, "eval_return"));
    }
  }
  std::string grid;
  {
    ChartSpec c;
    c.id = sid + "-rl-curve";
    c.title = "Learning curve";
    c.x_label = "environment steps";
    c.y_label = "episode return";
    c.series = {train, greedy};
    grid += figure(render_zoomable_chart(c));
  }
  headline->push_back({"env steps", format_number(num(lines.back(), "step"), 6)});
  headline->push_back({"eval return", format_number(greedy.y.empty() ? kNaN : greedy.y.back())});
  const std::string eval_path = dir + "/rl_eval.json";
  if (fs::exists(eval_path)) {
    FXT_ASSIGN_OR_RETURN(json ev, read_json_file(eval_path));
    const json& cmp = field(ev, "comparison");
    const json& pol = field(cmp, "policy_inventory_path");
    const json& ref = field(cmp, "reference_inventory_path");
    const std::string ref_name = scalar_text(field(ev, "reference"));
    if (pol.is_array() && ref.is_array() && pol.size() == ref.size()) {
      Series a = make_series("learned policy"), b = make_series(ref_name + " (closed form)");
      b.dashed = true;
      for (size_t k = 0; k < pol.size(); ++k) {
        a.x.push_back(static_cast<double>(k));
        a.y.push_back(num(pol[k]));
        b.x.push_back(static_cast<double>(k));
        b.y.push_back(num(ref[k]));
      }
      ChartSpec c;
      c.id = sid + "-rl-inventory";
      c.title = "Mean inventory path: policy vs closed form";
      c.x_label = "step";
      c.y_label = "inventory";
      c.series = {a, b};
      grid += figure(render_zoomable_chart(c));
    }
    if (cmp.is_object()) {
      Table t;
      t.id = sid + "-rl-compare";
      t.caption = fmt::format("Policy vs {} on {} paired episodes", ref_name,
                              scalar_text(field(ev, "episodes")));
      t.header = {"policy mean", "policy std", "reference mean", "reference std",
                  "paired diff", "se", "relative gap", "max inventory gap"};
      t.rows.push_back({format_number(num(cmp, "policy_mean")),
                        format_number(num(cmp, "policy_std")),
                        format_number(num(cmp, "reference_mean")),
                        format_number(num(cmp, "reference_std")),
                        format_number(num(cmp, "paired_diff_mean")),
                        format_number(num(cmp, "paired_diff_se")),
                        format_number(num(cmp, "relative_gap")),
                        format_number(num(cmp, "max_inventory_gap"))});
      out += render_table(t);
      headline->push_back({"gap to closed form", format_number(num(cmp, "relative_gap"))});
    }
  }
  out += "<div class=\"fxt-grid\">\n" + grid + "</div>\n";
  return out;
}

// ---------------------------------------------------------------------------------------------

const char* kind_title(RunKind k) {
  switch (k) {
    case RunKind::kTrain:
      return "Training run";
    case RunKind::kEval:
      return "Evaluation";
    case RunKind::kCv:
      return "Cross-validation";
    case RunKind::kBacktest:
      return "Backtest";
    case RunKind::kSweep:
      return "Parameter sweep";
    case RunKind::kRl:
      return "Reinforcement-learning run";
  }
  return "";
}

// The eval JSON of an eval PATH: the file itself or DIR/eval.json.
std::string eval_file_of(const std::string& path) {
  return fs::is_directory(path) ? path + "/eval.json" : path;
}

constexpr const char* kCss = R"css(
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:20px 28px;color:#222;background:#fff;max-width:1260px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 6px;border-bottom:2px solid #4e79a7;padding-bottom:3px}
h3{font-size:16px;margin:18px 0 6px}h4{font-size:14px;margin:14px 0 6px}
.fxt-meta{color:#555;font-size:13px;margin:4px 0 10px}
.fxt-grid{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}
.fxt-figure{margin:0;border:1px solid #e3e3e3;background:#fff;min-width:0;max-width:100%}
.fxt-chart{display:block}
table.fxt-table{border-collapse:collapse;font-size:12px;margin:10px 0 14px;display:block;overflow-x:auto;max-width:100%}
.fxt-table caption{text-align:left;font-weight:bold;font-size:13px;padding:3px 0}
.fxt-table th,.fxt-table td{border:1px solid #ddd;padding:3px 7px;white-space:nowrap}
.fxt-table th{background:#eef2f7}.fxt-table tr:nth-child(even) td{background:#fafafa}
.fxt-table td:not(:first-child){text-align:right;font-variant-numeric:tabular-nums}
.fxt-figure .fxt-table{margin:4px 6px 8px;font-size:11px}
nav ul{margin:4px 0;padding-left:20px;font-size:13px}
)css";

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

const char* run_kind_name(RunKind kind) {
  switch (kind) {
    case RunKind::kTrain:
      return "train";
    case RunKind::kEval:
      return "eval";
    case RunKind::kCv:
      return "cv";
    case RunKind::kBacktest:
      return "backtest";
    case RunKind::kSweep:
      return "sweep";
    case RunKind::kRl:
      return "rl";
  }
  return "";
}

Result<RunKind> detect_run_kind(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return NotFound("{}: no such file or directory", path);
  if (fs::is_regular_file(status)) {
    FXT_ASSIGN_OR_RETURN(json j, read_json_file(path));
    if (is_eval_json(j)) return RunKind::kEval;
    return InvalidInput(
        "{}: not an evaluation JSON (expected the keys horizons, model and base_rate of "
        "`fxt eval --out`); pass a run directory for other runs",
        path);
  }
  if (!fs::is_directory(status)) return InvalidInput("{}: not a file or directory", path);
  if (fs::exists(path + "/run.json")) {
    FXT_ASSIGN_OR_RETURN(json run, read_json_file(path + "/run.json"));
    const json& kind = field(run, "kind");
    if (kind.is_string()) {
      const std::string k = kind.get<std::string>();
      if (k == "train") return RunKind::kTrain;
      if (k == "eval") return RunKind::kEval;
      if (k == "cv") return RunKind::kCv;
      if (k == "backtest") return RunKind::kBacktest;
      if (k == "rl-train") return RunKind::kRl;
      // Other kinds (e.g. quickstart) fall through to the files.
    }
  }
  if (fs::exists(path + "/metrics.jsonl")) return RunKind::kTrain;
  if (fs::exists(path + "/cv.json")) return RunKind::kCv;
  if (fs::exists(path + "/stats.json")) return RunKind::kBacktest;
  if (fs::exists(path + "/sweep.json")) return RunKind::kSweep;
  if (fs::exists(path + "/eval.json")) return RunKind::kEval;
  return InvalidInput(
      "{}: not a run directory (expected metrics.jsonl of a training run, eval.json, cv.json "
      "the stats.json of a backtest or the sweep.json of a sweep)",
      path);
}

Result<std::string> render_report(const std::vector<std::string>& paths,
                                  const ReportOptions& options) {
  if (paths.empty()) return UsageError("report: no run directory or file given");
  std::vector<Section> sections;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string path = paths[i];
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    FXT_ASSIGN_OR_RETURN(RunKind kind, detect_run_kind(path));
    Section s;
    s.id = fmt::format("sec{}", i + 1);
    s.kind = run_kind_name(kind);
    s.path = path;
    std::string body;
    switch (kind) {
      case RunKind::kTrain: {
        FXT_ASSIGN_OR_RETURN(body, train_html(path, s.id, &s.headline));
        break;
      }
      case RunKind::kEval: {
        const std::string file = eval_file_of(path);
        FXT_ASSIGN_OR_RETURN(json ev, read_json_file(file));
        if (!is_eval_json(ev)) {
          return InvalidInput("{}: not an evaluation JSON (expected horizons, model, base_rate)",
                              file);
        }
        body = eval_html(ev, s.id, &s.headline);
        break;
      }
      case RunKind::kCv: {
        FXT_ASSIGN_OR_RETURN(body, cv_html(path, s.id, &s.headline));
        break;
      }
      case RunKind::kBacktest: {
        FXT_ASSIGN_OR_RETURN(body, backtest_html(path, s.id, options, &s.headline));
        break;
      }
      case RunKind::kSweep: {
        FXT_ASSIGN_OR_RETURN(body, sweep_html(path, s.id, options.sweep_axes, &s.headline));
        break;
      }
      case RunKind::kRl: {
        FXT_ASSIGN_OR_RETURN(body, rl_html(path, s.id, &s.headline));
        break;
      }
    }
    s.html = fmt::format(
        "<section class=\"fxt-section\" id=\"{}\" data-kind=\"{}\">\n<h2>{}. {} \u2014 "
        "{}</h2>\n{}</section>\n",
        s.id, s.kind, i + 1, kind_title(kind), html_escape(path), body);
    sections.push_back(std::move(s));
  }

  std::string doc = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  doc += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  doc += "<title>" + html_escape(options.title) + "</title>\n<style>" + kCss + zoom_css() +
         "</style>\n";
  doc += "</head>\n<body>\n<header>\n<h1>" + html_escape(options.title) + "</h1>\n";
  doc += fmt::format("<p class=\"fxt-meta\">fxt {} (git {}), {}; {} run{}</p>\n", FXT_VERSION,
                     FXT_GIT_REV, utc_now(), sections.size(), sections.size() == 1 ? "" : "s");
  doc += "</header>\n<nav><ul>\n";
  for (size_t i = 0; i < sections.size(); ++i) {
    doc += fmt::format("<li><a href=\"#{}\">{}. {} \u2014 {}</a></li>\n", sections[i].id, i + 1,
                       html_escape(sections[i].kind), html_escape(sections[i].path));
  }
  doc += "</ul></nav>\n";
  if (sections.size() > 1) {
    // One row per run, one column per headline metric any run reported (first-seen order).
    std::vector<std::string> keys;
    for (const Section& s : sections) {
      for (const auto& [k, v] : s.headline) {
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    }
    Table t;
    t.id = "comparison";
    t.caption = "Comparison of the runs (headline metrics)";
    t.header = {"run", "kind", "path"};
    t.header.insert(t.header.end(), keys.begin(), keys.end());
    for (size_t i = 0; i < sections.size(); ++i) {
      std::vector<std::string> row = {std::to_string(i + 1), sections[i].kind, sections[i].path};
      for (const std::string& k : keys) {
        std::string cell;
        for (const auto& [hk, hv] : sections[i].headline) {
          if (hk == k) cell = hv;
        }
        row.push_back(cell);
      }
      t.rows.push_back(std::move(row));
    }
    doc += "<h2>Comparison</h2>\n" + render_table(t);
  }
  for (const Section& s : sections) doc += s.html;
  doc += "</body>\n</html>\n";
  return doc;
}

Status write_report(const std::vector<std::string>& paths, const ReportOptions& options,
                    const std::string& out_html) {
  FXT_ASSIGN_OR_RETURN(std::string doc, render_report(paths, options));
  const fs::path parent = fs::path(out_html).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) return IoError("{}: cannot create the folder: {}", parent.string(), ec.message());
  }
  return write_file_atomic(out_html, doc);
}

}  // namespace fxt::report
