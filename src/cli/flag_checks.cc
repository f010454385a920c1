#include "cli/flag_checks.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/text.h"

namespace fxt::cli {
namespace {

constexpr const char* kIntCheck = "fxt-int-range";
constexpr const char* kFloatCheck = "fxt-finite";

// Parses a plain decimal integer (optional '-' only when signed) consuming the whole text.
template <typename T>
bool parse_decimal(const std::string& text, T* out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = first + text.size();
  if (*first == '-' && !std::is_signed_v<T>) return false;
  auto [ptr, ec] = std::from_chars(first, last, *out, 10);
  return ec == std::errc() && ptr == last;
}

template <typename T>
CLI::Validator range_check(T lo, T hi) {
  // The type's whole range (the guard's default) is not shown: "INT:>= -9223372036854775808"
  // in --help told a user nothing.
  const bool whole = lo == std::numeric_limits<T>::min() && hi == std::numeric_limits<T>::max();
  std::string shown = whole                                 ? std::string()
                      : hi == std::numeric_limits<T>::max() ? fmt::format(">= {}", lo)
                                                            : fmt::format("in [{}, {}]", lo, hi);
  const std::string spaced = shown.empty() ? shown : " " + shown;
  CLI::Validator v(
      [lo, hi, spaced](std::string& input) -> std::string {
        T value{};
        if (!parse_decimal(input, &value)) {
          return fmt::format("expected a decimal integer{} (got '{}')", spaced, input);
        }
        if (value < lo || value > hi) {
          return fmt::format("expected an integer{} (got {})", spaced, input);
        }
        return {};
      },
      shown, kIntCheck);
  return v;
}

bool has_check(CLI::Option* opt, const char* name) {
  try {
    return opt->get_validator(name) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

// The option's base type name, without its validators' descriptions ("UINT:>= 1" -> "UINT").
std::string base_type(const CLI::Option* opt) {
  std::string t = opt->get_type_name();
  return t.substr(0, t.find(':'));
}

CLI::Validator utf8_text() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const size_t bad = first_invalid_utf8(input);
        if (bad == std::string::npos) return {};
        return fmt::format("byte {} is not UTF-8 text (or is a NUL)", bad);
      },
      "", "fxt-utf8");
}

void guard(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    const std::string type = base_type(opt);
    if (type == "UINT" && !has_check(opt, kIntCheck)) {
      opt->check(range_check<uint64_t>(0, std::numeric_limits<uint64_t>::max()));
    } else if (type == "INT" && !has_check(opt, kIntCheck)) {
      opt->check(range_check<int64_t>(std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max()));
    } else if (type == "FLOAT" && !has_check(opt, kFloatCheck)) {
      opt->check(finite_number());
    } else if (type == "TEXT" || type.empty() || type == "DIR" || type == "FILE") {
      opt->check(utf8_text());  // paths end up in run.json: JSON holds UTF-8 only
    }
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) guard(sub);
}

}  // namespace

CLI::Validator int_range(int64_t lo, int64_t hi) {
  return range_check<int64_t>(lo, hi);
}

CLI::Validator uint_range(uint64_t lo, uint64_t hi) {
  return range_check<uint64_t>(lo, hi);
}

CLI::Validator finite_number(double lo, double hi) {
  const bool unbounded =
      lo == -std::numeric_limits<double>::max() && hi == std::numeric_limits<double>::max();
  std::string shown = unbounded ? "finite" : fmt::format("in [{}, {}]", lo, hi);
  return CLI::Validator(
      [lo, hi, shown](std::string& input) -> std::string {
        double value = 0;
        const char* first = input.data();
        const char* last = first + input.size();
        auto [ptr, ec] = std::from_chars(first, last, value);
        if (input.empty() || ec != std::errc() || ptr != last || !std::isfinite(value)) {
          return fmt::format("expected a finite number (got '{}')", input);
        }
        if (value < lo || value > hi) {
          return fmt::format("expected a number {} (got {})", shown, input);
        }
        return {};
      },
      unbounded ? std::string() : shown, kFloatCheck);
}

void guard_numeric_flags(CLI::App& app) {
  guard(&app);
}

Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& text, int lo,
                                        int hi) {
  std::vector<int> out;
  for (const std::string& item : split_fields(text, ',')) {
    int v = 0;
    if (!parse_decimal(item, &v) || v < lo || v > hi) {
      return UsageError("{} '{}': item '{}' is not an integer in [{}, {}]", flag, text, item, lo,
                        hi);
    }
    out.push_back(v);
  }
  if (out.empty()) return UsageError("{}: expected at least one value", flag);
  return out;
}

CLI::Option* add_precision_flag(CLI::App* cmd, Precision* p) {
  return cmd
      ->add_option_function<std::string>(
          "--precision", [p](const std::string& name) { *p = *precision_from_name(name); },
          "GPU matrix products: fp32, tf32 or bf16 (tensor-core products of operands rounded "
          "to TF32 or BF16, FP32 accumulation; weights, optimizer state and recurrences stay "
          "FP32; the CPU path is fp32 only)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->default_str(precision_name(*p));
}

void add_oracle_flags(CLI::App* cmd, OracleSpec* spec) {
  cmd->add_option("--oracle", spec->config,
                  "OUT.synth.json of `fxt synth --latent`: add the synthetic market's oracle "
                  "(the AUC ceiling) on a sample of the rows");
  cmd->add_option("--oracle-rows", spec->rows, "rows the oracle scores (evenly spaced)")
      ->capture_default_str()
      ->check(int_range(1, 10000000));
  cmd->add_option("--oracle-paths", spec->paths,
                  "Monte Carlo continuations that moved the mid, per row and horizon")
      ->capture_default_str()
      ->check(int_range(1, 100000));
  cmd->add_option("--oracle-max-horizon", spec->max_horizon,
                  "largest horizon the oracle covers (its cost grows with the horizon)")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
}

}  // namespace fxt::cli
