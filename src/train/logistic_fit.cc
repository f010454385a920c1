#include "train/logistic_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Dense>

namespace fxt {
namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

double bce_logit(double z, double y) {
  return std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));
}
double sigmoid(double z) {
  return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z));
}

// f(w, b) at the logits z (already computed).
double objective_at(const Eigen::VectorXd& z, std::span<const uint8_t> y,
                    std::span<const uint8_t> s, double n, double lambda, const Eigen::VectorXd& w) {
  double sum = 0.0;
  for (Eigen::Index i = 0; i < z.size(); ++i) {
    if (s[static_cast<size_t>(i)] != 0) sum += bce_logit(z[i], y[static_cast<size_t>(i)]);
  }
  return sum / n + 0.5 * lambda * w.squaredNorm();
}

}  // namespace

double logistic_logit(const LogisticSolution& s, const double* x) {
  double z = s.bias;
  for (size_t j = 0; j < s.weights.size(); ++j) z += s.weights[j] * x[j];
  return z;
}

namespace {

// The data part of the Newton matrix, [X 1]' D [X 1] / n ((p + 1) x (p + 1), no penalty), kept
// across the iterations of one fit and across the penalties of a path.
struct DataHessian {
  Eigen::MatrixXd m;
  bool valid = false;
};

void compute_data_hessian(const ConstRowMap& X, const Eigen::VectorXd& d, double n,
                          DataHessian* h) {
  const int64_t p = X.cols();
  const RowMatrix xs = X.array().colwise() * d.array().sqrt();
  h->m.setZero(p + 1, p + 1);
  h->m.topLeftCorner(p, p).selfadjointView<Eigen::Lower>().rankUpdate(xs.transpose(), 1.0 / n);
  h->m.topLeftCorner(p, p) = h->m.topLeftCorner(p, p).selfadjointView<Eigen::Lower>();
  const Eigen::VectorXd xd = X.transpose() * d / n;
  h->m.block(0, p, p, 1) = xd;
  h->m.block(p, 0, 1, p) = xd.transpose();
  h->m(p, p) = d.sum() / n;
  h->valid = true;
}

// Newton's method with the data Hessian reused (the fit's cost is that O(n p^2) product; a
// gradient is O(n p)): the step solves against the last computed matrix plus this penalty, and
// the matrix is recomputed at the current point only when the last step cut the gradient norm
// by less than 4x, backtracked, or failed. Any such matrix is positive definite (lambda > 0),
// so every step is a descent direction, and the stopping rule (the gradient, in double
// precision, below the tolerance) is unchanged: the same optimum, with 2-4x fewer matrices.
Result<LogisticSolution> newton_fit(const DesignMatrix& x, std::span<const uint8_t> labels,
                                    std::span<const uint8_t> row_weights, double lambda,
                                    const LogisticOptions& options, const LogisticSolution* start,
                                    DataHessian* hessian) {
  const int64_t n_rows = x.rows, p = x.cols;
  if (static_cast<int64_t>(labels.size()) != n_rows ||
      static_cast<int64_t>(row_weights.size()) != n_rows ||
      static_cast<int64_t>(x.values.size()) != n_rows * p) {
    return InvalidInput("fit_logistic: {} rows x {} columns with {} labels and {} weights", n_rows,
                        p, labels.size(), row_weights.size());
  }
  if (!(lambda > 0) || !std::isfinite(lambda)) {
    return InvalidInput("fit_logistic: the penalty must be positive and finite (got {})", lambda);
  }
  double n = 0.0;
  for (uint8_t s : row_weights) n += s != 0 ? 1.0 : 0.0;
  if (n == 0.0) return InvalidInput("fit_logistic: no row to fit");

  const ConstRowMap X(x.values.data(), n_rows, p);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(p);
  double b = 0.0;
  if (start != nullptr && static_cast<int64_t>(start->weights.size()) == p) {
    w = Eigen::Map<const Eigen::VectorXd>(start->weights.data(), p);
    b = start->bias;
  }
  Eigen::VectorXd z = X * w;
  z.array() += b;
  double f = objective_at(z, labels, row_weights, n, lambda, w);

  LogisticSolution sol;
  sol.lambda = lambda;
  Eigen::VectorXd r(n_rows), d(n_rows), g(p + 1), dir(p + 1);
  Eigen::LDLT<Eigen::MatrixXd> ldlt;
  bool factored = false;           // ldlt holds hessian->m + the penalty
  bool fresh = false;              // hessian->m was computed at the current point
  bool refresh = !hessian->valid;  // compute it at the current point before the next step
  double last_gnorm = std::numeric_limits<double>::infinity();
  for (int it = 0;; ++it) {
    for (int64_t i = 0; i < n_rows; ++i) {
      const bool on = row_weights[static_cast<size_t>(i)] != 0;
      const double pi = sigmoid(z[i]);
      r[i] = on ? pi - labels[static_cast<size_t>(i)] : 0.0;
      d[i] = on ? pi * (1.0 - pi) : 0.0;
    }
    g.head(p) = X.transpose() * r / n + lambda * w;
    g[p] = r.sum() / n;
    const double gnorm = g.norm();
    if (gnorm < options.gradient_tolerance) {
      sol.iterations = it;
      sol.gradient_norm = gnorm;
      break;
    }
    if (it >= options.max_iterations) {
      return InternalError(
          "fit_logistic: no convergence in {} Newton iterations (gradient norm {:.3g}, lambda "
          "{:g})",
          options.max_iterations, gnorm, lambda);
    }
    if (!fresh && (gnorm > 0.25 * last_gnorm || !options.reuse_hessian)) refresh = true;
    if (refresh) {
      compute_data_hessian(X, d, n, hessian);
      ++sol.hessians;
      refresh = false;
      fresh = true;
      factored = false;
    }
    if (!factored) {
      Eigen::MatrixXd h = hessian->m;
      h.topLeftCorner(p, p).diagonal().array() += lambda;
      h(p, p) += 1e-12;  // keeps the bias row definite when every p(1-p) underflows
      ldlt.compute(h);
      factored = true;
    }
    dir = -ldlt.solve(g);
    // Backtracking (Armijo) line search: the full step near the optimum.
    const double slope = g.dot(dir);
    double t = 1.0;
    Eigen::VectorXd w_new, z_new;
    double b_new = b, f_new = f;
    bool accepted = false;
    for (int halvings = 0; halvings < 60; ++halvings, t *= 0.5) {
      w_new = w + t * dir.head(p);
      b_new = b + t * dir[p];
      z_new = X * w_new;
      z_new.array() += b_new;
      f_new = objective_at(z_new, labels, row_weights, n, lambda, w_new);
      if (f_new <= f + 1e-4 * t * slope || f_new <= f) {
        accepted = true;
        break;
      }
    }
    if (!accepted || (!(f_new < f) && gnorm <= 1e3 * options.gradient_tolerance)) {
      if (!fresh) {  // an old matrix: retry this point with the exact Newton step
        refresh = true;
        continue;
      }
      // No decrease along the Newton direction (or a step that leaves f unchanged): the
      // gradient is at rounding level. On large, well-fit problems it can stall just above the
      // tolerance (1.3e-8 seen at 1e-8), so within 1e3 x the tolerance that is convergence.
      sol.iterations = it;
      sol.gradient_norm = gnorm;
      if (gnorm > 1e3 * options.gradient_tolerance) {
        return InternalError("fit_logistic: line search failed (gradient norm {:.3g}, lambda {:g})",
                             gnorm, lambda);
      }
      break;
    }
    if (t < 1.0) refresh = true;  // the matrix's model of the objective was poor
    last_gnorm = gnorm;
    fresh = false;
    w = std::move(w_new);
    b = b_new;
    z = std::move(z_new);
    f = f_new;
  }
  sol.weights.assign(w.data(), w.data() + p);
  sol.bias = b;
  sol.objective = f;
  return sol;
}

}  // namespace

