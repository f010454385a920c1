// The fill rules of sim/fill_rules.h run on the GPU (DESIGN §7.5): one evaluation per case,
// the host reference being the very same FXT_HD function run on the CPU. This is the parity
// check that nvcc and the host compiler turn the shared rules into the same results; the GPU
// lanes are built on these functions. C++17-clean: included by .cu files.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/fill_rules.h"

namespace fxt::sim {

// One pass through every rule: a resting order's L2 queue under a trade at its price and the
// next snapshot, the marketable walk of one level, the fill clamp, its fee and account update,
// the L3 FIFO arithmetic and a latency lookup on a 4-sample curve.
struct FillRuleCase {
  QueueModel model;
  L2Queue queue;          // before the events
  double trade_size = 0;  // a trade at our price
  double level_size = 0;  // then the next snapshot shows this at our price
  bool level_known = true;
  double displayed = 0, taken = 0, want = 0;  // one level of a marketable walk
  double remaining = 0;
  FeeSchedule fees;
  bool maker = false;
  int side = 1;
  int64_t px = 0;
  double multiplier = 1;
  double fifo_ahead = 0, fifo_pending = 0;
  int64_t latency_ts[4] = {0, 0, 0, 0};
  int64_t latency_values[4] = {0, 0, 0, 0};
  int64_t latency_at_ns = 0;
};

struct FillRuleOutcome {
  double share = 0;   // queue_share_behind(model, ahead, level_size - ahead)
  double beyond = 0;  // L2Queue::on_trade
  L2Queue after;      // after on_trade and on_level
  double take = 0;    // walk_take(level_left(displayed, taken), want), then clamp_fill
  double fee = 0;
  Holdings holdings;  // after apply_fill of take
  double fifo_beyond = 0, fifo_pending = 0;
  int64_t latency = 0;
};

FXT_HD inline void evaluate_fill_rules(const FillRuleCase& c, FillRuleOutcome* o) {
  o->share = queue_share_behind(c.model, c.queue.ahead, c.level_size - c.queue.ahead);
  o->after = c.queue;
  o->beyond = o->after.on_trade(c.trade_size);
  o->after.on_level(c.model, c.level_size, c.level_known);
  o->take = clamp_fill(walk_take(level_left(c.displayed, c.taken), c.want), c.remaining);
  o->fee = fill_fee(c.fees, c.maker, c.px, o->take, c.multiplier);
  o->holdings = Holdings{};
  apply_fill(&o->holdings, c.side, c.px, o->take, o->fee, c.multiplier);
  o->fifo_pending = c.fifo_pending;
  o->fifo_beyond = fifo_on_trade(c.fifo_ahead, &o->fifo_pending, c.trade_size);
  o->latency = interpolate_latency(c.latency_ts, c.latency_values, 4, c.latency_at_ns);
}

// Runs evaluate_fill_rules for every case on the current CUDA device. Requires a device
// (gpu::cuda_available()); defined only in CUDA builds (FXT_HAVE_CUDA).
std::vector<FillRuleOutcome> evaluate_fill_rules_on_device(const std::vector<FillRuleCase>& cases);

}  // namespace fxt::sim
