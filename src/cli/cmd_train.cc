// fxt train / fxt eval / fxt predict: the CPU training loop and the evaluation protocol of
// DESIGN §5-§6 (src/train/trainer.h, docs/TRAINING.md).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/eval_table.h"
#include "cli/train_flags.h"
#include "core/file_util.h"
#include "features/labels.h"
#include "train/run_record.h"
#include "train/trainer.h"

namespace fxt::cli {

namespace {

struct TrainArgs {
  TrainFlags flags;  // the training flags shared with fxt cv (cli/train_flags.h)
  std::vector<std::string> stores;
  std::string run_dir;
  bool resume = false;
  int stop_after = 0;
};

Status run_train(TrainArgs& a) {
  FXT_ASSIGN_OR_RETURN(TrainConfig c, resolve_train_flags(a.flags));
  // A resumed run takes its horizons from the checkpoint unless --horizons is given.
  if (a.resume && a.flags.horizons_opt->count() == 0) c.horizons.clear();
  TrainOptions o;
  o.resume = a.resume;
  o.stop_after_epochs = a.stop_after;
  FXT_ASSIGN_OR_RETURN(TrainSummary s, train(c, a.stores, a.run_dir, o));
  std::printf("trained %d epochs (%lld steps); best epoch %d%s; run directory %s\n", s.epochs_run,
              static_cast<long long>(s.steps), s.best_epoch,
              s.stopped_early ? ", stopped early" : "", a.run_dir.c_str());
  return Status::Ok();
}

struct EvalArgs {
  std::string checkpoint, out, run_dir, split = "test", horizons;
  std::vector<std::string> stores;
  int threads = default_threads(), bootstrap = 200, stack_rows = EvalOptions{}.stack_rows;
  uint64_t bootstrap_seed = 1;
  std::string device = "auto";
  Precision precision = Precision::kFp32;
  OracleSpec oracle;
};

Status run_eval(const EvalArgs& a) {
  EvalOptions o;
  FXT_ASSIGN_OR_RETURN(o.split, parse_eval_split(a.split));
  if (!a.horizons.empty()) {
    FXT_ASSIGN_OR_RETURN(o.expect_horizons, parse_horizons(a.horizons));
  }
  if (a.threads < 1) return UsageError("--threads must be >= 1");
  o.threads = a.threads;
  o.device = a.device;
  o.precision = a.precision;
  if (a.bootstrap < 0) return UsageError("--bootstrap must be >= 0");
  o.bootstrap = a.bootstrap;
  o.bootstrap_seed = a.bootstrap_seed;
  o.stack_rows = a.stack_rows;
  o.oracle = a.oracle;
  RunRecord record("eval");
  if (!a.run_dir.empty()) FXT_RETURN_IF_ERROR(record.claim(a.run_dir));
  FXT_ASSIGN_OR_RETURN(nlohmann::json j, evaluate(a.checkpoint, a.stores, o));
  const std::string text = j.dump(2) + "\n";
  if (a.out.empty() && a.run_dir.empty()) {
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  if (!a.out.empty()) FXT_RETURN_IF_ERROR(write_file_atomic(a.out, text));
  if (!a.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.run_dir, ec);
    if (ec) return IoError("cannot create run directory {}: {}", a.run_dir, ec.message());
    FXT_RETURN_IF_ERROR(write_file_atomic(a.run_dir + "/eval.json", text));
    FXT_ASSIGN_OR_RETURN(const std::string checkpoint_crc, file_checksum(a.checkpoint));
    record.set_config(
        {{"checkpoint", std::filesystem::absolute(a.checkpoint).lexically_normal().string()},
         {"checkpoint_checksum", checkpoint_crc},
         {"store_dirs", j["store_dirs"]},
         {"split", j["split"]},
         {"horizons", j["horizons"]},
         {"bootstrap", a.bootstrap},
         {"bootstrap_seed", a.bootstrap_seed}});
    for (const auto& d : j["store_dirs"]) {
      FXT_RETURN_IF_ERROR(record.add_input_store(d.get<std::string>()));
    }
    if (j.contains("device")) record.set_device(j["device"].get<std::string>());
    record.set("rows", j["rows"]);
    record.set("model_kind", j["model_kind"]);
    // Headline metrics: mean and per-horizon AUC of the model and of each baseline, and
    // model - best baseline per horizon.
    nlohmann::json metrics;
    auto add = [&](const std::string& who, const nlohmann::json& m) {
      metrics[who]["mean_auc"] = m["mean_auc"];
      for (const auto& h : m["horizons"]) {
        metrics[who][fmt::format("auc_h{}", h["horizon"].get<int>())] = h["auc"];
      }
    };
    add("model", j["model"]);
    for (const auto& [name, m] : j["baselines"].items()) add(name, m);
    if (j["vs_best_baseline"].is_object()) {
      for (const auto& h : j["vs_best_baseline"]["horizons"]) {
        metrics["vs_best_baseline"][fmt::format("diff_h{}", h["horizon"].get<int>())] = h["diff"];
      }
    }
    record.set_metrics(std::move(metrics));
    FXT_RETURN_IF_ERROR(record.write(a.run_dir));
  }
  std::fputs(format_eval_table(j).c_str(), stdout);  // the JSON went to the file(s)
  return Status::Ok();
}

struct PredictArgs {
  std::string checkpoint, store, out, device = "auto";
  Precision precision = Precision::kFp32;
  int threads = default_threads();
};

}  // namespace

void register_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = add_command(app, "train",
                              "train the perception model (or a baseline alone) on the GPU "
                              "or the CPU (DESIGN §5, docs/TRAINING.md, docs/GPU.md)",
                              [a] { return run_train(*a); });
  cmd->add_option("--store", a->stores, "snapshot store directories, in time order");
  cmd->add_option("--out,--run-dir", a->run_dir,
                  "run directory (checkpoints, metrics.jsonl, run.json)")
      ->required();
  cmd->add_flag("--resume", a->resume,
                "continue RUN_DIR/last.ckpt bit for bit (configuration and stores from it)");
  cmd->add_option("--stop-after", a->stop_after,
                  "return after this many epochs of this invocation (resume later)")
      ->check(int_range(1, 1000000));
  add_train_flags(cmd, &a->flags, TrainFlagsFor::kTrain);
  TrainConfig& c = a->flags.config;
  cmd->add_option("--split-train", c.split.train, "training fraction")->capture_default_str()
      ->check(finite_number(0, 1));
  cmd->add_option("--split-val", c.split.validation, "validation fraction")->capture_default_str()
      ->check(finite_number(0, 1));
}

