#include "sim/account.h"

namespace fxt::sim {

double fill_fee(const FeeSchedule& fees, bool maker, int64_t px, double qty, double multiplier) {
  const double bps = maker ? fees.maker_bps : fees.taker_bps;
  const double per_unit = maker ? fees.maker_per_unit : fees.taker_per_unit;
  return bps * 1e-4 * notional(px, qty, multiplier) + per_unit * qty;
}

}  // namespace fxt::sim
