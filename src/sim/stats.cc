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
  std::optional<double> sharpe_daily, sortino;
  if (day_moments.n >= 2 && day_moments.sample_std > 0)
    sharpe_daily = day_moments.mean / day_moments.sample_std * annualise;
  if (day_moments.n >= 2 && day_moments.downside_dev > 0)
    sortino = day_moments.mean / day_moments.downside_dev * annualise;

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
  static const char* const kKeys[] = {
      "total_pnl", "sharpe_daily_annualised", "max_drawdown", "fill_ratio", "trades", "fees"};
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
