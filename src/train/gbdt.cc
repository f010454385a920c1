#include "train/gbdt.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>

#if FXT_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace fxt {

#if FXT_HAVE_XGBOOST
namespace {

Status xgb_error(const char* what) {
  return InternalError("XGBoost {}: {}", what, XGBGetLastError());
}
#define FXT_XGB(call, what)                  \
  do {                                       \
    if ((call) != 0) return xgb_error(what); \
  } while (0)

// Owning handles (freed on every path).
struct Matrix {
  DMatrixHandle h = nullptr;
  ~Matrix() {
    if (h != nullptr) XGDMatrixFree(h);
  }
};
struct Booster {
  BoosterHandle h = nullptr;
  ~Booster() {
    if (h != nullptr) XGBoosterFree(h);
  }
};

Status make_matrix(std::span<const float> x, std::span<const float> y, int64_t cols, Matrix* m) {
  const auto rows = static_cast<bst_ulong>(x.size() / static_cast<size_t>(cols));
  FXT_XGB(XGDMatrixCreateFromMat(x.data(), rows, static_cast<bst_ulong>(cols),
                                 std::numeric_limits<float>::quiet_NaN(), &m->h),
          "creating a matrix");
  if (!y.empty()) {
    FXT_XGB(XGDMatrixSetFloatInfo(m->h, "label", y.data(), rows), "setting labels");
  }
  return Status::Ok();
}

// "[12]\tval-logloss:0.51234" -> 0.51234
Result<double> parse_eval(const char* text) {
  const std::string s = text;
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return InvalidInput("XGBoost: unexpected evaluation '{}'", s);
  char* end = nullptr;
  const double v = std::strtod(s.c_str() + colon + 1, &end);
  if (end == s.c_str() + colon + 1) return InvalidInput("XGBoost: unexpected evaluation '{}'", s);
  return v;
}

}  // namespace

bool gbdt_available() {
  return true;
}

Result<GbdtModel> fit_gbdt(std::span<const float> train_x, std::span<const float> train_y,
                           std::span<const float> val_x, std::span<const float> val_y, int64_t cols,
                           const GbdtParams& p) {
  if (cols <= 0 || train_x.size() != train_y.size() * static_cast<size_t>(cols) ||
      val_x.size() != val_y.size() * static_cast<size_t>(cols)) {
    return InvalidInput("fit_gbdt: inconsistent shapes ({} x {} train values for {} labels)",
                        train_x.size(), cols, train_y.size());
  }
  if (train_y.empty()) return InvalidInput("fit_gbdt: no training row");
  if (val_y.empty()) return InvalidInput("fit_gbdt: no validation row for early stopping");
  Matrix dtrain, dval;
  FXT_RETURN_IF_ERROR(make_matrix(train_x, train_y, cols, &dtrain));
  FXT_RETURN_IF_ERROR(make_matrix(val_x, val_y, cols, &dval));
  Booster b;
  DMatrixHandle cache[] = {dtrain.h, dval.h};
  FXT_XGB(XGBoosterCreate(cache, 2, &b.h), "creating a booster");
  const std::pair<const char*, std::string> params[] = {
      {"booster", "gbtree"},
      {"objective", "binary:logistic"},
      {"eval_metric", "logloss"},
      {"tree_method", "hist"},
      {"max_depth", fmt::format("{}", p.max_depth)},
      {"eta", fmt::format("{}", p.learning_rate)},
      {"min_child_weight", fmt::format("{}", p.min_child_weight)},
      {"lambda", fmt::format("{}", p.lambda)},
      {"max_bin", fmt::format("{}", p.max_bin)},
      {"subsample", "1"},
      {"colsample_bytree", "1"},
      {"seed", fmt::format("{}", p.seed % 2147483647u)},
      {"nthread", fmt::format("{}", std::max(1, p.threads))},
      {"verbosity", "0"},
  };
  for (const auto& [k, v] : params)
    FXT_XGB(XGBoosterSetParam(b.h, k, v.c_str()), "setting a parameter");

  DMatrixHandle evals[] = {dval.h};
  const char* names[] = {"val"};
  double best = std::numeric_limits<double>::infinity();
  int best_round = -1;
  for (int it = 0; it < p.max_rounds; ++it) {
    FXT_XGB(XGBoosterUpdateOneIter(b.h, it, dtrain.h), "boosting");
    const char* out = nullptr;
    FXT_XGB(XGBoosterEvalOneIter(b.h, it, evals, names, 1, &out), "evaluating");
    FXT_ASSIGN_OR_RETURN(const double loss, parse_eval(out));
    if (loss < best) {
      best = loss;
      best_round = it;
    } else if (it - best_round >= p.early_stopping_rounds) {
      break;
    }
  }
  Booster kept;
  FXT_XGB(XGBoosterSlice(b.h, 0, best_round + 1, 1, &kept.h), "slicing to the best round");
  bst_ulong len = 0;
  const char* buf = nullptr;
  FXT_XGB(XGBoosterSaveModelToBuffer(kept.h, R"({"format": "ubj"})", &len, &buf), "saving");
  GbdtModel m;
  m.bytes.assign(reinterpret_cast<const uint8_t*>(buf),
                 reinterpret_cast<const uint8_t*>(buf) + len);
  m.rounds = best_round + 1;
  m.validation_log_loss = best;
  return m;
}

Result<std::vector<float>> gbdt_logits(const GbdtModel& model, std::span<const float> x,
                                       int64_t cols, int threads) {
  if (cols <= 0 || x.size() % static_cast<size_t>(cols) != 0) {
    return InvalidInput("gbdt_logits: {} values are not rows of {}", x.size(), cols);
  }
  const size_t rows = x.size() / static_cast<size_t>(cols);
  std::vector<float> out(rows);
  if (rows == 0) return out;
  Booster b;
  FXT_XGB(XGBoosterCreate(nullptr, 0, &b.h), "creating a booster");
  FXT_XGB(XGBoosterLoadModelFromBuffer(b.h, model.bytes.data(), model.bytes.size()),
          "loading a model");
  FXT_XGB(XGBoosterSetParam(b.h, "nthread", fmt::format("{}", std::max(1, threads)).c_str()),
          "setting nthread");
  Matrix d;
  FXT_RETURN_IF_ERROR(make_matrix(x, {}, cols, &d));
  bst_ulong len = 0;
  const float* res = nullptr;
  // option_mask 1: raw margins (logits); all trees; not training.
  FXT_XGB(XGBoosterPredict(b.h, d.h, 1, 0, 0, &len, &res), "predicting");
  if (len != rows) return InvalidInput("XGBoost returned {} predictions for {} rows", len, rows);
  std::copy_n(res, rows, out.data());
  return out;
}

#else  // no XGBoost in this build

bool gbdt_available() {
  return false;
}

Result<GbdtModel> fit_gbdt(std::span<const float>, std::span<const float>, std::span<const float>,
                           std::span<const float>, int64_t, const GbdtParams&) {
  return UsageError("the GBDT baseline is off: this build has no XGBoost (libxgboost-dev)");
}
Result<std::vector<float>> gbdt_logits(const GbdtModel&, std::span<const float>, int64_t, int) {
  return UsageError("the GBDT baseline is off: this build has no XGBoost (libxgboost-dev)");
}

#endif

}  // namespace fxt
