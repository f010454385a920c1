// Market-making quotes from the literature (DESIGN §7.3 `mm`): pure functions of the mid,
// the inventory and the model parameters. All prices, spreads and sigma are in the same
// currency units; k is per currency unit; gamma per currency unit of PnL.
#pragma once

namespace fxt::sim {

// A two-sided quote around a reservation price: bid = reservation − half_spread,
// ask = reservation + half_spread. Prices in currency.
struct Quote {
  double reservation = 0;
  double half_spread = 0;
  double bid = 0;
  double ask = 0;
};

// Avellaneda–Stoikov (2008): reservation r = s − q·γ·σ²·τ; total spread
// γ·σ²·τ + (2/γ)·ln(1 + γ/k); τ = T − t. gamma > 0, k > 0, tau >= 0, sigma >= 0
// (sigma is the volatility per unit time, so σ²·τ is the variance left to the horizon).
Quote avellaneda_stoikov_quote(double mid, double inventory, double tau, double gamma, double sigma,
                               double k);

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
Quote glft_quote(double mid, double inventory, double gamma, double sigma, double A, double k,
                 double delta = 1.0);

}  // namespace fxt::sim
