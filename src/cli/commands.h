// Each fxt subcommand registers itself on the CLI11 app and returns the Status
// its run produced through a shared slot; main() turns that into the exit code.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace fxt::cli {

// A subcommand's action, run after parsing when that subcommand was chosen.
using Action = std::function<Status()>;

// Adds a subcommand whose action runs when it is chosen. Options bound to the
// returned App must outlive parsing: keep them in a shared_ptr the action captures.
CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& description,
                      Action action);

void register_backtest(CLI::App& app);
void register_bench(CLI::App& app);
void register_cv(CLI::App& app);
void register_dump(CLI::App& app);
void register_eval(CLI::App& app);
void register_features(CLI::App& app);
void register_ingest(CLI::App& app);
void register_inspect(CLI::App& app);
void register_predict(CLI::App& app);
void register_quickstart(CLI::App& app);
void register_report(CLI::App& app);
void register_rl(CLI::App& app);
void register_runs(CLI::App& app);
void register_synth(CLI::App& app);
void register_train(CLI::App& app);
void register_version(CLI::App& app);

}  // namespace fxt::cli
