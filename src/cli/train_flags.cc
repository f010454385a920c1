#include "cli/train_flags.h"

#include <algorithm>
#include <thread>

#include "cli/flag_checks.h"

#include "features/features.h"
#include "features/labels.h"
#include "model/loss.h"

namespace fxt::cli {

int default_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void add_train_flags(CLI::App* cmd, TrainFlags* f, TrainFlagsFor who) {
  TrainConfig& c = f->config;
  c.threads = default_threads();
  const bool cv = who == TrainFlagsFor::kCv;
  cmd->add_option("--device", c.device,
                  "backend: auto (the GPU when built with CUDA and one is present), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_precision_flag(cmd, &c.precision);
  cmd->add_option("--seed", c.seed, "random seed")->capture_default_str();
  cmd->add_option("--epochs", c.epochs, cv ? "epochs per fold" : "epochs")->check(int_range(1, 1000000))->capture_default_str();
  cmd->add_option("--steps-per-epoch", c.steps_per_epoch, "optimizer steps per epoch")
      ->check(int_range(1, 1000000000))->capture_default_str();
  cmd->add_option("--batch", c.batch, "sequences per step (B)")->check(int_range(1, 1 << 20))->capture_default_str();
  cmd->add_option(cv ? "--seq,--window" : "--seq", c.window, "positions per sequence (K)")
      ->check(int_range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--stride", c.stride, "decision stride S in snapshots")->check(int_range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--cfc-time", f->cfc_time,
                  "CfC time step: stride (S per position) or real (elapsed time / median gap)")
      ->check(CLI::IsMember({"stride", "real"}))
      ->capture_default_str();
  f->horizons_opt = cmd->add_option("--horizons", f->horizons, "label horizons in snapshots, 1-8")
                        ->capture_default_str();
  cmd->add_option("--min-move-ticks", c.min_move_ticks, "mask smaller mid moves")
      ->check(int_range(0, 1000000000))->capture_default_str();
  cmd->add_option("--drop-features", f->drop_features,
                  "feature slots or names to hold at their training mean (e.g. tod_sin,tod_cos)");
  cmd->add_option("--lr", c.lr, "peak learning rate")->check(finite_number(1e-12, 1e6))->capture_default_str();
  cmd->add_option("--warmup", c.warmup_steps, "linear warm-up steps")->check(int_range(0))->capture_default_str();
  cmd->add_option("--min-lr-ratio", c.min_lr_ratio, "final lr / peak lr of the cosine decay")
      ->check(finite_number(0, 1))->capture_default_str();
  cmd->add_option("--weight-decay", c.weight_decay, "AdamW decoupled weight decay (matrices)")
      ->check(finite_number(0, 1e6))->capture_default_str();
  cmd->add_option("--clip", c.clip, "global gradient-norm clip (<= 0 off)")->check(finite_number())->capture_default_str();
  cmd->add_option("--lr-mult-mamba", c.lr_mult_mamba, "lr multiplier of the mamba group")
      ->check(finite_number(0, 1e6))->capture_default_str();
  cmd->add_option("--lr-mult-cfc", c.lr_mult_cfc, "lr multiplier of the cfc group")
      ->check(finite_number(0, 1e6))->capture_default_str();
  cmd->add_option("--lr-mult-heads", c.lr_mult_heads, "lr multiplier of the heads group")
      ->check(finite_number(0, 1e6))->capture_default_str();
  cmd->add_option("--weighting", f->weighting,
                  "horizon weighting: kendall-closed, kendall, uniform")
      ->capture_default_str();
  cmd->add_flag("--no-lambda", f->no_lambda, "turn the trunk-gradient scaling off");
  cmd->add_flag("--no-logistic-fallback", f->no_logistic_fallback,
                "keep every trained head in best.ckpt, even where the logistic the model "
                "started from validates better (--input-skip logreg)");
  cmd->add_option("--early-stop", c.early_stop, "val_loss, mean_auc or auc_h<h>")
      ->capture_default_str();
  cmd->add_option("--patience", c.patience, "epochs without improvement before stopping (0 off)")
      ->check(int_range(0, 1000000))->capture_default_str();
  cmd->add_option("--model", f->model,
                  "perception, or a baseline alone: logreg (exact L2 logistic) or gbdt (XGBoost)")
      ->capture_default_str();
  cmd->add_option("--baselines", f->baselines,
                  "baseline families fit beside the model: a list of logreg, gbdt and gam (the GAM "
                  "on the PLE encoding, opt-in), or none")
      ->capture_default_str();
  cmd->add_option("--baseline-lags", c.baselines.lags,
                  "positions of the lagged baseline variants (1 = none)")
      ->check(int_range(1, 64))
      ->capture_default_str();
  cmd->add_option("--gam-bins", c.baselines.gam_bins,
                  "quantile intervals per feature of the gam baseline's encoding")
      ->check(int_range(2, 64))
      ->capture_default_str();
  cmd->add_option("--baseline-max-rows", c.baselines.max_fit_rows,
                  "training rows a logistic baseline (logreg, logreg_lags, gam) is fit on at most "
                  "(thinned by a fixed stride above; 0 = every row)")
      ->check(int_range(0, 1000000000))
      ->capture_default_str();
  cmd->add_option("--gbdt-max-rows", c.baselines.gbdt_max_fit_rows,
                  "training rows a GBDT baseline is fit on at most (thinned by a fixed stride "
                  "above; 0 = every row)")
      ->check(int_range(0, 1000000000))
      ->capture_default_str();
  cmd->add_option("--input-skip", f->input_skip,
                  "linear path from the features to every head: logreg (started from the fitted "
                  "logistic), gam (with --ple-bins: started from the fitted GAM), zero, or off")
      ->capture_default_str();
  cmd->add_flag("--snapshot-heads", c.perception.snapshot_heads,
                "add a gated MLP head per horizon on each position's features (a non-linear "
                "one-snapshot path beside the input skip; starts silent)");
  cmd->add_flag(
      "--causal,!--no-causal", c.perception.causal,
      "window-causal trunk: the CfC starts from zero, not the window's attention pool, so "
      "no position sees a later one (docs/MODEL.md \"Look-ahead in the window\")");
  cmd->add_option("--ple-bins", c.perception.ple_bins,
                  "PLE path: a linear map of each position's features piecewise-linearly encoded "
                  "in K quantile bins (a GAM beside the input skip; starts at 0); 0 = off")
      ->check(int_range(0, 64))
      ->capture_default_str();
  cmd->add_option("--d-model", c.perception.d_model, "width D")->check(int_range(1, 8192))->capture_default_str();
  cmd->add_option("--d-state", c.perception.d_state, "Mamba2 state size N")->check(int_range(1, 1024))->capture_default_str();
  cmd->add_option("--head-dim", c.perception.head_dim, "Mamba2 head size")->check(int_range(1, 8192))->capture_default_str();
  cmd->add_option("--head-mid", c.perception.head_mid, "hidden width of the heads")
      ->check(int_range(1, 8192))->capture_default_str();
  cmd->add_option("--eval-batch", c.eval_batch, "windows per forward pass when scoring")
      ->check(int_range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--threads", c.threads, "CPU threads (default: every core; results do not depend on it)")
      ->check(int_range(1, 4096))->capture_default_str();
}

Result<TrainConfig> resolve_train_flags(const TrainFlags& f) {
  TrainConfig c = f.config;
  FXT_ASSIGN_OR_RETURN(c.horizons, parse_horizons(f.horizons));
  FXT_ASSIGN_OR_RETURN(c.weighting, model::parse_horizon_weighting(f.weighting));
  c.cfc_time_real = f.cfc_time == "real";
  if (!f.drop_features.empty()) {
    FXT_ASSIGN_OR_RETURN(c.drop_features, parse_feature_slots(f.drop_features));
  }
  if (f.model == "perception") {
    c.model = ModelKind::kPerception;
  } else if (f.model == "logreg") {
    c.model = ModelKind::kLogReg;
  } else if (f.model == "gbdt") {
    c.model = ModelKind::kGbdt;
  } else {
    return UsageError("--model must be perception, logreg or gbdt (got '{}')", f.model);
  }
  FXT_RETURN_IF_ERROR(parse_baseline_families(f.baselines, &c.baselines));
  FXT_ASSIGN_OR_RETURN(c.input_skip, parse_input_skip(f.input_skip));
  c.lambda = !f.no_lambda;
  c.logistic_fallback = !f.no_logistic_fallback;
  return c;
}

}  // namespace fxt::cli
