// fxt report (issue 6 item 3): the chart mechanism on hand-computed inputs, reports built from
// real run directories made by the fxt binary (synth -> ingest -> train -> eval -> predict ->
// backtest signal and mm), rendered in headless Chromium (screenshot size, non-blank pixels,
// every chart and table in the DOM), and a report from the real ES MBO store.
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "report/chart.h"
#include "report/html.h"
#include "report/report.h"
#include "test_util.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;
using test::run_fxt;

// ---- the chart mechanism and the HTML helpers ---------------------------------------------------

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(ReportChart, NiceTicks) {
  EXPECT_EQ(report::nice_ticks(0, 1, 5),
            (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  // raw step 20.2 / 5 = 4.04 -> 5; the ticks enclose [-3.2, 17].
  EXPECT_EQ(report::nice_ticks(-3.2, 17, 5), (std::vector<double>{-5, 0, 5, 10, 15, 20}));
  // A degenerate range widens by 10 % of the value: [0.9, 1.1] in steps of 0.05.
  const std::vector<double> t = report::nice_ticks(1, 1, 5);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_NEAR(t.front(), 0.9, 1e-12);
  EXPECT_NEAR(t.back(), 1.1, 1e-12);
}

TEST(ReportChart, DownsampleKeepsEachBucketsMinAndMax) {
  std::vector<double> x, y;
  for (int i = 0; i < 100; ++i) {
    x.push_back(i);
    y.push_back(i % 10);  // a saw tooth: each bucket of 10 rows has min at 10b, max at 10b + 9
  }
  report::downsample_min_max(&x, &y, 20);
  std::vector<double> want_x, want_y;
  for (int b = 0; b < 10; ++b) {
    want_x.insert(want_x.end(), {10.0 * b, 10.0 * b + 9});
    want_y.insert(want_y.end(), {0, 9});
  }
  EXPECT_EQ(x, want_x);
  EXPECT_EQ(y, want_y);
  // Short series come back unchanged.
  std::vector<double> sx = {1, 2, 3}, sy = {5, 4, 6};
  report::downsample_min_max(&sx, &sy, 20);
  EXPECT_EQ(sy, (std::vector<double>{5, 4, 6}));
}

TEST(ReportChart, RendersSeriesAxesAndLegend) {
  report::ChartSpec c;
  c.id = "c1";
  c.title = "A <title>";
  c.x_axis = report::XAxis::kTimeNs;
  const double t0 = 1'704'205'800e9;  // 2024-01-02 14:30:00 UTC
  c.series.push_back(report::make_series("up", {t0, t0 + 1800e9, t0 + 3600e9}, {1, 2, 3}));
  c.series.push_back(report::make_series("gap", {t0, t0 + 1800e9, t0 + 3600e9},
                                         {1, std::numeric_limits<double>::quiet_NaN(), 2}));
  const std::string svg = report::render_chart(c);
  EXPECT_EQ(svg.rfind("<svg class=\"fxt-chart\" id=\"c1\"", 0), 0u) << svg;
  EXPECT_NE(svg.find("data-name=\"up\" data-points=\"3\""), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"gap\" data-points=\"2\""), std::string::npos);
  EXPECT_NE(svg.find("A &lt;title&gt;"), std::string::npos);
  // One hour at about six ticks: every 10 minutes, labelled HH:MM.
  for (const char* label : {">14:30<", ">14:40<", ">15:00<", ">15:30<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  // The NaN breaks the second line into two pen-down runs.
  const size_t g = svg.find("data-name=\"gap\"");
  const std::string gap_path = svg.substr(g, svg.find("</g>", g) - g);
  EXPECT_EQ(std::count(gap_path.begin(), gap_path.end(), 'M'), 2) << gap_path;
  EXPECT_EQ(svg.find("http"), std::string::npos);

  report::ChartSpec empty;
  empty.id = "c2";
  EXPECT_NE(report::render_chart(empty).find(">no data<"), std::string::npos);
}

// Before: a 2-hour session with one point at midnight sat in a thin strip of a 24-hour axis.
TEST(ReportChart, TimeAxisCollapsesStretchesWithoutData) {
  report::ChartSpec c;
  c.id = "c3";
  c.x_axis = report::XAxis::kTimeNs;
  const double midnight = 1'704'153'600e9, t0 = 1'704'205'800e9;  // 2024-01-02 00:00, 14:30
  std::vector<double> x = {midnight}, y = {0};
  for (int k = 0; k <= 12; ++k) {
    x.push_back(t0 + k * 600e9);  // 14:30 .. 16:30 every 10 minutes
    y.push_back(k);
  }
  c.series.push_back(report::make_series("equity", x, y));
  const std::string svg = report::render_chart(c);
  const size_t first = svg.find("class=\"fxt-axis-break\"");
  ASSERT_NE(first, std::string::npos) << svg;
  EXPECT_EQ(svg.find("class=\"fxt-axis-break\"", first + 1), std::string::npos);
  EXPECT_NE(svg.find("data-gap-s=\"52200\""), std::string::npos);  // 00:00 to 14:30
  EXPECT_NE(svg.find("no data for 14.5 h"), std::string::npos);
  // The session fills the axis: half-hour ticks, not the 3-hour ticks of a 16.5-hour axis.
  for (const char* label : {">15:00<", ">15:30<", ">16:00<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  EXPECT_EQ(svg.find(">03:00<"), std::string::npos);
  // Without a gap the axis stays linear.
  c.series[0] = report::make_series("equity", std::vector<double>(x.begin() + 1, x.end()),
                                    std::vector<double>(y.begin() + 1, y.end()));
  EXPECT_EQ(report::render_chart(c).find("fxt-axis-break"), std::string::npos);
}

// Zoom without a script: one radio control per chart (1x checked) and one native rendering per
// factor, each Z times as wide with the same height and finer time ticks.
TEST(ReportChart, ZoomableChartHasOneControlAndOneRenderingPerFactor) {
  report::ChartSpec c;
  c.id = "z1";
  c.x_axis = report::XAxis::kTimeNs;
  const double t0 = 1'704'205'800e9;  // 2024-01-02 14:30:00 UTC, one hour of points
  std::vector<double> x, y;
  for (int k = 0; k <= 60; ++k) {
    x.push_back(t0 + k * 60e9);
    y.push_back(k % 7);
  }
  c.series.push_back(report::make_series("equity", x, y));
  const std::string html = report::render_zoomable_chart(c);
  EXPECT_EQ(html, report::render_zoomable_chart(c));  // deterministic
  EXPECT_EQ(html.rfind("<div class=\"fxt-zoom\" id=\"z1-zoom\"><span class=\"fxt-zoom-title\">"
                       "zoom</span><input type=\"radio\" class=\"fxt-zoom-in fxt-zoom-1\" "
                       "name=\"z1-zoom\" id=\"z1-zoom-1\" checked><label for=\"z1-zoom-1\">"
                       "1\u00d7</label><input type=\"radio\" class=\"fxt-zoom-in fxt-zoom-2\" "
                       "name=\"z1-zoom\" id=\"z1-zoom-2\"><label for=\"z1-zoom-2\">2\u00d7</label>",
                       0),
            0u)
      << html.substr(0, 400);
  EXPECT_EQ(count_of(html, "type=\"radio\""), 5u);
  EXPECT_EQ(count_of(html, "name=\"z1-zoom\""), 5u);
  EXPECT_EQ(count_of(html, " checked>"), 1u);
  EXPECT_EQ(count_of(html, "class=\"fxt-zoom-view "), 5u);
  EXPECT_EQ(count_of(html, "<svg "), 5u);
  const char* ids[] = {"z1", "z1-x2", "z1-x4", "z1-x8", "z1-x16"};
  const int widths[] = {580, 1160, 2320, 4640, 9280};
  std::vector<std::string> levels;
  for (int i = 0; i < 5; ++i) {
    const int z = report::kZoomFactors[i];
    EXPECT_NE(html.find(fmt::format("<label for=\"z1-zoom-{}\">{}\u00d7</label>", z, z)),
              std::string::npos);
    const std::string lead = fmt::format(
        "<div class=\"fxt-zoom-view fxt-zoom-view-{}\"><svg class=\"fxt-chart\" id=\"{}\"{} "
        "viewBox=\"0 0 {} 300\" width=\"{}\" height=\"300\"",
        z, ids[i], z == 1 ? "" : fmt::format(" data-zoom=\"{}\"", z), widths[i], widths[i]);
    const size_t at = html.find(lead);
    ASSERT_NE(at, std::string::npos) << lead;
    levels.push_back(html.substr(at, html.find("</svg>", at) - at));
    EXPECT_NE(levels.back().find("clip-path=\"url(#" + std::string(ids[i]) + "-clip)\""),
              std::string::npos);
  }
  // Ticks every 10 minutes at 1x (about one per 84 px of plot), every minute at 16x.
  EXPECT_NE(levels[0].find(">14:40<"), std::string::npos);
  EXPECT_EQ(levels[0].find(">14:31<"), std::string::npos);
  EXPECT_NE(levels[4].find(">14:31<"), std::string::npos);
  EXPECT_NE(levels[4].find(">15:29<"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  // The stylesheet shows the checked factor's view and lets it scroll.
  const std::string css = report::zoom_css();
  EXPECT_NE(css.find(".fxt-zoom-view{display:none;overflow-x:auto;max-width:100%}"),
            std::string::npos);
  for (int z : report::kZoomFactors) {
    EXPECT_NE(css.find(fmt::format(".fxt-zoom-{}:checked~.fxt-zoom-view-{}", z, z)),
              std::string::npos);
  }
}

TEST(ReportChart, BarsWithErrorBars) {
  report::ChartSpec c;
  c.id = "bars";
  c.categories = {"h30", "h100"};
  report::Series s = report::make_series("model", {0, 1}, {0.6, 0.7}, report::SeriesStyle::kBars);
  s.lo = {0.55, 0.65};
  s.hi = {0.65, 0.75};
  c.series.push_back(s);
  const std::string svg = report::render_chart(c);
  size_t rects = 0, errorbars = 0;
  for (size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) ++rects;
  for (size_t p = svg.find("fxt-errorbar"); p != std::string::npos;
       p = svg.find("fxt-errorbar", p + 1)) {
    ++errorbars;
  }
  // background + clip + frame + legend swatch + two bars
  EXPECT_EQ(rects, 6u);
  EXPECT_EQ(errorbars, 2u);
  EXPECT_NE(svg.find(">h100<"), std::string::npos);
}

TEST(ReportHtml, EscapingAndNumbers) {
  EXPECT_EQ(report::html_escape("<a href='x'>&\""), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
  EXPECT_EQ(report::format_number(0.8958), "0.8958");
  EXPECT_EQ(report::format_number(12345.6), "12346");
  EXPECT_EQ(report::format_number(-171.9, 6), "-171.900");
  EXPECT_EQ(report::format_number(42), "42");
  EXPECT_EQ(report::format_number(std::nan("")), "\u2013");
  EXPECT_EQ(report::format_with_interval(0.5, 0.4, 0.6), "0.5000 [0.4000, 0.6000]");
  EXPECT_EQ(report::format_with_interval(0.5, std::nan(""), 0.6), "0.5000");
  report::Table t{"t1", "cap", {"a", "b"}, {{"x<", "1"}}};
  EXPECT_EQ(report::render_table(t),
            "<table class=\"fxt-table\" id=\"t1\">\n<caption>cap</caption>\n<thead><tr><th>a"
            "</th><th>b</th></tr></thead>\n<tbody>\n<tr><td>x&lt;</td><td>1</td></tr>\n</tbody>"
            "</table>\n");
}

// ---- run directories made by the fxt binary ---------------------------------------------------

const char* kSmallModel =
    " --epochs 3 --steps-per-epoch 4 --batch 8 --seq 16 --horizons 30,100 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 64 --threads 2"
    " --baseline-max-rows 2000 --gbdt-max-rows 2000";

std::string read_text(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path << ": " << text.status().message();
  return text.ok() ? *text : std::string();
}

// A tiny synthetic session, a training run, its evaluation, its predictions and two backtests
// (signal on the predictions; mm under three queue models for the risk band).
struct Fixture {
  std::string dir, store, train, eval, signal, mm, cv;
};

Fixture make_fixture() {
  Fixture f;
  f.dir = test::scratch_dir();
  f.store = f.dir + "/store";
  f.train = f.dir + "/train";
  f.eval = f.dir + "/eval.json";
  f.signal = f.dir + "/bt-signal";
  f.mm = f.dir + "/bt-mm";
  f.cv = f.dir + "/cv";
  // The synthetic market's ceiling in the eval and cv sections (small: 150 rows, 16 paths).
  const std::string oracle =
      " --oracle " + f.dir + "/m.dbn.zst.synth.json --oracle-rows 150 --oracle-paths 16";
  const std::vector<std::string> steps = {
      "-q synth --latent --events 60000 --seed 3 --out " + f.dir + "/m.dbn.zst",
      "-q ingest " + f.dir + "/m.dbn.zst --out " + f.store,
      "-q train --store " + f.store + " --out " + f.train + kSmallModel,
      "-q eval --checkpoint " + f.train + "/best.ckpt --out " + f.eval + " --threads 2" + oracle,
      "-q predict --checkpoint " + f.train + "/best.ckpt --store " + f.store + " --out " + f.dir +
          "/p.csv --threads 2",
      "-q backtest --store " + f.store + " --predictions " + f.dir + "/p.csv --horizon 30 --out " +
          f.signal,
      "-q backtest --store " + f.store + " --strategy mm --predictions " + f.dir +
          "/p.csv --queue-models risk-averse,power:2,log --out " + f.mm,
      "-q cv --store " + f.store + " --folds 2 --by block --bootstrap 50 --out " + f.cv +
          kSmallModel + oracle,
  };
  for (const std::string& s : steps) {
    auto r = run_fxt(s);
    EXPECT_EQ(r.exit_code, 0) << s << "\n" << r.output;
  }
  return f;
}

// The ids a report of [train, eval, signal, mm, cv] must hold (docs/REPORT.md).
std::vector<std::string> expected_ids() {
  std::vector<std::string> ids = {"comparison"};
  for (const char* n : {"loss", "val-auc", "sigma", "lambda", "epochs", "config"}) {
    ids.push_back(std::string("sec1-") + n);
  }
  for (const char* n :
       {"metrics", "baselines", "lift", "auc", "lift-chart", "oracle", "oracle-chart",
        "reliability-h30", "reliability-h100", "reliability-table-h30", "reliability-table-h100"}) {
    ids.push_back(std::string("sec2-") + n);
  }
  for (const char* sec : {"sec3-", "sec4-"}) {
    for (const char* n : {"equity", "drawdown", "position", "fills", "stats", "params"}) {
      ids.push_back(sec + std::string(n));
    }
  }
  ids.push_back("sec4-band");
  for (const char* n :
       {"folds", "pooled", "folds-chart", "pooled-chart", "oracle", "oracle-chart"}) {
    ids.push_back(std::string("sec5-") + n);
  }
  return ids;
}

// The zoom controls of that report: every chart with a time or epoch x axis, nothing else.
std::vector<std::string> expected_zoom_ids() {
  std::vector<std::string> ids;
  for (const char* n : {"loss", "val-auc", "sigma", "lambda"}) {
    ids.push_back(std::string("sec1-") + n + "-zoom");
  }
  for (const char* sec : {"sec3-", "sec4-"}) {
    for (const char* n : {"equity", "drawdown", "position", "fills"}) {
      ids.push_back(sec + std::string(n) + "-zoom");
    }
  }
  return ids;
}

// Every id="..." of the charts and tables in an HTML text.
// The quoted value that follows each occurrence of `lead` (which ends with an opening quote).
std::vector<std::string> values_after(const std::string& text, const std::string& lead) {
  std::vector<std::string> out;
  for (size_t at = text.find(lead); at != std::string::npos; at = text.find(lead, at + 1)) {
    const size_t begin = at + lead.size(), end = text.find('"', begin);
    if (end == std::string::npos) break;
    out.push_back(text.substr(begin, end - begin));
  }
  return out;
}

std::set<std::string> chart_and_table_ids(const std::string& html) {
  std::set<std::string> ids;
  for (const char* lead : {"<svg class=\"fxt-chart\" id=\"", "<table class=\"fxt-table\" id=\""}) {
    for (std::string& id : values_after(html, lead)) ids.insert(std::move(id));
  }
  return ids;
}

void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(Report, FromTrainEvalAndBacktestRuns) {
  const Fixture f = make_fixture();
  const std::string out = f.dir + "/report.html";
  auto r = run_fxt("report " + f.train + " " + f.eval + " " + f.signal + " " + f.mm + " " + f.cv +
                   " --out " + out + " --title 'Fixture <runs>'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("report of 5 runs -> " + out), std::string::npos) << r.output;
  const std::string html = read_text(out);
  expect_self_contained(html);
  EXPECT_NE(html.find("<title>Fixture &lt;runs&gt;</title>"), std::string::npos);
  const std::set<std::string> ids = chart_and_table_ids(html);
  for (const std::string& id : expected_ids()) EXPECT_EQ(ids.count(id), 1u) << id;
  // No duplicate ids among charts and tables.
  EXPECT_EQ(ids.size(),
            count_of(html, "class=\"fxt-chart\"") + count_of(html, "class=\"fxt-table\""));
  for (const char* kind : {"train", "eval", "backtest", "cv"}) {
    EXPECT_NE(html.find(std::string("data-kind=\"") + kind + "\""), std::string::npos) << kind;
  }
  // One zoom control per time or epoch chart (five factors each), none on bars or folds.
  const std::vector<std::string> zooms = values_after(html, "<div class=\"fxt-zoom\" id=\""),
                                 want_zooms = expected_zoom_ids();
  EXPECT_EQ(std::set<std::string>(zooms.begin(), zooms.end()),
            std::set<std::string>(want_zooms.begin(), want_zooms.end()));
  EXPECT_EQ(zooms.size(), want_zooms.size());
  EXPECT_EQ(count_of(html, "<input type=\"radio\""), 5 * zooms.size());
  EXPECT_EQ(count_of(html, "data-zoom=\""), 4 * zooms.size());

  // Concrete values: the eval table shows the model's mean AUC, the epochs table one row per
  // metrics.jsonl line, the band table the spread of total PnL from stats.json.
  const auto ev = nlohmann::json::parse(read_text(f.eval));
  EXPECT_NE(html.find(fmt::format("{:.4f}", ev["model"]["mean_auc"].get<double>())),
            std::string::npos);
  const size_t ep = html.find("id=\"sec1-epochs\"");
  const std::string epochs = html.substr(ep, html.find("</table>", ep) - ep);
  EXPECT_EQ(count_of(epochs, "<tr>"), 1u + 3u);  // header + 3 epochs
  const auto stats = nlohmann::json::parse(read_text(f.mm + "/stats.json"));
  const size_t bp = html.find("id=\"sec4-band\"");
  const std::string band = html.substr(bp, html.find("</table>", bp) - bp);
  EXPECT_NE(band.find(report::format_number(
                stats["model_risk_band"]["total_pnl"]["spread"].get<double>(), 6)),
            std::string::npos)
      << band;
  // The CV tables: one row per fold, and the pooled mean AUC of cv.json with its paired
  // difference interval.
  const auto cv = nlohmann::json::parse(read_text(f.cv + "/cv.json"));
  const size_t fp = html.find("id=\"sec5-folds\"");
  const std::string folds = html.substr(fp, html.find("</table>", fp) - fp);
  EXPECT_EQ(count_of(folds, "<tr>"), 1u + 2u);
  const size_t pp = html.find("id=\"sec5-pooled\"");
  const std::string pooled = html.substr(pp, html.find("</table>", pp) - pp);
  EXPECT_NE(pooled.find(report::format_with_interval(cv["mean"]["diff"].get<double>(),
                                                     cv["mean"]["diff_ci"][0].get<double>(),
                                                     cv["mean"]["diff_ci"][1].get<double>())),
            std::string::npos)
      << pooled;
  // The oracle tables (the eval's test rows and the CV's pooled rows): one row per horizon, the
  // oracle's AUC with its interval and the model's gap share with its interval, as in the JSON.
  for (const auto& [id, j] : {std::pair{"sec2-oracle", ev}, std::pair{"sec5-oracle", cv}}) {
    const size_t op = html.find(std::string("id=\"") + id + "\"");
    ASSERT_NE(op, std::string::npos) << id;
    const std::string table = html.substr(op, html.find("</table>", op) - op);
    const auto& hs = j["oracle"]["horizons"];
    ASSERT_EQ(hs.size(), 2u) << j["oracle"].dump();
    EXPECT_EQ(count_of(table, "<tr>"), 1u + hs.size()) << table;
    for (const auto& h : hs) {
      EXPECT_NE(table.find(report::format_with_interval(h["oracle_auc"].get<double>(),
                                                        h["oracle_ci"][0].get<double>(),
                                                        h["oracle_ci"][1].get<double>())),
                std::string::npos)
          << table;
      // A tiny model's share may be undefined (the oracle need not beat its best baseline).
      if (!h["gap_recovered"].is_number() || !h["gap_recovered_ci"][0].is_number()) continue;
      EXPECT_NE(table.find(fmt::format("{:.0f} % [{:.0f} %, {:.0f} %]",
                                       100 * h["gap_recovered"].get<double>(),
                                       100 * h["gap_recovered_ci"][0].get<double>(),
                                       100 * h["gap_recovered_ci"][1].get<double>())),
                std::string::npos)
          << table;
    }
  }
  // Units, not raw integers: the tick in price units, latencies as durations (before:
  // {"tick_px":250000000} and {"feed_ns":0,...}).
  const size_t mp = html.find("id=\"sec4-params\"");
  ASSERT_NE(mp, std::string::npos);
  const std::string params = html.substr(mp, html.find("</table>", mp) - mp);
  EXPECT_NE(params.find("tick 0.25"), std::string::npos) << params;
  EXPECT_NE(params.find("feed 0 s"), std::string::npos) << params;
  EXPECT_EQ(params.find("tick_px"), std::string::npos) << params;
  // The mm equity chart has one line per queue model.
  for (const char* m : {"risk-averse", "power:2", "log"}) {
    EXPECT_NE(html.find(std::string("data-name=\"") + m + "\""), std::string::npos) << m;
  }
}

TEST(Report, LongSeriesAreThinned) {
  const Fixture f = make_fixture();
  const std::string out = f.dir + "/thin.html";
  auto r = run_fxt("-q report " + f.mm + " --max-points 50 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read_text(out);
  // The precondition: several times more equity rows than the limit.
  const std::string equity = read_text(f.mm + "/risk-averse/equity.csv");
  ASSERT_GT(count_of(equity, "\n"), 150u);
  // Each series is tagged data-name="..." data-points="N".
  const std::vector<std::string> names = values_after(html, "data-name=\""),
                                 points = values_after(html, "\" data-points=\"");
  ASSERT_EQ(names.size(), points.size());
  size_t series = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const size_t n = std::stoul(points[i]);
    EXPECT_LE(n, 52u) << names[i];
    EXPECT_GT(n, 0u) << names[i];
    ++series;
  }
  EXPECT_GE(series, 3u + 3u + 1u + 3u);  // equity, drawdown, position, fills (mid, buys, sells)
}

// The RL learning curve (x = environment steps) zooms too; a cartpole run of 300 steps.
TEST(Report, RlLearningCurveIsZoomable) {
  const std::string dir = test::scratch_dir();
  auto r = run_fxt("-q rl train --steps 300 --learning-starts 50 --batch 16 --hidden 8 "
                   "--eval-every 100 --eval-episodes 2 --out " + dir + "/rl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fxt("-q report " + dir + "/rl --out " + dir + "/rl.html");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read_text(dir + "/rl.html");
  expect_self_contained(html);
  EXPECT_EQ(values_after(html, "<div class=\"fxt-zoom\" id=\""),
            std::vector<std::string>{"sec1-rl-curve-zoom"});
  EXPECT_EQ(count_of(html, "name=\"sec1-rl-curve-zoom\""), 5u);
}

TEST(Report, BadInputIsOneLineAndWritesNothing) {
  const std::string dir = test::scratch_dir();
  const std::string out = dir + "/r.html";
  auto r = run_fxt("report " + dir + "/missing --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "fxt: error: " + dir + "/missing: no such file or directory\n");
  EXPECT_FALSE(fs::exists(out));

  r = run_fxt("report " + dir + " --out " + out);  // an empty folder is no run
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("not a run directory"), std::string::npos) << r.output;

  // A damaged equity.csv names the file and the line.
  fs::create_directories(dir + "/bt");
  ASSERT_TRUE(write_file_atomic(dir + "/bt/stats.json", "{\"total_pnl\": 1}\n").ok());
  ASSERT_TRUE(write_file_atomic(dir + "/bt/equity.csv",
                                "ts_ns,position,cash,mid,equity\n1,0,0,100,0\n2,0,0,1x0,0\n")
                  .ok());
  ASSERT_TRUE(
      write_file_atomic(dir + "/bt/fills.csv", "ts_ns,order_id,side,px,qty,fee,maker\n").ok());
  r = run_fxt("report " + dir + "/bt --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "fxt: error: " + dir + "/bt/equity.csv:3: bad number '1x0' in column mid\n");
  EXPECT_FALSE(fs::exists(out));
}

// ---- headless Chromium --------------------------------------------------------------------------

std::string find_chromium() {
  if (const char* env = std::getenv("FXT_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (const std::string& dir : [&] {
         std::vector<std::string> dirs;
         std::string p = path;
         for (size_t s = 0, e; s <= p.size(); s = e + 1) {
           e = p.find(':', s);
           if (e == std::string::npos) e = p.size();
           dirs.push_back(p.substr(s, e - s));
         }
         return dirs;
       }()) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      const fs::path exe = fs::path(dir) / name;
      std::error_code ec;
      if (fs::is_regular_file(exe, ec)) return exe.string();
    }
  }
  return "";
}

// Runs a command and returns its stdout (stderr discarded).
std::string capture(const std::string& cmd) {
  std::string out;
  std::FILE* pipe = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

std::string chromium_flags(const std::string& profile) {
  return " --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" + profile;
}

// A decoded 8-bit RGB or RGBA PNG (no interlacing): what Chromium's screenshots are.
struct Png {
  uint32_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
};

uint32_t be32(const std::string& s, size_t p) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[p])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[p + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[p + 2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[p + 3]));
}

// Parses the chunks (IHDR, IDAT...), inflates the image data with zlib and undoes the per-row
// filters (PNG spec §9: None, Sub, Up, Average, Paeth). Empty string on success, else why not.
std::string decode_png(const std::string& file, Png* png) {
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return "no PNG signature";
  std::string idat;
  int bit_depth = 0, color_type = -1, interlace = 0;
  for (size_t p = 8; p + 12 <= file.size();) {
    const uint32_t len = be32(file, p);
    const std::string type = file.substr(p + 4, 4);
    if (p + 12 + len > file.size()) return "truncated chunk " + type;
    if (type == "IHDR") {
      png->width = be32(file, p + 8);
      png->height = be32(file, p + 12);
      bit_depth = static_cast<uint8_t>(file[p + 16]);
      color_type = static_cast<uint8_t>(file[p + 17]);
      interlace = static_cast<uint8_t>(file[p + 20]);
    } else if (type == "IDAT") {
      idat.append(file, p + 8, len);
    } else if (type == "IEND") {
      break;
    }
    p += 12 + len;
  }
  if (bit_depth != 8 || (color_type != 2 && color_type != 6) || interlace != 0) {
    return fmt::format("unsupported PNG: bit depth {}, colour type {}, interlace {}", bit_depth,
                       color_type, interlace);
  }
  png->channels = color_type == 6 ? 4 : 3;
  const size_t stride = size_t{png->width} * static_cast<size_t>(png->channels);
  std::vector<uint8_t> raw((stride + 1) * png->height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_size != raw.size()) {
    return "IDAT does not inflate to the image size";
  }
  png->pixels.assign(stride * png->height, 0);
  const size_t bpp = static_cast<size_t>(png->channels);
  for (size_t y = 0; y < png->height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* row = &png->pixels[y * stride];
    const uint8_t* up = y > 0 ? &png->pixels[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? row[i - bpp] : 0, b = up ? up[i] : 0,
                c = (up && i >= bpp) ? up[i - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          pred = a;
          break;
        case 2:
          pred = b;
          break;
        case 3:
          pred = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          return fmt::format("row {}: unknown filter {}", y, filter);
      }
      row[i] = static_cast<uint8_t>(in[i] + pred);
    }
  }
  return "";
}

// Renders `html` in headless Chromium: screenshot checks and DOM checks against the ids.
void check_in_chromium(const std::string& chromium, const std::string& html_path,
                       const std::vector<std::string>& ids) {
  const std::string dir = fs::path(html_path).parent_path().string();
  const std::string png_path = dir + "/screenshot.png";
  const std::string url = "file://" + fs::absolute(html_path).string();
  capture("timeout 120 " + chromium + chromium_flags(dir + "/chromium-profile") +
          " --window-size=1280,4000 --screenshot=" + png_path + " " + url);
  ASSERT_TRUE(fs::exists(png_path)) << "chromium wrote no screenshot";
  Png png;
  const std::string err = decode_png(read_text(png_path), &png);
  ASSERT_EQ(err, "") << png_path;
  EXPECT_EQ(png.width, 1280u);
  EXPECT_EQ(png.height, 4000u);
  // Non-white pixels (text, lines, bars, table shading) and distinct colours (the palette).
  size_t non_white = 0;
  std::set<uint32_t> colours;
  size_t palette_blue = 0;
  const size_t n = size_t{png.width} * png.height, ch = static_cast<size_t>(png.channels);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &png.pixels[i * ch];
    if (p[0] < 240 || p[1] < 240 || p[2] < 240) ++non_white;
    colours.insert(uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]);
    if (p[0] == 0x4e && p[1] == 0x79 && p[2] == 0xa7) ++palette_blue;
  }
  const double fraction = static_cast<double>(non_white) / static_cast<double>(n);
  std::printf("screenshot %ux%u: %.1f %% non-white, %zu colours, %zu palette-blue pixels\n",
              png.width, png.height, 100 * fraction, colours.size(), palette_blue);
  EXPECT_GT(fraction, 0.04);
  EXPECT_GT(colours.size(), 50u);
  EXPECT_GT(palette_blue, 50u);  // the first series' colour is drawn

  const std::string dom = capture("timeout 120 " + chromium +
                                  chromium_flags(dir + "/chromium-profile") + " --dump-dom " + url);
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 500);
  const std::set<std::string> dom_ids = chart_and_table_ids(dom);
  for (const std::string& id : ids) EXPECT_EQ(dom_ids.count(id), 1u) << "not in the DOM: " << id;
  const std::string html = read_text(html_path);
  EXPECT_EQ(count_of(dom, "<svg class=\"fxt-chart\""), count_of(html, "<svg class=\"fxt-chart\""));
  EXPECT_EQ(count_of(dom, "<table class=\"fxt-table\""),
            count_of(html, "<table class=\"fxt-table\""));
  EXPECT_EQ(dom_ids, chart_and_table_ids(html));
  // The zoom controls: every one in the DOM with its five radios.
  EXPECT_EQ(values_after(dom, "<div class=\"fxt-zoom\" id=\""),
            values_after(html, "<div class=\"fxt-zoom\" id=\""));
  EXPECT_EQ(count_of(dom, "<input type=\"radio\""), count_of(html, "<input type=\"radio\""));
  // The verdict lines (docs/BASELINES.md) are in the rendered page, one per horizon.
  EXPECT_EQ(count_of(dom, "<li class=\"fxt-verdict fxt-verdict-"),
            count_of(html, "<li class=\"fxt-verdict fxt-verdict-"));
  EXPECT_EQ(count_of(dom, " beats the best baseline ("),
            count_of(html, "<li class=\"fxt-verdict fxt-verdict-"));
  // The model's lines and, after them, the model stack's (docs/BASELINES.md "Stacks"): one each
  // per horizon of every evaluation shown.
  EXPECT_GT(count_of(dom, "model beats the best baseline ("), 0u);
  EXPECT_EQ(count_of(dom, "the model stacked with the baselines beats the best baseline ("),
            count_of(dom, "model beats the best baseline ("));
}

// The horizontal extent (first to last column) of the palette's first colour in a screenshot.
size_t blue_extent(const Png& png) {
  size_t lo = png.width, hi = 0;
  const size_t ch = static_cast<size_t>(png.channels);
  for (size_t y = 0; y < png.height; ++y) {
    for (size_t x = 0; x < png.width; ++x) {
      const uint8_t* p = &png.pixels[(y * png.width + x) * ch];
      if (p[0] == 0x4e && p[1] == 0x79 && p[2] == 0xa7) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
  }
  return hi >= lo ? hi - lo + 1 : 0;
}

// A test-only page with one zoomable chart of a report (the report's stylesheet, the chart's
// figure) is rendered as written (1x checked) and with the 4x radio checked instead: the
// chart's drawn width grows (its first series is drawn in the palette's first colour).
void check_zoom_in_chromium(const std::string& chromium, const std::string& html_path,
                            const std::string& chart_id) {
  const std::string html = read_text(html_path);
  const size_t body = html.find("<body>");
  const size_t zoom = html.find("<div class=\"fxt-zoom\" id=\"" + chart_id + "-zoom\"");
  ASSERT_NE(body, std::string::npos);
  ASSERT_NE(zoom, std::string::npos) << chart_id;
  const size_t fig = html.rfind("<figure", zoom), end = html.find("</figure>", zoom);
  const std::string page = html.substr(0, body + 6) + html.substr(fig, end + 9 - fig) +
                           "\n</body>\n</html>\n";
  const std::string one = " id=\"" + chart_id + "-zoom-1\" checked>",
                    four = " id=\"" + chart_id + "-zoom-4\">";
  ASSERT_EQ(count_of(page, one), 1u);
  ASSERT_EQ(count_of(page, four), 1u);
  std::string zoomed = page;
  zoomed.replace(zoomed.find(one), one.size(), " id=\"" + chart_id + "-zoom-1\">");
  zoomed.replace(zoomed.find(four), four.size(), " id=\"" + chart_id + "-zoom-4\" checked>");
  const std::string dir = fs::path(html_path).parent_path().string();
  size_t extent[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const std::string name = dir + "/zoom-" + std::to_string(i);
    ASSERT_TRUE(write_file_atomic(name + ".html", i == 0 ? page : zoomed).ok());
    capture("timeout 120 " + chromium + chromium_flags(dir + "/chromium-profile") +
            " --window-size=1280,600 --screenshot=" + name + ".png file://" +
            fs::absolute(name + ".html").string());
    Png png;
    ASSERT_EQ(decode_png(read_text(name + ".png"), &png), "") << name;
    extent[i] = blue_extent(png);
  }
  std::printf("%s drawn %zu px wide at 1x, %zu px at 4x\n", chart_id.c_str(), extent[0],
              extent[1]);
  // 1x: the plot of a 580-px chart (about 500 px); 4x: the figure takes the page's width.
  EXPECT_GT(extent[0], 400u);
  EXPECT_LT(extent[0], 580u);
  EXPECT_GT(extent[1], 2 * extent[0]);
}

TEST(ReportChromium, RendersEveryChartAndTable) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
  }
  const Fixture f = make_fixture();
  const std::string out = f.dir + "/report.html";
  auto r = run_fxt("-q report " + f.train + " " + f.eval + " " + f.signal + " " + f.mm + " " +
                   f.cv + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  check_in_chromium(chromium, out, expected_ids());
  check_zoom_in_chromium(chromium, out, "sec3-equity");
  // Two horizons in the evaluation and two in the CV, each with the model's line and the model
  // stack's: eight verdict lines.
  EXPECT_EQ(count_of(read_text(out), "<li class=\"fxt-verdict fxt-verdict-"), 8u);
}

// ---- the real ES MBO store --------------------------------------------------------------------

TEST(ReportReal, EsMboStore) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = test::scratch_dir();
  const std::vector<std::string> steps = {
      "-q ingest " + test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
          test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es",
      "-q train --store " + dir + "/es --out " + dir + "/train" + kSmallModel,
      "-q eval --checkpoint " + dir + "/train/best.ckpt --out " + dir + "/train/eval.json" +
          " --threads 2",
      "-q backtest --store " + dir + "/es --checkpoint " + dir +
          "/train/best.ckpt --horizon 30 --param entry=passive --threads 2 --out " + dir + "/bt",
      "-q report " + dir + "/train " + dir + "/bt --title 'ES 2023-12-25' --out " + dir +
          "/es.html",
  };
  for (const std::string& s : steps) {
    auto r = run_fxt(s);
    ASSERT_EQ(r.exit_code, 0) << s << "\n" << r.output;
  }
  const std::string html = read_text(dir + "/es.html");
  expect_self_contained(html);
  // The train run's eval.json is part of its section (sec1-eval-...); the backtest replays
  // exact L3 queues, one run labelled l3-fifo.
  std::vector<std::string> ids = {"comparison"};
  for (const char* n :
       {"loss", "val-auc", "sigma", "lambda", "epochs", "config", "eval-metrics", "eval-lift",
        "eval-auc", "eval-lift-chart", "eval-reliability-h30", "eval-reliability-h100"}) {
    ids.push_back(std::string("sec1-") + n);
  }
  for (const char* n : {"equity", "drawdown", "position", "fills", "stats", "params"}) {
    ids.push_back(std::string("sec2-") + n);
  }
  const std::set<std::string> found = chart_and_table_ids(html);
  for (const std::string& id : ids) EXPECT_EQ(found.count(id), 1u) << id;
  EXPECT_EQ(found.count("sec2-band"), 0u);  // one queue model: no band
  EXPECT_NE(html.find("l3-fifo"), std::string::npos);
  const std::string chromium = find_chromium();
  if (!chromium.empty()) check_in_chromium(chromium, dir + "/es.html", ids);
}

}  // namespace
}  // namespace fxt
