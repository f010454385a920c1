#include "sim/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/file_util.h"
#include "core/progress.h"
#include "sim/backtest.h"
#include "sim/gpu_lanes.h"
#include "sim/sweep_grid.h"

namespace fxt::sim {
namespace {

// The stats.json figures of the results table, in column order.
constexpr const char* kColumns[] = {"total_pnl",        "sharpe_daily_annualised",
                                    "sharpe_annualised", "sharpe_per_trade", "sortino",
                                    "max_drawdown",     "return_over_drawdown",
                                    "trades",           "round_trips",
                                    "turnover",         "volume",
                                    "fill_ratio",       "maker_share",
                                    "taker_share",      "fees",
                                    "mean_holding_ns",  "orders",
                                    "final_position"};

// A stats figure for ranking: null or absent gives `worst`.
double figure(const nlohmann::json& stats, const char* key, double worst) {
  if (!stats.contains(key) || !stats[key].is_number()) return worst;
  return stats[key].get<double>();
}

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Objectives {
  double sharpe, drawdown, turnover;  // higher, lower, lower
};
Objectives objectives(const nlohmann::json& s) {
  return {figure(s, "sharpe_annualised", -kInf), figure(s, "max_drawdown", kInf),
          figure(s, "turnover", kInf)};
}
bool dominates(const Objectives& a, const Objectives& b) {
  const bool no_worse =
      a.sharpe >= b.sharpe && a.drawdown <= b.drawdown && a.turnover <= b.turnover;
  const bool better = a.sharpe > b.sharpe || a.drawdown < b.drawdown || a.turnover < b.turnover;
  return no_worse && better;
}

// A CSV cell: numbers as JSON writes them (shortest round-trip), null empty, strings quoted
// when they hold a comma or a quote.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}
std::string csv_number(const nlohmann::json& stats, const char* key) {
  if (!stats.contains(key) || stats[key].is_null()) return "";
  return stats[key].dump();
}

}  // namespace

std::vector<size_t> pareto_front(const std::vector<nlohmann::json>& stats) {
  std::vector<Objectives> obj;
  obj.reserve(stats.size());
  for (const nlohmann::json& s : stats) obj.push_back(objectives(s));
  std::vector<size_t> order(stats.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Lexicographic (Sharpe ↓, drawdown ↑, turnover ↑): a dominating lane always comes first,
  // so each lane need only be checked against the front found so far.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (obj[a].sharpe != obj[b].sharpe) return obj[a].sharpe > obj[b].sharpe;
    if (obj[a].drawdown != obj[b].drawdown) return obj[a].drawdown < obj[b].drawdown;
    return obj[a].turnover < obj[b].turnover;
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    bool dominated = false;
    for (size_t f : front)
      if (dominates(obj[f], obj[i])) {
        dominated = true;
        break;
      }
    if (!dominated) front.push_back(i);
  }
  return front;
}

std::vector<size_t> best_lanes(const std::vector<nlohmann::json>& stats, size_t k) {
  std::vector<size_t> order(stats.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double sa = figure(stats[a], "sharpe_annualised", -kInf);
    const double sb = figure(stats[b], "sharpe_annualised", -kInf);
    if (sa != sb) return sa > sb;
    return figure(stats[a], "total_pnl", -kInf) > figure(stats[b], "total_pnl", -kInf);
  });
  order.resize(std::min(k, order.size()));
  return order;
}

