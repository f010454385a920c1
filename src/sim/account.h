// Position, cash and fees of one instrument (DESIGN §7.2), kept the same way on the
// exchange side (the truth in BacktestResult) and on the strategy side (from the fills
// delivered so far).
//
// A buy of q at price px (1e-9 units) costs px·1e-9·q·multiplier plus its fee; a sell
// brings the same in minus its fee. Equity = cash + position·mid·multiplier. Every fill,
// partial ones included, goes through apply_fill, so the three stay consistent.
#pragma once

#include <cstdint>

#include "sim/types.h"

namespace fxt::sim {

// fee = bps·1e-4·notional + per_unit·qty (maker or taker rates); negative = rebate.
double fill_fee(const FeeSchedule& fees, bool maker, int64_t px, double qty, double multiplier);

// Notional of qty at px in currency: px·1e-9·qty·multiplier.
inline double notional(int64_t px, double qty, double multiplier) {
  return static_cast<double>(px) * kPxScale * qty * multiplier;
}

class Account {
 public:
  explicit Account(double multiplier = 1) : multiplier_(multiplier) {}

  void apply_fill(Side side, int64_t px, double qty, double fee) {
    position_ += sign(side) * qty;
    cash_ -= sign(side) * notional(px, qty, multiplier_) + fee;
    fees_ += fee;
  }
  double position() const { return position_; }
  double cash() const { return cash_; }
  double fees() const { return fees_; }
  // mid in currency per unit.
  double equity(double mid) const { return cash_ + position_ * mid * multiplier_; }
  double multiplier() const { return multiplier_; }

 private:
  double multiplier_;
  double position_ = 0;
  double cash_ = 0;
  double fees_ = 0;
};

}  // namespace fxt::sim
