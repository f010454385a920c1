#include "sim/exchange.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fxt::sim {
namespace {

int side_int(Side s) {
  return sign(s);
}

}  // namespace

double BookView::size_at(int side, int64_t level_px, bool* known) const {
  *known = true;
  if (!valid()) return 0;
  return level_size_at(px(side), sz(side), side, level_px, known);
}

Exchange::Exchange(const SimConfig& config, const Instrument& instrument, BacktestResult* result)
    : config_(config), instrument_(instrument), result_(result), account_(instrument.multiplier) {}

uint64_t Exchange::register_order(const OrderRequest& request, int64_t sent_ns, int64_t arrive_ns) {
  LiveOrder o;
  o.type = request.type;
  o.side = request.side;
  o.px = request.type == OrderType::kMarket ? 0 : request.px;
  o.qty = request.qty;
  live_.push_back(o);
  OrderRecord r;
  r.order_id = live_.size();
  r.sent_ns = sent_ns;
  r.arrive_ns = arrive_ns;
  r.side = o.side;
  r.type = o.type;
  r.px = o.px;
  r.qty = o.qty;
  r.state = OrderState::kPending;
  result_->orders.push_back(r);
  return r.order_id;
}

Status Exchange::validate(const LiveOrder& o) const {
  if (!std::isfinite(o.qty) || o.qty <= 0) return InvalidInput("size must be > 0");
  if (o.type == OrderType::kMarket) return Status::Ok();
  // Any price on the tick grid (spreads and some futures trade at or below zero).
  if (o.px == kEmptyPx || o.px == std::numeric_limits<int64_t>::min())
    return InvalidInput("price undefined");
  if (instrument_.tick_px > 1 && o.px % instrument_.tick_px != 0)
    return InvalidInput("price {} not on the tick grid ({})", o.px, instrument_.tick_px);
  return Status::Ok();
}

// ---- liquidity --------------------------------------------------------------------

double Exchange::taken_at(int side, int64_t px) const {
  for (const Taken& t : memory_)
    if (t.side == side && t.px == px) return t.taken;
  return 0;
}

double Exchange::available(Side side, bool has_limit, int64_t limit) const {
  if (!book_.valid()) return 0;
  const int opp = -side_int(side);
  const int64_t* p = book_.px(opp);
  const double* s = book_.sz(opp);
  double total = 0;
  for (int i = 0; i < kBookLevels && p[i] != kEmptyPx; ++i) {
    if (has_limit && beyond_limit(side_int(side), p[i], limit)) break;
    total += max_of(0.0, level_left(s[i], taken_at(opp, p[i])));
  }
  return total;
}

int64_t Exchange::best_available(int side) const {
  if (!book_.valid()) return kEmptyPx;
  const int64_t* p = book_.px(side);
  const double* s = book_.sz(side);
  for (int i = 0; i < kBookLevels && p[i] != kEmptyPx; ++i)
    if (level_left(s[i], taken_at(side, p[i])) > kQtyEps) return p[i];
  return kEmptyPx;
}

bool Exchange::would_cross(Side side, int64_t px) const {
  return crosses(side_int(side), px, best_available(-side_int(side)));
}

void Exchange::take(uint64_t id, bool has_limit, int64_t limit, double want, int64_t t) {
  if (!book_.valid()) return;
  const Side side = live(id).side;
  const int opp = -side_int(side);
  const int64_t* p = book_.px(opp);
  const double* s = book_.sz(opp);
  for (int i = 0; i < kBookLevels && p[i] != kEmptyPx && want > kQtyEps; ++i) {
    if (has_limit && beyond_limit(side_int(side), p[i], limit)) break;
    const double q = walk_take(level_left(s[i], taken_at(opp, p[i])), want);
    if (q <= 0) continue;  // level used up
    auto it = std::find_if(memory_.begin(), memory_.end(),
                           [&](const Taken& m) { return m.side == opp && m.px == p[i]; });
    if (it == memory_.end())
      memory_.push_back({opp, p[i], s[i], q});
    else
      it->taken += q;
    want -= q;
    fill(id, p[i], q, /*maker=*/false, t);
  }
}

// ---- fills and order states -------------------------------------------------------

