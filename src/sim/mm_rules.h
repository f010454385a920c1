// The `mm` strategy's decisions (sim/strategy_mm.h) as one template, compiled for host and
// device: the CPU strategy (MarketMakerStrategy) and the GPU lanes (sim/lane_engine.h) both
// run mm_decide on their own context, so their quotes cannot drift.
//
// The strategy is two halves. mm_observe / mm_on_trade: the σ and arrival estimates, a
// function of the delivered market rows and the tick alone (no lane state, no other
// parameter); the CPU strategy runs them on every event, the GPU lanes read them from a table
// computed once per stream and tick with the same functions (LaneMmRow, sim/lane_engine.h).
// mm_decide: the quote and the orders of one snapshot past warmup, given those estimates.
//
// A context `Ctx` provides: position() (units, from the fills received), open(id, &qty)
// (true when order id is still open for the strategy; its total size), submit(side, px, qty)
// (a post-only order; returns its id), cancel(id), modify(id, px, qty).
// The lane-constant transcendental terms (log1p, pow) are precomputed on the host
// (mm_params), so the device evaluates + − × ÷, sqrt, floor and ceil only: the host's bits.
// C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include <cstdint>

#include "sim/fill_rules.h"
#include "sim/quoting.h"

namespace fxt::sim {

// The quote prices (1e-9) for one decision; has_bid/has_ask false when that side is not
// quoted (inventory limit).
struct MarketMakerQuote {
  bool has_bid = false, has_ask = false;
  int64_t bid_px = 0, ask_px = 0;
};

// MarketMakerConfig (sim/strategy_mm.h) flattened for device code, plus its constant terms.
struct MmParams {
  bool glft = false;
  double gamma = 0.001, k = 3.0, sigma = 0, arrival = 0, order_qty = 1, max_inventory = 5;
  double requote_ticks = 1, skew_ticks = 1;
  int warmup = 100;
  double as_spread = 0;  // (2 / gamma)·log1p(gamma / k): AS's constant spread term
  // The inventory limit with its tolerance, eps = 1e-9·max_inventory: a bid is quoted while
  // inventory + order_qty <= max_inventory + eps, an ask while inventory − order_qty >=
  // −max_inventory − eps (mm_params sets both).
  double inventory_hi = 0, inventory_lo = 0;
  GlftTerms glft_terms;  // glft_terms(gamma, k, 1)
};

// The market estimates (mm_observe): the same for every lane of one tick.
struct MmEstimates {
  uint64_t snapshots_seen = 0;  // two-sided snapshots delivered
  uint32_t last_store = UINT32_MAX;
  int64_t last_ts = 0;
  double last_mid_ticks = 0;
  double var_sum = 0;  // sum of squared mid changes, ticks²
  double elapsed = 0;  // session fractions elapsed over the snapshots seen
  uint64_t trades_seen = 0;
};

// The working quotes (mm_decide): the lane's own.
struct MmQuotes {
  uint64_t bid_id = 0, ask_id = 0;  // working quotes (0 = none)
  int64_t bid_px = 0, ask_px = 0;   // their last requested prices
};

// What the CPU strategy accumulates.
struct MmState {
  MmEstimates est;
  MmQuotes quotes;
};

// One snapshot as mm sees it (feed latency late).
struct MmSnapshot {
  uint32_t store = 0;
  int64_t ts_ns = 0, seen_ns = 0;
  int64_t bid_px = 0, ask_px = 0;  // touch (1e-9)
  double bid_sz = 0, ask_sz = 0;
  int64_t session_start = 0, session_end = 0;  // the store's span
  double p = 0.5;                              // the signal's probability (has_signal)
};

FXT_HD inline double mm_clamp(double v, double lo, double hi) {  // std::clamp's semantics
  return v < lo ? lo : hi < v ? hi : v;
}
FXT_HD inline bool mm_finite(double v) {
  return v - v == 0;  // false for ±inf and NaN
}

FXT_HD inline double mm_sigma_estimate(const MmEstimates& s) {
  return s.elapsed > 0 ? ::sqrt(s.var_sum / s.elapsed) : 0.0;
}
FXT_HD inline double mm_arrival_estimate(const MmEstimates& s) {
  return s.elapsed > 0 ? static_cast<double>(s.trades_seen) / s.elapsed : 0.0;
}

// The mid in ticks of a touch (bid0 + ask0)/2 / tick: mm_observe's and mm_quote's.
FXT_HD inline double mm_mid_ticks(int64_t bid0, int64_t ask0, int64_t tick_px) {
  return (static_cast<double>(bid0) + static_cast<double>(ask0)) * 0.5 /
         static_cast<double>(tick_px);
}

// The largest quote in ticks whose price fits int64 (a lane constant: no division per quote).
FXT_HD inline double mm_tick_limit(int64_t tick_px) {
  return 9e18 / static_cast<double>(tick_px);
}

// mm_quote of a two-sided touch (tick_px > 0) whose mid in ticks is given; tick_limit =
// mm_tick_limit(tick_px).
FXT_HD inline MarketMakerQuote mm_quote_at(const MmParams& c, bool has_signal, int64_t bid0,
                                           int64_t ask0, double mid_ticks, int64_t tick_px,
                                           double tick_limit, double inventory, double tau,
                                           double sigma, double arrival, double p) {
  MarketMakerQuote out;
  const double q = inventory / c.order_qty;
  Quote raw;
  if (c.glft) {
    if (!(arrival > 0)) return out;
    raw = glft_quote_from(mid_ticks, q, c.gamma, sigma, arrival, c.k, 1.0, c.glft_terms);
  } else {
    raw = avellaneda_stoikov_quote_from(mid_ticks, q, tau, c.gamma, sigma, c.as_spread);
  }
  const double shift = has_signal ? c.skew_ticks * (2 * mm_clamp(p, 0.0, 1.0) - 1) : 0.0;
  const double bid_t = ::floor(raw.bid + shift + 1e-9);  // round the bid down
  const double ask_t = ::ceil(raw.ask + shift - 1e-9);   // and the ask up
  // Finite and within the tick limit, in one comparison each: tick_limit is finite, and a NaN
  // or infinite bid_t / ask_t fails `<=` (the same quotes as testing mm_finite first).
  if (!(::fabs(bid_t) <= tick_limit) || !(::fabs(ask_t) <= tick_limit)) return out;
  const int64_t bid_cap = ask0 - tick_px, ask_floor = bid0 + tick_px;
  const int64_t bid_px = static_cast<int64_t>(bid_t) * tick_px;
  const int64_t ask_px = static_cast<int64_t>(ask_t) * tick_px;
  out.bid_px = bid_cap < bid_px ? bid_cap : bid_px;      // std::min
  out.ask_px = ask_px < ask_floor ? ask_floor : ask_px;  // std::max
  out.has_bid = out.bid_px > 0 && inventory + c.order_qty <= c.inventory_hi;
  out.has_ask = inventory - c.order_qty >= c.inventory_lo;
  return out;
}

// The quote for a touch, inventory (units), tau, sigma (ticks/sqrt(session)), arrival (per
// session) and signal p: formulas in ticks, bid rounded down and ask up to the tick, kept one
// tick inside the opposite touch so post-only quotes do not cross.
FXT_HD inline MarketMakerQuote mm_quote(const MmParams& c, bool has_signal, int64_t bid0,
                                        int64_t ask0, bool two_sided, int64_t tick_px,
                                        double inventory, double tau, double sigma, double arrival,
                                        double p) {
  if (!two_sided || tick_px <= 0) return MarketMakerQuote();
  return mm_quote_at(c, has_signal, bid0, ask0, mm_mid_ticks(bid0, ask0, tick_px), tick_px,
                     mm_tick_limit(tick_px), inventory, tau, sigma, arrival, p);
}

// One side's working quote: cancel when not wanted, submit when none, modify when the price
// moved by at least requote_ticks.
template <typename Ctx>
FXT_HD void mm_work_side(const MmParams& c, Ctx& ctx, int side, bool wanted, int64_t px,
                         int64_t tick_px, uint64_t* order_id, int64_t* last_px) {
  if (!wanted) {
    if (*order_id != 0) ctx.cancel(*order_id);
    *order_id = 0;
    return;
  }
  if (*order_id == 0) {
    *order_id = ctx.submit(side, px, c.order_qty);
    *last_px = px;
    return;
  }
  // An unmoved price is 0 ticks without the division (tick_px > 0: the same 0.0).
  const int64_t moved = px - *last_px;
  const double moved_ticks =
      moved == 0 ? 0.0 : ::fabs(static_cast<double>(moved)) / static_cast<double>(tick_px);
  if (moved_ticks + 1e-9 < max_of(c.requote_ticks, 1e-9)) return;
  double total = c.order_qty;
  ctx.open(*order_id, &total);
  ctx.modify(*order_id, px, total);
  *last_px = px;
}

FXT_HD inline void mm_on_trade(MmEstimates* s) {
  ++s->trades_seen;
}

// A snapshot delivered to the strategy, for the estimates: false when it does not count (a
// touch without size, or no tick), else the estimates move and snapshots_seen counts it.
FXT_HD inline bool mm_observe(MmEstimates* s, const MmSnapshot& e, int64_t tick_px) {
  const bool has_bid = e.bid_px != kEmptyPx && e.bid_sz > 0;  // Snapshot::has_bid
  const bool has_ask = e.ask_px != kEmptyPx && e.ask_sz > 0;
  if (!has_bid || !has_ask) return false;
  if (tick_px <= 0) return false;
  const double length = static_cast<double>(e.session_end - e.session_start);
  const double mid_ticks = mm_mid_ticks(e.bid_px, e.ask_px, tick_px);
  if (e.store == s->last_store && length > 0) {
    const double d = mid_ticks - s->last_mid_ticks;
    s->var_sum += d * d;
    s->elapsed += static_cast<double>(e.ts_ns - s->last_ts) / length;
  }
  s->last_store = e.store;
  s->last_ts = e.ts_ns;
  s->last_mid_ticks = mid_ticks;
  ++s->snapshots_seen;
  return true;
}

// The decision on a counted snapshot past warmup (tick_px > 0, tick_limit =
// mm_tick_limit(tick_px)): mid_ticks = mm_mid_ticks of its touch; sigma_est and arrival_est
// the estimates once it is observed (mm_sigma_estimate, mm_arrival_estimate), used where the
// parameters leave them to be estimated.
template <typename Ctx>
FXT_HD void mm_decide(const MmParams& c, bool has_signal, MmQuotes* s, const MmSnapshot& e,
                      double mid_ticks, double sigma_est, double arrival_est, int64_t tick_px,
                      double tick_limit, Ctx& ctx) {
  // Forget working quotes that are final (filled, canceled, rejected).
  double unused = 0;
  if (s->bid_id != 0 && !ctx.open(s->bid_id, &unused)) s->bid_id = 0;
  if (s->ask_id != 0 && !ctx.open(s->ask_id, &unused)) s->ask_id = 0;

  const double length = static_cast<double>(e.session_end - e.session_start);
  const double sigma = c.sigma > 0 ? c.sigma : sigma_est;
  const double arrival = c.arrival > 0 ? c.arrival : arrival_est;
  const double tau =
      length > 0 ? mm_clamp(static_cast<double>(e.session_end - e.seen_ns) / length, 0.0, 1.0)
                 : 0.0;
  const double p = has_signal ? e.p : 0.5;
  const MarketMakerQuote q = mm_quote_at(c, has_signal, e.bid_px, e.ask_px, mid_ticks, tick_px,
                                         tick_limit, ctx.position(), tau, sigma, arrival, p);
  mm_work_side(c, ctx, +1, q.has_bid, q.bid_px, tick_px, &s->bid_id, &s->bid_px);
  mm_work_side(c, ctx, -1, q.has_ask, q.ask_px, tick_px, &s->ask_id, &s->ask_px);
}

// A snapshot delivered to the strategy: the estimates, then (past warmup) the quotes.
template <typename Ctx>
FXT_HD void mm_on_snapshot(const MmParams& c, bool has_signal, MmState* s, const MmSnapshot& e,
                           int64_t tick_px, Ctx& ctx) {
  if (!mm_observe(&s->est, e, tick_px)) return;
  if (s->est.snapshots_seen <= static_cast<uint64_t>(c.warmup)) return;
  mm_decide(c, has_signal, &s->quotes, e, s->est.last_mid_ticks, mm_sigma_estimate(s->est),
            mm_arrival_estimate(s->est), tick_px, mm_tick_limit(tick_px), ctx);
}

}  // namespace fxt::sim
