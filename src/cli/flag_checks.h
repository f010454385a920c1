// Numeric flag checks: one mechanism for every fxt subcommand (docs/ROBUSTNESS.md).
//
// CLI11 converts integers with strtoull/strtoll in base 0, so "-5" becomes 2^64 - 5 for an
// unsigned target and "010" becomes 8. Every integer flag therefore carries a decimal range
// check (int_range), and every floating-point flag refuses nan and inf (finite_number).
// guard_numeric_flags(app) adds the type's full range and the finiteness check to every
// numeric option that has no explicit one, so a flag added later cannot slip through.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "core/precision.h"
#include "core/status.h"
#include "train/oracle_rows.h"

namespace fxt::cli {

// Accepts a plain decimal integer in [lo, hi] ("+" and base prefixes refused); the help
// text shows the range.
CLI::Validator int_range(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max());

// As int_range for unsigned targets whose upper end exceeds int64 (seeds).
CLI::Validator uint_range(uint64_t lo, uint64_t hi = std::numeric_limits<uint64_t>::max());

// Accepts a finite floating-point number in [lo, hi] (nan and inf refused).
CLI::Validator finite_number(double lo = -std::numeric_limits<double>::max(),
                             double hi = std::numeric_limits<double>::max());

// Walks every option of `app` and its subcommands: integer options without an int_range or
// uint_range check get their type's range, floating-point options without finite_number get
// it, and text options (paths, lists) must be UTF-8. Call once, after every command has
// registered its options.
void guard_numeric_flags(CLI::App& app);

// A comma-separated list of plain decimal integers in [lo, hi] (a flag's value such as
// `--batch 256,1024`): "1e3", "8x", "+5", empty items and out-of-range values are a usage
// error naming the flag and the item (std::stoi read "1e3" as 1).
Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& text, int lo,
                                        int hi);

// `--precision fp32|tf32|bf16` written into *p: the GPU's matrix products (core/precision.h).
CLI::Option* add_precision_flag(CLI::App* cmd, Precision* p);

// `--oracle FILE --oracle-rows N --oracle-paths N --oracle-max-horizon H` written into *spec:
// the synthetic market's oracle beside the scored rows (train/oracle_rows.h).
void add_oracle_flags(CLI::App* cmd, OracleSpec* spec);

}  // namespace fxt::cli
