// fxt report: run directories (train, eval, cv, backtest) rendered into one self-contained
// HTML file with inline SVG charts (DESIGN §9, src/report/report.h, docs/REPORT.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "report/report.h"

namespace fxt::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> paths;
  std::string out;
  report::ReportOptions options;
};

Status run_report(const ReportArgs& a) {
  if (a.options.max_points < 16) return UsageError("--max-points must be at least 16");
  FXT_RETURN_IF_ERROR(report::write_report(a.paths, a.options, a.out));
  std::printf("report of %zu run%s -> %s\n", a.paths.size(), a.paths.size() == 1 ? "" : "s",
              a.out.c_str());
  return Status::Ok();
}

}  // namespace

void register_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = add_command(
      app, "report",
      "render run directories (train, eval, cv, backtest) into one self-contained HTML file",
      [a] { return run_report(*a); });
  cmd->add_option("paths", a->paths,
                  "train run dirs, eval JSON files (or dirs with eval.json), cv dirs, backtest "
                  "run dirs; several are compared side by side")
      ->required();
  cmd->add_option("--out", a->out, "the HTML file to write")->required();
  cmd->add_option("--title", a->options.title, "the report's title")->capture_default_str();
  cmd->add_option("--max-points", a->options.max_points,
                  "points per line of long series (equity, price) after min/max thinning")
      ->capture_default_str()
      ->check(int_range(2, 100000000));
  cmd->add_option("--sweep-axes", a->options.sweep_axes,
                  "sweep dirs: the two grid keys of the PnL heatmap (default: the first two that "
                  "vary)")
      ->expected(2)
      ->delimiter(',');
}

}  // namespace fxt::cli
