#include "report/report.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "report/backtest_section.h"
#include "report/chart.h"
#include "report/cv_section.h"
#include "report/eval_section.h"
#include "report/html.h"
#include "report/rl_section.h"
#include "report/section_util.h"
#include "report/sweep_section.h"
#include "report/train_section.h"

namespace fxt::report {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Sections.

struct Section {
  std::string id, kind, path, html;
  Headline headline;
};

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
