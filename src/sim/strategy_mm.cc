#include "sim/strategy_mm.h"

#include <algorithm>
#include <cmath>

#include "sim/quoting.h"

namespace fxt::sim {

Status MarketMakerConfig::validate() const {
  if (!(gamma > 0)) return UsageError("mm gamma must be > 0");
  if (!(k > 0)) return UsageError("mm k must be > 0");
  if (!(sigma >= 0)) return UsageError("mm sigma must be >= 0 (0 = estimated)");
  if (!(arrival >= 0)) return UsageError("mm arrival must be >= 0 (0 = estimated)");
  if (!(order_qty > 0)) return UsageError("mm order_qty must be > 0");
  if (!(max_inventory >= order_qty)) return UsageError("mm max_inventory must be >= order_qty");
  if (!(requote_ticks >= 0)) return UsageError("mm requote_ticks must be >= 0");
  if (!std::isfinite(skew_ticks)) return UsageError("mm skew_ticks must be a number");
  if (warmup < 0) return UsageError("mm warmup must be >= 0");
  return Status::Ok();
}

nlohmann::json MarketMakerConfig::to_json() const {
  return {{"model", model == QuoteModel::kGlft ? "glft" : "as"},
          {"gamma", gamma},
          {"k", k},
          {"sigma", sigma},
          {"arrival", arrival},
          {"order_qty", order_qty},
          {"max_inventory", max_inventory},
          {"requote_ticks", requote_ticks},
          {"skew_ticks", skew_ticks},
          {"warmup", warmup}};
}

MarketMakerStrategy::MarketMakerStrategy(const MarketMakerConfig& config,
                                         std::vector<SessionSpan> sessions,
                                         std::shared_ptr<const SignalSeries> signal)
    : config_(config), sessions_(std::move(sessions)), signal_(std::move(signal)) {}

double MarketMakerStrategy::sigma_estimate() const {
  return elapsed_ > 0 ? std::sqrt(var_sum_ / elapsed_) : 0.0;
}

double MarketMakerStrategy::arrival_estimate() const {
  return elapsed_ > 0 ? static_cast<double>(trades_seen_) / elapsed_ : 0.0;
}

MarketMakerQuote MarketMakerStrategy::quote(const Snapshot& book, int64_t tick_px, double inventory,
                                            double tau, double sigma, double arrival,
                                            double p) const {
  MarketMakerQuote out;
  if (!book.has_bid() || !book.has_ask() || tick_px <= 0) return out;
  const double tick = static_cast<double>(tick_px);
  const double mid_ticks =
      (static_cast<double>(book.bid_px[0]) + static_cast<double>(book.ask_px[0])) * 0.5 / tick;
  const double q = inventory / config_.order_qty;
  Quote raw;
  if (config_.model == QuoteModel::kGlft) {
    if (!(arrival > 0)) return out;
    raw = glft_quote(mid_ticks, q, config_.gamma, sigma, arrival, config_.k, 1.0);
  } else {
    raw = avellaneda_stoikov_quote(mid_ticks, q, tau, config_.gamma, sigma, config_.k);
  }
  const double shift = signal_ ? config_.skew_ticks * (2 * std::clamp(p, 0.0, 1.0) - 1) : 0.0;
  const double bid_t = std::floor(raw.bid + shift + 1e-9);  // round the bid down
  const double ask_t = std::ceil(raw.ask + shift - 1e-9);   // and the ask up
  if (!std::isfinite(bid_t) || !std::isfinite(ask_t) || std::fabs(bid_t) > 9e18 / tick ||
      std::fabs(ask_t) > 9e18 / tick) {
    return out;
  }
  // One tick inside the opposite touch at most, so a post-only quote never crosses.
  out.bid_px = std::min(static_cast<int64_t>(bid_t) * tick_px, book.ask_px[0] - tick_px);
  out.ask_px = std::max(static_cast<int64_t>(ask_t) * tick_px, book.bid_px[0] + tick_px);
  const double eps = 1e-9 * config_.max_inventory;
  out.has_bid = out.bid_px > 0 && inventory + config_.order_qty <= config_.max_inventory + eps;
  out.has_ask = inventory - config_.order_qty >= -config_.max_inventory - eps;
  return out;
}

void MarketMakerStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  if (event.kind == EventKind::kTrade) {
    ++trades_seen_;
    return;
  }
  const Snapshot& book = *event.book;
  if (!book.has_bid() || !book.has_ask()) return;
  const int64_t tick_px = ctx.instrument().tick_px;
  if (tick_px <= 0) return;
  const SessionSpan span = event.store < sessions_.size() ? sessions_[event.store]
                                                          : SessionSpan{event.ts_ns, event.ts_ns};
  const double length = static_cast<double>(span.end_ns - span.start_ns);
  const double mid_ticks =
      (static_cast<double>(book.bid_px[0]) + static_cast<double>(book.ask_px[0])) * 0.5 /
      static_cast<double>(tick_px);
  if (event.store == last_store_ && length > 0) {
    const double d = mid_ticks - last_mid_ticks_;
    var_sum_ += d * d;
    elapsed_ += static_cast<double>(event.ts_ns - last_ts_) / length;
  }
  last_store_ = event.store;
  last_ts_ = event.ts_ns;
  last_mid_ticks_ = mid_ticks;
  if (++snapshots_seen_ <= static_cast<uint64_t>(config_.warmup)) return;

  // Forget working quotes that are final (filled, canceled, rejected).
  bool bid_open = false, ask_open = false;
  for (const OpenOrder& o : ctx.open_orders()) {
    bid_open = bid_open || o.order_id == bid_id_;
    ask_open = ask_open || o.order_id == ask_id_;
  }
  if (!bid_open) bid_id_ = 0;
  if (!ask_open) ask_id_ = 0;

  const double sigma = config_.sigma > 0 ? config_.sigma : sigma_estimate();
  const double arrival = config_.arrival > 0 ? config_.arrival : arrival_estimate();
  const double tau =
      length > 0 ? std::clamp(static_cast<double>(span.end_ns - event.seen_ns) / length, 0.0, 1.0)
                 : 0.0;
  const double p = signal_ ? signal_->at(event.store, event.snapshot) : 0.5;
  const MarketMakerQuote q = quote(book, tick_px, ctx.position(), tau, sigma, arrival, p);
  work_side(ctx, Side::kBuy, q.has_bid, q.bid_px, &bid_id_);
  work_side(ctx, Side::kSell, q.has_ask, q.ask_px, &ask_id_);
}

void MarketMakerStrategy::work_side(StrategyContext& ctx, Side side, bool wanted, int64_t px,
                                    uint64_t* order_id) {
  int64_t& last_px = side == Side::kBuy ? bid_px_ : ask_px_;
  if (!wanted) {
    if (*order_id != 0) ctx.cancel(*order_id);
    *order_id = 0;
    return;
  }
  if (*order_id == 0) {
    OrderRequest r;
    r.side = side;
    r.type = OrderType::kPostOnly;
    r.px = px;
    r.qty = config_.order_qty;
    *order_id = ctx.submit(r);
    last_px = px;
    return;
  }
  const double moved_ticks =
      std::fabs(static_cast<double>(px - last_px)) / static_cast<double>(ctx.instrument().tick_px);
  if (moved_ticks + 1e-9 < std::max(config_.requote_ticks, 1e-9)) return;
  double total = config_.order_qty;
  for (const OpenOrder& o : ctx.open_orders()) {
    if (o.order_id == *order_id) total = o.qty;
  }
  ctx.modify(*order_id, px, total);
  last_px = px;
}

}  // namespace fxt::sim
