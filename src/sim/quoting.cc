#include "sim/quoting.h"

#include <cmath>

namespace fxt::sim {

Quote avellaneda_stoikov_quote(double mid, double inventory, double tau, double gamma, double sigma,
                               double k) {
  const double variance_left = sigma * sigma * tau;  // σ²·(T − t)
  Quote quote;
  quote.reservation = mid - inventory * gamma * variance_left;
  const double total_spread = gamma * variance_left + (2.0 / gamma) * std::log1p(gamma / k);
  quote.half_spread = 0.5 * total_spread;
  quote.bid = quote.reservation - quote.half_spread;
  quote.ask = quote.reservation + quote.half_spread;
  return quote;
}

Quote glft_quote(double mid, double inventory, double gamma, double sigma, double A, double k,
                 double delta) {
  const double xi_delta = gamma * delta;  // ξ = γ
  const double c1 = std::log1p(xi_delta / k) / xi_delta;
  const double c2 =
      std::sqrt(gamma / (2.0 * A * delta * k) * std::pow(1.0 + xi_delta / k, k / xi_delta + 1.0));
  const double skew = sigma * c2;  // price shift per unit of inventory
  Quote quote;
  quote.half_spread = c1 + 0.5 * delta * sigma * c2;
  quote.reservation = mid - skew * inventory;
  quote.bid = quote.reservation - quote.half_spread;
  quote.ask = quote.reservation + quote.half_spread;
  return quote;
}

}  // namespace fxt::sim