Result<LogisticSolution> fit_logistic(const DesignMatrix& x, std::span<const uint8_t> labels,
                                      std::span<const uint8_t> row_weights, double lambda,
                                      const LogisticOptions& options,
                                      const LogisticSolution* start) {
  DataHessian hessian;
  return newton_fit(x, labels, row_weights, lambda, options, start, &hessian);
}

double logistic_log_loss(const LogisticSolution& s, const DesignMatrix& x,
                         std::span<const uint8_t> labels, std::span<const uint8_t> row_weights) {
  double sum = 0.0, n = 0.0;
  for (int64_t i = 0; i < x.rows; ++i) {
    if (row_weights[static_cast<size_t>(i)] == 0) continue;
    sum += bce_logit(logistic_logit(s, x.row(i)), labels[static_cast<size_t>(i)]);
    n += 1.0;
  }
  return n > 0 ? sum / n : std::nan("");
}

std::vector<double> default_lambda_grid() {
  return {1e-1, 1e-2, 1e-3, 1e-4, 1e-5};
}

Result<LogisticPathResult> fit_logistic_path(
    const DesignMatrix& train_x, std::span<const uint8_t> train_y, std::span<const uint8_t> train_w,
    const DesignMatrix& val_x, std::span<const uint8_t> val_y, std::span<const uint8_t> val_w,
    std::span<const double> lambdas, const LogisticOptions& options) {
  if (lambdas.empty()) return InvalidInput("fit_logistic_path: empty penalty grid");
  LogisticPathResult res;
  LogisticSolution prev;
  const LogisticSolution* start = nullptr;
  // Each penalty starts from the last one's optimum, and its first step uses the data Hessian
  // the last fit computed (near that point).
  DataHessian hessian;
  double best_loss = 0.0;
  for (size_t i = 0; i < lambdas.size(); ++i) {
    FXT_ASSIGN_OR_RETURN(LogisticSolution s, newton_fit(train_x, train_y, train_w, lambdas[i],
                                                        options, start, &hessian));
    const double vl = logistic_log_loss(s, val_x, val_y, val_w);
    res.lambdas.push_back(lambdas[i]);
    res.validation_log_loss.push_back(vl);
    // Strictly better only: a tie keeps the earlier (larger) penalty.
    if (i == 0 || (std::isfinite(vl) && vl < best_loss)) {
      best_loss = vl;
      res.best = s;
    }
    prev = std::move(s);
    start = &prev;
  }
  return res;
}

}  // namespace fxt
