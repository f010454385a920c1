// Position, cash and fees of one instrument (DESIGN §7.2), kept the same way on the
// exchange side (the truth in BacktestResult) and on the strategy side (from the fills
// delivered so far).
//
// A buy of q at price px (1e-9 units) costs px·1e-9·q·multiplier plus its fee; a sell
// brings the same in minus its fee. Equity = cash + position·mid·multiplier. Every fill,
// partial ones included, goes through apply_fill, so the three stay consistent.
#pragma once

#include <cstdint>

#include "sim/fill_rules.h"
#include "sim/types.h"

namespace fxt::sim {

// fill_fee and notional: sim/fill_rules.h.

class Account {
 public:
  explicit Account(double multiplier = 1) : multiplier_(multiplier) {}

  void apply_fill(Side side, int64_t px, double qty, double fee) {
    sim::apply_fill(&h_, sign(side), px, qty, fee, multiplier_);
  }
  double position() const { return h_.position; }
  double cash() const { return h_.cash; }
  double fees() const { return h_.fees; }
  // mid in currency per unit.
  double equity(double mid) const { return h_.cash + h_.position * mid * multiplier_; }
  double multiplier() const { return multiplier_; }

 private:
  double multiplier_;
  Holdings h_;
};

}  // namespace fxt::sim