void Exchange::fill(uint64_t id, int64_t px, double qty, bool maker, int64_t t) {
  LiveOrder& o = live(id);
  qty = clamp_fill(qty, remaining(o));  // no float dust left behind
  if (qty <= 0) return;
  o.filled += qty;
  o.notional_filled += static_cast<double>(px) * kPxScale * qty;
  Fill f;
  f.ts_ns = t;
  f.order_id = id;
  f.side = o.side;
  f.px = px;
  f.qty = qty;
  f.fee = fill_fee(config_.fees, maker, px, qty, instrument_.multiplier);
  f.maker = maker;
  account_.apply_fill(o.side, px, qty, f.fee);
  result_->fills.push_back(f);
  result_->fees_paid += f.fee;

  OrderRecord& r = record(id);
  r.filled_qty = o.filled;
  r.avg_fill_px = o.notional_filled / o.filled;
  const bool done = remaining(o) <= kQtyEps;
  Outgoing out;
  out.act_ns = t;
  out.is_fill = true;
  out.fill = f;
  out.final = done;
  outbox_.push_back(out);
  if (done) {
    if (o.resting) leave_queue(id);
    r.state = OrderState::kFilled;
    r.done_ns = t;
  }
  sample_equity(t);
}

void Exchange::finish_order(uint64_t id, OrderState state, int64_t t, const std::string& reason) {
  OrderRecord& r = record(id);
  if (live(id).resting) leave_queue(id);
  r.state = state;
  r.done_ns = t;
  r.reason = reason;
}

void Exchange::send_ack(uint64_t id, AckKind kind, int64_t t, std::string reason, bool final) {
  Outgoing out;
  if (id >= 1 && id <= live_.size()) {
    out.new_px = live(id).px;
    out.new_qty = live(id).qty;
  }
  out.act_ns = t;
  out.ack.ts_ns = t;  // the engine sets the delivery time
  out.ack.order_id = id;
  out.ack.kind = kind;
  out.ack.reason = std::move(reason);
  out.final = final;
  outbox_.push_back(std::move(out));
}

void Exchange::join_queue(uint64_t id) {
  start_queue(id);
  resting_.push_back(id);
}

void Exchange::start_queue(uint64_t id) {
  LiveOrder& o = live(id);
  o.resting = true;
  o.rejoin = false;
  const int side = side_int(o.side);
  if (l3_session_ && mbo_) {
    o.l3 = true;
    mbo_->level_orders(static_cast<int8_t>(side), o.px, &level_buffer_);
    std::vector<L3Queue::Ahead> ahead;
    ahead.reserve(level_buffer_.size());
    for (const RestingOrder& ro : level_buffer_) {
      ahead.push_back({ro.order_id, static_cast<double>(ro.size)});
      ++tracked_[ro.order_id];
    }
    o.l3q.join(std::move(ahead));
  } else {
    o.l3 = false;
    bool known = false;
    const double displayed = book_.size_at(side, o.px, &known);
    o.l2.join(displayed, known && book_.valid());
  }
}

void Exchange::leave_queue(uint64_t id) {
  LiveOrder& o = live(id);
  o.resting = false;
  if (o.l3) {
    for (const L3Queue::Ahead& a : o.l3q.ahead) {
      auto it = tracked_.find(a.order_id);
      if (it != tracked_.end() && --it->second == 0) tracked_.erase(it);
    }
    o.l3q.clear();
  }
  // The id stays in resting_ until the caller runs prune_resting().
}

void Exchange::prune_resting() {
  std::erase_if(resting_, [&](uint64_t id) { return !live(id).resting; });
}

double Exchange::queue_ahead(uint64_t id) const {
  if (id == 0 || id > live_.size()) return -1;
  const LiveOrder& o = live_[id - 1];
  if (!o.resting) return -1;
  return o.l3 ? o.l3q.effective_ahead() : o.l2.ahead;
}

// ---- order messages ---------------------------------------------------------------

