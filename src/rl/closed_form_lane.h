// The closed-form reference agents' controls for one lane, as FXT_HD functions: the CPU agents
// (ExecutionEnv::optimal_speeds, CarteaJaimungalAgent) and their device versions
// (rl/device_reference.h) call these, so the references are written once. Formulas in
// rl/execution.h and rl/market_making.h. C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include "core/host_device.h"
#include "rl/execution_lane.h"
#include "rl/market_making_lane.h"

namespace fxt::rl {

// v(τ) of the execution closed form: the optimal speed per share held with τ time left.
FXT_HD inline double execution_speed_factor(const ExecutionDynamics& d, double tau) {
  const double a = d.alpha - d.perm_impact / 2;
  if (d.phi == 0) {
    const double v_terminal = a / d.temp_impact;
    return v_terminal / (1 + v_terminal * tau);
  }
  const double gamma = sqrt(d.phi / d.temp_impact);
  const double c = sqrt(d.temp_impact * d.phi);
  const double up = (a + c) * exp(gamma * tau), down = (a - c) * exp(-gamma * tau);
  return gamma * (up + down) / (up - down);
}

// The closed-form agent's speed for a lane: v(T − t)·q, at least 0.
FXT_HD inline double execution_optimal_speed(const ExecutionDynamics& d,
                                             const ExecutionLane& lane) {
  const double t = lane.k * d.dt;
  const double v = execution_speed_factor(d, d.horizon - t) * lane.q;
  return 0.0 < v ? v : 0.0;  // std::max(0.0, v)
}

// The Cartea–Jaimungal agent's depths for a lane from its table h[(step)·(2Q + 1) + q + Q]
// (CarteaJaimungalAgent): δ_b = 1/k + h(q) − h(q + 1), δ_a = 1/k + h(q) − h(q − 1); a side at the
// bound |q| = Q is not quoted (infinite depth).
FXT_HD inline void cartea_jaimungal_depths(const double* h, int max_inventory, double inv_k,
                                           const MarketMakingLane& lane, double* bid, double* ask) {
  const int Q = max_inventory;
  const int q = static_cast<int>(lround(lane.q));
  const double* row = h + static_cast<long>(lane.k) * (2 * Q + 1) + Q;  // row[q] = h(step, q)
  *bid = q < Q ? inv_k + row[q] - row[q + 1] : HUGE_VAL;
  *ask = q > -Q ? inv_k + row[q] - row[q - 1] : HUGE_VAL;
}

}  // namespace fxt::rl
