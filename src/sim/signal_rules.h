// The `signal` strategy's decisions (sim/strategy_signal.h) as one template, compiled for host
// and device: the CPU SignalStrategy and the GPU lanes (sim/lane_engine.h) both run
// signal_on_snapshot / signal_on_ack on their own context, so their orders cannot drift.
//
// A context `Ctx` provides:
//   position()                          units, from the fills received;
//   open_count(), open_at(k)            the strategy's open orders (SignalOrder), oldest first;
//   submit(side, type, px, qty)         type kSignalMarket or kSignalPostOnly; returns the id;
//   cancel(id), modify(id, px, qty);
//   cancel_sent(id), mark_cancel_sent(id)       the orders we asked to cancel;
//   requested(id, &px, &qty), set_requested(id, px, qty)
//                                       the price and total size last asked of an order;
//   forget_finished()                   drops both lists' entries of orders no longer open;
//   forget(id)                          drops order id from both lists.
// The lists live in the context (vectors on the CPU, fixed arrays in a lane).
// Only + − × ÷, fabs and trunc: the device computes the host's bits. C++17-clean.
#pragma once

#include <math.h>

#include <cstdint>

#include "sim/fill_rules.h"

namespace fxt::sim {

// sim/types.h OrderType codes (checked in sim/gpu_lanes.cc).
enum : uint8_t { kSignalMarket = 0, kSignalPostOnly = 2 };

// The eight exposure levels, numbered as sim/strategy_signal.h's Exposure.
enum : int8_t {
  kSigShortFull,
  kSigShortHalf,
  kSigShortSmall,
  kSigHold,
  kSigLongSmall,
  kSigLongHalf,
  kSigLongFull,
  kSigFlat
};

// SignalConfig (sim/strategy_signal.h) flattened for device code.
struct SignalParams {
  double long_small = 0.55, long_half = 0.60, long_full = 0.65;
  double short_small = 0.45, short_half = 0.40, short_full = 0.35;
  double flat_band = 0.02;
  double size_small = 0.25, size_half = 0.5, size_full = 1.0;
  double kelly = 0, kelly_cap = 1.0;
  double max_position = 1;
  double lot = 0;
  bool passive = false;
  int64_t max_hold_ns = 0;
  double eps = 1e-9;  // quantities below this are zero: 1e-9 · max(1, max_position)
};

// What the strategy accumulates between events.
struct SignalState {
  double target = 0;    // units
  double exposure = 0;  // target as a fraction of max_position
  int8_t level = kSigHold;
  int held_sign = 0;  // sign of the position at the last event
  int64_t held_since_ns = 0;
  bool timer_block = false;  // flattened by max_hold: stay flat until the level changes
  int8_t blocked_level = kSigHold;
};

// An open order as the strategy knows it (sim/strategy.h OpenOrder).
struct SignalOrder {
  uint64_t id = 0;
  int side = 1;
  uint8_t type = kSignalMarket;
  int64_t px = 0;
  double qty = 0, filled = 0;
};

// The touch of the latest book the strategy has seen (Snapshot::has_bid / has_ask).
struct SignalTouch {
  bool has_bid = false, has_ask = false;
  int64_t bid_px = 0, ask_px = 0;
};

// std::clamp(v, lo, hi), same comparisons.
FXT_HD inline double signal_clamp(double v, double lo, double hi) {
  return v < lo ? lo : (hi < v ? hi : v);
}

// The exposure level of p (p outside [0, 1] is clamped).
FXT_HD inline int8_t signal_level(const SignalParams& c, double p) {
  p = signal_clamp(p, 0.0, 1.0);
  if (p >= c.long_full) return kSigLongFull;
  if (p >= c.long_half) return kSigLongHalf;
  if (p >= c.long_small) return kSigLongSmall;
  if (p <= c.short_full) return kSigShortFull;
  if (p <= c.short_half) return kSigShortHalf;
  if (p <= c.short_small) return kSigShortSmall;
  if (fabs(p - 0.5) <= c.flat_band) return kSigFlat;
  return kSigHold;
}

// The target exposure in [-1, 1] of a long/short level at p (level size or capped Kelly); 0 for
// flat; `current` for hold.
FXT_HD inline double signal_level_exposure(const SignalParams& c, int8_t level, double p,
                                           double current) {
  if (level == kSigHold) return current;
  if (level == kSigFlat) return 0;
  const double size = level == kSigShortFull || level == kSigLongFull   ? c.size_full
                      : level == kSigShortHalf || level == kSigLongHalf ? c.size_half
                                                                        : c.size_small;
  const bool is_long = level == kSigLongSmall || level == kSigLongHalf || level == kSigLongFull;
  if (c.kelly > 0)
    return signal_clamp(c.kelly * (2 * signal_clamp(p, 0.0, 1.0) - 1), -c.kelly_cap, c.kelly_cap);
  return is_long ? size : -size;
}

// Rounded toward zero to a multiple of lot (lot > 0; a relative epsilon absorbs 0.999...).
FXT_HD inline double signal_round_to_lot(const SignalParams& c, double qty) {
  if (c.lot <= 0) return qty;
  return trunc(qty / c.lot + (qty >= 0 ? 1e-9 : -1e-9)) * c.lot;
}

// Market entry: one market order for the target less position and working orders (signed).
template <class Ctx>
FXT_HD void signal_trade_market(const SignalParams& c, const SignalState& s, Ctx& ctx,
                                double position) {
  double working = 0;  // signed quantity of our orders still to fill
  for (int k = 0; k < ctx.open_count(); ++k) {
    const SignalOrder o = ctx.open_at(k);
    working += o.side * (o.qty - o.filled);
  }
  const double need = s.target - position - working;
  if (fabs(need) <= c.eps) return;
  ctx.submit(need > 0 ? 1 : -1, kSignalMarket, 0, fabs(need));
}

// Passive entry: one post-only order at our touch for what is still needed; every other open
// order (other side, market, a second one) is canceled once; the kept one follows the touch.
template <class Ctx>
FXT_HD void signal_trade_passive(const SignalParams& c, const SignalState& s,
                                 const SignalTouch& touch, Ctx& ctx, double position) {
  const double need = s.target - position;
  const int want = need > 0 ? 1 : -1;
  const bool has_touch = want > 0 ? touch.has_bid : touch.has_ask;
  const int64_t touch_px = want > 0 ? touch.bid_px : touch.ask_px;
  bool kept = false;
  SignalOrder keep;
  const int n = ctx.open_count();  // cancel() does not change the open orders
  for (int k = 0; k < n; ++k) {
    const SignalOrder o = ctx.open_at(k);
    if (ctx.cancel_sent(o.id)) continue;
    if (fabs(need) <= c.eps || o.side != want || kept || o.type == kSignalMarket) {
      ctx.cancel(o.id);
      ctx.mark_cancel_sent(o.id);
      continue;
    }
    kept = true;
    keep = o;
  }
  if (fabs(need) <= c.eps || !has_touch) return;
  if (!kept) {
    const uint64_t id = ctx.submit(want, kSignalPostOnly, touch_px, fabs(need));
    ctx.set_requested(id, touch_px, fabs(need));
    return;
  }
  // Join the touch with the size still needed (total size = filled so far + needed).
  const double total = keep.filled + fabs(need);
  int64_t cur_px = keep.px;
  double cur_qty = keep.qty;
  ctx.requested(keep.id, &cur_px, &cur_qty);  // leaves them when nothing was asked yet
  if (cur_px == touch_px && fabs(cur_qty - total) <= c.eps) return;
  ctx.modify(keep.id, touch_px, total);
  ctx.set_requested(keep.id, touch_px, total);
}

// SignalStrategy::on_event for a snapshot: the level of p, the holding-time rule, the target,
// then orders toward it.
template <class Ctx>
FXT_HD void signal_on_snapshot(const SignalParams& c, SignalState* s, double p, int64_t seen_ns,
                               const SignalTouch& touch, Ctx& ctx) {
  const int8_t level = signal_level(c, p);
  const double position = ctx.position();
  const int sign = position > c.eps ? 1 : (position < -c.eps ? -1 : 0);
  if (sign != 0 && sign != s->held_sign) s->held_since_ns = seen_ns;  // opened or flipped
  s->held_sign = sign;
  if (s->timer_block && level != s->blocked_level) s->timer_block = false;
  if (c.max_hold_ns > 0 && sign != 0 && !s->timer_block &&
      seen_ns - s->held_since_ns >= c.max_hold_ns) {
    s->timer_block = true;
    s->blocked_level = level;
  }
  s->level = level;
  s->exposure = s->timer_block ? 0 : signal_level_exposure(c, level, p, s->exposure);
  s->target = signal_round_to_lot(c, s->exposure * c.max_position);
  ctx.forget_finished();
  if (c.passive) {
    signal_trade_passive(c, *s, touch, ctx, position);
  } else {
    signal_trade_market(c, *s, ctx, position);
  }
}

// SignalStrategy::on_ack: an order that ended by ack leaves the lists.
template <class Ctx>
FXT_HD void signal_on_ack(uint8_t ack_kind, uint64_t id, Ctx& ctx) {
  // AckKind codes: 1 rejected, 2 canceled, 4 done (sim/types.h; checked in sim/gpu_lanes.cc).
  if (ack_kind == 1 || ack_kind == 2 || ack_kind == 4) ctx.forget(id);
}

}  // namespace fxt::sim
