// The training loop, train() (see trainer.h). The state it carries is train_state.h, its
// validation scoring.h, its CUDA backend cuda_trainer.h; evaluate() and predict() are in
// evaluate.cc.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "core/fault.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/random.h"
#include "features/features.h"
#include "features/labels.h"
#include "train/cuda_trainer.h"
#include "train/logistic_fallback.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/run_record.h"
#include "train/scoring.h"
#include "train/train_state.h"

namespace fxt {

namespace fs = std::filesystem;
using model::CpuContext;
using model::In;
using model::LossConfig;
using model::Out;
using model::Shape;
using train_detail::check_same_stores;
using train_detail::join_ints;
using train_detail::load_state;
using train_detail::parse_stop_metric;
using train_detail::StopMetric;
using train_detail::instrument_of;
using train_detail::store_identities;
using train_detail::TrainState;
using train_detail::validate_epoch;
using train_detail::ValResult;

namespace {

// The sampler seed of global step s: splitmix64 of (seed, s), so no sampler state is carried.
uint64_t seed_for_step(uint64_t seed, int64_t step) {
  uint64_t state = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(step);
  return splitmix64(&state);  // = the (step+1)-th output of splitmix64 seeded with `seed`
}

// Exit 1 with the step where the loss (or a weight) stopped being finite; the run directory
// keeps the checkpoints of the last good epoch.
Status diverged(int64_t step, double value, const std::string& last_path) {
  return InternalError(
      "training diverged at step {} (loss {}); lower --lr{}", step, value,
      fs::exists(last_path) ? "; " + last_path + " holds the last good epoch" : std::string());
}

// Training positive rate per horizon (the base-rate predictor), over the training range.
Result<std::vector<double>> train_base_rates(const Dataset& ds, int nh) {
  const GlobalRange g = ds.range(Split::kTrain);
  std::vector<uint8_t> y, m;
  for (size_t i = 0; i < ds.store_count(); ++i) {
    const Dataset::Store& s = ds.store(i);
    const uint64_t n = s.reader.size();
    const uint64_t lo = std::max(g.begin, s.offset), hi = std::min(g.end, s.offset + n);
    for (uint64_t t = lo; t < hi; ++t) {
      const size_t r = static_cast<size_t>(t - s.offset) * static_cast<size_t>(nh);
      y.insert(y.end(), s.labels.y.begin() + static_cast<std::ptrdiff_t>(r),
               s.labels.y.begin() + static_cast<std::ptrdiff_t>(r + nh));
      m.insert(m.end(), s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r),
               s.labels.mask.begin() + static_cast<std::ptrdiff_t>(r + nh));
    }
  }
  FXT_ASSIGN_OR_RETURN(std::vector<double> rates, positive_rates(y, m, static_cast<size_t>(nh)));
  // A horizon without a single training label would train on nothing: refuse before work.
  for (size_t h = 0; h < rates.size(); ++h) {
    if (!std::isfinite(rates[h])) {
      return InvalidInput(
          "horizon {}: every training label is masked (--min-move-ticks {} exceeds every mid "
          "move in the training range); lower --min-move-ticks",
          ds.config().labels.horizons[h], ds.config().labels.min_move_ticks);
    }
  }
  return rates;
}

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

bool starts_from_fit(InputSkip s) {
  return s == InputSkip::kLogReg || s == InputSkip::kGam;
}

// --input-skip logreg: the skip path starts as the logistic regression on the snapshot's own
// features fit on the training rows (the logreg baseline when --baselines fits it, else a fit for
// this alone), and the heads' w_m, w_s start at zero, so the untrained model equals that logistic
// and training learns what it misses. --input-skip gam: the same from the GAM on the PLE encoding
// (the gam baseline), W_skip from its first 40 coefficients, W_ple from the rest and the PLE
// edges from its edges, so the untrained model equals that GAM.
Status warm_start_input_skip(const Dataset& ds, TrainState& st) {
  const TrainConfig& c = st.cfg;
  const model::PerceptionConfig& pc = st.net.config();
  const bool gam = c.input_skip == InputSkip::kGam;
  const std::string name = gam ? "gam" : "logreg";
  const FittedBaseline* start = st.baselines.find(name);
  Baselines own;
  if (start == nullptr) {
    BaselineConfig bc = c.baselines;
    bc.lags = 1;
    bc.gam_bins = pc.ple_bins > 0 ? pc.ple_bins : bc.gam_bins;
    FXT_ASSIGN_OR_RETURN(own, Baselines::fit(ds, c.horizons, bc, c.threads, name));
    start = own.find(name);
  }
  if (start == nullptr || !pc.input_skip ||
      start->logistic.size() != static_cast<size_t>(pc.horizons) ||
      (gam && start->ple_bins != pc.ple_bins)) {
    return InternalError("--input-skip {}: no fit to start the skip path from", name);
  }
  const model::PerceptionLayout l = model::perception_layout(pc);
  const auto f = static_cast<size_t>(pc.features);
  const size_t width = gam ? f * static_cast<size_t>(pc.ple_bins) : 0;
  for (size_t j = 0; j < static_cast<size_t>(pc.horizons); ++j) {
    const LogisticSolution& sol = start->logistic[j];
    if (sol.weights.size() != f + width) {
      return InternalError("--input-skip {}: the fit has {} coefficients, not {}", name,
                           sol.weights.size(), f + width);
    }
    for (size_t i = 0; i < f; ++i)
      st.params[l.skip_w + j * f + i] = static_cast<float>(sol.weights[i]);
    for (size_t i = 0; i < width; ++i)
      st.params[l.ple_w + j * width + i] = static_cast<float>(sol.weights[f + i]);
    st.params[l.heads + j * static_cast<size_t>(l.head.size) + static_cast<size_t>(l.head.bs)] =
        static_cast<float>(sol.bias);
  }
  if (gam) {
    std::copy(start->ple_edges.begin(), start->ple_edges.end(),
              st.params.begin() + static_cast<std::ptrdiff_t>(l.ple_edges));
  }
  return Status::Ok();
}

// --ple-bins K: the PLE path's edges are the quantiles of the standardised features over the
// training rows the baselines fit on (constants from here on; a resumed run has them in its
// checkpoint).
void set_ple_edges(const Dataset& ds, TrainState& st) {
  const model::PerceptionConfig& pc = st.net.config();
  const std::vector<float> edges =
      training_ple_edges(ds, pc.ple_bins, st.cfg.baselines.max_fit_rows);
  std::copy(
      edges.begin(), edges.end(),
      st.params.begin() + static_cast<std::ptrdiff_t>(model::perception_layout(pc).ple_edges));
}

// Keeps the metrics.jsonl lines of epochs <= last_epoch (a resumed run rewrites the rest).
Status truncate_metrics(const std::string& path, int last_epoch) {
  if (!fs::exists(path)) return Status::Ok();
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::istringstream in(text);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("epoch")) continue;
    if (j["epoch"].get<int>() <= last_epoch) kept += line + "\n";
  }
  return write_file_atomic(path, kept);
}

