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

ExecParams exec_params(const ExecutionConfig& config, int64_t window_start_ns,
                       int64_t window_end_ns, int64_t tick_px) {
  ExecParams p;
  p.side = sign(config.side);
  p.qty = config.qty;
  p.start_ns = window_start_ns;
  p.end_ns = std::max(window_start_ns, window_end_ns);
  p.slices = config.slices;
  p.limit = config.limit;
  p.through_px = static_cast<int64_t>(std::llround(config.limit_ticks)) * tick_px;
  p.lot = config.lot;
  return p;
}

ExecutionStrategy::ExecutionStrategy(const ExecutionConfig& config, bool almgren_chriss,
                                     int64_t window_start_ns, int64_t window_end_ns)
    : config_(config),
      start_ns_(window_start_ns),
      end_ns_(std::max(window_start_ns, window_end_ns)),
      holdings_(execution_holdings(config, almgren_chriss, end_ns_ - start_ns_)) {}

void ExecutionStrategy::on_fill(const Fill& fill, StrategyContext& ctx) {
  exec_on_fill(&state_, fill.px, fill.qty, fill.fee, ctx.instrument().multiplier);
}

namespace {
// side · (price − benchmark) / benchmark in basis points; null without both prices.
nlohmann::json cost_bps(Side side, double price, double benchmark) {
  if (!(price > 0 && benchmark > 0)) return nullptr;
  return sign(side) * (price - benchmark) / benchmark * 1e4;
}
}  // namespace

nlohmann::json ExecutionStrategy::report() const {
  const ExecState& s = state_;
  const double avg = s.executed > 0 ? s.fill_notional / s.executed : 0;
  const double vwap = s.market_volume > 0 ? s.market_notional / s.market_volume : 0;
  const double notional = s.fill_notional * s.multiplier;
  auto px_or_null = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j = {
      {"side", config_.side == Side::kBuy ? "buy" : "sell"},
      {"qty", config_.qty},
      {"executed_qty", s.executed},
      {"unfilled_qty", std::max(0.0, config_.qty - s.executed)},
      {"lot", config_.lot},
      {"avg_fill_px", px_or_null(avg)},
      {"arrival_px", px_or_null(s.arrival_mid)},
      {"market_vwap_px", px_or_null(vwap)},
      {"market_volume", s.market_volume},
      {"shortfall_bps", cost_bps(config_.side, avg, s.arrival_mid)},
      {"vwap_slippage_bps", cost_bps(config_.side, avg, vwap)},
      {"fees", s.fees},
      {"fees_bps", notional > 0 ? nlohmann::json(s.fees / notional * 1e4) : nlohmann::json()},
  };
  if (j["shortfall_bps"].is_number() && j["fees_bps"].is_number()) {
    j["shortfall_with_fees_bps"] = j["shortfall_bps"].get<double>() + j["fees_bps"].get<double>();
  }
  return j;
}

namespace {

// exec_rules.h's context over the engine's StrategyContext.
class ExecContext {
 public:
  explicit ExecContext(StrategyContext& ctx) : ctx_(ctx) {}
  double working() const {
    double w = 0;
    for (const OpenOrder& o : ctx_.open_orders()) w += o.qty - o.filled_qty;
    return w;
  }
  uint64_t submit(int side, uint8_t type, int64_t px, double qty) {
    return submit_order(ctx_, side, type, px, qty);
  }

 private:
  StrategyContext& ctx_;
};

}  // namespace

void ExecutionStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  const Snapshot& book = ctx.book();
  ExecEvent e;
  e.seen_ns = event.seen_ns;
  e.is_trade = event.kind == EventKind::kTrade && event.trade != nullptr;
  if (e.is_trade) {
    e.trade_px = event.trade->px;
    e.trade_sz = event.trade->sz;
  }
  e.has_bid = book.has_bid();
  e.has_ask = book.has_ask();
  e.bid_px = book.bid_px[0];
  e.ask_px = book.ask_px[0];
  e.multiplier = ctx.instrument().multiplier;
  const ExecParams p = exec_params(config_, start_ns_, end_ns_, ctx.instrument().tick_px);
  ExecContext c(ctx);
  exec_on_event(p, holdings_.data(), &state_, e, c);
}

}  // namespace fxt::sim
