#include "report/train_section.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "report/chart.h"
#include "report/eval_section.h"
#include "report/html.h"

namespace fxt::report {

namespace fs = std::filesystem;
using nlohmann::json;

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

}  // namespace fxt::report
