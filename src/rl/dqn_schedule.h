// The DQN agent's per-step formulas that run on both the host (DqnAgent, the CPU trainer) and
// the device (rl/device_learner.cu): the ε schedule and the C51 projection of one target atom.
// FXT_HD, C++17-clean (included by .cu files). docs/RL.md has the formulas.
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

}  // namespace fxt::rl
