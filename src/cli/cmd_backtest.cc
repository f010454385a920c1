// fxt backtest: a built-in strategy over one or more stores through the exchange simulator,
// under one or several queue models (DESIGN §7.3-7.4, docs/BACKTEST.md).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/log.h"
#include "core/file_util.h"
#include "sim/backtest.h"
#include "sim/engine.h"
#include "sim/sweep.h"

namespace fxt::cli {

namespace {

struct BacktestArgs {
  sim::BacktestSpec spec;
  std::string latency, latency_file, fees, queue_models, equity_interval = "1s";
  double multiplier = 1;
  bool l2 = false;
  CLI::Option* multiplier_opt = nullptr;
  std::string sweep, device = "cpu";  // --sweep grid.toml: lanes (docs/SWEEP.md)
  int top = 0;
  size_t batch = 0;
};

// The process's own command line (Linux /proc), for run.json; "" when unavailable.
std::string own_command_line() {
  auto text = read_file("/proc/self/cmdline");
  if (!text.ok()) return "";
  std::string line;
  for (char c : *text) line += c == '\0' ? ' ' : c;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

std::string cell(const nlohmann::json& stats, const char* key) {
  if (!stats.contains(key) || !stats[key].is_number()) return "-";
  const double v = stats[key].get<double>();
  if (stats[key].is_number_integer() || stats[key].is_number_unsigned()) {
    return fmt::format("{}", static_cast<long long>(std::llround(v)));
  }
  return fmt::format("{:.4g}", v);
}

// --sweep: every lane of the grid over the flags' simulator settings.
Status run_sweep_command(const BacktestArgs& a, const sim::BacktestSpec& spec) {
  if (!spec.checkpoint.empty())
    return UsageError("--sweep reads --predictions; run fxt predict for --checkpoint first");
  if (spec.queue_models.size() > 1)
    return UsageError("--sweep: give the queue models as a grid key (queue = [...])");
  sim::SweepSpec s;
  s.grid_path = a.sweep;
  s.stores = spec.stores;
  s.strategy = spec.strategy;
  s.predictions = spec.predictions;
  s.horizon = spec.horizon;
  s.sim = spec.sim;
  if (!spec.queue_models.empty()) s.sim.queue = spec.queue_models.front();
  s.multiplier_given = spec.multiplier_given;
  s.device = a.device;
  s.threads = spec.threads;
  s.batch = a.batch;
  s.top = a.top;
  s.out_dir = spec.out_dir;
  FXT_ASSIGN_OR_RETURN(sim::SweepOutcome out, sim::run_sweep(s, own_command_line()));
  std::printf("%zu lanes x %llu events in %.2f s (%.3g lane-events/s, %d threads); Pareto front: "
              "%zu lanes\n",
              out.lanes, static_cast<unsigned long long>(out.events_per_lane), out.wall_seconds,
              out.wall_seconds > 0 ? static_cast<double>(out.lanes) *
                                         static_cast<double>(out.events_per_lane) /
                                         out.wall_seconds
                                   : 0.0,
              s.threads, out.pareto.size());
  std::printf("%6s %14s %10s %12s %14s\n", "lane", "total_pnl", "sharpe", "max_drawdown",
              "turnover");
  const std::vector<size_t>& shown = out.top.empty() ? out.pareto : out.top;
  for (size_t k = 0; k < shown.size() && k < 10; ++k) {
    const nlohmann::json& st = out.outcomes[shown[k]].stats;
    std::printf("%6zu %14s %10s %12s %14s\n", shown[k], cell(st, "total_pnl").c_str(),
                cell(st, "sharpe_daily_annualised").c_str(), cell(st, "max_drawdown").c_str(),
                cell(st, "turnover").c_str());
  }
  std::printf("results in %s/sweep.csv and sweep.json\n", s.out_dir.c_str());
  return Status::Ok();
}

Status run_backtest_command(BacktestArgs& a) {
  sim::BacktestSpec spec = a.spec;
  if (!a.latency.empty()) {
    FXT_ASSIGN_OR_RETURN(spec.sim.latency, sim::parse_latency(a.latency));
  }
  spec.sim.latency.file = a.latency_file;
  if (!a.fees.empty()) {
    FXT_ASSIGN_OR_RETURN(spec.sim.fees, sim::parse_fees(a.fees));
  }
  if (!a.queue_models.empty()) {
    FXT_ASSIGN_OR_RETURN(spec.queue_models, sim::parse_queue_models(a.queue_models));
  }
  FXT_ASSIGN_OR_RETURN(spec.sim.equity_interval_ns, sim::parse_duration_ns(a.equity_interval));
  if (spec.sim.equity_interval_ns <= 0) return UsageError("--equity-interval must be > 0");
  spec.sim.use_l3 = !a.l2;
  spec.multiplier_given = a.multiplier_opt->count() > 0;
  if (spec.multiplier_given) {
    if (!(a.multiplier > 0)) return UsageError("--multiplier must be > 0");
    spec.sim.instrument.multiplier = a.multiplier;
  }
  if (!a.sweep.empty()) return run_sweep_command(a, spec);
  if (a.top > 0) return UsageError("--top needs --sweep");
  const sim::LatencyConfig& lat = spec.sim.latency;
  const sim::FeeSchedule& fee = spec.sim.fees;
  if (lat.feed_ns == 0 && lat.entry_ns == 0 && lat.response_ns == 0 && lat.file.empty() &&
      fee.maker_bps == 0 && fee.taker_bps == 0 && fee.maker_per_unit == 0 &&
      fee.taker_per_unit == 0) {
    log_warn("backtest with zero latency and zero fees: the results are optimistic (give "
             "--latency and --fees; run.json records both)");
  }
  FXT_ASSIGN_OR_RETURN(sim::BacktestOutcome out, sim::run_backtest_spec(spec, own_command_line()));
  std::printf("%-14s %14s %10s %12s %8s %12s %8s\n", "queue model", "total_pnl", "sharpe",
              "max_drawdown", "trades", "fees", "fill%");
  for (const sim::QueueModelRun& r : out.runs) {
    std::string fill = "-";
    if (r.stats.contains("fill_ratio") && r.stats["fill_ratio"].is_number()) {
      fill = fmt::format("{:.1f}", 100 * r.stats["fill_ratio"].get<double>());
    }
    std::printf(
        "%-14s %14s %10s %12s %8s %12s %8s\n", r.name.c_str(), cell(r.stats, "total_pnl").c_str(),
        cell(r.stats, "sharpe_annualised").c_str(), cell(r.stats, "max_drawdown").c_str(),
        cell(r.stats, "trades").c_str(), cell(r.stats, "fees").c_str(), fill.c_str());
  }
  if (const nlohmann::json& s0 = out.runs.front().stats; s0.value("sharpe_basis", "") != "daily") {
    std::printf("sharpe: annualised from %s (the run spans under 2 days; docs/BACKTEST.md)\n",
                s0.value("sharpe_basis", std::string("-")).c_str());
  }
  for (const sim::QueueModelRun& r : out.runs) {
    if (!r.stats.contains("execution")) continue;
    const nlohmann::json& e = r.stats["execution"];  // sim/strategy_exec.h
    auto price = [&e](const char* key) {
      return e[key].is_number() ? fmt::format("{:.10g}", e[key].get<double>()) : std::string("-");
    };
    std::printf(
        "%s: %s %s of %s, average %s; shortfall vs arrival (%s) %s bps, vs VWAP (%s) %s bps "
        "(positive = cost), fees %s bps\n",
        r.name.c_str(), e["side"].get<std::string>() == "buy" ? "bought" : "sold",
        cell(e, "executed_qty").c_str(), cell(e, "qty").c_str(), price("avg_fill_px").c_str(),
        price("arrival_px").c_str(), cell(e, "shortfall_bps").c_str(),
        price("market_vwap_px").c_str(), cell(e, "vwap_slippage_bps").c_str(),
        cell(e, "fees_bps").c_str());
  }
  if (out.runs.size() > 1 && out.band.contains("total_pnl")) {
    std::printf("model-risk band of total_pnl: spread %s\n",
                cell(out.band["total_pnl"], "spread").c_str());
  }
  std::printf("%llu events per run, %.2f s; results in %s\n",
              static_cast<unsigned long long>(out.events), out.wall_seconds, spec.out_dir.c_str());
  return Status::Ok();
}

}  // namespace

void register_backtest(CLI::App& app) {
  auto a = std::make_shared<BacktestArgs>();
  sim::BacktestSpec& s = a->spec;
  CLI::App* cmd = add_command(app, "backtest",
                              "run a built-in strategy (signal, mm, twap, ac) through the exchange "
                              "simulator (DESIGN §7, docs/BACKTEST.md)",
                              [a] { return run_backtest_command(*a); });
  cmd->add_option("--store", s.stores, "snapshot store directories (one instrument, time order)")
      ->required();
  cmd->add_option("--strategy", s.strategy, "signal, mm, twap or ac")->capture_default_str();
  cmd->add_option("--param", s.params,
                  "strategy parameter key=value (repeatable; in a config file: param = [...])");
  cmd->add_option("--checkpoint", s.checkpoint,
                  "compute the signal from this checkpoint (RUN_DIR/predictions*.csv)");
  cmd->add_option("--predictions", s.predictions, "fxt predict CSV files, one per store");
  cmd->add_option("--horizon", s.horizon, "probability column p_h<H> (default: the first)");
  cmd->add_option("--latency", a->latency, "feed=1ms,entry=2ms,response=2ms (ns/us/ms/s); default: 0 (no latency)");
  cmd->add_option("--latency-file", a->latency_file,
                  "recorded latencies CSV ts_ns,entry_ns,response_ns (overrides entry/response)");
  cmd->add_option("--fees", a->fees, "maker=-0.2bps,taker=0.5bps or maker=0.25/unit; default: no fees");
  cmd->add_option("--queue-models", a->queue_models,
                  "L2 queue models, e.g. risk-averse,power:2,log (several: a model-risk band)");
  a->multiplier_opt = cmd->add_option("--multiplier", a->multiplier,
                                      "contract multiplier (default: the store's, else 1)");
  cmd->add_flag("--l2", a->l2, "estimate queue positions even on MBO stores");
  cmd->add_option("--equity-interval", a->equity_interval, "equity sampling interval")
      ->capture_default_str();
  cmd->add_option("--threads", s.threads,
                  "threads for predictions and for queue models run side by side")
      ->capture_default_str()
      ->check(int_range(1, 4096));
  cmd->add_option("--out", s.out_dir, "run directory for the result files")->required();
  cmd->add_option("--sweep", a->sweep,
                  "run every parameter set of this grid TOML as a lane (docs/SWEEP.md): "
                  "RUN_DIR/sweep.csv, sweep.json with the Pareto front");
  cmd->add_option("--device", a->device,
                  "lanes of --sweep on: cpu, or cuda (mm lanes, L2 queues; docs/SWEEP.md)")
      ->capture_default_str();
  cmd->add_option("--top", a->top, "with --sweep: full result files of the best K lanes by Sharpe")
      ->check(int_range(0, 1000000));
  cmd->add_option("--lane-batch", a->batch, "with --sweep: lanes per batch (0: all)")
      ->check(uint_range(0, 1000000));
}

}  // namespace fxt::cli