void Exchange::on_order_arrival(uint64_t id, int64_t t) {
  LiveOrder& o = live(id);
  OrderRecord& r = record(id);
  r.arrive_ns = t;
  Status valid = validate(o);
  if (!valid.ok()) {
    finish_order(id, OrderState::kRejected, t, valid.message());
    send_ack(id, AckKind::kRejected, t, valid.message(), true);
    return;
  }
  if (o.type == OrderType::kPostOnly && would_cross(o.side, o.px)) {
    finish_order(id, OrderState::kRejected, t, "post-only would cross");
    send_ack(id, AckKind::kRejected, t, "post-only would cross", true);
    return;
  }
  r.state = OrderState::kOpen;
  send_ack(id, AckKind::kAccepted, t, "", false);
  switch (o.type) {
    case OrderType::kMarket:
    case OrderType::kIoc:
      take(id, o.type == OrderType::kIoc, o.px, o.qty, t);
      break;
    case OrderType::kFok:
      if (available(o.side, true, o.px) >= o.qty - kQtyEps) take(id, true, o.px, o.qty, t);
      break;
    case OrderType::kLimit:
      take(id, true, o.px, o.qty, t);
      break;
    case OrderType::kPostOnly:
      break;
  }
  if (remaining(o) <= kQtyEps) return;  // filled (the last fill finished it)
  if (o.type == OrderType::kLimit || o.type == OrderType::kPostOnly) {
    join_queue(id);
    return;
  }
  const std::string reason = o.type == OrderType::kFok ? "fok: not enough liquidity"
                             : o.filled > 0            ? "remainder expired: no more liquidity"
                                                       : "no liquidity";
  finish_order(id, OrderState::kExpired, t, reason);
  send_ack(id, AckKind::kDone, t, reason, true);
}

void Exchange::on_cancel_arrival(uint64_t id, int64_t t) {
  if (id == 0 || id > live_.size()) {
    send_ack(id, AckKind::kRejected, t, "cancel: unknown order", false);
    return;
  }
  if (!live(id).resting) {
    send_ack(id, AckKind::kRejected, t, "cancel: order not open", false);
    return;
  }
  finish_order(id, OrderState::kCanceled, t, "canceled");
  prune_resting();
  send_ack(id, AckKind::kCanceled, t, "", true);
}

void Exchange::on_modify_arrival(uint64_t id, int64_t px, double qty, int64_t t) {
  if (id == 0 || id > live_.size()) {
    send_ack(id, AckKind::kRejected, t, "modify: unknown order", false);
    return;
  }
  LiveOrder& o = live(id);
  if (!o.resting) {
    send_ack(id, AckKind::kRejected, t, "modify: order not open", false);
    return;
  }
  LiveOrder probe = o;
  probe.px = px;
  probe.qty = qty;
  Status valid = validate(probe);
  if (!valid.ok()) {
    send_ack(id, AckKind::kRejected, t, "modify: " + valid.message(), false);
    return;
  }
  if (qty <= o.filled + kQtyEps) {
    send_ack(id, AckKind::kRejected, t, "modify: size must exceed the filled quantity", false);
    return;
  }
  const bool price_change = px != o.px;
  if (price_change && o.type == OrderType::kPostOnly && would_cross(o.side, px)) {
    send_ack(id, AckKind::kRejected, t, "modify: post-only would cross", false);
    return;
  }
  const bool loses_priority = price_change || qty > o.qty + kQtyEps;
  OrderRecord& r = record(id);
  o.qty = qty;
  r.qty = qty;
  if (!loses_priority) {  // a size decrease keeps the queue position
    send_ack(id, AckKind::kModified, t, "", false);
    return;
  }
  leave_queue(id);
  prune_resting();
  o.px = px;
  r.px = px;
  send_ack(id, AckKind::kModified, t, "", false);
  if (price_change && o.type == OrderType::kLimit) take(id, true, px, remaining(o), t);
  if (remaining(o) > kQtyEps) join_queue(id);
}

// ---- market data ------------------------------------------------------------------

void Exchange::begin_session(bool l3) {
  book_ = BookView{};
  memory_.clear();
  l3_session_ = l3;
  tracked_.clear();
  mbo_ = l3 ? std::make_unique<MboBook>(nullptr) : nullptr;
  for (uint64_t id : resting_) {
    LiveOrder& o = live(id);
    o.l3q.clear();
    o.l3 = false;
    o.rejoin = true;
  }
}

