// The strict TOML reader behind `--config FILE` (docs/ROBUSTNESS.md).
//
// CLI11's own reader skips what it does not understand, so a misspelled section or key ran
// the command on defaults. StrictTomlConfig reads the subset of TOML fxt needs ([section]
// and [a.b] headers naming subcommands; `key = value` with integers, floats, booleans,
// "strings", 'literal strings' and [arrays] of them; # comments) and refuses anything else
// with one line naming the file and line: malformed syntax, a binary file, an unknown
// section or key (with the closest name as a hint), a key given twice, and a value the
// option's numeric check refuses (cli/flag_checks.h). Values reach the options through
// CLI11, so command-line flags still win over the file.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fxt::cli {

// A bad config file; main() prints what() as the one-line error and exits 2.
class ConfigFileError : public CLI::ConfigError {
 public:
  explicit ConfigFileError(std::string msg)
      : CLI::ConfigError("ConfigFileError", std::move(msg), CLI::ExitCodes::ConfigError) {}
};

class StrictTomlConfig : public CLI::Config {
 public:
  // `root` is the top-level app: sections are looked up among its subcommands.
  explicit StrictTomlConfig(CLI::App* root) : root_(root) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return {}; }
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

  // Parses `text` read from `file`; throws ConfigFileError. Public for tests.
  std::vector<CLI::ConfigItem> parse(const std::string& text, const std::string& file) const;

 private:
  CLI::App* root_;
};

// Installs StrictTomlConfig as `app`'s config reader (after every command has registered).
void use_strict_config(CLI::App& app);

}  // namespace fxt::cli
