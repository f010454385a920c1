// fxt quickstart: the whole pipeline on generated data, for a new user with nothing but the
// repository — synth -> ingest -> train -> eval -> predict -> backtest (signal, mm) -> report,
// printing the per-horizon comparison table and the path of the HTML report. Predictions and
// backtests run on a second, smaller synthetic session (another seed) that training never saw.
// Defaults take about three minutes on 2 cores (docs/QUICKSTART.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/eval_table.h"
#include "cli/flag_checks.h"
#include "cli/train_flags.h"
#include "core/file_util.h"
#include "core/progress.h"
#include "data/ingest.h"
#include "data/synth.h"
#include "features/features.h"
#include "features/labels.h"
#include "report/report.h"
#include "sim/backtest.h"
#include "train/run_record.h"
#include "train/trainer.h"

namespace fxt::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct QuickstartArgs {
  std::string out = "out/quickstart";
  // The market: "meta" (the default) adds the informed meta-order and halves the drift's skew of
  // market orders (docs/SYNTH.md "Informed meta-order", docs/MODEL.md round 12 "market C"), the
  // structure only a sequence reveals; "plain" is fxt synth's defaults.
  std::string market = "meta";
  uint64_t events = 5'000'000;  // with the meta-order's clips, about 2.6 hours of the market
  // The out-of-sample session for predict and the backtests: scoring costs one K-position
  // forward per snapshot, so it is smaller than the training session.
  uint64_t backtest_events = 200'000;
  uint64_t seed = 1;
  int signal_horizon = 100;  // the predictions column the signal strategy trades (0: the first)
  int threads = 0;           // 0 = every core
  int oracle_rows = 1000;    // test rows the oracle scores (Monte Carlo; horizons <= 1000)
  // The model starts from the GAM on the PLE encoding in this many intervals per feature (the
  // gam baseline, reported beside the others); 0 = from the logistic, without the PLE path.
  int gam_bins = 8;
  TrainConfig train;
  std::string horizons = "30,100,300,1000";
  std::string drop_features = "tod_sin,tod_cos";
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Status run_quickstart(QuickstartArgs a) {
  if (a.events < 10'000) return UsageError("--events must be at least 10000 (got {})", a.events);
  if (a.backtest_events < 10'000) {
    return UsageError("--backtest-events must be at least 10000 (got {})", a.backtest_events);
  }
  const int threads = a.threads > 0 ? a.threads : default_threads();
  const auto t_start = Clock::now();
  RunRecord record("quickstart");  // OUT/run.json, written at the end
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return IoError("{}: cannot create the output folder: {}", a.out, ec.message());
  const std::string dbn = a.out + "/synth.dbn.zst", store = a.out + "/store", run = a.out + "/run",
                    eval_path = a.out + "/eval.json", oos_dbn = a.out + "/session2.dbn.zst",
                    oos_store = a.out + "/session2-store",
                    predictions = a.out + "/session2-predictions.csv",
                    signal_dir = a.out + "/backtest-signal", mm_dir = a.out + "/backtest-mm",
                    report_path = a.out + "/report.html";
  // A rerun starts from scratch: the previous run's stores and run directories are replaced.
  for (const std::string& d : {store, run, oos_store, signal_dir, mm_dir}) fs::remove_all(d, ec);

  // 1. A synthetic market (DESIGN §10).
  auto t0 = Clock::now();
  SynthConfig sc;
  if (a.market == "meta") {  // market C of docs/MODEL.md round 12
    sc.meta_gap_s = 3.0;
    sc.meta_clip_rate = 20.0;
    sc.meta_skew = 1.2;
    sc.drift_market_skew = 0.15;
  }
  sc.events = a.events;
  sc.seed = a.seed;
  {
    Progress progress("synth", sc.events, "ev");
    // With the latent sidecar and the config, so the evaluation can add the oracle.
    FXT_RETURN_IF_ERROR(synthesize_market(sc, dbn, nullptr, &progress, /*latent=*/true));
    progress.finish();
  }
  fmt::print("[1/8] synth   {} events of the {} market -> {} ({:.1f} s)\n", a.events, a.market, dbn,
             seconds_since(t0));

  // 2. The snapshot store.
  t0 = Clock::now();
  IngestOptions io;
  std::vector<std::string> definitions;
  FXT_ASSIGN_OR_RETURN(auto jobs, plan_ingest({dbn}, io, &definitions));
  FXT_ASSIGN_OR_RETURN(nlohmann::json meta, ingest_to_store(jobs.at(0), definitions, io, store));
  fmt::print("[2/8] ingest  {} snapshots, {} trades -> {} ({:.1f} s)\n",
             meta["counts"]["snapshots"].get<uint64_t>(), meta["counts"]["trades"].get<uint64_t>(),
             store, seconds_since(t0));

  // 3. Fit the baselines, then train the perception model.
  t0 = Clock::now();
  TrainConfig tc = a.train;
  FXT_ASSIGN_OR_RETURN(tc.horizons, parse_horizons(a.horizons));
  tc.drop_features.clear();
  if (!a.drop_features.empty()) {
    FXT_ASSIGN_OR_RETURN(tc.drop_features, parse_feature_slots(a.drop_features));
  }
  tc.seed = a.seed;
  tc.threads = threads;
  if (a.gam_bins > 0) {
    tc.perception.ple_bins = a.gam_bins;
    tc.input_skip = InputSkip::kGam;
    tc.baselines.gam = true;
    tc.baselines.gam_bins = a.gam_bins;
  }
  FXT_ASSIGN_OR_RETURN(TrainSummary ts, train(tc, {store}, run));
  fmt::print(
      "[3/8] train   {} epochs, {} steps at B={} K={} on {} thread{}, best epoch {} -> {} "
      "({:.1f} s)\n",
      ts.epochs_run, ts.steps, tc.batch, tc.window, threads, threads == 1 ? "" : "s", ts.best_epoch,
      run, seconds_since(t0));

  // 4. Evaluate the best checkpoint on the held-out test split.
  t0 = Clock::now();
  EvalOptions eo;
  eo.threads = threads;
  eo.device = tc.device;
  eo.precision = tc.precision;
  eo.oracle.config = dbn + ".synth.json";
  eo.oracle.rows = a.oracle_rows;
  FXT_ASSIGN_OR_RETURN(nlohmann::json ev, evaluate(run + "/best.ckpt", {store}, eo));
  FXT_RETURN_IF_ERROR(write_file_atomic(eval_path, ev.dump(2) + "\n"));
  fmt::print("[4/8] eval    {} held-out rows -> {} ({:.1f} s)\n", ev["rows"].get<uint64_t>(),
             eval_path, seconds_since(t0));

  // 5. A second, unseen session of the same market (another seed) for predict and backtest.
  t0 = Clock::now();
  SynthConfig oc = sc;
  oc.events = a.backtest_events;
  oc.seed = a.seed + 1;
  FXT_RETURN_IF_ERROR(synthesize_market(oc, oos_dbn, nullptr, nullptr));
  // The synthetic file carries its own definition record (no separate definition files).
  std::vector<std::string> oos_definitions;
  FXT_ASSIGN_OR_RETURN(auto oos_jobs, plan_ingest({oos_dbn}, io, &oos_definitions));
  FXT_ASSIGN_OR_RETURN(nlohmann::json oos_meta,
                       ingest_to_store(oos_jobs.at(0), oos_definitions, io, oos_store));
  fmt::print("[5/8] session {} snapshots of another seed -> {} ({:.1f} s)\n",
             oos_meta["counts"]["snapshots"].get<uint64_t>(), oos_store, seconds_since(t0));

  // 6. The model's probabilities for every snapshot of that session.
  t0 = Clock::now();
  FXT_RETURN_IF_ERROR(
      predict(run + "/best.ckpt", oos_store, predictions, threads, tc.device, tc.precision));
  fmt::print("[6/8] predict {} ({:.1f} s)\n", predictions, seconds_since(t0));

  // 7. Backtests on it: the signal strategy trading the predictions, and the market maker
  // skewed by them under three queue models (the model-risk band).
  t0 = Clock::now();
  const std::string command_line = "fxt quickstart --out " + a.out;
  int horizon = a.signal_horizon;
  if (std::find(tc.horizons.begin(), tc.horizons.end(), horizon) == tc.horizons.end()) {
    horizon = tc.horizons.front();
  }
  sim::BacktestSpec bs;
  bs.stores = {oos_store};
  bs.predictions = {predictions};
  bs.horizon = horizon;
  bs.threads = threads;
  FXT_ASSIGN_OR_RETURN(bs.sim.latency, sim::parse_latency("feed=1ms,entry=2ms,response=2ms"));
  FXT_ASSIGN_OR_RETURN(bs.sim.fees, sim::parse_fees("maker=-0.2bps,taker=0.5bps"));
  sim::BacktestSpec signal = bs, mm = bs;
  signal.strategy = "signal";
  signal.params = {"entry=passive", "max_hold=30s"};
  signal.out_dir = signal_dir;
  mm.strategy = "mm";
  FXT_ASSIGN_OR_RETURN(mm.queue_models, sim::parse_queue_models("risk-averse,power:2,log"));
  mm.out_dir = mm_dir;
  FXT_ASSIGN_OR_RETURN(sim::BacktestOutcome signal_out,
                       sim::run_backtest_spec(signal, command_line));
  FXT_ASSIGN_OR_RETURN(sim::BacktestOutcome mm_out, sim::run_backtest_spec(mm, command_line));
  fmt::print("[7/8] backtest signal (h{}) -> {}, mm x 3 queue models -> {} ({:.1f} s)\n", horizon,
             signal_dir, mm_dir, seconds_since(t0));

  // 8. Everything in one self-contained HTML report.
  t0 = Clock::now();
  report::ReportOptions ro;
  ro.title = "foxhunt quickstart";
  FXT_RETURN_IF_ERROR(report::write_report({run, eval_path, signal_dir, mm_dir}, ro, report_path));
  fmt::print("[8/8] report  -> {} ({:.1f} s)\n\n", report_path, seconds_since(t0));

  std::fputs(format_eval_table(ev).c_str(), stdout);
  auto pnl_line = [](const std::string& name, const sim::QueueModelRun& r) {
    auto number = [&](const char* key) {
      const auto& v = r.stats.contains(key) ? r.stats[key] : nlohmann::json();
      if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
      return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string("-");
    };
    return fmt::format("{:<22} total PnL {:>10}  max drawdown {:>9}  fills {:>6}\n", name,
                       number("total_pnl"), number("max_drawdown"), number("trades"));
  };
  fmt::print("\nbacktests on the unseen session ({} snapshots):\n",
             oos_meta["counts"]["snapshots"].get<uint64_t>());
  std::fputs(pnl_line("signal " + signal_out.runs[0].name, signal_out.runs[0]).c_str(), stdout);
  for (const sim::QueueModelRun& r : mm_out.runs) {
    std::fputs(pnl_line("mm " + r.name, r).c_str(), stdout);
  }
  fmt::print("\nreport: {}\n", report_path);
  // OUT/run.json: the pipeline's own run record (docs/RUNS.md); the train, eval and backtest
  // directories inside hold theirs.
  record.set_config({{"market", a.market},
                     {"events", a.events},
                     {"seed", a.seed},
                     {"horizons", a.horizons},
                     {"drop_features", a.drop_features},
                     {"train", a.train.to_json()}});
  FXT_RETURN_IF_ERROR(record.add_input_store(store));
  FXT_RETURN_IF_ERROR(record.add_input_store(oos_store));
  record.set_device(backend_name(*resolve_cuda(a.train.device, a.train.model)));
  record.set("report", report_path);
  nlohmann::json qm = {{"model_mean_auc", ev["model"]["mean_auc"]}};
  for (const auto& [name, m] : ev["baselines"].items()) qm[name + "_mean_auc"] = m["mean_auc"];
  record.set_metrics(qm);
  FXT_RETURN_IF_ERROR(record.write(a.out));
  fmt::print("quickstart finished in {:.1f} s; outputs in {}/\n", seconds_since(t_start), a.out);
  return Status::Ok();
}

}  // namespace

void register_quickstart(CLI::App& app) {
  auto a = std::make_shared<QuickstartArgs>();
  // The narrow causal model of docs/MODEL.md round 12 (D = 32, N = 8, decisions every 4
  // snapshots, 10 x 200 steps, early stopping on the mean validation AUC), so the whole pipeline
  // takes about 3 minutes on two cores; 80 / 10 / 10 splits; time of day is left out because the
  // synthetic session is one afternoon, where it only names the stretch of the session
  // (docs/QUICKSTART.md).
  a->train.steps_per_epoch = 200;
  a->train.epochs = 10;
  a->train.stride = 4;
  a->train.perception.d_model = 32;
  a->train.perception.d_state = 8;
  a->train.early_stop = "mean_auc";
  a->train.split.train = 0.8;
  a->train.split.validation = 0.1;
  CLI::App* cmd = add_command(
      app, "quickstart",
      "the whole pipeline on generated data: synth -> ingest -> train -> eval -> predict -> "
      "backtest (signal, mm) -> HTML report",
      [a] { return run_quickstart(*a); });
  cmd->add_option("--out", a->out,
                  "output folder (synth files, stores, run directory, eval.json, predictions, "
                  "backtests, report.html)")
      ->capture_default_str();
  cmd->add_option("--market", a->market,
                  "synthetic market: meta (with the informed meta-order, docs/SYNTH.md) or plain "
                  "(fxt synth's defaults)")
      ->check(CLI::IsMember({"meta", "plain"}))
      ->capture_default_str();
  cmd->add_option("--events", a->events, "synthetic market events (one snapshot each)")
      ->capture_default_str()
      ->check(int_range(1, 10000000000));
  cmd->add_option("--backtest-events", a->backtest_events,
                  "events of the unseen session (seed + 1) that predict and the backtests use")
      ->capture_default_str()
      ->check(int_range(1, 10000000000));
  cmd->add_option("--signal-horizon", a->signal_horizon,
                  "horizon whose probabilities the signal strategy trades")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--seed", a->seed, "seed of the market and of training")->capture_default_str();
  cmd->add_option("--oracle-rows", a->oracle_rows,
                  "held-out rows the synthetic market's oracle scores (its AUC is the ceiling)")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  cmd->add_option("--gam-bins", a->gam_bins,
                  "start the model from the GAM on K quantile intervals per feature (the gam "
                  "baseline; docs/MODEL.md round 8); 0 = from the logistic, without the PLE path")
      ->capture_default_str()
      ->check(int_range(0, 64));
  cmd->add_option("--threads", a->threads, "CPU threads (0 = every core)")
      ->capture_default_str()
      ->check(int_range(0, 4096));
  cmd->add_option("--device", a->train.device,
                  "backend of training, eval and predict: auto (the GPU when built with CUDA and "
                  "one is present), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_precision_flag(cmd, &a->train.precision);
  cmd->add_option("--epochs", a->train.epochs, "training epochs")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  cmd->add_option("--steps-per-epoch", a->train.steps_per_epoch, "optimizer steps per epoch")
      ->capture_default_str()
      ->check(int_range(1, 1000000000));
  cmd->add_option("--batch", a->train.batch, "sequences per step (B)")
      ->capture_default_str()
      ->check(int_range(1, 1 << 20));
  cmd->add_option("--seq", a->train.window, "positions per sequence (K)")
      ->capture_default_str()
      ->check(int_range(1, 1 << 20));
  cmd->add_option("--horizons", a->horizons, "label horizons in snapshots")->capture_default_str();
  cmd->add_option("--drop-features", a->drop_features,
                  "features held at their training mean (empty: none)")
      ->capture_default_str();
}

}  // namespace fxt::cli
