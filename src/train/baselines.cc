#include "train/baselines.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "core/log.h"
#include "core/text.h"
#include "model/ple.h"

namespace fxt {
namespace {

constexpr int kF = kFeatureDim;

struct Row {
  uint32_t store;
  uint64_t t;
};

// Every position of the given windows, in time order, thinned by a fixed stride to max_rows.
std::vector<Row> window_rows(const Dataset& ds, const std::vector<Anchor>& anchors,
                             int64_t max_rows) {
  const auto& sc = ds.config().sequence;
  std::vector<std::vector<uint8_t>> on(ds.store_count());
  for (size_t s = 0; s < ds.store_count(); ++s) on[s].assign(ds.store(s).reader.size(), 0);
  for (const Anchor& a : anchors) {
    for (int k = 0; k < sc.window; ++k) {
      on[a.store][a.start + static_cast<uint64_t>(k) * static_cast<uint64_t>(sc.stride)] = 1;
    }
  }
  std::vector<Row> rows;
  for (size_t s = 0; s < on.size(); ++s) {
    for (uint64_t t = 0; t < on[s].size(); ++t) {
      if (on[s][t] != 0) rows.push_back({static_cast<uint32_t>(s), t});
    }
  }
  if (max_rows > 0 && static_cast<int64_t>(rows.size()) > max_rows) {
    const size_t step =
        (rows.size() + static_cast<size_t>(max_rows) - 1) / static_cast<size_t>(max_rows);
    std::vector<Row> kept;
    for (size_t i = 0; i < rows.size(); i += step) kept.push_back(rows[i]);
    rows = std::move(kept);
  }
  return rows;
}

// Lagged feature rows (float), labels and masks per horizon of a row set.
struct RowSet {
  std::vector<float> x;                       // rows x (lags * 40)
  std::vector<std::vector<uint8_t>> y, mask;  // [H][rows]
  size_t rows = 0;
};

RowSet gather_rows(const Dataset& ds, const std::vector<Row>& rows, int lags, int nh) {
  RowSet r;
  r.rows = rows.size();
  const size_t cols = static_cast<size_t>(lags) * kF;
  r.x.resize(rows.size() * cols);
  r.y.assign(static_cast<size_t>(nh), std::vector<uint8_t>(rows.size()));
  r.mask.assign(static_cast<size_t>(nh), std::vector<uint8_t>(rows.size()));
  const int stride = ds.config().sequence.stride;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Dataset::Store& s = ds.store(rows[i].store);
    lagged_row(s.features.data(), rows[i].t, lags, stride, r.x.data() + i * cols);
    for (int h = 0; h < nh; ++h) {
      const size_t at =
          static_cast<size_t>(rows[i].t) * static_cast<size_t>(nh) + static_cast<size_t>(h);
      r.y[static_cast<size_t>(h)][i] = s.labels.y[at];
      r.mask[static_cast<size_t>(h)][i] = s.labels.mask[at];
    }
  }
  return r;
}

DesignMatrix to_design(const RowSet& r, int64_t cols) {
  DesignMatrix d;
  d.rows = static_cast<int64_t>(r.rows);
  d.cols = cols;
  d.values.assign(r.x.begin(), r.x.end());
  return d;
}

// The logistic path (penalty chosen on validation) of every horizon; the horizons' fits are
// independent and single-threaded, so they run on up to `threads` threads with a result that
// does not depend on the thread count.
Result<std::vector<LogisticSolution>> fit_logistic_horizons(
    const DesignMatrix& dtr, const RowSet& tr, const DesignMatrix& dva, const RowSet& va,
    std::span<const int> horizons, int threads) {
  const size_t nh = tr.y.size();
  const std::vector<double> grid = default_lambda_grid();
  std::vector<LogisticSolution> sol(nh);
  std::vector<Status> status(nh, Status::Ok());
  auto fit_from = [&](size_t first, size_t step) {
    for (size_t h = first; h < nh; h += step) {
      auto path = fit_logistic_path(dtr, tr.y[h], tr.mask[h], dva, va.y[h], va.mask[h], grid);
      if (path.ok()) {
        sol[h] = path->best;
      } else {
        status[h] = path.status();
      }
    }
  };
  const size_t workers = std::min(nh, static_cast<size_t>(std::max(threads, 1)));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(fit_from, w, workers);
  fit_from(0, std::max<size_t>(workers, 1));
  for (std::thread& t : pool) t.join();
  for (size_t h = 0; h < nh; ++h) {
    if (!status[h].ok()) {
      return Status(status[h].code(), fmt::format("at h{}: {}", horizons[h], status[h].message()));
    }
  }
  return sol;
}

// PLE edges [40, bins + 1] of the standardised features over `rows` (model::ple_edges_from_sample
// per feature).
std::vector<float> ple_edges_of_rows(const Dataset& ds, const std::vector<Row>& rows, int bins) {
  std::vector<float> edges(static_cast<size_t>(kF) * static_cast<size_t>(bins + 1));
  std::vector<float> values(rows.size());
  for (int i = 0; i < kF; ++i) {
    for (size_t r = 0; r < rows.size(); ++r) {
      values[r] = ds.store(rows[r].store).features[rows[r].t * kF + static_cast<uint64_t>(i)];
    }
    model::ple_edges_from_sample(values, bins, edges.data() + static_cast<size_t>(i) * (bins + 1));
  }
  return edges;
}

// The GAM's design: each row's 40 features, then their encoding [40 K] (model::ple_encode).
DesignMatrix to_gam_design(const RowSet& r, const std::vector<float>& edges, int bins) {
  DesignMatrix d;
  d.rows = static_cast<int64_t>(r.rows);
  d.cols = static_cast<int64_t>(kF) * (1 + bins);
  d.values.resize(static_cast<size_t>(d.rows * d.cols));
  std::vector<float> enc(static_cast<size_t>(kF) * static_cast<size_t>(bins));
  for (size_t i = 0; i < r.rows; ++i) {
    const float* x = r.x.data() + i * kF;
    double* out = d.values.data() + i * static_cast<size_t>(d.cols);
    std::copy_n(x, kF, out);
    model::ple_encode(x, edges.data(), 1, kF, bins, enc.data());
    std::copy(enc.begin(), enc.end(), out + kF);
  }
  return d;
}

// The rows of one horizon with a label, as float features and 0/1 labels (XGBoost inputs).
void masked_rows(const RowSet& r, size_t h, int64_t cols, std::vector<float>* x,
                 std::vector<float>* y) {
  x->clear();
  y->clear();
  const auto c = static_cast<size_t>(cols);
  for (size_t i = 0; i < r.rows; ++i) {
    if (r.mask[h][i] == 0) continue;
    x->insert(x->end(), r.x.begin() + static_cast<std::ptrdiff_t>(i * c),
              r.x.begin() + static_cast<std::ptrdiff_t>((i + 1) * c));
    y->push_back(r.y[h][i] != 0 ? 1.0f : 0.0f);
  }
}

std::string tensor_name(const FittedBaseline& b, const std::string& what) {
  return fmt::format("baseline.{}.{}", b.name, what);
}

}  // namespace

