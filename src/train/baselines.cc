#include "train/baselines.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
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

  // Every (baseline, horizon) fit is one job writing only its own result; the jobs run on
  // `threads` workers, each fit single-threaded (XGBoost with nthread 1 when there are enough
  // jobs to fill the workers), so no core waits on another fit's serial parts and the results
  // do not depend on the thread count or on which worker ran which job.
  struct Inputs {  // one baseline's rows and design (kept alive until every job is done)
    RowSet tr, va;
    DesignMatrix dtr, dva;
    int64_t cols = 0;
  };
  std::vector<std::unique_ptr<Inputs>> inputs;
  struct Job {
    size_t baseline, horizon;
    const Inputs* in;
    double cost;  // a rough size: the biggest jobs start first
  };
  std::vector<Job> jobs;
  auto add_baseline = [&](const std::string& name, BaselineKind kind, int lags, const Inputs* in) {
    FittedBaseline b;
    b.name = name;
    b.kind = kind;
    b.lags = lags;
    b.train_rows = static_cast<int64_t>(in->tr.rows);
    b.validation_rows = static_cast<int64_t>(in->va.rows);
    if (kind == BaselineKind::kLogistic) b.logistic.resize(static_cast<size_t>(nh));
    if (kind == BaselineKind::kGbdt) b.gbdt.resize(static_cast<size_t>(nh));
    out.fitted_.push_back(std::move(b));
    const auto cols = static_cast<double>(in->cols);
    for (size_t h = 0; h < static_cast<size_t>(nh); ++h) {
      // Labelled rows x columns per XGBoost tree (a few dozen trees); rows x columns^2 per
      // Newton matrix of the logistic path.
      const auto& m = in->tr.mask[h];
      const auto rows = static_cast<double>(std::count(m.begin(), m.end(), uint8_t{1}));
      const double cost = kind == BaselineKind::kGbdt ? 200.0 * rows * cols : rows * cols * cols;
      jobs.push_back({out.fitted_.size() - 1, h, in, cost});
    }
  };
  std::vector<int> lag_set = {1};
  if (cfg.lags > 1) lag_set.push_back(cfg.lags);
  for (int lags : lag_set) {
    const int64_t cols = static_cast<int64_t>(lags) * kF;
    const std::string suffix = lags > 1 ? "_lags" : "";
    if (want_logreg || (want_gam && lags == 1)) {
      RowSet tr = gather_rows(ds, logistic_rows.train, lags, nh);
      RowSet va = gather_rows(ds, logistic_rows.validation, lags, nh);
      if (want_logreg) {
        auto in = std::make_unique<Inputs>();
        in->dtr = to_design(tr, cols);
        in->dva = to_design(va, cols);
        in->cols = cols;
        in->tr = tr;
        in->va = va;
        add_baseline("logreg" + suffix, BaselineKind::kLogistic, lags, in.get());
        inputs.push_back(std::move(in));
      }
      if (want_gam && lags == 1) {
        const int bins = cfg.gam_bins;
        auto in = std::make_unique<Inputs>();
        const std::vector<float> edges = ple_edges_of_rows(ds, logistic_rows.train, bins);
        in->dtr = to_gam_design(tr, edges, bins);
        in->dva = to_gam_design(va, edges, bins);
        in->cols = in->dtr.cols;
        in->tr = std::move(tr);
        in->va = std::move(va);
        add_baseline("gam", BaselineKind::kLogistic, lags, in.get());
        out.fitted_.back().ple_bins = bins;
        out.fitted_.back().ple_edges = edges;
        inputs.push_back(std::move(in));
      }
    }
    if (want_gbdt) {
      auto in = std::make_unique<Inputs>();
      in->tr = gather_rows(ds, gbdt_rows.train, lags, nh);
      in->va = gather_rows(ds, gbdt_rows.validation, lags, nh);
      in->cols = cols;
      add_baseline("gbdt" + suffix, BaselineKind::kGbdt, lags, in.get());
      inputs.push_back(std::move(in));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.cost > b.cost; });

  const std::vector<double> grid = default_lambda_grid();
  const size_t workers = std::min(jobs.size(), static_cast<size_t>(std::max(threads, 1)));
  GbdtParams gp = cfg.gbdt_params;
  gp.threads = std::max(1, threads / static_cast<int>(std::max<size_t>(workers, 1)));
  std::vector<Status> status(jobs.size(), Status::Ok());
  std::vector<double> seconds(jobs.size(), 0.0);
  std::atomic<size_t> next{0};
  auto work = [&] {
    std::vector<float> xt, yt, xv, yv;  // a GBDT job's rows with a label (XGBoost inputs)
    for (size_t j = next++; j < jobs.size(); j = next++) {
      const Job& job = jobs[j];
      const auto t0 = Clock::now();
      FittedBaseline& b = out.fitted_[job.baseline];
      const Inputs& in = *job.in;
      const size_t h = job.horizon;
      if (b.kind == BaselineKind::kLogistic) {
        auto path = fit_logistic_path(in.dtr, in.tr.y[h], in.tr.mask[h], in.dva, in.va.y[h],
                                      in.va.mask[h], grid);
        if (path.ok()) {
          b.logistic[h] = path->best;
        } else {
          status[j] = path.status();
        }
      } else {
        masked_rows(in.tr, h, in.cols, &xt, &yt);
        masked_rows(in.va, h, in.cols, &xv, &yv);
        auto m = fit_gbdt(xt, yt, xv, yv, in.cols, gp);
        if (m.ok()) {
          b.gbdt[h] = std::move(*m);
        } else {
          status[j] = m.status();
        }
      }
      seconds[j] = std::chrono::duration<double>(Clock::now() - t0).count();
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t j = 0; j < jobs.size(); ++j) {
    FittedBaseline& b = out.fitted_[jobs[j].baseline];
    if (!status[j].ok()) {
      return Status(status[j].code(), fmt::format("baseline {} at h{}: {}", b.name,
                                                  horizons[jobs[j].horizon], status[j].message()));
    }
    b.fit_seconds += seconds[j];
  }
  for (const FittedBaseline& b : out.fitted_) {
    log_info("baseline {}: {} training rows, fit in {:.1f} s (its horizons' fits, summed)", b.name,
             b.train_rows, b.fit_seconds);
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
