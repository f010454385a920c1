// Execution schedules for liquidating (or acquiring) a position q0 over a horizon T
// (DESIGN §7.3 `twap` and `ac` baselines). Holdings are the signed quantity still to trade.
#pragma once

#include <vector>

namespace fxt::sim {

// Remaining holdings at the start of each of `intervals` equal intervals and at the end
// (intervals+1 values; first q0, last 0): q_j = q0·(1 − j/intervals). intervals >= 1.
std::vector<double> twap_holdings(double q0, int intervals);

// Almgren–Chriss (2000), linear temporary impact η, risk aversion λ, volatility σ:
// κ = sqrt(λσ²/η) (continuous-time limit). Units: σ per sqrt(time unit) in currency, η in
// currency·time per unit², λ per currency; κ per time unit. eta > 0, risk_aversion >= 0.
double almgren_chriss_kappa(double sigma, double eta, double risk_aversion);

// The discrete-time urgency κ̃ of Almgren–Chriss for interval length tau:
// cosh(κ̃·τ) = 1 + λσ²τ²/(2η) (with no permanent-impact correction, η̃ = η). It tends to the
// continuous κ as τ → 0, and makes almgren_chriss_holdings the exact minimiser of the
// discrete objective documented in docs/MODEL_MARKET.md.
double almgren_chriss_discrete_kappa(double sigma, double eta, double risk_aversion, double tau);

// Holdings q(t_j) = q0·sinh(κ(T − t_j))/sinh(κT) at t_j = j·T/intervals, j = 0..intervals
// (κ → 0: the TWAP line). T > 0, intervals >= 1, kappa >= 0.
std::vector<double> almgren_chriss_holdings(double q0, double T, int intervals, double kappa);

}  // namespace fxt::sim
