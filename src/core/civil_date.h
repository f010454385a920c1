// Proleptic Gregorian dates <-> days since 1970-01-01 (H. Hinnant's algorithms), shared by
// LOBSTER's New York clock, synth's symbol-map dates and the backtest's daily PnL.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace fxt {

struct CivilDate {
  int64_t year = 1970;
  unsigned month = 1;  // 1..12
  unsigned day = 1;    // 1..31
};

// Days since 1970-01-01 of a date (the year shifted to start in March so leap days fall last).
inline int64_t days_from_civil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// The date of a day number (inverse of days_from_civil).
inline CivilDate civil_from_days(int64_t days) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  CivilDate d;
  d.day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  d.month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  d.year = yoe + era * 400 + (d.month <= 2 ? 1 : 0);
  return d;
}

// ns since the epoch as "2024-01-02T14:30:00.000520882Z" with `digits` (0-9) fractional
// digits, truncated; the one UTC formatter (store metadata, run records, reports).
inline std::string utc_text(int64_t ns, int digits = 9) {
  constexpr int64_t kNs = 1'000'000'000;
  const int64_t secs = ns >= 0 ? ns / kNs : -((-ns + kNs - 1) / kNs);
  const int64_t frac = ns - secs * kNs;
  const int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  const int64_t sod = secs - days * 86400;
  const CivilDate d = civil_from_days(days);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", d.year, d.month, d.day,
                                sod / 3600, sod / 60 % 60, sod % 60);
  if (digits > 0) {
    int64_t f = frac;
    for (int k = digits; k < 9; ++k) f /= 10;
    out += fmt::format(".{:0{}}", f, digits);
  }
  return out + "Z";
}

}  // namespace fxt
