#include "sim/schedule.h"

#include <cassert>
#include <cmath>

namespace fxt::sim {

std::vector<double> twap_holdings(double q0, int intervals) {
  assert(intervals >= 1);
  std::vector<double> holdings(static_cast<size_t>(intervals) + 1);
  for (int j = 0; j <= intervals; ++j) {
    // (intervals − j)/intervals rather than 1 − j/intervals: exact q0 at j = 0 and 0 at the end.
    holdings[j] = q0 * static_cast<double>(intervals - j) / static_cast<double>(intervals);
  }
  return holdings;
}

double almgren_chriss_kappa(double sigma, double eta, double risk_aversion) {
  assert(eta > 0 && risk_aversion >= 0);
  return std::sqrt(risk_aversion * sigma * sigma / eta);
}

double almgren_chriss_discrete_kappa(double sigma, double eta, double risk_aversion, double tau) {
  assert(eta > 0 && risk_aversion >= 0 && tau > 0);
  return std::acosh(1.0 + risk_aversion * sigma * sigma * tau * tau / (2.0 * eta)) / tau;
}

namespace {

// sinh(a)/sinh(b) for 0 <= a <= b, b > 0, without overflow for large b and without
// cancellation for small ones: e^(a−b)·(1 − e^(−2a))/(1 − e^(−2b)).
double sinh_ratio(double a, double b) {
  return std::exp(a - b) * std::expm1(-2.0 * a) / std::expm1(-2.0 * b);
}

}  // namespace

std::vector<double> almgren_chriss_holdings(double q0, double T, int intervals, double kappa) {
  assert(T > 0 && intervals >= 1 && kappa >= 0);
  if (kappa * T == 0) return twap_holdings(q0, intervals);
  std::vector<double> holdings(static_cast<size_t>(intervals) + 1);
  const double n = static_cast<double>(intervals);
  for (int j = 0; j <= intervals; ++j) {
    const double time_left = T * static_cast<double>(intervals - j) / n;  // T − t_j
    holdings[j] = q0 * sinh_ratio(kappa * time_left, kappa * T);
  }
  holdings.front() = q0;  // exact ends, whatever the rounding in between
  holdings.back() = 0;
  return holdings;
}

}  // namespace fxt::sim
