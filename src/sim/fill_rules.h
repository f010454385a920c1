// The exchange simulator's fill rules as pure functions (DESIGN §7.2, §7.5), compiled for host
// and device: the CPU engine (sim/exchange.cc, queue.cc, latency.cc, account.h, engine.cc) and
// the vectorised lanes call these and nothing else for a fill decision, so the two cannot drift.
//
// Contract: no allocation, no exceptions, no std:: algorithms (device code); min/max are
// restated with std::min/std::max's exact semantics so every result is bit-identical to the
// code they replaced. Units as in sim/types.h: prices int64 in 1e-9 (kPxScale), quantities
// double, money double in currency (already times the multiplier), times ns.
// C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "core/host_device.h"
#include "core/random.h"
#include "data/book.h"

namespace fxt::sim {

// Fees (DESIGN §7.2): fee = bps·1e-4·notional + per_unit·qty, maker or taker; a negative
// value is a rebate. notional = px·kPxScale·qty·multiplier.
struct FeeSchedule {
  double maker_bps = 0;
  double taker_bps = 0;
  double maker_per_unit = 0;
  double taker_per_unit = 0;
};

struct Instrument {
  int64_t tick_px = 1;    // 1e-9 units; from the store's meta
  double multiplier = 1;  // contract multiplier (ES: 50)
};

// L2 queue-position estimate for cancels not explained by trades (DESIGN §7.2).
enum class QueueModelKind : uint8_t { kRiskAverse, kPower, kLog };
struct QueueModel {
  QueueModelKind kind = QueueModelKind::kRiskAverse;
  double power = 2;  // n of power:n
};

// Quantities closer than this are equal (sizes are lots, shares or coin amounts).
constexpr double kQtyEps = 1e-9;

// std::max / std::min, same argument order and NaN behaviour, for device code.
FXT_HD inline double max_of(double a, double b) {
  return a < b ? b : a;
}
FXT_HD inline double min_of(double a, double b) {
  return b < a ? b : a;
}
FXT_HD inline int64_t max_of(int64_t a, int64_t b) {
  return a < b ? b : a;
}

// ---- money -------------------------------------------------------------------------------

// Notional of qty at px in currency: px·1e-9·qty·multiplier.
FXT_HD inline double notional(int64_t px, double qty, double multiplier) {
  return static_cast<double>(px) * kPxScale * qty * multiplier;
}

// fee = bps·1e-4·notional + per_unit·qty (maker or taker rates); negative = rebate.
FXT_HD inline double fill_fee(const FeeSchedule& fees, bool maker, int64_t px, double qty,
                              double multiplier) {
  const double bps = maker ? fees.maker_bps : fees.taker_bps;
  const double per_unit = maker ? fees.maker_per_unit : fees.taker_per_unit;
  return bps * 1e-4 * notional(px, qty, multiplier) + per_unit * qty;
}

// Position, cash and fees of one account; apply_fill is the one place they change.
struct Holdings {
  double position = 0;
  double cash = 0;
  double fees = 0;
};
// A fill of side +1 (buy) or -1 (sell).
FXT_HD inline void apply_fill(Holdings* a, int side, int64_t px, double qty, double fee,
                              double multiplier) {
  a->position += side * qty;
  a->cash -= side * notional(px, qty, multiplier) + fee;
  a->fees += fee;
}

// ---- the displayed book ------------------------------------------------------------------

// Displayed size at `level_px` on one side's kBookLevels levels (p best first). *known = false
// when the price is worse than the deepest of kBookLevels shown levels: the size is unknown.
FXT_HD inline double level_size_at(const int64_t* p, const double* s, int side, int64_t level_px,
                                   bool* known) {
  *known = true;
  for (int i = 0; i < kBookLevels; ++i) {
    if (p[i] == kEmptyPx) return 0;  // fewer levels than the depth: every level is shown
    if (p[i] == level_px) return s[i];
    // Levels are best first: past our price, the level is absent from a shown range.
    if (side > 0 ? p[i] < level_px : p[i] > level_px) return 0;
  }
  *known = false;
  return 0;
}

// The mid in currency per unit when both touches have size; *ok = false otherwise.
FXT_HD inline double touch_mid(int64_t bid_px, double bid_sz, int64_t ask_px, double ask_sz,
                               bool* ok) {
  *ok = bid_px != kEmptyPx && ask_px != kEmptyPx && bid_sz > 0 && ask_sz > 0;
  return *ok ? 0.5 * (static_cast<double>(bid_px) + static_cast<double>(ask_px)) * kPxScale : 0;
}

// ---- marketable orders -------------------------------------------------------------------

// A taker of side `side` (+1 buy) with a limit stops at an opposite level priced beyond it.
FXT_HD inline bool beyond_limit(int side, int64_t level_px, int64_t limit) {
  return side > 0 ? level_px > limit : level_px < limit;
}

// Size still takeable at a level showing `displayed` of which we took `taken`.
FXT_HD inline double level_left(double displayed, double taken) {
  return displayed - taken;
}

// One step of the level walk: what an order wanting `want` takes from a level with `left`;
// 0 when the level is used up (the walk then moves on).
FXT_HD inline double walk_take(double left, double want) {
  return left <= kQtyEps ? 0 : min_of(left, want);
}

// A limit price at `px` crosses the best opposite `opp_px` (kEmptyPx: none).
FXT_HD inline bool crosses(int side, int64_t px, int64_t opp_px) {
  if (opp_px == kEmptyPx) return false;
  return side > 0 ? px >= opp_px : px <= opp_px;
}

// A fill of `qty` against `remaining`: the whole remainder when within kQtyEps (no dust).
FXT_HD inline double clamp_fill(double qty, double remaining) {
  return qty >= remaining - kQtyEps ? remaining : qty;
}

// ---- resting orders ----------------------------------------------------------------------

// A trade at trade_px printed through a resting order of side `side` at px: fills it all.
FXT_HD inline bool trades_through(int side, int64_t trade_px, int64_t px) {
  return side > 0 ? trade_px < px : trade_px > px;
}

// A trade at our price hits our side unless its aggressor (trade_side) was on our side.
FXT_HD inline bool trade_hits_level(int side, int64_t px, int64_t trade_px, int trade_side) {
  return trade_px == px && trade_side != side;
}

// The opposite touch (net of what we took) reached our resting price: filled as maker.
FXT_HD inline bool touch_reaches(int side, int64_t px, int64_t opp_px) {
  return opp_px != kEmptyPx && (side > 0 ? opp_px <= px : opp_px >= px);
}

// p of sim/queue.h: share of an unexplained level decrease that is behind us.
FXT_HD inline double queue_share_behind(const QueueModel& model, double front, double back) {
  front = max_of(front, 0.0);
  back = max_of(back, 0.0);
  double b = 0, f = 0;
  switch (model.kind) {
    case QueueModelKind::kRiskAverse:
      return 1.0;
    case QueueModelKind::kPower:
      b = ::pow(back, model.power);
      f = ::pow(front, model.power);
      break;
    case QueueModelKind::kLog:
      b = ::log1p(back);
      f = ::log1p(front);
      break;
  }
  if (b + f <= 0) return 1.0;
  return b / (b + f);
}

// L2 estimate of one resting order's queue position (formulas in sim/queue.h).
struct L2Queue {
  double ahead = 0;       // estimated size ahead of us
  double level_size = 0;  // displayed size at our price at the last observation
  double traded = 0;      // volume traded at our price since that observation
  bool known = false;     // false until the level was seen (joined below the displayed depth)

