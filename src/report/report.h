// `fxt report`: run directories rendered into one self-contained HTML file (DESIGN §9,
// docs/REPORT.md). Each PATH becomes a section: a training run (metrics.jsonl, run.json and
// an eval.json beside them), an evaluation (an eval JSON file or a folder holding eval.json),
// a cross-validation folder (cv.json) or a backtest run directory (stats.json, equity.csv,
// fills.csv, per-queue-model subdirectories). Several PATHs add a comparison table of their
// headline metrics. Charts are inline SVG (report/chart.h), tables HTML tables; the file has
// no scripts and no external references, so it opens offline.
//
// Stable ids for tests and links: sections are "sec1", "sec2", ...; every chart is
// <svg class="fxt-chart" id="secN-NAME"> and every table <table class="fxt-table"
// id="secN-NAME">; the comparison table is "comparison". docs/REPORT.md lists every NAME.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace fxt::report {

enum class RunKind { kTrain, kEval, kCv, kBacktest, kSweep, kRl };
// "train", "eval", "cv", "backtest", "sweep", "rl" (an `fxt rl train` run: run.json kind
// "rl-train")
const char* run_kind_name(RunKind kind);

// What PATH holds: run.json's "kind" when present (the run registry, src/train/run_record.h),
// else by its files (metrics.jsonl -> train, cv.json -> cv, stats.json -> backtest,
// eval.json or an eval JSON file -> eval, sweep.json -> sweep). A one-line error when it is none of these.
Result<RunKind> detect_run_kind(const std::string& path);

struct ReportOptions {
  std::string title = "foxhunt report";
  // Long series (equity, price, position) are thinned to about this many points per line
  // (report/chart.h downsample_min_max); fills to this many markers per side.
  size_t max_points = 4000;
  // Sweep sections (report/sweep_section.h): the two grid keys of the heatmap; empty: the
  // first two keys that vary.
  std::vector<std::string> sweep_axes;
};

// The whole HTML document for `paths`, in order.
Result<std::string> render_report(const std::vector<std::string>& paths,
                                  const ReportOptions& options = {});

// render_report written atomically to out_html.
Status write_report(const std::vector<std::string>& paths, const ReportOptions& options,
                    const std::string& out_html);

}  // namespace fxt::report