void register_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = add_command(app, "eval",
                              "score every snapshot of a split with the window ending at it: "
                              "model, baselines, base rate (DESIGN §6)",
                              [a] { return run_eval(*a); });
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint file (best.ckpt)")->required();
  cmd->add_option("--store", a->stores, "stores (default: the training stores)");
  cmd->add_option("--split", a->split, "test, validation or all")->capture_default_str();
  cmd->add_option("--horizons", a->horizons, "fail unless the checkpoint has these horizons");
  cmd->add_option("--out", a->out, "JSON output file (default: stdout)");
  cmd->add_option("--run-dir", a->run_dir,
                  "run directory: writes RUN_DIR/eval.json and RUN_DIR/run.json (docs/RUNS.md)");
  cmd->add_option("--bootstrap", a->bootstrap,
                  "block-bootstrap replicates for confidence intervals (0: none)")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--bootstrap-seed", a->bootstrap_seed, "bootstrap seed")->capture_default_str();
  cmd->add_option("--stack-rows", a->stack_rows,
                  "validation rows the stacks are fit on when the test split is scored "
                  "(docs/BASELINES.md \"Stacks\"; 0: no stacks)")
      ->capture_default_str()
      ->check(int_range(0, 100000000));
  add_oracle_flags(cmd, &a->oracle);
  cmd->add_option("--threads", a->threads, "CPU threads (default: every core)")->capture_default_str()
      ->check(int_range(1, 4096));
  cmd->add_option("--device", a->device, "auto, cpu or cuda (as fxt train)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_precision_flag(cmd, &a->precision);
}

void register_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = add_command(
      app, "predict", "write ts_ns and one probability per horizon for every snapshot (CSV)", [a] {
        return predict(a->checkpoint, a->store, a->out, a->threads, a->device, a->precision);
      });
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint file")->required();
  cmd->add_option("--store", a->store, "snapshot store directory")->required();
  cmd->add_option("--out", a->out, "output CSV file (written atomically)")->required();
  cmd->add_option("--threads", a->threads, "CPU threads (default: every core)")
      ->check(int_range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--device", a->device, "auto, cpu or cuda (as fxt train)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_precision_flag(cmd, &a->precision);
}

}  // namespace fxt::cli