void Exchange::on_trade(const Trade& trade, int64_t t) {
  if (resting_.empty()) return;
  // Volume of this trade already given to our earlier orders at the same price.
  double used_px_volume = 0;
  int64_t used_px = kEmptyPx;
  int used_side = 0;
  for (size_t k = 0; k < resting_.size(); ++k) {
    const uint64_t id = resting_[k];
    LiveOrder& o = live(id);
    if (!o.resting || o.rejoin) continue;
    if (trades_through(sign(o.side), trade.px, o.px)) {
      fill(id, o.px, remaining(o), /*maker=*/true, t);
      continue;
    }
    if (!trade_hits_level(sign(o.side), o.px, trade.px, trade.side)) continue;
    const double beyond = o.l3 ? o.l3q.on_trade(trade.sz) : o.l2.on_trade(trade.sz);
    if (used_px != o.px || used_side != sign(o.side)) {
      used_px = o.px;
      used_side = sign(o.side);
      used_px_volume = 0;
    }
    const double q = min_of(remaining(o), beyond - used_px_volume);
    if (q > kQtyEps) {
      used_px_volume += q;
      fill(id, o.px, q, /*maker=*/true, t);
    }
  }
  prune_resting();
}

void Exchange::on_book(const BookView& view, int64_t t) {
  book_ = view;
  // Liquidity memory lasts until the level refreshes (size changed or level gone).
  if (!memory_.empty()) {
    std::erase_if(memory_, [&](const Taken& m) {
      bool known = false;
      const double now = view.size_at(m.side, m.px, &known);
      return !known || now != m.displayed;
    });
  }
  bool two_sided = false;
  const double mid = touch_mid(view.bid_px[0], view.bid_sz[0], view.ask_px[0], view.ask_sz[0],
                               &two_sided);
  if (two_sided) mid_ = mid;
  if (resting_.empty()) return;
  const bool crossed_book = (view.flags & (kFlagCrossed | kFlagLocked)) != 0;
  const int64_t best_bid = best_available(+1);
  const int64_t best_ask = best_available(-1);
  for (size_t k = 0; k < resting_.size(); ++k) {
    const uint64_t id = resting_[k];
    LiveOrder& o = live(id);
    if (!o.resting) continue;
    if (o.rejoin) start_queue(id);  // first book of a new session: back of the level
    const int side = sign(o.side);
    if (o.l3) {
      o.l3q.pending_traded = 0;  // the event is complete: its fills' cancels have arrived
    } else {
      bool known = false;
      const double size = view.size_at(side, o.px, &known);
      o.l2.on_level(config_.queue, size, known);
    }
    if (crossed_book) continue;
    const int64_t opp = side > 0 ? best_ask : best_bid;
    if (touch_reaches(side, o.px, opp))
      fill(id, o.px, remaining(o), /*maker=*/true, t);
  }
  prune_resting();
}

void Exchange::on_order_event(const OrderEvent& e, int64_t t) {
  (void)t;
  if (!mbo_) return;
  mbo_->apply(mbo_record(e));
  if (tracked_.empty()) return;
  if (e.action == 'R') {  // the book was cleared: nobody is ahead of us any more
    for (uint64_t id : resting_) live(id).l3q.clear();
    tracked_.clear();
    return;
  }
  auto it = tracked_.find(e.order_id);
  if (it == tracked_.end()) return;
  for (uint64_t id : resting_) {
    LiveOrder& o = live(id);
    if (!o.resting || !o.l3) continue;
    if (o.l3q.on_event(e, o.px)) {
      if (--it->second == 0) {
        tracked_.erase(it);
        break;
      }
    }
  }
}

void Exchange::sample_equity(int64_t t) {
  EquityPoint p;
  p.ts_ns = t;
  p.position = account_.position();
  p.cash = account_.cash();
  p.mid = mid_;
  p.equity = account_.equity(mid_);
  if (!result_->equity.empty()) {
    const EquityPoint& last = result_->equity.back();
    if (last.ts_ns == t && last.position == p.position && last.cash == p.cash && last.mid == p.mid)
      return;  // nothing new to record
  }
  result_->equity.push_back(p);
}

}  // namespace fxt::sim
