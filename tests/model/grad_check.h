// Central-difference gradient checks in double precision, shared by the model tests.
//
// check_gradient perturbs each element x_i of a parameter or input buffer by
// h = rel_step * max(|x_i|, 1), evaluates the scalar function f at x_i +- h (and +- 2h for the
// fourth-order stencil) and compares the numeric derivative n_i with the analytic a_i:
//   rel_i = |a_i - n_i| / max(|a_i| + |n_i|, denom_floor).
// f must read x through the buffer it captures; x is restored exactly after each probe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fxt::test {

struct GradCheckOptions {
  // The five-point central difference (error O(h^4)) lets h be large enough that rounding in f
  // (about eps |f| / h) stays far below the 1e-6 target even for gradient elements of 1e-5.
  double rel_step = 1e-3;     // h relative to max(|x_i|, 1)
  double denom_floor = 1e-8;  // smallest denominator of the relative error
  int order = 4;              // 2: (f(x+h) - f(x-h)) / 2h;  4: five-point stencil
};

struct GradCheckResult {
  double max_rel_error = 0.0;
  int64_t worst = -1;  // index of the worst element
  double analytic = 0.0, numeric = 0.0;
  int64_t checked = 0;

  std::string to_string() const {
    return fmt::format(
        "max rel err {:.3e} over {} elems (worst [{}]: analytic {:.9e}, numeric {:.9e})",
        max_rel_error, checked, worst, analytic, numeric);
  }
};

// |a - n| / max(|a| + |n|, floor): the relative error every check reports.
inline double relative_error(double a, double n, double floor) {
  return std::abs(a - n) / std::max(std::abs(a) + std::abs(n), floor);
}

// Fourth-order central difference (f(x-2h) - 8f(x-h) + 8f(x+h) - f(x+2h)) / 12h at *x with an
// absolute step h; *x is restored afterwards.
template <class F>
double five_point_derivative(F&& f, double* x, double h) {
  const double x0 = *x;
  auto at = [&](double v) {
    *x = v;
    return f();
  };
  const double g =
      (8.0 * (at(x0 + h) - at(x0 - h)) - (at(x0 + 2 * h) - at(x0 - 2 * h))) / (12.0 * h);
  *x = x0;
  return g;
}

inline double numeric_derivative(const std::function<double()>& f, double& xi,
                                 const GradCheckOptions& opt) {
  const double saved = xi;
  const double h = opt.rel_step * std::max(std::abs(saved), 1.0);
  auto at = [&](double delta) {
    xi = saved + delta;
    const double v = f();
    xi = saved;
    return v;
  };
  if (opt.order == 4) {
    return (8.0 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12.0 * h);
  }
  return (at(h) - at(-h)) / (2.0 * h);
}

// Compares analytic[i] with the numeric derivative of f w.r.t. x[i] for every i.
inline GradCheckResult check_gradient(const std::function<double()>& f, std::span<double> x,
                                      std::span<const double> analytic,
                                      const GradCheckOptions& opt = {}) {
  GradCheckResult r;
  for (size_t i = 0; i < x.size(); ++i) {
    const double n = numeric_derivative(f, x[i], opt);
    const double a = analytic[i];
    const double rel = relative_error(a, n, opt.denom_floor);
    ++r.checked;
    if (rel > r.max_rel_error || r.worst < 0) {
      r.max_rel_error = std::max(rel, r.max_rel_error);
      if (rel >= r.max_rel_error) {
        r.worst = static_cast<int64_t>(i);
        r.analytic = a;
        r.numeric = n;
      }
    }
  }
  return r;
}

// Fills v with U(lo, hi) from gen.
inline void fill_uniform(std::span<double> v, std::mt19937_64& gen, double lo = -1.0,
                         double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& x : v) x = u(gen);
}

// n values U(lo, hi) from gen.
inline std::vector<double> random_vector(std::mt19937_64& gen, size_t n, double lo, double hi) {
  std::vector<double> v(n);
  fill_uniform(v, gen, lo, hi);
  return v;
}

// One U(lo, hi) draw.
inline double uniform(std::mt19937_64& gen, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(gen);
}

// Coordinates to check: all of [0, n) when n <= max_coords, else a random subset.
inline std::vector<size_t> pick_coords(std::mt19937_64& gen, size_t n, size_t max_coords) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  if (n > max_coords) {
    std::shuffle(idx.begin(), idx.end(), gen);
    idx.resize(max_coords);
  }
  return idx;
}

// sum_i w_i y_i: a random linear functional that turns a tensor output into a scalar loss.
inline double dot(std::span<const double> w, std::span<const double> y) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
  return s;
}

}  // namespace fxt::test
