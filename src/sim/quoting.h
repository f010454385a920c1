// Market-making quotes from the literature (DESIGN §7.3 `mm`): pure functions of the mid,
// the inventory and the model parameters. All prices, spreads and sigma are in the same
// currency units; k is per currency unit; gamma per currency unit of PnL.
//
// The *_from forms take the transcendental terms that depend only on a lane's parameters
// (log1p, pow) precomputed, so the GPU lanes (sim/lane_engine.h) evaluate the quote with
// + − × ÷ and sqrt alone and get the host's bits. C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include "sim/fill_rules.h"

namespace fxt::sim {

// A two-sided quote around a reservation price: bid = reservation − half_spread,
// ask = reservation + half_spread. Prices in currency.
struct Quote {
  double reservation = 0;
  double half_spread = 0;
  double bid = 0;
  double ask = 0;
};

// Avellaneda–Stoikov with its constant spread term (2/γ)·ln(1 + γ/k) given
// (avellaneda_stoikov_spread_term: a lane constant, so the quote needs no division).
FXT_HD inline Quote avellaneda_stoikov_quote_from(double mid, double inventory, double tau,
                                                  double gamma, double sigma, double spread_term) {
  const double variance_left = sigma * sigma * tau;  // σ²·(T − t)
  Quote quote;
  quote.reservation = mid - inventory * gamma * variance_left;
  const double total_spread = gamma * variance_left + spread_term;
  quote.half_spread = 0.5 * total_spread;
  quote.bid = quote.reservation - quote.half_spread;
  quote.ask = quote.reservation + quote.half_spread;
  return quote;
}

// Avellaneda–Stoikov (2008): reservation r = s − q·γ·σ²·τ; total spread
// γ·σ²·τ + (2/γ)·ln(1 + γ/k); τ = T − t. gamma > 0, k > 0, tau >= 0, sigma >= 0
// (sigma is the volatility per unit time, so σ²·τ is the variance left to the horizon).
inline double avellaneda_stoikov_spread_term(double gamma, double k) {
  return (2.0 / gamma) * ::log1p(gamma / k);
}
inline Quote avellaneda_stoikov_quote(double mid, double inventory, double tau, double gamma,
                                      double sigma, double k) {
  return avellaneda_stoikov_quote_from(mid, inventory, tau, gamma, sigma,
                                       avellaneda_stoikov_spread_term(gamma, k));
}

// GLFT's terms that depend on (gamma, k, delta) alone.
struct GlftTerms {
  double log1p_term = 0;  // ln(1 + ξΔ/k)
  double pow_term = 0;    // (1 + ξΔ/k)^(k/(ξΔ) + 1)
};
inline GlftTerms glft_terms(double gamma, double k, double delta) {
  const double xi_delta = gamma * delta;
  return {::log1p(xi_delta / k), ::pow(1.0 + xi_delta / k, k / xi_delta + 1.0)};
}

// GLFT with glft_terms(gamma, k, delta) given.
FXT_HD inline Quote glft_quote_from(double mid, double inventory, double gamma, double sigma,
                                    double A, double k, double delta, const GlftTerms& terms) {
  const double xi_delta = gamma * delta;  // ξ = γ
  const double c1 = terms.log1p_term / xi_delta;
  const double c2 = ::sqrt(gamma / (2.0 * A * delta * k) * terms.pow_term);
  const double skew = sigma * c2;  // price shift per unit of inventory
  Quote quote;
  quote.half_spread = c1 + 0.5 * delta * sigma * c2;
  quote.reservation = mid - skew * inventory;
  quote.bid = quote.reservation - quote.half_spread;
  quote.ask = quote.reservation + quote.half_spread;
  return quote;
}

// Guéant–Lehalle–Fernandez-Tapia (2013) closed-form approximation, as in hftbacktest's
// GLFT example (ξ = γ; Δ = order size, the "delta" argument):
//   c1 = 1/(ξΔ) · ln(1 + ξΔ/k)
//   c2 = sqrt( γ/(2·A·Δ·k) · (1 + ξΔ/k)^(k/(ξΔ) + 1) )
//   half_spread = c1 + Δ/2 · σ · c2          skew = σ · c2
//   reservation = s − skew·q                  (so bid depth = half_spread + skew·q,
//   bid = reservation − half_spread            ask depth = half_spread − skew·q)
//   ask = reservation + half_spread
// A = order arrival intensity at zero distance, k = decay of the fill intensity A·e^(−kδ).
// gamma > 0, A > 0, k > 0, delta > 0.
inline Quote glft_quote(double mid, double inventory, double gamma, double sigma, double A,
                        double k, double delta = 1.0) {
  return glft_quote_from(mid, inventory, gamma, sigma, A, k, delta, glft_terms(gamma, k, delta));
}

}  // namespace fxt::sim
