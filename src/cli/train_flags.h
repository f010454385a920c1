// The training flags shared by fxt train and fxt cv (docs/TRAINING.md, docs/CV.md): one place
// registers them on a subcommand and one place turns their strings into a TrainConfig, so the
// two commands cannot drift apart. Command-specific flags stay with their command.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "train/trainer.h"

namespace fxt::cli {

// The flags' targets. Numeric and boolean flags are bound to `config` directly; the fields
// below hold the flags that need parsing (resolve_train_flags). Must outlive parsing: keep it
// in the command's shared_ptr-held arguments (cli/commands.h).
struct TrainFlags {
  TrainConfig config;
  std::string horizons = "30,100,300,1000,6000", weighting = "kendall-closed", model = "perception",
              baselines = "logreg,gbdt",
              drop_features, cfc_time = "stride", input_skip = "logreg";
  bool no_lambda = false;
  bool no_logistic_fallback = false;
  CLI::Option* horizons_opt = nullptr;  // set by add_train_flags: was --horizons given?
};

// The command registering the flags: the few spellings that differ between the two.
enum class TrainFlagsFor {
  kTrain,  // --seq; --epochs "epochs"
  kCv,     // --seq,--window; --epochs "epochs per fold"
};

// Every core of the machine (at least 1): the --threads default of train, cv, eval and predict
// (results do not depend on the thread count).
int default_threads();

// Registers every training flag fxt train and fxt cv share (--device, --precision, --seed,
// --epochs, ... --threads), with their help texts, defaults and checks, in this order.
void add_train_flags(CLI::App* cmd, TrainFlags* f, TrainFlagsFor who);

// f.config with the string flags applied: --horizons, --weighting, --cfc-time, --drop-features,
// --model and --no-lambda. Errors name the flag (exit code 2).
Result<TrainConfig> resolve_train_flags(const TrainFlags& f);

}  // namespace fxt::cli
