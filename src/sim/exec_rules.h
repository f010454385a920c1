// The `twap` and `ac` strategies' decisions (sim/strategy_exec.h) as one template, compiled for
// host and device: the CPU ExecutionStrategy and the GPU lanes (sim/lane_engine.h) both run
// exec_on_event / exec_on_fill on their own context, so their child orders cannot drift.
//
// A context `Ctx` provides: working() (units still working in the strategy's open orders:
// Σ qty − filled) and submit(side, type, px, qty) (type kExecMarket or kExecIoc; returns the id).
// The holdings schedule (slices + 1 values, sim/schedule.h) is computed once on the host; the
// device evaluates + − × ÷ and floor only. C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include <cstdint>

#include "sim/fill_rules.h"

namespace fxt::sim {

// Order types the execution strategies send (sim/types.h OrderType codes, checked there).
enum : uint8_t { kExecMarket = 0, kExecIoc = 3 };

// ExecutionConfig (sim/strategy_exec.h) resolved for one run: the window in the strategy's
// clock (exchange time), the IOC offset in price units.
struct ExecParams {
  int side = -1;  // +1 buy (acquire), -1 sell (liquidate)
  double qty = 10;
  int64_t start_ns = 0, end_ns = 0;  // end >= start
  int slices = 10;
  bool limit = false;       // marketable limit IOC children instead of market orders
  int64_t through_px = 0;   // IOC price this far through the opposite touch (ticks · tick_px)
  double lot = 0;           // > 0: children in whole lots
};

// What the strategy accumulates; its report (stats.json) is a function of this and the config.
struct ExecState {
  int next_slice = 0;    // the next interval whose child order is still to send
  double executed = 0;   // units filled so far (unsigned)
  double arrival_mid = 0;                           // currency/unit; 0 until a two-sided book
  double market_notional = 0, market_volume = 0;    // prints seen in the window
  double fill_notional = 0, fees = 0;               // our fills (notional per unit, fees currency)
  double multiplier = 1;
};

// One market event as the execution strategy sees it (feed latency late).
struct ExecEvent {
  int64_t seen_ns = 0;
  bool is_trade = false;
  int64_t trade_px = 0;  // is_trade: the print
  double trade_sz = 0;
  // The latest book the strategy has seen (has_* as Snapshot::has_bid / has_ask).
  bool has_bid = false, has_ask = false;
  int64_t bid_px = 0, ask_px = 0;
  double multiplier = 1;
};

// True when the window's slice index can be computed in int64 (window · slices fits): the
// device lanes require it; the host falls back to long double beyond it.
FXT_HD inline bool exec_slices_exact(int64_t window_ns, int slices) {
  return slices > 0 && window_ns <= INT64_MAX / slices;
}

// The latest interval that has started at `now` (start <= now): floor((now − start)·slices /
// window), at most slices − 1; slices − 1 from the window's end on.
FXT_HD inline int exec_latest_slice(int64_t now, int64_t start, int64_t end, int slices) {
  if (now >= end) return slices - 1;
  const int64_t window = end - start;  // > 0 here
  const int64_t into = now - start;
  int64_t j;
  if (exec_slices_exact(window, slices)) {
    j = into * slices / window;  // exact: into < window, so the product fits too
  } else {
#if defined(__CUDA_ARCH__)
    j = slices - 1;  // unreachable: the device lanes refuse such windows (gpu_lane_config)
#else
    j = static_cast<int64_t>(static_cast<long double>(into) / static_cast<long double>(window) *
                             slices);
#endif
  }
  return j < slices - 1 ? static_cast<int>(j) : slices - 1;
}

// ExecutionStrategy::on_event: the benchmarks (window VWAP, arrival mid), then at the first
// event of each new interval one child for what the schedule says is due by its end, less
// what has filled and what is working (shortfalls roll on), in whole lots when lot > 0.
template <class Ctx>
FXT_HD void exec_on_event(const ExecParams& p, const double* holdings, ExecState* s,
                          const ExecEvent& e, Ctx& ctx) {
  const int64_t now = e.seen_ns;
  if (now < p.start_ns) return;
  if (now <= p.end_ns && e.is_trade) {
    s->market_notional += static_cast<double>(e.trade_px) * kPxScale * e.trade_sz;
    s->market_volume += e.trade_sz;
  }
  if (s->arrival_mid == 0 && e.has_bid && e.has_ask) {
    s->arrival_mid =
        (static_cast<double>(e.bid_px) + static_cast<double>(e.ask_px)) / 2 * kPxScale;
    s->multiplier = e.multiplier;
  }
  if (s->next_slice >= p.slices) return;
  const int latest = exec_latest_slice(now, p.start_ns, p.end_ns, p.slices);
  if (latest < s->next_slice) return;
  s->next_slice = latest + 1;

  const double working = ctx.working();
  const double due = p.qty - holdings[latest + 1];
  double child = due - s->executed - working;
  if (p.lot > 0) {  // whole lots, rounded down (a relative epsilon absorbs 0.999999...)
    child = floor(child / p.lot + 1e-9) * p.lot;
  }
  if (child <= 1e-9 * p.qty) return;
  const bool has_far = p.side > 0 ? e.has_ask : e.has_bid;
  if (p.limit && has_far) {
    const int64_t px = p.side > 0 ? e.ask_px + p.through_px : e.bid_px - p.through_px;
    ctx.submit(p.side, kExecIoc, px, child);
  } else {
    ctx.submit(p.side, kExecMarket, 0, child);
  }
}

// ExecutionStrategy::on_fill: a fill of ours reached the strategy.
FXT_HD inline void exec_on_fill(ExecState* s, int64_t px, double qty, double fee,
                                double multiplier) {
  s->executed += qty;
  s->fill_notional += static_cast<double>(px) * kPxScale * qty;
  s->fees += fee;
  s->multiplier = multiplier;
}

}  // namespace fxt::sim