std::vector<float> training_ple_edges(const Dataset& ds, int bins, int64_t max_rows) {
  return ple_edges_of_rows(ds, window_rows(ds, ds.anchors(Split::kTrain), max_rows), bins);
}

void lagged_row(const float* features, uint64_t t, int lags, int stride, float* out) {
  std::vector<uint64_t> idx(static_cast<size_t>(lags));
  window_positions(t, lags, stride, idx.data());
  for (int l = 0; l < lags; ++l) {
    std::copy_n(features + idx[static_cast<size_t>(l)] * kF, kF, out + static_cast<size_t>(l) * kF);
  }
}

// ---- config -------------------------------------------------------------------------------------

Status BaselineConfig::validate() const {
  if (lags < 1 || lags > 64) return UsageError("--baseline-lags must be in 1..64 (got {})", lags);
  if (gam_bins < 2 || gam_bins > 64) {
    return UsageError("--gam-bins must be in 2..64 (got {})", gam_bins);
  }
  if (max_fit_rows != 0 && max_fit_rows < 1000) {
    return UsageError("--baseline-max-rows must be 0 (every row) or at least 1000 (got {})",
                      max_fit_rows);
  }
  if (gbdt_max_fit_rows != 0 && gbdt_max_fit_rows < 1000) {
    return UsageError("--gbdt-max-rows must be 0 (every row) or at least 1000 (got {})",
                      gbdt_max_fit_rows);
  }
  return Status::Ok();
}