Status append_line(const std::string& path, const std::string& line) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  if (!f) return IoError("cannot open {} for appending", path);
  f << line << '\n';
  f.flush();
  if (!f) return IoError("cannot write {}", path);
  return Status::Ok();
}

}  // namespace

Result<TrainSummary> train(const TrainConfig& config_in, const std::vector<std::string>& store_dirs,
                           const std::string& run_dir, const TrainOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  RunRecord record("train");  // start time of this invocation, for RUN_DIR/run.json
  const std::string last_path = run_dir + "/last.ckpt", best_path = run_dir + "/best.ckpt";
  const std::string metrics_path = run_dir + "/metrics.jsonl";

  // Stores are recorded as absolute paths so eval and resume work from any directory.
  std::vector<std::string> stores;
  for (const std::string& d : store_dirs) {
    stores.push_back(fs::absolute(fs::path(d)).lexically_normal().string());
  }
  {  // a GPU-only precision on the CPU backend fails before any data is read
    FXT_ASSIGN_OR_RETURN(const bool cuda, resolve_cuda(config_in.device, config_in.model));
    FXT_RETURN_IF_ERROR(check_precision(config_in.precision, cuda));
  }
  std::unique_ptr<TrainState> st;
  if (options.resume) {
    if (!fs::exists(last_path)) return NotFound("--resume: {} does not exist", last_path);
    FXT_ASSIGN_OR_RETURN(st, load_state(last_path));
    if (!stores.empty() && stores != st->stores) {
      return UsageError("--resume: the stores given differ from those of {}", last_path);
    }
    if (!config_in.horizons.empty() && config_in.horizons != st->cfg.horizons) {
      return UsageError("--resume: {} was trained for horizons {}; --horizons asks for {}",
                        last_path, join_ints(st->cfg.horizons), join_ints(config_in.horizons));
    }
    st->cfg.threads = config_in.threads;
    st->cfg.device = config_in.device;
    st->cfg.precision = config_in.precision;
    FXT_RETURN_IF_ERROR(check_same_stores(st->stores, st->store_ids, last_path));
    FXT_RETURN_IF_ERROR(truncate_metrics(metrics_path, st->epoch));
  } else {
    FXT_RETURN_IF_ERROR(config_in.validate());
    if (store_dirs.empty()) return UsageError("train needs at least one --store");
    if (fs::exists(last_path)) {
      return UsageError("{} already holds a run (last.ckpt): use --resume or another --run-dir",
                        run_dir);
    }
    st = std::make_unique<TrainState>(config_in);
    st->stores = stores;
    FXT_RETURN_IF_ERROR(st->setup());
  }
  const TrainConfig& c = st->cfg;
  FXT_ASSIGN_OR_RETURN(const StopMetric stop, parse_stop_metric(c.early_stop, c.horizons));
  const int nh = static_cast<int>(c.horizons.size());

  FXT_ASSIGN_OR_RETURN(Dataset ds, Dataset::open(st->stores, c.dataset_config()));
  if (!options.resume) {
    FXT_ASSIGN_OR_RETURN(st->store_ids, store_identities(st->stores));
    for (size_t i = 0; i < ds.store_count(); ++i) {
      st->store_instruments.push_back(instrument_of(ds.store(i).reader.meta()));
    }
  }
  if (ds.anchors(Split::kTrain).empty()) {
    return InvalidInput(
        "the training split has no clean window of {} positions (stores too short "
        "for --seq/--stride/--horizons?)",
        c.window);
  }
  if (ds.evaluation_anchors(Split::kValidation).empty()) {
    return InvalidInput("the validation split has no clean window of {} positions", c.window);
  }
  if (!options.resume) {
    st->stats = ds.measure_train_stats();
    for (int k : c.drop_features) st->stats.dropped[static_cast<size_t>(k)] = true;
    if (c.cfc_time_real) {
      st->cfc_time_unit_ns = ds.median_train_gap_ns();
      if (!(st->cfc_time_unit_ns > 0)) {
        return InvalidInput("--cfc-time real: timestamps never advance in the training range");
      }
    }
    FXT_ASSIGN_OR_RETURN(st->base_rates, train_base_rates(ds, nh));
  }
  ds.standardise_features(st->stats);
  if (!options.resume) {
    // The baselines, fit once to convergence on the standardised training rows (a resumed run
    // keeps those of its checkpoint).
    const std::string only = st->perception() ? "" : model_kind_name(c.model);
    FXT_ASSIGN_OR_RETURN(st->baselines,
                         Baselines::fit(ds, c.horizons, c.baselines, c.threads, only));
    // A GAM start sets the PLE edges to the GAM's (the same rows' quantiles).
    if (st->perception() && st->net.config().ple_bins > 0 && c.input_skip != InputSkip::kGam) {
      set_ple_edges(ds, *st);
    }
    if (st->perception() && starts_from_fit(c.input_skip)) {
      FXT_RETURN_IF_ERROR(warm_start_input_skip(ds, *st));
    }
  }
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return IoError("cannot create run directory {}: {}", run_dir, ec.message());
  if (!options.resume && fs::exists(metrics_path)) fs::remove(metrics_path, ec);

  CpuContext ctx(c.threads);
  LossConfig lcfg;
  lcfg.weighting = c.weighting;
  lcfg.trunk_lambda = c.lambda;
  LrSchedule sched;
  sched.peak_lr = c.lr;
  sched.total_steps = c.steps_per_epoch * c.epochs;
  sched.warmup_steps = std::min(c.warmup_steps, sched.total_steps);
  sched.min_lr_ratio = c.min_lr_ratio;
  FXT_RETURN_IF_ERROR(sched.validate());
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(c.device, c.model));
  FXT_RETURN_IF_ERROR(check_precision(c.precision, use_cuda));
  record.set_device(backend_name(use_cuda));
  record.set("precision", precision_name(c.precision));
