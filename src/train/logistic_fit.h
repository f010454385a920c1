// L2-regularised logistic regression solved exactly (DESIGN §6 baselines).
//
// Minimises, over weights w [p] and bias b,
//   f(w, b) = (1 / n) * sum_i s_i * bce(x_i . w + b, y_i) + (lambda / 2) * |w|^2,
// n = sum_i s_i (row weights s_i in {0, 1} select the rows of one horizon), the bias
// unpenalised. Newton's method with a backtracking line search (the objective is strictly
// convex for lambda > 0), in double precision, to a gradient-norm tolerance: the result is the
// unique optimum up to that tolerance, whatever the starting point. The Hessian's data part is
// reused across steps while the steps converge fast (logistic_fit.cc). Deterministic:
// single-threaded Eigen products in a fixed order.
//
// fit_logistic_path() fits a decreasing penalty grid with warm starts and keeps the penalty with
// the lowest validation log loss (ties: the larger penalty).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace fxt {

// Rows x columns, row-major, double: the design matrix of one fit.
struct DesignMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;  // rows * cols
  const double* row(int64_t r) const { return values.data() + r * cols; }
};

struct LogisticOptions {
  double gradient_tolerance = 1e-8;  // stop when the gradient's 2-norm is below this
  int max_iterations = 100;
  // Reuse the data Hessian while steps converge fast (logistic_fit.cc); false: recompute it at
  // every step (plain Newton, for comparison; the same optimum up to the tolerance).
  bool reuse_hessian = true;
};

struct LogisticSolution {
  std::vector<double> weights;  // [cols]
  double bias = 0.0;
  double lambda = 0.0;
  int iterations = 0;
  int hessians = 0;  // data Hessians computed (the O(n p^2) products; see logistic_fit.cc)
  double gradient_norm = 0.0;  // at the solution
  double objective = 0.0;
};

// One fit at penalty lambda > 0. labels/row_weights: [rows] (0/1; a zero weight leaves the row
// out). start (may be null) is the warm start. Fails when no row has weight, or when the
// tolerance is not reached in max_iterations (never silently returns a non-optimum).
Result<LogisticSolution> fit_logistic(const DesignMatrix& x, std::span<const uint8_t> labels,
                                      std::span<const uint8_t> row_weights, double lambda,
                                      const LogisticOptions& options = {},
                                      const LogisticSolution* start = nullptr);

// Mean binary cross-entropy of the solution's logits on the rows with non-zero weight.
double logistic_log_loss(const LogisticSolution& s, const DesignMatrix& x,
                         std::span<const uint8_t> labels, std::span<const uint8_t> row_weights);

// logit of one row (x has s.weights.size() values).
double logistic_logit(const LogisticSolution& s, const double* x);

struct LogisticPathResult {
  LogisticSolution best;
  std::vector<double> lambdas, validation_log_loss;  // the whole path, in grid order
};

// The default penalty grid: 1e-1, 1e-2, ..., 1e-5 (largest first, for warm starts).
std::vector<double> default_lambda_grid();

Result<LogisticPathResult> fit_logistic_path(
    const DesignMatrix& train_x, std::span<const uint8_t> train_y, std::span<const uint8_t> train_w,
    const DesignMatrix& val_x, std::span<const uint8_t> val_y, std::span<const uint8_t> val_w,
    std::span<const double> lambdas, const LogisticOptions& options = {});

}  // namespace fxt