nlohmann::json BaselineConfig::to_json() const {
  return {{"logreg", logreg},
          {"gbdt", gbdt},
          {"gam", gam},
          {"gam_bins", gam_bins},
          {"lags", lags},
          {"max_fit_rows", max_fit_rows},
          {"gbdt_max_fit_rows", gbdt_max_fit_rows},
          {"gbdt_max_depth", gbdt_params.max_depth},
          {"gbdt_learning_rate", gbdt_params.learning_rate},
          {"gbdt_max_rounds", gbdt_params.max_rounds},
          {"gbdt_early_stopping_rounds", gbdt_params.early_stopping_rounds}};
}

Result<BaselineConfig> BaselineConfig::from_json(const nlohmann::json& j) {
  BaselineConfig c;
  try {
    c.logreg = j.at("logreg").get<bool>();
    c.gbdt = j.at("gbdt").get<bool>();
    c.gam = j.value("gam", false);  // absent: a config from before the GAM
    c.gam_bins = j.value("gam_bins", 16);
    c.lags = j.at("lags").get<int>();
    c.max_fit_rows = j.at("max_fit_rows").get<int64_t>();
    // Absent: a config from before the GBDT's own cap, whose GBDTs were fit under the one cap.
    c.gbdt_max_fit_rows = j.value("gbdt_max_fit_rows", c.max_fit_rows);
    c.gbdt_params.max_depth = j.at("gbdt_max_depth").get<int>();
    c.gbdt_params.learning_rate = j.at("gbdt_learning_rate").get<double>();
    c.gbdt_params.max_rounds = j.at("gbdt_max_rounds").get<int>();
    c.gbdt_params.early_stopping_rounds = j.at("gbdt_early_stopping_rounds").get<int>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("bad baselines config: {}", e.what());
  }
  FXT_RETURN_IF_ERROR(c.validate());
  return c;
}

Status parse_baseline_families(const std::string& text, BaselineConfig* cfg) {
  cfg->logreg = cfg->gbdt = cfg->gam = false;
  if (text == "none") return Status::Ok();
  for (const std::string& f : split_fields(text, ',')) {
    if (f == "logreg") {
      cfg->logreg = true;
    } else if (f == "gbdt") {
      cfg->gbdt = true;
    } else if (f == "gam") {
      cfg->gam = true;
    } else {
      return UsageError("--baselines must be a list of logreg, gbdt, gam, or none (got '{}')",
                        text);
    }
  }
  return Status::Ok();
}

// ---- fit ----------------------------------------------------------------------------------------

