// The sweep section of `fxt report` (report/sweep_section.h) on a hand-written sweep.json:
// heatmap cells are the mean total PnL of the lanes with that pair of values, the queue-model
// band is min/max/spread over the lanes that differ only in the queue model.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "report/report.h"
#include "test_util.h"

namespace fxt::report {
namespace {

nlohmann::json lane(size_t i, double gamma, const std::string& queue, double pnl, bool pareto) {
  return {{"lane", i},
          {"params", {{"gamma", gamma}, {"queue", queue}}},
          {"stats",
           {{"total_pnl", pnl},
            {"sharpe_daily_annualised", nullptr},
            {"max_drawdown", 10 - pnl / 4},
            {"turnover", 1000},
            {"trades", 7}}},
          {"pareto", pareto}};
}

std::string write_sweep() {
  const std::string dir = fxt::test::scratch_dir();
  nlohmann::json doc = {{"keys", {"gamma", "queue"}},
                        {"grid_axes", {"gamma", "queue"}},
                        {"pareto_front", {4}},
                        {"top", nlohmann::json::array()},
                        {"results",
                         {lane(0, 0.1, "log", 10, false), lane(1, 0.1, "risk-averse", 4, false),
                          lane(2, 0.2, "log", -2, false), lane(3, 0.2, "risk-averse", 6, false),
                          lane(4, 0.1, "log", 20, true)}}};
  EXPECT_TRUE(write_file_atomic(dir + "/sweep.json", doc.dump()).ok());
  return dir;
}

TEST(SweepReport, HeatmapFrontBestAndBand) {
  const std::string dir = write_sweep();
  auto kind = detect_run_kind(dir);
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(*kind, RunKind::kSweep);
  auto html = render_report({dir});
  ASSERT_TRUE(html.ok()) << html.status().message();
  const std::string& h = *html;
  for (const char* id : {"sec1-heatmap", "sec1-pareto", "sec1-best", "sec1-band"})
    EXPECT_NE(h.find(fmt::format("id=\"{}\"", id)), std::string::npos) << id;
  // (gamma 0.1, log): lanes 0 and 4, mean (10 + 20) / 2.
  EXPECT_NE(h.find("data-value=\"15\">15</td>"), std::string::npos);
  EXPECT_NE(h.find("data-value=\"-2\">-2</td>"), std::string::npos);
  // Bands: gamma 0.1 over 3 lanes 4..20, gamma 0.2 over 2 lanes -2..6.
  EXPECT_NE(h.find("<td>gamma=0.1</td><td>3</td><td>4</td><td>20</td><td>16</td>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>gamma=0.2</td><td>2</td><td>-2</td><td>6</td><td>8</td>"),
            std::string::npos);
  // The front (lane 4) is the best-lanes table without --top; every Sharpe null: PnL axis.
  EXPECT_NE(h.find("Lanes on the Pareto front"), std::string::npos);
  EXPECT_NE(h.find("total PnL (every Sharpe is null)"), std::string::npos);

  ReportOptions bad;
  bad.sweep_axes = {"gamma", "kappa"};
  auto r = render_report({dir}, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 2);
  EXPECT_EQ(r.status().message(),
            "--sweep-axes: 'kappa' is not a key of " + dir + "/sweep.json (keys: gamma, queue)");
}

}  // namespace
}  // namespace fxt::report
