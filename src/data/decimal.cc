#include "data/decimal.h"

#include <limits>

namespace fxt {
namespace {

enum class DecimalError {
  kNone,
  kEmpty,
  kBadScale,
  kUnexpectedChar,
  kNoIntegerDigits,
  kNoFractionDigits,
  kTooManyDecimals,
  kOverflow,
};

// The one parser behind every entry point. On error, *error_pos is the offset of
// the offending character (kUnexpectedChar, kTooManyDecimals).
DecimalError parse_core(std::string_view s, int scale_digits, bool allow_fraction, int64_t* out,
                        size_t* error_pos) {
  if (scale_digits < 0 || scale_digits > 18) return DecimalError::kBadScale;
  if (s.empty()) return DecimalError::kEmpty;
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative) ++i;
  // Accumulate the magnitude as a negative number so INT64_MIN itself is reachable.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t acc = 0;
  auto push_digit = [&acc](int d) {
    if (acc < kMin / 10) return false;
    acc *= 10;
    if (acc < kMin + d) return false;
    acc -= d;
    return true;
  };
  const size_t int_start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (!push_digit(s[i] - '0')) return DecimalError::kOverflow;
    ++i;
  }
  if (i == int_start) {
    *error_pos = i;
    return i < s.size() && s[i] != '.' ? DecimalError::kUnexpectedChar
                                       : DecimalError::kNoIntegerDigits;
  }
  int frac_digits = 0;
  if (i < s.size() && s[i] == '.' && allow_fraction) {
    ++i;
    const size_t frac_start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (frac_digits < scale_digits) {
        if (!push_digit(s[i] - '0')) return DecimalError::kOverflow;
        ++frac_digits;
      } else if (s[i] != '0') {
        *error_pos = i;
        return DecimalError::kTooManyDecimals;
      }
      ++i;
    }
    if (i == frac_start) return DecimalError::kNoFractionDigits;
  }
  if (i != s.size()) {
    *error_pos = i;
    return DecimalError::kUnexpectedChar;
  }
  for (; frac_digits < scale_digits; ++frac_digits) {
    if (!push_digit(0)) return DecimalError::kOverflow;
  }
  if (!negative) {
    if (acc == kMin) return DecimalError::kOverflow;
    acc = -acc;
  }
  *out = acc;
  return DecimalError::kNone;
}

Status describe(DecimalError e, std::string_view s, int scale_digits, size_t pos) {
  switch (e) {
    case DecimalError::kNone:
      return Status::Ok();
    case DecimalError::kEmpty:
      return InvalidInput("empty number");
    case DecimalError::kBadScale:
      return InternalError("decimal scale {} outside [0, 18]", scale_digits);
    case DecimalError::kUnexpectedChar:
      return InvalidInput("\"{}\": unexpected '{}' at offset {}, expected a decimal number", s,
                          s[pos], pos);
    case DecimalError::kNoIntegerDigits:
      return InvalidInput("\"{}\": expected a digit before the decimal point", s);
    case DecimalError::kNoFractionDigits:
      return InvalidInput("\"{}\": expected a digit after the decimal point", s);
    case DecimalError::kTooManyDecimals:
      return InvalidInput("\"{}\": more than {} decimals (not exactly representable)", s,
                          scale_digits);
    case DecimalError::kOverflow:
      return InvalidInput("\"{}\": out of range for int64 with {} decimals", s, scale_digits);
  }
  return InternalError("unreachable");
}

}  // namespace

Result<int64_t> parse_decimal(std::string_view text, int scale_digits) {
  int64_t v = 0;
  size_t pos = 0;
  const DecimalError e = parse_core(text, scale_digits, true, &v, &pos);
  if (e != DecimalError::kNone) return describe(e, text, scale_digits, pos);
  return v;
}

Result<int64_t> parse_int64(std::string_view text) {
  int64_t v = 0;
  size_t pos = 0;
  const DecimalError e = parse_core(text, 0, false, &v, &pos);
  if (e != DecimalError::kNone) return describe(e, text, 0, pos);
  return v;
}

bool parse_decimal_fast(std::string_view text, int scale_digits, int64_t* out) {
  size_t pos = 0;
  return parse_core(text, scale_digits, true, out, &pos) == DecimalError::kNone;
}

bool parse_int64_fast(std::string_view text, int64_t* out) {
  size_t pos = 0;
  return parse_core(text, 0, false, out, &pos) == DecimalError::kNone;
}

std::string format_decimal(int64_t value, int scale_digits) {
  if (scale_digits <= 0) return fmt::format("{}", value);
  const int64_t unit = pow10_i64(scale_digits);
  // Work in uint64 so INT64_MIN has a magnitude.
  const bool negative = value < 0;
  const uint64_t mag = negative ? ~static_cast<uint64_t>(value) + 1 : static_cast<uint64_t>(value);
  const uint64_t ip = mag / static_cast<uint64_t>(unit);
  uint64_t fp = mag % static_cast<uint64_t>(unit);
  std::string out = fmt::format("{}{}", negative ? "-" : "", ip);
  if (fp == 0) return out;
  int digits = scale_digits;
  while (fp % 10 == 0) {
    fp /= 10;
    --digits;
  }
  out += fmt::format(".{:0{}}", fp, digits);
  return out;
}

}  // namespace fxt
