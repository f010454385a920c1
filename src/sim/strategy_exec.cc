#include "sim/strategy_exec.h"

#include <algorithm>
#include <cmath>

#include "sim/schedule.h"

namespace fxt::sim {

Status ExecutionConfig::validate(bool almgren_chriss) const {
  if (!(qty > 0)) return UsageError("execution qty must be > 0");
  if (start_ns < 0) return UsageError("execution start must be >= 0");
  if (duration_ns < 0) return UsageError("execution duration must be >= 0");
  if (slices < 1) return UsageError("execution slices must be >= 1");
  if (!(limit_ticks >= 0)) return UsageError("execution limit_ticks must be >= 0");
  if (!(lot >= 0)) return UsageError("execution lot must be >= 0");
  if (lot > 0 && std::fabs(qty / lot - std::round(qty / lot)) > 1e-9 * std::max(1.0, qty / lot)) {
    return UsageError("execution qty {} is not a whole number of lots of {}", qty, lot);
  }
  if (almgren_chriss) {
    if (!(urgency >= 0)) return UsageError("ac urgency must be >= 0");
    if (!(risk_aversion >= 0)) return UsageError("ac risk_aversion must be >= 0");
    if (risk_aversion > 0 && !(sigma > 0 && eta > 0)) {
      return UsageError("ac with risk_aversion > 0 needs sigma > 0 and eta > 0");
    }
  }
  return Status::Ok();
}

nlohmann::json ExecutionConfig::to_json(bool almgren_chriss) const {
  nlohmann::json j = {{"side", side == Side::kBuy ? "buy" : "sell"},
                      {"qty", qty},
                      {"start_ns", start_ns},
                      {"duration_ns", duration_ns},
                      {"slices", slices},
                      {"order", limit ? "limit" : "market"},
                      {"limit_ticks", limit_ticks},
                      {"lot", lot}};
  if (almgren_chriss) {
    j["urgency"] = urgency;
    j["sigma"] = sigma;
    j["eta"] = eta;
    j["risk_aversion"] = risk_aversion;
  }
  return j;
}

std::vector<double> execution_holdings(const ExecutionConfig& config, bool almgren_chriss,
                                       int64_t window_ns) {
  if (!almgren_chriss) return twap_holdings(config.qty, config.slices);
  double urgency = config.urgency;
  if (config.risk_aversion > 0 && window_ns > 0) {
    const double window_s = static_cast<double>(window_ns) * 1e-9;
    const double slice_s = window_s / config.slices;
    urgency =
        almgren_chriss_discrete_kappa(config.sigma, config.eta, config.risk_aversion, slice_s) *
        window_s;
  }
  // Window length 1: kappa per window = urgency.
  return almgren_chriss_holdings(config.qty, 1.0, config.slices, urgency);
}

ExecutionStrategy::ExecutionStrategy(const ExecutionConfig& config, bool almgren_chriss,
                                     int64_t window_start_ns, int64_t window_end_ns)
    : config_(config),
      start_ns_(window_start_ns),
      end_ns_(std::max(window_start_ns, window_end_ns)),
      holdings_(execution_holdings(config, almgren_chriss, end_ns_ - start_ns_)) {}

void ExecutionStrategy::on_fill(const Fill& fill, StrategyContext& ctx) {
  executed_ += fill.qty;
  fill_notional_ += static_cast<double>(fill.px) * kPxScale * fill.qty;
  fees_ += fill.fee;
  multiplier_ = ctx.instrument().multiplier;
}

namespace {
// side · (price − benchmark) / benchmark in basis points; null without both prices.
nlohmann::json cost_bps(Side side, double price, double benchmark) {
  if (!(price > 0 && benchmark > 0)) return nullptr;
  return sign(side) * (price - benchmark) / benchmark * 1e4;
}
}  // namespace

nlohmann::json ExecutionStrategy::report() const {
  const double avg = executed_ > 0 ? fill_notional_ / executed_ : 0;
  const double vwap = market_volume_ > 0 ? market_notional_ / market_volume_ : 0;
  const double notional = fill_notional_ * multiplier_;
  auto px_or_null = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j = {
      {"side", config_.side == Side::kBuy ? "buy" : "sell"},
      {"qty", config_.qty},
      {"executed_qty", executed_},
      {"unfilled_qty", std::max(0.0, config_.qty - executed_)},
      {"lot", config_.lot},
      {"avg_fill_px", px_or_null(avg)},
      {"arrival_px", px_or_null(arrival_mid_)},
      {"market_vwap_px", px_or_null(vwap)},
      {"market_volume", market_volume_},
      {"shortfall_bps", cost_bps(config_.side, avg, arrival_mid_)},
      {"vwap_slippage_bps", cost_bps(config_.side, avg, vwap)},
      {"fees", fees_},
      {"fees_bps", notional > 0 ? nlohmann::json(fees_ / notional * 1e4) : nlohmann::json()},
  };
  if (j["shortfall_bps"].is_number() && j["fees_bps"].is_number()) {
    j["shortfall_with_fees_bps"] = j["shortfall_bps"].get<double>() + j["fees_bps"].get<double>();
  }
  return j;
}

void ExecutionStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  const int64_t now = event.seen_ns;
  if (now < start_ns_) return;
  if (now <= end_ns_ && event.kind == EventKind::kTrade && event.trade != nullptr) {
    market_notional_ += static_cast<double>(event.trade->px) * kPxScale * event.trade->sz;
    market_volume_ += event.trade->sz;
  }
  if (arrival_mid_ == 0 && ctx.book().has_bid() && ctx.book().has_ask()) {
    const Snapshot& b = ctx.book();
    arrival_mid_ =
        (static_cast<double>(b.bid_px[0]) + static_cast<double>(b.ask_px[0])) / 2 * kPxScale;
    multiplier_ = ctx.instrument().multiplier;
  }
  if (next_slice_ >= config_.slices) return;
  // The latest interval that has started: j = floor((now − start)·slices / window).
  int latest = config_.slices - 1;
  if (now < end_ns_) {
    const long double frac =
        static_cast<long double>(now - start_ns_) / static_cast<long double>(end_ns_ - start_ns_);
    latest = std::min(config_.slices - 1, static_cast<int>(frac * config_.slices));
  }
  if (latest < next_slice_) return;
  next_slice_ = latest + 1;

  double working = 0;
  for (const OpenOrder& o : ctx.open_orders()) working += o.qty - o.filled_qty;
  const double due = config_.qty - holdings_[static_cast<size_t>(latest) + 1];
  double child = due - executed_ - working;
  if (config_.lot > 0) {  // whole lots, rounded down (a relative epsilon absorbs 0.999999...)
    child = std::floor(child / config_.lot + 1e-9) * config_.lot;
  }
  if (child <= 1e-9 * config_.qty) return;

  OrderRequest r;
  r.side = config_.side;
  r.qty = child;
  r.type = OrderType::kMarket;
  const Snapshot& book = ctx.book();
  const bool has_far = config_.side == Side::kBuy ? book.has_ask() : book.has_bid();
  if (config_.limit && has_far) {
    const int64_t through =
        static_cast<int64_t>(std::llround(config_.limit_ticks)) * ctx.instrument().tick_px;
    r.type = OrderType::kIoc;
    r.px = config_.side == Side::kBuy ? book.ask_px[0] + through : book.bid_px[0] - through;
  }
  ctx.submit(r);
}

}  // namespace fxt::sim