Result<SweepOutcome> run_sweep(const SweepSpec& spec, const std::string& command_line) {
  if (spec.device != "cpu" && spec.device != "cuda")
    return UsageError("--device must be cpu or cuda (got '{}')", spec.device);
  if (spec.out_dir.empty()) return UsageError("--out: give the sweep directory");
  if (spec.top < 0) return UsageError("--top must be >= 0");
  if (spec.threads < 1) return UsageError("--threads must be >= 1");
  if (spec.sim.equity_interval_ns <= 0) return UsageError("--equity-interval must be > 0");
  FXT_ASSIGN_OR_RETURN(SweepGrid grid, load_sweep_grid(spec.grid_path));
  FXT_ASSIGN_OR_RETURN(LaneMarket market,
                       open_lane_market(spec.stores, spec.predictions, spec.horizon));
  SimConfig base = spec.sim;
  if (!spec.multiplier_given) base.instrument.multiplier = market.instrument.multiplier;
  if (base.instrument.tick_px <= 1) base.instrument.tick_px = market.instrument.tick_px;
  const std::string strategy = grid.strategy.empty() ? spec.strategy : grid.strategy;
  FXT_ASSIGN_OR_RETURN(std::vector<Lane> lanes, grid_lanes(grid, strategy, base, market.inputs));
  for (size_t i = 0; spec.device == "cuda" && i < lanes.size(); ++i) {  // before any runs
    Result<LaneConfig> c = gpu_lane_config(market, lanes[i]);
    if (!c.ok()) {
      return Status(c.status().code(), fmt::format("{}:{}: lane {}: {}", spec.grid_path,
                                                   grid.lanes[i].line, i, c.status().message()));
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(spec.out_dir, ec);
  if (ec) return IoError("{}: cannot create the sweep directory: {}", spec.out_dir, ec.message());

  SweepOutcome out;
  GpuLaneReport gpu_report;
  out.lanes = lanes.size();
  out.events_per_lane = market.events;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Progress progress("sweep", market.events * lanes.size(), "lane-events");
    LaneOptions options;
    options.threads = spec.threads;
    options.batch = spec.batch;
    options.progress = &progress;
    if (spec.device == "cuda") {  // the GPU lanes (sim/gpu_lanes.h)
      GpuLaneOptions gpu;
      gpu.batch = spec.batch;
      gpu.threads = spec.threads;
      gpu.progress = &progress;
      FXT_ASSIGN_OR_RETURN(out.outcomes, run_gpu_lanes(market, lanes, gpu, &gpu_report));
    } else {
      FXT_ASSIGN_OR_RETURN(out.outcomes, run_lanes(market, lanes, options));
    }
    progress.finish();
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<nlohmann::json> stats;
  stats.reserve(lanes.size());
  for (const LaneOutcome& o : out.outcomes) stats.push_back(o.stats);
  out.pareto = pareto_front(stats);
  out.top = best_lanes(stats, static_cast<size_t>(spec.top));
  std::vector<bool> on_front(lanes.size(), false);
  for (size_t i : out.pareto) on_front[i] = true;

  // sweep.csv: one row per lane: its grid values, then the stats figures.
  std::string csv = "lane";
  for (const std::string& k : grid.keys) csv.append(1, ',').append(csv_cell(k));
  for (const char* c : kColumns) csv.append(1, ',').append(c);
  csv += ",pareto\n";
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < lanes.size(); ++i) {
    const GridLane& g = grid.lanes[i];
    csv += std::to_string(i);
    nlohmann::json params = nlohmann::json::object();
    for (const std::string& k : grid.keys) {
      auto it = g.values.find(k);
      const std::string text = it == g.values.end() ? "" : it->second.text;
      csv.append(1, ',').append(csv_cell(text));
      if (it == g.values.end()) continue;
      if (it->second.kind == GridValue::kNumber)
        params[k] = std::strtod(text.c_str(), nullptr);
      else if (it->second.kind == GridValue::kBool)
        params[k] = text == "true";
      else
        params[k] = text;
    }
    for (const char* c : kColumns) csv.append(1, ',').append(csv_number(stats[i], c));
    csv += on_front[i] ? ",1\n" : ",0\n";
    nlohmann::json lane_stats = stats[i];
    lane_stats.erase("daily_pnl");  // per-day rows: in the --top lanes' stats.json
    rows.push_back({{"lane", i},
                    {"params", params},
                    {"stats", lane_stats},
                    {"position", out.outcomes[i].position},
                    {"cash", out.outcomes[i].cash},
                    {"fees", out.outcomes[i].fees},
                    {"fills", out.outcomes[i].fills},
                    {"pareto", on_front[i]}});
  }
  FXT_RETURN_IF_ERROR(write_file_atomic(spec.out_dir + "/sweep.csv", csv));

  // --top: the full result files through the single-run path, so they are exactly what
  // `fxt backtest` with the lane's parameters writes.
  std::vector<std::string> top_dirs;
  for (size_t i : out.top) {
    BacktestSpec one;
    one.stores = spec.stores;
    one.strategy = lanes[i].strategy;
    one.params = lanes[i].params;
    one.predictions = spec.predictions;
    one.horizon = spec.horizon;
    one.sim = lanes[i].sim;
    one.multiplier_given = true;
    one.out_dir = fmt::format("{}/top/lane-{}", spec.out_dir, i);
    FXT_ASSIGN_OR_RETURN(BacktestOutcome single, run_backtest_spec(one, command_line));
    (void)single;
    top_dirs.push_back(one.out_dir);
  }

  const double lane_events = static_cast<double>(market.events) * static_cast<double>(lanes.size());
  nlohmann::json doc = {
      {"grid", spec.grid_path},
      {"strategy", strategy},
      {"stores", spec.stores},
      {"predictions", spec.predictions},
      {"device", spec.device},
      {"threads", spec.threads},
      {"lanes", lanes.size()},
      {"events_per_lane", market.events},
      {"wall_seconds", out.wall_seconds},
      {"lane_events_per_second", out.wall_seconds > 0 ? lane_events / out.wall_seconds : 0.0},
      {"keys", grid.keys},
      {"grid_axes", grid.axes},
      {"pareto_objectives", {"sharpe_annualised max", "max_drawdown min", "turnover min"}},
      {"pareto_front", out.pareto},
      {"top", out.top},
      {"top_dirs", top_dirs},
      {"command_line", command_line},
      {"results", rows}};
  if (spec.device == "cuda") {
    doc["gpu"] = {{"batches", gpu_report.batches},
                  {"lanes_per_batch", gpu_report.batch_lanes},
                  {"device_bytes_per_lane", gpu_report.bytes_per_lane},
                  {"stream_bytes", gpu_report.stream_bytes},
                  {"cpu_fallback_lanes", gpu_report.cpu_fallback_lanes}};
  }
  FXT_RETURN_IF_ERROR(write_file_atomic(spec.out_dir + "/sweep.json", doc.dump(2) + "\n"));
  return out;
}

}  // namespace fxt::sim
