#include "sim/stats.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/civil_date.h"
#include "data/decimal.h"

namespace fxt::sim {
namespace {

constexpr int64_t kNsPerDay = 86'400'000'000'000;
constexpr double kTradingDaysPerYear = 252;
// Quantities closer to zero than this are flat (fills are sums of decimal sizes in double).
constexpr double kFlatQty = 1e-9;

nlohmann::json number_or_null(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return nullptr;
  return *value;
}

std::optional<double> ratio(double numerator, double denominator) {
  if (denominator == 0) return std::nullopt;
  return numerator / denominator;
}

// Days since 1970-01-01 -> "YYYY-MM-DD".
std::string utc_date(int64_t days) {
  const CivilDate d = civil_from_days(days);
  return fmt::format("{:04d}-{:02d}-{:02d}", d.year, d.month, d.day);
}

int64_t utc_day(int64_t ts_ns) {
  // Floor division so times before the epoch land on the right day.
  return ts_ns >= 0 ? ts_ns / kNsPerDay : -((-ts_ns + kNsPerDay - 1) / kNsPerDay);
}

// A run spanning less than this has no daily Sharpe: a 6-minute capture across midnight is not
// two trading days. Its Sharpe is computed on intraday bars instead.
constexpr int64_t kMinDailySpanNs = 2 * kNsPerDay;
constexpr size_t kMinBars = 30;  // the largest bar giving at least this many returns is used
struct BarSize {
  int64_t ns;
  const char* name;
};
constexpr int64_t kSecNs = 1'000'000'000;
constexpr BarSize kBarSizes[] = {
    {3600 * kSecNs, "1h"},  {1800 * kSecNs, "30min"}, {900 * kSecNs, "15min"},
    {300 * kSecNs, "5min"}, {60 * kSecNs, "1min"},    {30 * kSecNs, "30s"},
    {10 * kSecNs, "10s"},   {5 * kSecNs, "5s"},       {kSecNs, "1s"}};

int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

struct Moments {
  double mean = 0;
  double sample_std = 0;    // n − 1
  double downside_dev = 0;  // sqrt(Σ min(x, 0)² / n)
  size_t n = 0;
};

Moments moments(const std::vector<double>& xs) {
  Moments m;
  m.n = xs.size();
  if (m.n == 0) return m;
  for (double x : xs) m.mean += x;
  m.mean /= static_cast<double>(m.n);
  double squares = 0, downside = 0;
  for (double x : xs) {
    squares += (x - m.mean) * (x - m.mean);
    downside += std::min(x, 0.0) * std::min(x, 0.0);
  }
  if (m.n > 1) m.sample_std = std::sqrt(squares / static_cast<double>(m.n - 1));
  m.downside_dev = std::sqrt(downside / static_cast<double>(m.n));
  return m;
}

// PnL per bar: the last equity of each bar (on a grid of `bar_ns` from the epoch) minus the
// previous bar's last (0 before the first). Bars without equity points (no data: nights,
// weekends) do not appear, as days without data do not in the daily PnL.
std::vector<double> bar_pnl(const std::vector<std::pair<int64_t, double>>& equity, int64_t bar_ns) {
  std::map<int64_t, double> close;
  for (const auto& [ts, value] : equity) close[floor_div(ts, bar_ns)] = value;
  std::vector<double> pnl;
  double previous = 0;
  for (const auto& [bar, value] : close) {
    pnl.push_back(value - previous);
    previous = value;
  }
  return pnl;
}

// The intraday Sharpe of a run spanning less than kMinDailySpanNs: on the largest bar of
// kBarSizes with at least kMinBars returns (else 1 s), mean / sample std per bar, annualised
// as 252 trading days each as long as the observed session (its span, at most 24 h):
// per_bar · sqrt(252 · min(span, 1 day) / bar). Null when undefined (< 2 bars, zero std).
nlohmann::json intraday_sharpe(const std::vector<std::pair<int64_t, double>>& equity,
                               int64_t span_ns) {
  for (const BarSize& bar : kBarSizes) {
    const std::vector<double> pnl = bar_pnl(equity, bar.ns);
    if (pnl.size() < kMinBars && bar.ns != kSecNs) continue;
    const Moments m = moments(pnl);
    if (m.n < 2 || !(m.sample_std > 0)) return nullptr;
    const double per_bar = m.mean / m.sample_std;
    const double bars_per_day =
        static_cast<double>(std::clamp<int64_t>(span_ns, bar.ns, kNsPerDay)) /
        static_cast<double>(bar.ns);
    return {{"bar", bar.name},
            {"bar_ns", bar.ns},
            {"bars", pnl.size()},
            {"bars_per_day", bars_per_day},
            {"per_bar", per_bar},
            {"annualised", per_bar * std::sqrt(kTradingDaysPerYear * bars_per_day)}};
  }
  return nullptr;
}

// What walking the fills in execution order gives: FIFO-matched holding times and
// flat-to-flat round trips.
struct FillWalk {
  double position = 0;
  double matched_qty = 0;              // quantity closed against earlier lots
  double matched_qty_ns = 0;           // Σ matched qty × (close ts − open ts)
  std::vector<double> round_trip_pnl;  // cash at flat end − cash at flat start
};

FillWalk walk_fills(const std::vector<Fill>& fills, double multiplier) {
  struct Lot {
    int64_t ts_ns;
    double qty;  // signed, same sign as the position
  };
  std::deque<Lot> lots;
  FillWalk walk;
  double cash = 0;
  double round_trip_start_cash = 0;
  for (const Fill& fill : fills) {
    if (fill.qty <= 0) continue;
    const double signed_qty = sign(fill.side) * fill.qty;
    const double cash_flow = -signed_qty * e9_to_double(fill.px) * multiplier - fill.fee;
    const double before = walk.position;
    const double after = before + signed_qty;
    const bool was_flat = std::abs(before) <= kFlatQty;
    const bool now_flat = std::abs(after) <= kFlatQty;
    const bool crossed = !was_flat && !now_flat && (before > 0) != (after > 0);
    if (!was_flat && (now_flat || crossed)) {
      // The part of this fill that closes the position brings it through flat.
      const double closing_share = std::min(1.0, std::abs(before) / fill.qty);
      const double flat_cash = cash + closing_share * cash_flow;
      walk.round_trip_pnl.push_back(flat_cash - round_trip_start_cash);
      round_trip_start_cash = flat_cash;
    } else if (was_flat && !now_flat) {
      round_trip_start_cash = cash;
    }
    cash += cash_flow;
    walk.position = now_flat ? 0.0 : after;

    // FIFO lots: close the oldest opposite lots first, open a lot with the rest.
    double remaining = signed_qty;
    while (std::abs(remaining) > kFlatQty && !lots.empty() &&
           (lots.front().qty > 0) != (remaining > 0)) {
      Lot& lot = lots.front();
      const double matched = std::min(std::abs(remaining), std::abs(lot.qty));
      walk.matched_qty += matched;
      walk.matched_qty_ns += matched * static_cast<double>(fill.ts_ns - lot.ts_ns);
      remaining += remaining > 0 ? -matched : matched;
      lot.qty += lot.qty > 0 ? -matched : matched;
      if (std::abs(lot.qty) <= kFlatQty) lots.pop_front();
    }
    if (std::abs(remaining) > kFlatQty) lots.push_back({fill.ts_ns, remaining});
  }
  return walk;
}

}  // namespace

nlohmann::json compute_stats(const BacktestResult& result) {
  nlohmann::json stats = nlohmann::json::object();
  const double multiplier = result.instrument.multiplier;

  // Equity in time order; the run starts flat with no cash, so equity starts at 0.
  std::vector<std::pair<int64_t, double>> equity;
  equity.reserve(result.equity.size());
  for (const EquityPoint& p : result.equity) equity.emplace_back(p.ts_ns, p.equity);
  std::stable_sort(equity.begin(), equity.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const double total_pnl = equity.empty() ? 0.0 : equity.back().second;

  // Daily PnL: last equity of each UTC day minus the previous day's last (0 before the
  // first day). Days without equity points do not appear.
  std::map<int64_t, double> day_close;
  for (const auto& [ts, value] : equity) day_close[utc_day(ts)] = value;
  std::vector<double> daily;
  nlohmann::json daily_json = nlohmann::json::array();
  double previous_close = 0;
  for (const auto& [day, close] : day_close) {
    daily.push_back(close - previous_close);
    daily_json.push_back({{"date", utc_date(day)}, {"pnl", close - previous_close}});
    previous_close = close;
  }
  const Moments day_moments = moments(daily);
  const double annualise = std::sqrt(kTradingDaysPerYear);
  const int64_t span_ns = equity.empty() ? 0 : equity.back().first - equity.front().first;
  const bool daily_defined = span_ns >= kMinDailySpanNs;
  std::optional<double> sharpe_daily, sortino;
  if (daily_defined && day_moments.n >= 2 && day_moments.sample_std > 0)
    sharpe_daily = day_moments.mean / day_moments.sample_std * annualise;
  if (daily_defined && day_moments.n >= 2 && day_moments.downside_dev > 0)
    sortino = day_moments.mean / day_moments.downside_dev * annualise;
  const nlohmann::json sharpe_bars =
      daily_defined || equity.empty() ? nlohmann::json() : intraday_sharpe(equity, span_ns);

  // Maximum drawdown from the running peak (the peak starts at the initial equity 0).
  double peak = 0, max_drawdown = 0;
  for (const auto& point : equity) {
    peak = std::max(peak, point.second);
    max_drawdown = std::max(max_drawdown, peak - point.second);
  }

  // Fills: turnover, volume, maker share, fees, lots and round trips.
  double turnover = 0, volume = 0, maker_qty = 0, fees = 0;
  for (const Fill& fill : result.fills) {
    turnover += e9_to_double(fill.px) * fill.qty * multiplier;
    volume += fill.qty;
    if (fill.maker) maker_qty += fill.qty;
    fees += fill.fee;
  }
  const FillWalk walk = walk_fills(result.fills, multiplier);
  const Moments trip_moments = moments(walk.round_trip_pnl);
  std::optional<double> sharpe_per_trade;
  if (trip_moments.n >= 2 && trip_moments.sample_std > 0)
    sharpe_per_trade = trip_moments.mean / trip_moments.sample_std;

  double ordered_qty = 0, filled_qty = 0;
  for (const OrderRecord& order : result.orders) {
    ordered_qty += order.qty;
    filled_qty += order.filled_qty;
  }

  stats["total_pnl"] = total_pnl;
  stats["daily_pnl"] = std::move(daily_json);
  stats["days"] = daily.size();
  stats["sharpe_daily_annualised"] = number_or_null(sharpe_daily);
  stats["sharpe_bars"] = sharpe_bars;
  // The Sharpe that applies, and what it is computed on ("daily" or "<bar> bars").
  stats["sharpe_annualised"] =
      daily_defined ? number_or_null(sharpe_daily)
                    : (sharpe_bars.is_null() ? nlohmann::json() : sharpe_bars["annualised"]);
  stats["sharpe_basis"] = daily_defined           ? std::string("daily")
                          : sharpe_bars.is_null() ? std::string("-")
                                                  : sharpe_bars["bar"].get<std::string>() + " bars";
  stats["sharpe_per_trade"] = number_or_null(sharpe_per_trade);
  stats["sortino"] = number_or_null(sortino);
  stats["max_drawdown"] = max_drawdown;
  stats["return_over_drawdown"] = number_or_null(ratio(total_pnl, max_drawdown));
  stats["trades"] = result.fills.size();
  stats["round_trips"] = walk.round_trip_pnl.size();
  stats["turnover"] = turnover;
  stats["volume"] = volume;
  stats["fill_ratio"] = number_or_null(ratio(filled_qty, ordered_qty));
  const std::optional<double> maker_share = ratio(maker_qty, volume);
  stats["maker_share"] = number_or_null(maker_share);
  stats["taker_share"] =
      number_or_null(maker_share ? std::optional<double>(1.0 - *maker_share) : std::nullopt);
  stats["fees"] = fees;
  stats["mean_holding_ns"] = number_or_null(ratio(walk.matched_qty_ns, walk.matched_qty));
  stats["orders"] = result.orders.size();
  stats["events"] = result.events;
  stats["final_position"] = walk.position;
  return stats;
}

nlohmann::json model_risk_band(const std::vector<std::string>& model_names,
                               const std::vector<nlohmann::json>& stats) {
  static const char* const kKeys[] = {"total_pnl",
                                      "sharpe_daily_annualised",
                                      "sharpe_annualised",
                                      "max_drawdown",
                                      "fill_ratio",
                                      "trades",
                                      "fees"};
  nlohmann::json band = nlohmann::json::object();
  if (model_names.size() != stats.size()) {
    band["error"] = fmt::format("model_risk_band: {} model names but {} stats objects",
                                model_names.size(), stats.size());
    return band;
  }
  band["models"] = model_names;
  for (const char* key : kKeys) {
    nlohmann::json entry = nlohmann::json::object();
    nlohmann::json values = nlohmann::json::object();
    std::optional<double> lo, hi;
    for (size_t i = 0; i < stats.size(); ++i) {
      const nlohmann::json& s = stats[i];
      if (!s.is_object() || !s.contains(key) || !s[key].is_number()) {
        values[model_names[i]] = nullptr;
        continue;
      }
      const double v = s[key].get<double>();
      values[model_names[i]] = s[key];
      lo = lo ? std::min(*lo, v) : v;
      hi = hi ? std::max(*hi, v) : v;
    }
    entry["min"] = number_or_null(lo);
    entry["max"] = number_or_null(hi);
    entry["spread"] = number_or_null(lo ? std::optional<double>(*hi - *lo) : std::nullopt);
    entry["values"] = std::move(values);
    band[key] = std::move(entry);
  }
  return band;
}

}  // namespace fxt::sim
