#include "report/backtest_section.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/text.h"
#include "report/chart.h"
#include "report/html.h"

namespace fxt::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

}  // namespace

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

}  // namespace fxt::report
