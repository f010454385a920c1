// The DQN agent's per-step formulas that run on both the host (DqnAgent, the CPU trainer) and
// the device (rl/device_learner.cu): the ε schedule, the C51 projection of one target atom,
// the Munchausen target's policy terms and Thompson exploration's C51 draw. FXT_HD, C++17-clean
// (included by .cu files). docs/RL.md has the formulas.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"

namespace fxt::rl {

// CleanRL's linear ε schedule: eps_start → eps_end over fraction·total_steps env steps, then flat.
FXT_HD inline double linear_epsilon(double eps_start, double eps_end, double fraction,
                                    int64_t total_steps, int64_t step) {
  const double span = fraction * static_cast<double>(total_steps);
  const double f = fmin(1.0, static_cast<double>(step) / span);
  return eps_start + f * (eps_end - eps_start);
}

// Thompson exploration, C51: the atom index drawn from softmax(logits) of one action's K logits
// by one uniform u in [0, 1): p_j = exp(l_j − max)/Σ_i exp(l_i − max) in softmax_row's order and
// precision, then u −= p_j while u ≥ p_j (u stays double); the last atom takes what the rounding
// leaves. DqnAgent::act and the acting kernel both call it.
template <typename T>
FXT_HD inline int c51_sample_index(const T* logits, int K, double u) {
  T mx = logits[0];
  for (int j = 1; j < K; ++j) mx = mx < logits[j] ? logits[j] : mx;
  T sum = 0;
  for (int j = 0; j < K; ++j) sum += exp(logits[j] - mx);
  int j = 0;
  for (; j + 1 < K; ++j) {
    const T p = exp(logits[j] - mx) / sum;
    if (!(u >= p)) break;
    u -= p;
  }
  return j;
}

// Where the C51 target atom shift + scale·z_j lands on the support [v_min, v_max] of K atoms
// spaced dz: clipped, at b = (Tz − v_min)/dz, its mass split between atoms l = floor(b) (fraction
// wl = u − b) and u = ceil(b) (wu = b − l); when b lands on an atom (l = u) the whole mass goes
// to l (wl = 1, wu = 0: (u − b) = (b − l) = 0 would drop it, CleanRL's `u + (l == u) − b`).
template <typename T>
struct C51Split {
  int l, u;
  T wl, wu;
};
template <typename T>
FXT_HD inline C51Split<T> c51_split(T shift, T scale, T z_j, T v_min, T v_max, T dz, int atoms) {
  const T raw = shift + scale * z_j;
  const T tz = raw < v_min ? v_min : (v_max < raw ? v_max : raw);
  const T bq = (tz - v_min) / dz;
  const T top = static_cast<T>(atoms - 1);
  const T b = bq < T(0) ? T(0) : (top < bq ? top : bq);
  const T lf = floor(b), uf = ceil(b);
  C51Split<T> s;
  s.l = static_cast<int>(lf);
  s.u = static_cast<int>(uf);
  if (s.l == s.u) {
    s.wl = T(1);
    s.wu = T(0);
  } else {
    s.wl = uf - b;
    s.wu = b - lf;
  }
  return s;
}

// Munchausen DQN (Vieillard et al. 2020): targets r + α·clip(τ·ln π(a|s), l0, 0) +
// g Σ_a' π(a'|s') (Z(s', a') − τ ln π(a'|s')), π = softmax(q/τ) of the target network's values.
struct MunchausenConfig {
  double tau = 0.03;   // entropy temperature
  double alpha = 0.9;  // scale of the log-policy bonus
  double l0 = -1;      // clip of τ·ln π from below
};

// ln softmax(q/τ) of n expected action values (stable: subtracts the maximum). log_pi may alias q.
template <typename T>
FXT_HD inline void log_policy_row(const T* q, int n, double tau, T* log_pi) {
  T mx = q[0];
  for (int a = 1; a < n; ++a) mx = mx < q[a] ? q[a] : mx;
  const T inv_tau = static_cast<T>(1.0 / tau);
  T sum = 0;
  for (int a = 0; a < n; ++a) sum += exp((q[a] - mx) * inv_tau);
  const T log_sum = log(sum);
  for (int a = 0; a < n; ++a) log_pi[a] = (q[a] - mx) * inv_tau - log_sum;
}

// The bonus α·clip(τ·ln π(a|s), l0, 0) of the taken action a.
template <typename T>
FXT_HD inline T munchausen_bonus(const MunchausenConfig& mc, T log_pi_a) {
  const T x = static_cast<T>(mc.tau) * log_pi_a, lo = static_cast<T>(mc.l0);
  return static_cast<T>(mc.alpha) * (x < lo ? lo : (T(0) < x ? T(0) : x));
}

// The shift of the target mixture's component a' (its atoms are shift + g·z_j, its weight
// π(a'|s')): r + bonus − g·τ·ln π(a'|s').
template <typename T>
FXT_HD inline T munchausen_shift(const MunchausenConfig& mc, T r, T bonus, T g, T log_pi_next) {
  return r + bonus - g * static_cast<T>(mc.tau) * log_pi_next;
}

}  // namespace fxt::rl
