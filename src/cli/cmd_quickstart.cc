// fxt quickstart: the whole pipeline on generated data, for a new user with nothing but the
// repository — synth -> ingest -> train -> eval -> the per-horizon comparison table.
// Defaults train in about two minutes on 2 cores (docs/QUICKSTART.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/eval_table.h"
#include "core/file_util.h"
#include "core/progress.h"
#include "data/ingest.h"
#include "data/synth.h"
#include "features/features.h"
#include "features/labels.h"
#include "train/trainer.h"

namespace fxt::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct QuickstartArgs {
  std::string out = "out/quickstart";
  uint64_t events = 1'000'000;  // about 36 minutes of the synthetic market
  uint64_t seed = 1;
  int threads = 0;  // 0 = every core
  TrainConfig train;
  std::string horizons = "30,100,300,1000,6000";
  std::string drop_features = "tod_sin,tod_cos";
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Status run_quickstart(QuickstartArgs a) {
  if (a.events < 10'000) return UsageError("--events must be at least 10000 (got {})", a.events);
  const int threads = a.threads > 0
                          ? a.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const auto t_start = Clock::now();
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return IoError("{}: cannot create the output folder: {}", a.out, ec.message());
  const std::string dbn = a.out + "/synth.dbn.zst", store = a.out + "/store", run = a.out + "/run",
                    eval_path = a.out + "/eval.json";
  // A rerun starts from scratch: the previous run's store and run directory are replaced.
  fs::remove_all(store, ec);
  fs::remove_all(run, ec);

  // 1. A synthetic market (DESIGN §10).
  auto t0 = Clock::now();
  SynthConfig sc;
  sc.events = a.events;
  sc.seed = a.seed;
  {
    Progress progress("synth", sc.events, "ev");
    FXT_RETURN_IF_ERROR(synthesize_market(sc, dbn, nullptr, &progress));
    progress.finish();
  }
  fmt::print("[1/4] synth   {} events -> {} ({:.1f} s)\n", a.events, dbn, seconds_since(t0));

  // 2. The snapshot store.
  t0 = Clock::now();
  IngestOptions io;
  std::vector<std::string> definitions;
  FXT_ASSIGN_OR_RETURN(auto jobs, plan_ingest({dbn}, io, &definitions));
  FXT_ASSIGN_OR_RETURN(nlohmann::json meta, ingest_to_store(jobs.at(0), definitions, io, store));
  fmt::print("[2/4] ingest  {} snapshots, {} trades -> {} ({:.1f} s)\n",
             meta["counts"]["snapshots"].get<uint64_t>(), meta["counts"]["trades"].get<uint64_t>(),
             store, seconds_since(t0));

  // 3. Train the perception model (and, beside it, the logistic baseline).
  t0 = Clock::now();
  TrainConfig tc = a.train;
  FXT_ASSIGN_OR_RETURN(tc.horizons, parse_horizons(a.horizons));
  tc.drop_features.clear();
  if (!a.drop_features.empty()) {
    FXT_ASSIGN_OR_RETURN(tc.drop_features, parse_feature_slots(a.drop_features));
  }
  tc.seed = a.seed;
  tc.threads = threads;
  FXT_ASSIGN_OR_RETURN(TrainSummary ts, train(tc, {store}, run));
  fmt::print(
      "[3/4] train   {} epochs, {} steps at B={} K={} on {} thread{}, best epoch {} -> {} "
      "({:.1f} s)\n",
      ts.epochs_run, ts.steps, tc.batch, tc.window, threads, threads == 1 ? "" : "s", ts.best_epoch,
      run, seconds_since(t0));

  // 4. Evaluate the best checkpoint on the held-out test split.
  t0 = Clock::now();
  EvalOptions eo;
  eo.threads = threads;
  FXT_ASSIGN_OR_RETURN(nlohmann::json ev, evaluate(run + "/best.ckpt", {store}, eo));
  FXT_RETURN_IF_ERROR(write_file_atomic(eval_path, ev.dump(2) + "\n"));
  fmt::print("[4/4] eval    {} held-out rows -> {} ({:.1f} s)\n\n", ev["rows"].get<uint64_t>(),
             eval_path, seconds_since(t0));

  std::fputs(format_eval_table(ev).c_str(), stdout);
  fmt::print("\nquickstart finished in {:.1f} s; outputs in {}/\n", seconds_since(t_start), a.out);
  return Status::Ok();
}

}  // namespace

void register_quickstart(CLI::App& app) {
  auto a = std::make_shared<QuickstartArgs>();
  // Smaller epochs than `fxt train`'s defaults, so the whole pipeline takes about two minutes;
  // 80 / 10 / 10 splits; time of day is left out because the synthetic session is one
  // afternoon, where it only names the stretch of the session (docs/QUICKSTART.md).
  a->train.steps_per_epoch = 100;
  a->train.epochs = 4;
  a->train.split.train = 0.8;
  a->train.split.validation = 0.1;
  CLI::App* cmd = add_command(
      app, "quickstart",
      "the whole pipeline on generated data: synth -> ingest -> train -> eval -> comparison table",
      [a] { return run_quickstart(*a); });
  cmd->add_option("--out", a->out, "output folder (synth file, store, run directory, eval.json)")
      ->capture_default_str();
  cmd->add_option("--events", a->events, "synthetic market events (one snapshot each)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "seed of the market and of training")->capture_default_str();
  cmd->add_option("--threads", a->threads, "CPU threads (0 = every core)")->capture_default_str();
  cmd->add_option("--epochs", a->train.epochs, "training epochs")->capture_default_str();
  cmd->add_option("--steps-per-epoch", a->train.steps_per_epoch, "optimizer steps per epoch")
      ->capture_default_str();
  cmd->add_option("--batch", a->train.batch, "sequences per step (B)")->capture_default_str();
  cmd->add_option("--seq", a->train.window, "positions per sequence (K)")->capture_default_str();
  cmd->add_option("--horizons", a->horizons, "label horizons in snapshots")->capture_default_str();
  cmd->add_option("--drop-features", a->drop_features,
                  "features held at their training mean (empty: none)")
      ->capture_default_str();
}

}  // namespace fxt::cli