Result<Baselines> Baselines::fit(const Dataset& ds, std::span<const int> horizons,
                                 const BaselineConfig& cfg, int threads, const std::string& only) {
  using Clock = std::chrono::steady_clock;
  FXT_RETURN_IF_ERROR(cfg.validate());
  Baselines out;
  const int nh = static_cast<int>(horizons.size());
  out.horizons_ = nh;
  // `only` (a baseline-only run) fits that family whatever the --baselines list says.
  const bool want_logreg = only.empty() ? cfg.logreg : only == "logreg";
  const bool want_gam = only.empty() ? cfg.gam : only == "gam";
  bool want_gbdt = only.empty() ? cfg.gbdt : only == "gbdt";
  if (want_gbdt && !gbdt_available()) {
    if (only == "gbdt") {
      return UsageError("--model gbdt: this build has no XGBoost (apt-get install libxgboost-dev)");
    }
    log_warn("the GBDT baseline is off: this build has no XGBoost (libxgboost-dev)");
    want_gbdt = false;
  }
  if (!want_logreg && !want_gbdt && !want_gam) return out;

  // The training and validation rows under a cap (the logistic families' or the GBDT's).
  struct SplitRows {
    std::vector<Row> train, validation;
  };
  auto split_rows = [&](int64_t cap) -> Result<SplitRows> {
    SplitRows r{window_rows(ds, ds.anchors(Split::kTrain), cap),
                window_rows(ds, ds.evaluation_anchors(Split::kValidation), cap)};
    if (r.train.empty() || r.validation.empty()) {
      return InvalidInput("the baselines need training and validation rows (none in the split)");
    }
    return r;
  };
  SplitRows logistic_rows, gbdt_rows;
  if (want_logreg || want_gam) {
    FXT_ASSIGN_OR_RETURN(logistic_rows, split_rows(cfg.max_fit_rows));
  }
  if (want_gbdt) {
    FXT_ASSIGN_OR_RETURN(gbdt_rows, split_rows(cfg.gbdt_max_fit_rows));
  }
  std::vector<int> lag_set = {1};
  if (cfg.lags > 1) lag_set.push_back(cfg.lags);
  for (int lags : lag_set) {
    const int64_t cols = static_cast<int64_t>(lags) * kF;
    const std::string suffix = lags > 1 ? "_lags" : "";
    // One baseline of a family on the rows tr / va: fit_all(b) fits every horizon; timed, logged.
    auto fit_family = [&](const std::string& family, BaselineKind kind, const RowSet& tr,
                          const RowSet& va,
                          const std::function<Status(FittedBaseline&)>& fit_all) -> Status {
      const auto t0 = Clock::now();
      FittedBaseline b;
      b.name = family + suffix;
      b.kind = kind;
      b.lags = lags;
      b.train_rows = static_cast<int64_t>(tr.rows);
      b.validation_rows = static_cast<int64_t>(va.rows);
      if (Status st = fit_all(b); !st.ok()) {
        return Status(st.code(), fmt::format("baseline {} {}", b.name, st.message()));
      }
      b.fit_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      log_info("baseline {}: {} training rows, fit in {:.1f} s", b.name, b.train_rows,
               b.fit_seconds);
      out.fitted_.push_back(std::move(b));
      return Status::Ok();
    };
    if (want_logreg || (want_gam && lags == 1)) {
      const RowSet tr = gather_rows(ds, logistic_rows.train, lags, nh);
      const RowSet va = gather_rows(ds, logistic_rows.validation, lags, nh);
      if (want_logreg) {
        const DesignMatrix dtr = to_design(tr, cols), dva = to_design(va, cols);
        FXT_RETURN_IF_ERROR(
            fit_family("logreg", BaselineKind::kLogistic, tr, va, [&](FittedBaseline& b) -> Status {
              FXT_ASSIGN_OR_RETURN(b.logistic,
                                   fit_logistic_horizons(dtr, tr, dva, va, horizons, threads));
              return Status::Ok();
            }));
      }
      if (want_gam && lags == 1) {
        const int bins = cfg.gam_bins;
        const std::vector<float> edges = ple_edges_of_rows(ds, logistic_rows.train, bins);
        const DesignMatrix dtr = to_gam_design(tr, edges, bins);
        const DesignMatrix dva = to_gam_design(va, edges, bins);
        FXT_RETURN_IF_ERROR(
            fit_family("gam", BaselineKind::kLogistic, tr, va, [&](FittedBaseline& b) -> Status {
              FXT_ASSIGN_OR_RETURN(b.logistic,
                                   fit_logistic_horizons(dtr, tr, dva, va, horizons, threads));
              return Status::Ok();
            }));
        out.fitted_.back().ple_bins = bins;
        out.fitted_.back().ple_edges = edges;
      }
    }
    if (want_gbdt) {
      const RowSet tr = gather_rows(ds, gbdt_rows.train, lags, nh);
      const RowSet va = gather_rows(ds, gbdt_rows.validation, lags, nh);
      GbdtParams gp = cfg.gbdt_params;
      gp.threads = threads;
      std::vector<float> xt, yt, xv, yv;
      FXT_RETURN_IF_ERROR(
          fit_family("gbdt", BaselineKind::kGbdt, tr, va, [&](FittedBaseline& b) -> Status {
            for (size_t h = 0; h < static_cast<size_t>(nh); ++h) {
              masked_rows(tr, h, cols, &xt, &yt);
              masked_rows(va, h, cols, &xv, &yv);
              auto m = fit_gbdt(xt, yt, xv, yv, cols, gp);
              if (!m.ok()) {
                return Status(m.status().code(),
                              fmt::format("at h{}: {}", horizons[h], m.status().message()));
              }
              b.gbdt.push_back(std::move(*m));
            }
            return Status::Ok();
          }));
    }
  }
  return out;
}