  // Joins the back of a level showing `displayed` (known = false: not displayed).
  FXT_HD void join(double displayed, bool displayed_known) {
    known = displayed_known;
    ahead = displayed_known ? displayed : 0;
    level_size = displayed_known ? displayed : 0;
    traded = 0;
  }
  // A trade of `size` at our price. Returns the volume that traded beyond the queue ahead
  // (what reaches our order).
  FXT_HD double on_trade(double size) {
    if (!known) return 0;  // we do not know the queue yet: nothing reaches us
    traded += size;
    const double beyond = size - ahead;
    ahead = max_of(0.0, ahead - size);
    return max_of(0.0, beyond);
  }
  // True when on_level with the very size of the last observation (bit for bit) would
  // change nothing but set traded to +0: the level was seen, nothing traded since, and the
  // estimate is within the level (the GPU lanes skip such an update on a side of the book
  // that did not change).
  FXT_HD bool settled() const {
    return known && traded == 0 && level_size >= 0 && ahead <= level_size;
  }
  // The next snapshot shows `size` at our price (size_known = false: the level is deeper
  // than the displayed depth: nothing is learned).
  FXT_HD void on_level(const QueueModel& model, double size, bool size_known) {
    if (!size_known) return;
    if (!known) {
      join(size, true);
      return;
    }
    // What the level would show if only the trades had happened.
    const double expected = max_of(0.0, level_size - traded);
    if (size < expected) {
      const double decrease = expected - size;
      const double front = ahead;
      const double back = max_of(0.0, expected - front);
      const double p = queue_share_behind(model, front, back);
      ahead = max_of(0.0, ahead - decrease * (1.0 - p));
    }
    ahead = min_of(ahead, size);  // never more ahead than the level holds
    level_size = size;
    traded = 0;
  }
};

// L3 FIFO arithmetic on the size ahead (the order list itself is the caller's): the size
// still ahead once the trades not yet followed by their cancels are netted out.
FXT_HD inline double fifo_effective_ahead(double ahead_size, double pending_traded) {
  const double a = ahead_size - pending_traded;
  return a > 0 ? a : 0;
}
// A trade of `size` at our price; returns the volume beyond the queue ahead.
FXT_HD inline double fifo_on_trade(double ahead_size, double* pending_traded, double size) {
  const double eff = fifo_effective_ahead(ahead_size, *pending_traded);
  const double consumed = min_of(size, eff);
  *pending_traded += consumed;
  return max_of(0.0, size - eff);
}
// An MBO event (action, px, sz) for an order ahead of ours, resting at our level's price
// `level_px` with `size`: the size that leaves the queue ahead. A cancel cuts min(sz, size); a
// modify at the same price to a size in (0, size] keeps its place and cuts the difference; any
// other modify, and a re-add of the same id, sends all of it behind us. *behind: the order is no
// longer ahead of us. Other actions cut nothing.
FXT_HD inline double fifo_ahead_cut(char action, int64_t px, double sz, int64_t level_px,
                                    double size, bool* behind) {
  *behind = false;
  switch (action) {
    case 'C': {
      const double cut = min_of(sz, size);
      *behind = size - cut <= 0;
      return cut;
    }
    case 'M':
      if (px != level_px || sz > size || sz <= 0) {  // priority lost, or the order left
        *behind = true;
        return size;
      }
      return size - sz;
    case 'A':  // the same id added again replaces the old order at the back
      *behind = true;
      return size;
    default:
      return 0;
  }
}

// ---- latency -----------------------------------------------------------------------------

// A recorded latency curve at at_ns: linear between the samples around it, clamped outside;
// ts strictly increasing, n >= 1.
FXT_HD inline int64_t interpolate_latency(const int64_t* ts, const int64_t* values, size_t n,
                                          int64_t at_ns) {
  if (at_ns <= ts[0]) return values[0];
  if (at_ns >= ts[n - 1]) return values[n - 1];
  // First sample strictly after at_ns (upper bound); the one before it is at or before at_ns.
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (at_ns < ts[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  hi = lo;
  lo = hi - 1;
  const double f = static_cast<double>(at_ns - ts[lo]) / static_cast<double>(ts[hi] - ts[lo]);
  const double v =
      static_cast<double>(values[lo]) + f * static_cast<double>(values[hi] - values[lo]);
  return static_cast<int64_t>(::llround(v));
}

// Messages of one session travel in order: one sent at `t` with latency `lat` arrives at
// t + lat, never before the previous message (`last`).
FXT_HD inline int64_t in_order_arrival(int64_t last, int64_t t, int64_t lat) {
  return max_of(last, t + lat);
}

// The model market's fill check (sim/model_market.h; the RL market-making env rl/*_lane.h
// runs it on the device too): each side fills with probability min(1, arrival_prob·e^{−k·depth})
// (arrival_prob = A·Δt), drawn bid then ask from rng; a side quoted at infinite depth never
// fills but still consumes its draw.
struct ModelMarketFills {
  bool bid = false, ask = false;
};
// The fill probability of one side quoted at `depth` (0 at infinite depth).
FXT_HD inline double model_fill_prob(double arrival_prob, double k, double depth) {
  const double raw = arrival_prob * exp(-k * depth);
  return raw < 1.0 ? raw : 1.0;  // std::min(1.0, raw)
}
FXT_HD inline ModelMarketFills model_fill_draws(double arrival_prob, double k, double bid_depth,
                                                double ask_depth, Rng* rng) {
  const double bid_p = model_fill_prob(arrival_prob, k, bid_depth);
  const double ask_p = model_fill_prob(arrival_prob, k, ask_depth);
  ModelMarketFills f;
  f.bid = rng->unit() < bid_p;
  f.ask = rng->unit() < ask_p;
  return f;
}

}  // namespace fxt::sim
