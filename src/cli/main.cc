// fxt: the foxhunt command-line tool. Exit codes (DESIGN §1): 0 success,
// 1 runtime failure, 2 bad usage or bad input. Errors print as one line.
#include <cstdio>
#include <filesystem>
#include <new>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/config_file.h"
#include "cli/flag_checks.h"
#include "core/device_info.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/temp_files.h"
#include "data/store.h"
#include "train/run_record.h"

namespace fxt::cli {
namespace {
std::vector<std::unique_ptr<Action>> g_actions;
Action* g_chosen = nullptr;
}  // namespace

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& description,
                      Action action) {
  g_actions.push_back(std::make_unique<Action>(std::move(action)));
  Action* slot = g_actions.back().get();
  CLI::App* sub = app.add_subcommand(name, description);
  sub->callback([slot] { g_chosen = slot; });
  return sub;
}

}  // namespace fxt::cli

int main(int argc, char** argv) {
  using namespace fxt;
  set_command_line(argc, argv);  // recorded in every run.json (train/run_record.h)
  install_temp_cleanup();         // SIGINT/SIGTERM remove temporary files (core/temp_files.h)
  CLI::App app{"foxhunt: limit-order-book research and trading"};
  app.require_subcommand(1);
  // `--config run.toml` on any subcommand reads flags from a TOML file; flags given
  // on the command line override it (StrictTomlConfig feeding CLI11: one mechanism for all).
  app.set_config("--config", "", "read options from a TOML config file (command-line flags win)");
  bool quiet = false, verbose = false, no_verify = false;
  app.add_flag("-q,--quiet", quiet, "print errors only, no progress");
  app.add_flag("-v,--verbose", verbose, "print debug messages");
  app.add_flag("--no-verify", no_verify,
               "skip the stores' CRC32 check on open (by default every store is verified once)");
  app.fallthrough();

  cli::register_ingest(app);
  cli::register_inspect(app);
  cli::register_dump(app);
  cli::register_synth(app);
  cli::register_features(app);
  cli::register_train(app);
  cli::register_eval(app);
  cli::register_cv(app);
  cli::register_predict(app);
  cli::register_backtest(app);
  cli::register_report(app);
  cli::register_quickstart(app);
  cli::register_runs(app);
  cli::register_rl(app);
  cli::register_bench(app);
  cli::register_version(app);
  cli::guard_numeric_flags(app);  // every numeric flag range-checked (cli/flag_checks.h)
  cli::use_strict_config(app);     // --config files read strictly (cli/config_file.h)

  try {
    app.parse(argc, argv);
  } catch (const cli::ConfigFileError& e) {
    std::fprintf(stderr, "fxt: error: %s\n", e.what());
    return 2;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "fxt: error: %s (see fxt --help)\n", e.what());  // one line
    return 2;
  }
  if (no_verify) set_store_verification(StoreVerification::kNever);
  if (quiet) {
    set_log_level(LogLevel::kError);
    Progress::set_enabled(false);
  } else if (verbose) {
    set_log_level(LogLevel::kDebug);
  }
  if (cli::g_chosen == nullptr || !*cli::g_chosen) {
    std::fprintf(stderr, "fxt: no command chosen (see fxt --help)\n");
    return 2;
  }
  Status status;
  try {
    status = (*cli::g_chosen)();
  } catch (const DeviceOutOfMemory& e) {
    status = InternalError("{}", e.what());
  } catch (const std::bad_alloc&) {
    status = InternalError("out of memory: reduce the sizes asked for (--batch, --d-model, ...)");
  } catch (const std::filesystem::filesystem_error& e) {
    status = e.path1().empty() ? UsageError("an empty path was given ({})", e.code().message())
                               : IoError("{}: {}", e.path1().string(), e.code().message());
  } catch (const std::exception& e) {
    status = InternalError("unexpected failure: {}", e.what());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "fxt: error: %s\n", status.message().c_str());
    return status.exit_code();
  }
  return 0;
}
