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

Result<MarketMakerConfig> MarketMakerConfig::from_json(const nlohmann::json& j) {
  MarketMakerConfig c;
  try {
    c.model = j.at("model").get<std::string>() == "glft" ? QuoteModel::kGlft
                                                         : QuoteModel::kAvellanedaStoikov;
    c.gamma = j.at("gamma").get<double>();
    c.k = j.at("k").get<double>();
    c.sigma = j.at("sigma").get<double>();
    c.arrival = j.at("arrival").get<double>();
    c.order_qty = j.at("order_qty").get<double>();
    c.max_inventory = j.at("max_inventory").get<double>();
    c.requote_ticks = j.at("requote_ticks").get<double>();
    c.skew_ticks = j.at("skew_ticks").get<double>();
    c.warmup = j.at("warmup").get<int>();
  } catch (const std::exception& e) {
    return InvalidInput("mm config: {}", e.what());
  }
  FXT_RETURN_IF_ERROR(c.validate());
  return c;
}

MmParams mm_params(const MarketMakerConfig& config) {
  MmParams p;
  p.glft = config.model == QuoteModel::kGlft;
  p.gamma = config.gamma;
  p.k = config.k;
  p.sigma = config.sigma;
  p.arrival = config.arrival;
  p.order_qty = config.order_qty;
  p.max_inventory = config.max_inventory;
  p.requote_ticks = config.requote_ticks;
  p.skew_ticks = config.skew_ticks;
  p.warmup = config.warmup;
  p.as_spread = avellaneda_stoikov_spread_term(config.gamma, config.k);
  const double eps = 1e-9 * config.max_inventory;  // the bits mm_quote_at computed per quote
  p.inventory_hi = config.max_inventory + eps;
  p.inventory_lo = -config.max_inventory - eps;
  p.glft_terms = glft_terms(config.gamma, config.k, 1.0);
  return p;
}

MarketMakerStrategy::MarketMakerStrategy(const MarketMakerConfig& config,
                                         std::vector<SessionSpan> sessions,
                                         std::shared_ptr<const SignalSeries> signal)
    : config_(config),
      params_(mm_params(config)),
      sessions_(std::move(sessions)),
      signal_(std::move(signal)) {}

double MarketMakerStrategy::sigma_estimate() const {
  return mm_sigma_estimate(state_.est);
}

double MarketMakerStrategy::arrival_estimate() const {
  return mm_arrival_estimate(state_.est);
}

MarketMakerQuote MarketMakerStrategy::quote(const Snapshot& book, int64_t tick_px, double inventory,
                                            double tau, double sigma, double arrival,
                                            double p) const {
  return mm_quote(params_, signal_ != nullptr, book.bid_px[0], book.ask_px[0],
                  book.has_bid() && book.has_ask(), tick_px, inventory, tau, sigma, arrival, p);
}

namespace {

// mm_rules.h's context over the engine's StrategyContext.
class MmContext {
 public:
  explicit MmContext(StrategyContext& ctx) : ctx_(ctx) {}
  double position() const { return ctx_.position(); }
  bool open(uint64_t id, double* qty) const {
    bool found = false;
    for (const OpenOrder& o : ctx_.open_orders()) {
      if (o.order_id == id) {
        *qty = o.qty;
        found = true;
      }
    }
    return found;
  }
  uint64_t submit(int side, int64_t px, double qty) {
    return submit_order(ctx_, side, static_cast<uint8_t>(OrderType::kPostOnly), px, qty);
  }
  void cancel(uint64_t id) { ctx_.cancel(id); }
  void modify(uint64_t id, int64_t px, double qty) { ctx_.modify(id, px, qty); }

 private:
  StrategyContext& ctx_;
};

}  // namespace

void MarketMakerStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  if (event.kind == EventKind::kTrade) {
    mm_on_trade(&state_.est);
    return;
  }
  const Snapshot& book = *event.book;
  const SessionSpan span = event.store < sessions_.size() ? sessions_[event.store]
                                                          : SessionSpan{event.ts_ns, event.ts_ns};
  MmSnapshot e;
  e.store = event.store;
  e.ts_ns = event.ts_ns;
  e.seen_ns = event.seen_ns;
  e.bid_px = book.bid_px[0];
  e.ask_px = book.ask_px[0];
  e.bid_sz = book.bid_sz[0];
  e.ask_sz = book.ask_sz[0];
  e.session_start = span.start_ns;
  e.session_end = span.end_ns;
  // The signal is read only past warmup in mm_on_snapshot (a lookup, no side effects).
  e.p = signal_ ? signal_->at(event.store, event.snapshot) : 0.5;
  MmContext c(ctx);
  mm_on_snapshot(params_, signal_ != nullptr, &state_, e, ctx.instrument().tick_px, c);
}

}  // namespace fxt::sim