#if FXT_HAVE_CUDA
  std::unique_ptr<train_detail::CudaTrainer> cuda;
  if (use_cuda) cuda = std::make_unique<train_detail::CudaTrainer>(*st, ds, sched);
#endif

  const int b = c.batch, k = c.window;
  const size_t rows = static_cast<size_t>(b) * static_cast<size_t>(k);
  std::vector<float> x(rows * kFeatureDim), y(rows * static_cast<size_t>(nh)), m(y.size());
  std::vector<float> dlogits(y.size()), lambda_f(static_cast<size_t>(nh));
  std::vector<float> dt(rows);
  const float* dt_or_null = c.cfc_time_real ? dt.data() : nullptr;
  const auto R = static_cast<int64_t>(rows);
  const Shape rh{R, nh};

  // The logistic fallback's start: the untrained model (the logistic, exactly) validated once,
  // before the first step of a fresh run; a resumed run has it from its checkpoint.
  if (!options.resume && st->perception() && starts_from_fit(c.input_skip) && c.logistic_fallback) {
    FXT_ASSIGN_OR_RETURN(const ValResult val0, validate_epoch(*st, ds, ctx));
    st->logistic_start = train_detail::capture_logistic_start(st->net.config(), st->params, val0, stop);
    log_info("start (the logistic): val {:.5f} mean AUC {:.4f}", val0.loss, val0.metrics.mean_auc);
  }

  nlohmann::json epoch_seconds = nlohmann::json::array();
  int epochs_here = 0;
  // A baseline-only run (--model logreg|gbdt) has one "epoch": its fit, then validation.
  const bool trains = st->perception();
  const int epochs = trains ? c.epochs : 1;
  while (!st->stopped && st->epoch < epochs &&
         (options.stop_after_epochs <= 0 || epochs_here < options.stop_after_epochs)) {
    const auto t_epoch = Clock::now();
    double loss_sum = 0.0, norm_sum = 0.0, lr = 0.0;
    std::vector<double> loss_h_sum(static_cast<size_t>(nh), 0.0);
    int64_t skipped = 0;
#if FXT_HAVE_CUDA
    if (cuda) {
      // The whole epoch as replays of the captured step; the sums come back at its end.
      const gpu::StepSums sums = cuda->run_epoch(c.steps_per_epoch);
      loss_sum = sums.loss;
      norm_sum = sums.grad_norm;
      skipped = sums.skipped;
      for (int h = 0; h < nh; ++h)
        loss_h_sum[static_cast<size_t>(h)] = sums.loss_h[static_cast<size_t>(h)];
      st->step += c.steps_per_epoch;
      lr = sched.lr_at(st->step - 1);
      FXT_RETURN_IF_ERROR(cuda->download(*st));
      // The steps ran as one batch of replays; their kill points come after it, when nothing
      // of the epoch is written yet, which is all a kill inside the epoch can observe.
      for (int64_t i = 0; i < c.steps_per_epoch; ++i) fault_point("train.step");
    }
#endif
    for (int64_t i = 0; trains && !use_cuda && i < c.steps_per_epoch; ++i) {
      Rng rng(seed_for_step(c.seed, st->step));
      const std::vector<Anchor> anchors = ds.sample_train(rng, static_cast<size_t>(b));
      for (int j = 0; j < b; ++j) {
        const size_t o = static_cast<size_t>(j) * static_cast<size_t>(k);
        ds.gather(anchors[static_cast<size_t>(j)], x.data() + o * kFeatureDim, y.data() + o * nh,
                  m.data() + o * nh);
        if (c.cfc_time_real) {
          ds.gather_elapsed(anchors[static_cast<size_t>(j)], st->cfc_time_unit_ns, dt.data() + o);
        }
      }
      const float* lg =
          st->net.forward(ctx, st->params.data(), x.data(), dt_or_null, b, k, c.stride);
      std::fill(dlogits.begin(), dlogits.end(), 0.0f);
      std::fill(st->dlog_sigma.begin(), st->dlog_sigma.end(), 0.0f);
      const model::LossStepOutputs out = model::loss_step<float>(
          lcfg, st->ctrl, In<float>(lg, rh), In<float>(y.data(), rh), In<float>(m.data(), rh),
          st->kendall ? In<float>(st->log_sigma.data(), Shape{nh}) : In<float>(),
          Out<float>(dlogits.data(), rh),
          st->kendall ? Out<float>(st->dlog_sigma.data(), Shape{nh}) : Out<float>());
      for (int h = 0; h < nh; ++h)
        lambda_f[static_cast<size_t>(h)] = static_cast<float>(out.lambda[static_cast<size_t>(h)]);
      st->net.backward(ctx, st->params.data(), x.data(), dt_or_null, c.stride, dlogits.data(),
                       lambda_f.data(), st->grads.data());
      lr = sched.lr_at(st->step);
      const StepStats ss = st->opt.step(lr);
      if (!ss.applied) ++skipped;
      if (!std::isfinite(out.total)) return diverged(st->step + 1, out.total, last_path);
      loss_sum += out.total;
      norm_sum += ss.grad_norm;
      for (int h = 0; h < nh; ++h)
        loss_h_sum[static_cast<size_t>(h)] += out.loss_h[static_cast<size_t>(h)];
      ++st->step;
      fault_point("train.step");
    }
    // Nothing of a diverged epoch is written: last.ckpt stays the last good epoch.
    if (!std::isfinite(loss_sum)) return diverged(st->step, loss_sum, last_path);
    if (const auto bad = std::find_if_not(st->params.begin(), st->params.end(),
                                          [](float v) { return std::isfinite(v); });
        bad != st->params.end()) {
      return diverged(st->step, static_cast<double>(*bad), last_path);
    }
    ++st->epoch;
    ++epochs_here;
    FXT_ASSIGN_OR_RETURN(ValResult val, validate_epoch(*st, ds, ctx));

    // Early stopping: the first epoch always becomes the best; a NaN value never improves;
    // best_value of a NaN first epoch is the worst finite sentinel (JSON holds no NaN).
    double value = val.loss;
    if (stop.horizon_index >= 0) {
      value = val.metrics.horizons[static_cast<size_t>(stop.horizon_index)].auc;
    } else if (!stop.lower_is_better) {
      value = val.metrics.mean_auc;
    }
    // With the logistic fallback the epoch's model is the composed one: its value decides.
    train_detail::HeadChoice heads;
    heads.logistic.assign(static_cast<size_t>(nh), false);
    if (!st->logistic_start.empty()) {
      heads = train_detail::choose_heads(st->logistic_start, val, stop);
      value = heads.value;
    }
    const bool improved = st->best_epoch == 0 ||
                          (std::isfinite(value) && (stop.lower_is_better ? value < st->best_value
                                                                         : value > st->best_value));
    if (improved) {
      st->best_epoch = st->epoch;
      st->best_value = std::isfinite(value) ? value : (stop.lower_is_better ? 1e300 : -1e300);
      st->bad_epochs = 0;
    } else {
      ++st->bad_epochs;
      if (c.patience > 0 && st->bad_epochs >= c.patience) st->stopped = true;
    }

    const double secs = std::chrono::duration<double>(Clock::now() - t_epoch).count();
    epoch_seconds.push_back(secs);
    nlohmann::json line;
    line["epoch"] = st->epoch;
    line["step"] = st->step;
    const double steps_run = trains ? static_cast<double>(c.steps_per_epoch) : 0.0;
    line["train_loss"] = num(loss_sum / steps_run);
    nlohmann::json tl = nlohmann::json::array(), vl = nlohmann::json::array(),
                   auc = nlohmann::json::object();
    for (int h = 0; h < nh; ++h) {
      tl.push_back(num(loss_h_sum[static_cast<size_t>(h)] / steps_run));
      vl.push_back(num(val.loss_h[static_cast<size_t>(h)]));
      auc[fmt::format("h{}", c.horizons[static_cast<size_t>(h)])] =
          num(val.metrics.horizons[static_cast<size_t>(h)].auc);
    }
    line["train_loss_h"] = tl;
    line["val_loss"] = num(val.loss);
    line["val_loss_h"] = vl;
    line["val_auc"] = auc;
    line["val_mean_auc"] = num(val.metrics.mean_auc);
    line["val_rows"] = val.rows;
    std::vector<double> lam(static_cast<size_t>(nh)), sigma(static_cast<size_t>(nh));
    model::trunk_lambdas(lcfg, st->ctrl, lam);
    for (int h = 0; h < nh; ++h) {
      const auto hs = static_cast<size_t>(h);
      double ls = st->kendall ? st->log_sigma[hs] : 0.0;
      if (c.weighting == model::HorizonWeighting::kKendallClosed) {
        ls = st->ctrl.ema_initialized ? model::closed_log_sigma(lcfg, st->ctrl.ema[hs]) : 0.0;
      }
      sigma[hs] = std::exp(ls);
    }
    line["controller"] = {
        {"ema", st->ctrl.ema}, {"zmax", st->ctrl.zmax}, {"lambda", lam}, {"sigma", sigma}};
    line["lr"] = lr;
    line["grad_norm"] = num(norm_sum / steps_run);
    line["skipped_steps"] = skipped;
    line["improved"] = improved;
    if (!st->logistic_start.empty()) {
      nlohmann::json lh = nlohmann::json::array();
      for (int h = 0; h < nh; ++h) {
        if (heads.logistic[static_cast<size_t>(h)]) lh.push_back(c.horizons[static_cast<size_t>(h)]);
      }
      line["logistic_heads"] = lh;  // horizons whose logistic start validates better
      line["selection_value"] = num(value);
    }
    line["seconds"] = secs;
    // The epoch's line goes first and its checkpoints after: a kill in between leaves a line
    // past last.ckpt, which resume drops (truncate_metrics) and writes again, so no epoch's
    // record is ever lost.
    FXT_RETURN_IF_ERROR(append_line(metrics_path, line.dump()));
    fault_point("train.line_written");
    const Checkpoint ck = st->to_checkpoint();
    if (improved) {
      if (std::find(heads.logistic.begin(), heads.logistic.end(), true) == heads.logistic.end()) {
        FXT_RETURN_IF_ERROR(write_checkpoint(best_path, ck));
      } else {
        Checkpoint best = st->to_checkpoint(train_detail::with_logistic_heads(
            st->net.config(), st->params, st->logistic_start, heads.logistic));
        best.meta["logistic_heads"] = line["logistic_heads"];
        FXT_RETURN_IF_ERROR(write_checkpoint(best_path, best));
      }
    }
    FXT_RETURN_IF_ERROR(write_checkpoint(last_path, ck));
    fault_point("train.epoch_written");
    log_info("epoch {} step {}: train {:.5f} val {:.5f} mean AUC {:.4f} ({:.1f} s)", st->epoch,
             st->step, loss_sum / steps_run, val.loss, val.metrics.mean_auc, secs);
  }

  // RUN_DIR/run.json through the run registry (train/run_record.h, docs/RUNS.md); rewritten by
  // every invocation. The headline metrics: the early-stopping best and the last epoch's val
  // mean AUC, read back from metrics.jsonl so a resumed run that trains no epoch still has it.
  nlohmann::json last_val_mean_auc = nullptr, best_logistic_heads = nullptr;
  if (auto text = read_file(metrics_path); text.ok()) {
    std::istringstream in(*text);
    std::string line, last;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      last = line;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("epoch", -1) == st->best_epoch) {
        best_logistic_heads = j.value("logistic_heads", nlohmann::json());
      }
    }
    const nlohmann::json j = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) last_val_mean_auc = j.value("val_mean_auc", nlohmann::json());
  }
  record.set_config(c.to_json());
  for (const std::string& d : st->stores) FXT_RETURN_IF_ERROR(record.add_input_store(d));
  record.set("store_dirs", st->stores);
  record.set("threads", c.threads);
  record.set("resumed", options.resume);
  record.set("epochs_completed", st->epoch);
  record.set("steps_completed", st->step);
  record.set("best_epoch", st->best_epoch);
  // Horizons whose head in best.ckpt is the logistic start (docs/MODEL.md); null when off.
  record.set("logistic_heads", best_logistic_heads);
  record.set("stopped_early", st->stopped);
  record.set("baselines", st->baselines.summary());
  record.set("timings",
             {{"total_seconds", std::chrono::duration<double>(Clock::now() - t_start).count()},
              {"epoch_seconds", epoch_seconds}});
  record.set_metrics({{"best_epoch", st->best_epoch},
                      {"best_value", st->best_value},
                      {"val_mean_auc", last_val_mean_auc}});
  FXT_RETURN_IF_ERROR(record.write(run_dir));

  TrainSummary sum;
  sum.epochs_run = st->epoch;
  sum.steps = st->step;
  sum.best_epoch = st->best_epoch;
  sum.best_value = st->best_value;
  sum.stopped_early = st->stopped;
  return sum;
}

}  // namespace fxt
