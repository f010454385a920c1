#include "report/rl_section.h"

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/chart.h"
#include "report/html.h"
#include "report/train_section.h"

namespace fxt::report {

namespace fs = std::filesystem;
using nlohmann::json;

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
  std::string out = fmt::format(
      "<p class=\"fxt-meta\">env {}, agent {}{}</p>\n",
      html_escape(scalar_text(field(env, "name"))), html_escape(scalar_text(field(agent, "algo"))),
      field(agent, "munchausen").is_boolean() && field(agent, "munchausen").get<bool>()
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
                  "paired diff", "se",         "relative gap",   "max inventory gap"};
      t.rows.push_back(
          {format_number(num(cmp, "policy_mean")), format_number(num(cmp, "policy_std")),
           format_number(num(cmp, "reference_mean")), format_number(num(cmp, "reference_std")),
           format_number(num(cmp, "paired_diff_mean")), format_number(num(cmp, "paired_diff_se")),
           format_number(num(cmp, "relative_gap")), format_number(num(cmp, "max_inventory_gap"))});
      out += render_table(t);
      headline->push_back({"gap to closed form", format_number(num(cmp, "relative_gap"))});
    }
  }
  out += "<div class=\"fxt-grid\">\n" + grid + "</div>\n";
  return out;
}

}  // namespace fxt::report