const FittedBaseline* Baselines::find(const std::string& name) const {
  for (const FittedBaseline& b : fitted_) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

// ---- scoring ------------------------------------------------------------------------------------

Result<std::vector<float>> Baselines::score(size_t i, const float* features,
                                            std::span<const uint64_t> ends, int stride,
                                            int threads) const {
  const FittedBaseline& b = fitted_.at(i);
  const auto nh = static_cast<size_t>(horizons_);
  // Rows of the lagged features (lags x 40); the GAM's design rows add their encoding.
  const size_t lagged = static_cast<size_t>(b.lags) * kF;
  std::vector<float> x(ends.size() * lagged);
  for (size_t r = 0; r < ends.size(); ++r) {
    lagged_row(features, ends[r], b.lags, stride, x.data() + r * lagged);
  }
  std::vector<float> logits(ends.size() * nh);
  if (b.kind == BaselineKind::kLogistic) {
    std::vector<double> row(static_cast<size_t>(b.columns()));
    std::vector<float> enc(static_cast<size_t>(kF) * static_cast<size_t>(b.ple_bins));
    for (size_t r = 0; r < ends.size(); ++r) {
      const float* xr = x.data() + r * lagged;
      std::copy_n(xr, lagged, row.data());
      if (b.ple_bins > 0) {  // the GAM: x, then enc(x)
        model::ple_encode(xr, b.ple_edges.data(), 1, kF, b.ple_bins, enc.data());
        std::copy(enc.begin(), enc.end(), row.begin() + kF);
      }
      for (size_t h = 0; h < nh; ++h) {
        logits[r * nh + h] = static_cast<float>(logistic_logit(b.logistic[h], row.data()));
      }
    }
    return logits;
  }
  for (size_t h = 0; h < nh; ++h) {
    FXT_ASSIGN_OR_RETURN(std::vector<float> lh,
                         gbdt_logits(b.gbdt[h], x, static_cast<int64_t>(lagged), threads));
    for (size_t r = 0; r < ends.size(); ++r) logits[r * nh + h] = lh[r];
  }
  return logits;
}

// ---- checkpoint ---------------------------------------------------------------------------------

nlohmann::json Baselines::summary(bool with_timings) const {
  nlohmann::json all = nlohmann::json::array();
  for (const FittedBaseline& b : fitted_) {
    nlohmann::json j = {{"name", b.name},
                        {"kind", b.kind == BaselineKind::kLogistic ? "logistic" : "gbdt"},
                        {"lags", b.lags},
                        {"ple_bins", b.ple_bins},
                        {"train_rows", b.train_rows},
                        {"validation_rows", b.validation_rows}};
    if (with_timings) j["fit_seconds"] = b.fit_seconds;
    nlohmann::json per = nlohmann::json::array();
    for (size_t h = 0; h < static_cast<size_t>(horizons_); ++h) {
      if (b.kind == BaselineKind::kLogistic) {
        const LogisticSolution& s = b.logistic[h];
        per.push_back({{"lambda", s.lambda},
                       {"iterations", s.iterations},
                       {"hessians", s.hessians},
                       {"gradient_norm", s.gradient_norm}});
      } else {
        per.push_back(
            {{"rounds", b.gbdt[h].rounds}, {"validation_log_loss", b.gbdt[h].validation_log_loss}});
      }
    }
    j["horizons"] = per;
    all.push_back(j);
  }
  return all;
}

void Baselines::save(Checkpoint* ck, nlohmann::json* meta) const {
  const auto nh = static_cast<int64_t>(horizons_);
  for (const FittedBaseline& b : fitted_) {
    if (b.kind == BaselineKind::kLogistic) {
      std::vector<double> w, bias;
      for (const LogisticSolution& s : b.logistic) {
        w.insert(w.end(), s.weights.begin(), s.weights.end());
        bias.push_back(s.bias);
      }
      ck->set_f64(tensor_name(b, "weight"), {nh, b.columns()}, w);
      ck->set_f64(tensor_name(b, "bias"), {nh}, bias);
      if (b.ple_bins > 0) ck->set_f32(tensor_name(b, "edges"), {kF, b.ple_bins + 1}, b.ple_edges);
    } else {
      for (size_t h = 0; h < b.gbdt.size(); ++h) {
        ck->set_u8(tensor_name(b, fmt::format("h{}", h)),
                   {static_cast<int64_t>(b.gbdt[h].bytes.size())}, b.gbdt[h].bytes);
      }
    }
  }
  (*meta)["baselines"] = summary(/*with_timings=*/false);
}

Result<Baselines> Baselines::load(const Checkpoint& ck, const nlohmann::json& meta, int horizons) {
  Baselines out;
  out.horizons_ = horizons;
  if (!meta.contains("baselines")) return out;
  try {
    for (const nlohmann::json& j : meta.at("baselines")) {
      FittedBaseline b;
      b.name = j.at("name").get<std::string>();
      b.kind =
          j.at("kind").get<std::string>() == "gbdt" ? BaselineKind::kGbdt : BaselineKind::kLogistic;
      b.lags = j.at("lags").get<int>();
      b.ple_bins = j.value("ple_bins", 0);  // absent: a checkpoint from before the GAM
      b.train_rows = j.at("train_rows").get<int64_t>();
      b.validation_rows = j.at("validation_rows").get<int64_t>();
      const nlohmann::json& per = j.at("horizons");
      if (b.ple_bins < 0 || b.ple_bins > 64 || (b.ple_bins > 0 && b.lags != 1)) {
        return InvalidInput("{}: baseline {} has {} PLE bins with lags {}", ck.source, b.name,
                            b.ple_bins, b.lags);
      }
      if (b.ple_bins > 0) {
        const std::vector<int64_t> eshape = {kF, b.ple_bins + 1};
        FXT_ASSIGN_OR_RETURN(b.ple_edges, ck.get_f32(tensor_name(b, "edges"), eshape));
      }
      if (b.lags < 1 || b.lags > 64 || static_cast<int>(per.size()) != horizons) {
        return InvalidInput("{}: baseline {} has lags {} and {} horizons (expected {})", ck.source,
                            b.name, b.lags, per.size(), horizons);
      }
      const auto nh = static_cast<size_t>(horizons);
      if (b.kind == BaselineKind::kLogistic) {
        const std::vector<int64_t> wshape = {horizons, b.columns()};
        const std::vector<int64_t> bshape = {horizons};
        FXT_ASSIGN_OR_RETURN(std::vector<double> w, ck.get_f64(tensor_name(b, "weight"), wshape));
        FXT_ASSIGN_OR_RETURN(std::vector<double> bias, ck.get_f64(tensor_name(b, "bias"), bshape));
        const auto cols = static_cast<size_t>(b.columns());
        for (size_t h = 0; h < nh; ++h) {
          LogisticSolution s;
          s.weights.assign(w.begin() + static_cast<std::ptrdiff_t>(h * cols),
                           w.begin() + static_cast<std::ptrdiff_t>((h + 1) * cols));
          s.bias = bias[h];
          s.lambda = per[h].at("lambda").get<double>();
          s.iterations = per[h].at("iterations").get<int>();
          s.hessians = per[h].value("hessians", 0);  // absent before 2026-12-04
          s.gradient_norm = per[h].at("gradient_norm").get<double>();
          for (double v : s.weights) {
            if (!std::isfinite(v)) {
              return InvalidInput("{}: baseline {} holds a non-finite weight", ck.source, b.name);
            }
          }
          b.logistic.push_back(std::move(s));
        }
      } else {
        for (size_t h = 0; h < nh; ++h) {
          const NamedTensor* t = ck.find(tensor_name(b, fmt::format("h{}", h)));
          if (t == nullptr || t->dtype != DType::kU8) {
            return InvalidInput("{}: missing u8 tensor {}", ck.source,
                                tensor_name(b, fmt::format("h{}", h)));
          }
          GbdtModel m;
          m.bytes = t->data;
          m.rounds = per[h].at("rounds").get<int>();
          m.validation_log_loss = per[h].at("validation_log_loss").get<double>();
          b.gbdt.push_back(std::move(m));
        }
      }
      out.fitted_.push_back(std::move(b));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: bad baselines section: {}", ck.source, e.what());
  }
  return out;
}

}  // namespace fxt
