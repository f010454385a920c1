// Exact decimal strings <-> int64 fixed point.
//
// Market data sources write prices and sizes as decimal text ("61837.63000000",
// "34200.004241176"). They are parsed into int64 fixed point with `scale_digits`
// decimals (9 for the 1e-9 price unit of book.h, 9 for nanoseconds from seconds)
// without ever passing through a binary float, so equal strings give equal
// integers and nothing is rounded. A value that cannot be represented exactly is
// an error, never silently truncated:
//   syntax     [-]digits[.digits]   (no '+', exponent, spaces or empty parts)
//   decimals   digits beyond `scale_digits` are accepted only when they are zeros
//   range      the scaled value must fit in int64
// Error messages are one fragment ("\"1.5e3\": unexpected 'e' at offset 3") that
// the caller prefixes with the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fxt {

// 10^digits for digits in [0, 18].
constexpr int64_t pow10_i64(int digits) {
  int64_t v = 1;
  for (int i = 0; i < digits; ++i) v *= 10;
  return v;
}

// Parses `text` into value × 10^scale_digits (scale_digits in [0, 18]).
Result<int64_t> parse_decimal(std::string_view text, int scale_digits);

// Shorthand for the 1e-9 unit used by prices (book.h) and exact sizes.
inline Result<int64_t> parse_decimal_e9(std::string_view text) {
  return parse_decimal(text, 9);
}

// Parses a plain base-10 integer ([-]digits) that must fit in int64.
Result<int64_t> parse_int64(std::string_view text);

// Non-allocating variants for hot loops: return false on any error (the caller
// re-parses with the Result form above only to build the message).
bool parse_decimal_fast(std::string_view text, int scale_digits, int64_t* out);
bool parse_int64_fast(std::string_view text, int64_t* out);

// The exact decimal text of a fixed-point value, trailing zeros trimmed ("61837.63").
std::string format_decimal(int64_t value, int scale_digits);

// The nearest double to value × 10^-9. Division of two exactly representable
// doubles is correctly rounded, so for |value| < 2^53 this equals strtod() of the
// original decimal text.
inline double e9_to_double(int64_t value) {
  return static_cast<double>(value) / 1e9;
}

}  // namespace fxt
