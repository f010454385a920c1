// fxt cv: purged walk-forward cross-validation over stores or time blocks (src/train/cv.h,
// docs/CV.md). The training flags are fxt train's (cli/train_flags.h, docs/TRAINING.md).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cmd_cv_emit.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/train_flags.h"
#include "train/cv.h"

namespace fxt::cli {

namespace {

struct CvArgs {
  CvConfig config;   // the fold plan and bootstrap; config.train comes from `flags`
  TrainFlags flags;  // the training flags shared with fxt train (cli/train_flags.h)
  std::vector<std::string> stores;
  std::string out, scheme = "walk-forward", by = "auto";
  CvOptions options;
  CvEmitFlags emit;               // --emit: write cluster specs instead (cli/cmd_cv_emit.h)
  const CLI::App* cmd = nullptr;  // the parsed command (its options become the jobs' flags)
};

Status run_cv_command(CvArgs& a) {
  CvConfig cfg = a.config;
  FXT_ASSIGN_OR_RETURN(cfg.train, resolve_train_flags(a.flags));
  FXT_ASSIGN_OR_RETURN(cfg.plan.scheme, parse_cv_scheme(a.scheme));
  FXT_ASSIGN_OR_RETURN(cfg.plan.unit, parse_fold_unit(a.by));
  if (a.options.stop_after_folds < 0 || a.options.stop_after_epochs < 0) {
    return UsageError("--stop-after-folds and --stop-after must be >= 0");
  }
  if (!a.emit.engine.empty()) return emit_cv_specs(*a.cmd, cfg, a.stores, a.out, a.emit);
  FXT_ASSIGN_OR_RETURN(CvResult r, run_cv(cfg, a.stores, a.out, a.options));
  if (a.options.only_fold >= 0) {
    const bool done =
        std::filesystem::exists(fmt::format("{}/fold_{}/eval.json", a.out, a.options.only_fold));
    std::printf("cv: fold %d %s; %d of %d folds finished (%s)\n", a.options.only_fold,
                done ? "finished" : "paused: rerun the same command to continue", r.folds_finished,
                cfg.plan.folds, a.out.c_str());
    return Status::Ok();
  }
  if (!r.complete) {
    std::printf("cv: %d of %d folds finished; rerun the same command to continue (%s)\n",
                r.folds_finished, cfg.plan.folds, a.out.c_str());
    return Status::Ok();
  }
  std::fputs(format_cv_table(r.cv).c_str(), stdout);
  std::printf("results: %s/cv.json\n", a.out.c_str());
  return Status::Ok();
}

}  // namespace

void register_cv(CLI::App& app) {
  auto a = std::make_shared<CvArgs>();
  CLI::App* cmd = add_command(app, "cv",
                              "purged walk-forward cross-validation over stores (days) or time "
                              "blocks: per-fold and pooled AUC of model, logistic baseline and "
                              "base rate (docs/CV.md)",
                              [a] { return run_cv_command(*a); });
  cmd->add_option("--store", a->stores, "snapshot store directories, in time order")->required();
  cmd->add_option("--out", a->out,
                  "CV directory (plan.json, fold_<i>/, cv.json, run.json); rerun to resume")
      ->required();
  cmd->add_option("--folds", a->config.plan.folds, "number of folds (test blocks)")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  cmd->add_option("--scheme", a->scheme,
                  "walk-forward (fixed training window) or expanding (training from the start)")
      ->check(CLI::IsMember({"walk-forward", "expanding"}))
      ->capture_default_str();
  cmd->add_option("--by", a->by,
                  "fold unit: store (one block per store), block (equal time blocks) or auto "
                  "(store when there are at least folds + 2 stores)")
      ->check(CLI::IsMember({"auto", "store", "block"}))
      ->capture_default_str();
  cmd->add_option("--train-blocks", a->config.plan.train_blocks,
                  "training blocks per walk-forward fold (0: all stores before the first "
                  "validation store by store, 3 by block)")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--embargo", a->config.plan.embargo,
                  "extra snapshots added to each purge gap (purge = max horizon x stride)")
      ->capture_default_str()
      ->check(int_range(0));
  cmd->add_option("--bootstrap", a->config.bootstrap,
                  "block-bootstrap replicates per fold and pooled (0: no intervals)")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--bootstrap-seed", a->config.bootstrap_seed, "bootstrap seed")
      ->capture_default_str();
  cmd->add_option("--stack-rows", a->config.stack_rows,
                  "validation rows each fold's stacks are fit on (docs/BASELINES.md \"Stacks\"; "
                  "0: no stacks)")
      ->capture_default_str()
      ->check(int_range(0, 100000000));
  cmd->add_option("--stop-after-folds", a->options.stop_after_folds,
                  "return after finishing this many folds in this invocation (rerun to continue)")
      ->check(int_range(1, 1000));
  cmd->add_option("--stop-after", a->options.stop_after_epochs,
                  "train the next unfinished fold this many epochs, then return (rerun to "
                  "continue)")
      ->check(int_range(1, 1000000));
  cmd->add_option("--fold", a->options.only_fold,
                  "run (or resume) only this fold, writing only inside OUT/fold_<i>/ (a cluster "
                  "job; docs/CLUSTER.md)")
      ->check(int_range(0, 999));
  cmd->add_flag("--pool-only", a->options.pool_only,
                "no training: pool the finished folds into cv.json (a cluster's gather step)");
  add_oracle_flags(cmd, &a->options.oracle);
  // Training flags, as fxt train.
  add_train_flags(cmd, &a->flags, TrainFlagsFor::kCv);
  add_cv_emit_flags(cmd, &a->emit);
  a->cmd = cmd;
}

}  // namespace fxt::cli
