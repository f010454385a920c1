// fxt train / fxt eval / fxt predict: the CPU training loop and the evaluation protocol of
// DESIGN §5-§6 (src/train/trainer.h, docs/TRAINING.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/eval_table.h"
#include "core/file_util.h"
#include "features/features.h"
#include "features/labels.h"
#include "train/trainer.h"

namespace fxt::cli {

namespace {

struct TrainArgs {
  TrainConfig config;
  std::vector<std::string> stores;
  std::string run_dir, horizons = "30,100,300,1000,6000", weighting = "kendall-closed",
                       model = "perception", device = "cpu";
  bool no_lambda = false, resume = false;
  int stop_after = 0;
  std::string drop_features, cfc_time = "stride";
  CLI::Option* horizons_opt = nullptr;
};

Status run_train(TrainArgs& a) {
  TrainConfig c = a.config;
  c.horizons.clear();
  if (!a.resume || a.horizons_opt->count() > 0) {
    FXT_ASSIGN_OR_RETURN(c.horizons, parse_horizons(a.horizons));
  }
  FXT_ASSIGN_OR_RETURN(c.weighting, model::parse_horizon_weighting(a.weighting));
  c.cfc_time_real = a.cfc_time == "real";
  if (!a.drop_features.empty()) {
    FXT_ASSIGN_OR_RETURN(c.drop_features, parse_feature_slots(a.drop_features));
  }
  if (a.model == "perception") {
    c.model = ModelKind::kPerception;
  } else if (a.model == "logreg") {
    c.model = ModelKind::kLogReg;
  } else {
    return UsageError("--model must be perception or logreg (got '{}')", a.model);
  }
  c.lambda = !a.no_lambda;
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
  std::string checkpoint, out, split = "test", horizons;
  std::vector<std::string> stores;
  int threads = 1, bootstrap = 200;
  uint64_t bootstrap_seed = 1;
};

Status run_eval(const EvalArgs& a) {
  EvalOptions o;
  FXT_ASSIGN_OR_RETURN(o.split, parse_eval_split(a.split));
  if (!a.horizons.empty()) {
    FXT_ASSIGN_OR_RETURN(o.expect_horizons, parse_horizons(a.horizons));
  }
  if (a.threads < 1) return UsageError("--threads must be >= 1");
  o.threads = a.threads;
  if (a.bootstrap < 0) return UsageError("--bootstrap must be >= 0");
  o.bootstrap = a.bootstrap;
  o.bootstrap_seed = a.bootstrap_seed;
  FXT_ASSIGN_OR_RETURN(nlohmann::json j, evaluate(a.checkpoint, a.stores, o));
  const std::string text = j.dump(2) + "\n";
  if (a.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  FXT_RETURN_IF_ERROR(write_file_atomic(a.out, text));
  std::fputs(format_eval_table(j).c_str(), stdout);  // the JSON went to the file
  return Status::Ok();
}

struct PredictArgs {
  std::string checkpoint, store, out;
  int threads = 1;
};

}  // namespace

void register_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  TrainConfig& c = a->config;
  CLI::App* cmd = add_command(app, "train",
                              "train the perception model (or the logistic baseline) on the CPU "
                              "backend (DESIGN §5, docs/TRAINING.md)",
                              [a] { return run_train(*a); });
  cmd->add_option("--store", a->stores, "snapshot store directories, in time order");
  cmd->add_option("--out,--run-dir", a->run_dir,
                  "run directory (checkpoints, metrics.jsonl, run.json)")
      ->required();
  cmd->add_option("--device", a->device, "training backend: cpu (the only one built so far)")
      ->check(CLI::IsMember({"cpu"}))
      ->capture_default_str();
  cmd->add_flag("--resume", a->resume,
                "continue RUN_DIR/last.ckpt bit for bit (configuration and stores from it)");
  cmd->add_option("--stop-after", a->stop_after,
                  "return after this many epochs of this invocation (resume later)");
  cmd->add_option("--seed", c.seed, "random seed")->capture_default_str();
  cmd->add_option("--epochs", c.epochs, "epochs")->capture_default_str();
  cmd->add_option("--steps-per-epoch", c.steps_per_epoch, "optimizer steps per epoch")
      ->capture_default_str();
  cmd->add_option("--batch", c.batch, "sequences per step (B)")->capture_default_str();
  cmd->add_option("--seq", c.window, "positions per sequence (K)")->capture_default_str();
  cmd->add_option("--stride", c.stride, "decision stride S in snapshots")->capture_default_str();
  cmd->add_option("--cfc-time", a->cfc_time,
                  "CfC time step: stride (S per position) or real (elapsed time / median gap)")
      ->check(CLI::IsMember({"stride", "real"}))
      ->capture_default_str();
  a->horizons_opt = cmd->add_option("--horizons", a->horizons, "label horizons in snapshots, 1-8")
                        ->capture_default_str();
  cmd->add_option("--min-move-ticks", c.min_move_ticks, "mask smaller mid moves")
      ->capture_default_str();
  cmd->add_option("--drop-features", a->drop_features,
                  "feature slots or names to hold at their training mean (e.g. tod_sin,tod_cos)");
  cmd->add_option("--split-train", c.split.train, "training fraction")->capture_default_str();
  cmd->add_option("--split-val", c.split.validation, "validation fraction")->capture_default_str();
  cmd->add_option("--lr", c.lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", c.warmup_steps, "linear warm-up steps")->capture_default_str();
  cmd->add_option("--min-lr-ratio", c.min_lr_ratio, "final lr / peak lr of the cosine decay")
      ->capture_default_str();
  cmd->add_option("--weight-decay", c.weight_decay, "AdamW decoupled weight decay (matrices)")
      ->capture_default_str();
  cmd->add_option("--clip", c.clip, "global gradient-norm clip (<= 0 off)")->capture_default_str();
  cmd->add_option("--lr-mult-mamba", c.lr_mult_mamba, "lr multiplier of the mamba group")
      ->capture_default_str();
  cmd->add_option("--lr-mult-cfc", c.lr_mult_cfc, "lr multiplier of the cfc group")
      ->capture_default_str();
  cmd->add_option("--lr-mult-heads", c.lr_mult_heads, "lr multiplier of the heads group")
      ->capture_default_str();
  cmd->add_option("--weighting", a->weighting,
                  "horizon weighting: kendall-closed, kendall, uniform")
      ->capture_default_str();
  cmd->add_flag("--no-lambda", a->no_lambda, "turn the trunk-gradient scaling off");
  cmd->add_option("--early-stop", c.early_stop, "val_loss, mean_auc or auc_h<h>")
      ->capture_default_str();
  cmd->add_option("--patience", c.patience, "epochs without improvement before stopping (0 off)")
      ->capture_default_str();
  cmd->add_option("--model", a->model, "perception or logreg")->capture_default_str();
  cmd->add_option("--d-model", c.perception.d_model, "width D")->capture_default_str();
  cmd->add_option("--d-state", c.perception.d_state, "Mamba2 state size N")->capture_default_str();
  cmd->add_option("--head-dim", c.perception.head_dim, "Mamba2 head size")->capture_default_str();
  cmd->add_option("--head-mid", c.perception.head_mid, "hidden width of the heads")
      ->capture_default_str();
  cmd->add_option("--eval-batch", c.eval_batch, "windows per forward pass when scoring")
      ->capture_default_str();
  cmd->add_option("--threads", c.threads, "CPU threads (results do not depend on it)")
      ->capture_default_str();
}

void register_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = add_command(app, "eval",
                              "score every snapshot of a split with the window ending at it: "
                              "model, logistic baseline, base rate (DESIGN §6)",
                              [a] { return run_eval(*a); });
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint file (best.ckpt)")->required();
  cmd->add_option("--store", a->stores, "stores (default: the training stores)");
  cmd->add_option("--split", a->split, "test, validation or all")->capture_default_str();
  cmd->add_option("--horizons", a->horizons, "fail unless the checkpoint has these horizons");
  cmd->add_option("--out", a->out, "JSON output file (default: stdout)");
  cmd->add_option("--bootstrap", a->bootstrap,
                  "block-bootstrap replicates for confidence intervals (0: none)")
      ->capture_default_str();
  cmd->add_option("--bootstrap-seed", a->bootstrap_seed, "bootstrap seed")->capture_default_str();
  cmd->add_option("--threads", a->threads, "CPU threads")->capture_default_str();
}

void register_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = add_command(
      app, "predict", "write ts_ns and one probability per horizon for every snapshot (CSV)",
      [a] { return predict(a->checkpoint, a->store, a->out, a->threads); });
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint file")->required();
  cmd->add_option("--store", a->store, "snapshot store directory")->required();
  cmd->add_option("--out", a->out, "output CSV file (written atomically)")->required();
  cmd->add_option("--threads", a->threads, "CPU threads")->capture_default_str();
}

}  // namespace fxt::cli
