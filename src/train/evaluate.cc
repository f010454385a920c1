// evaluate() and predict() (see trainer.h): a checkpoint's model and baselines scored with
// inference windows (scoring.h), and the synthetic market's oracle beside them.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "features/features.h"
#include "train/comparison.h"
#include "train/metrics.h"
#include "train/oracle_rows.h"
#include "train/scoring.h"
#include "train/stacking.h"
#include "train/train_state.h"

namespace fxt {

using model::CpuContext;
using train_detail::check_same_stores;
using train_detail::join_ints;
using train_detail::load_state;
using train_detail::score_inference;
using train_detail::TrainState;
using train_detail::warn_if_other_instrument;

Result<EvalSplit> parse_eval_split(const std::string& name) {
  if (name == "test") return EvalSplit::kTest;
  if (name == "validation") return EvalSplit::kValidation;
  if (name == "all") return EvalSplit::kAll;
  return UsageError("--split must be test, validation or all (got '{}')", name);
}

Result<nlohmann::json> evaluate(const std::string& checkpoint_path,
                                const std::vector<std::string>& store_dirs,
                                const EvalOptions& options, EvalRows* rows) {
  FXT_ASSIGN_OR_RETURN(std::unique_ptr<TrainState> st, load_state(checkpoint_path));
  TrainConfig& c = st->cfg;
  c.threads = options.threads;
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(options.device, c.model));
  FXT_RETURN_IF_ERROR(check_precision(options.precision, use_cuda));
  c.precision = options.precision;
#if FXT_HAVE_CUDA
  if (use_cuda) st->net.use_gpu(nullptr, st->params, c.precision);
#endif
  if (!options.expect_horizons.empty() && options.expect_horizons != c.horizons) {
    return UsageError("{} was trained for horizons {}; --horizons asks for {}", checkpoint_path,
                      join_ints(c.horizons), join_ints(options.expect_horizons));
  }
  const std::vector<std::string> dirs = store_dirs.empty() ? st->stores : store_dirs;
  if (store_dirs.empty()) {
    FXT_RETURN_IF_ERROR(check_same_stores(st->stores, st->store_ids, checkpoint_path));
  }
  DatasetConfig dc = c.dataset_config();
  // --split all ignores the split, so a CV fold's explicit ranges need not fit other stores.
  if (options.split == EvalSplit::kAll) dc.split = SplitConfig{};
  FXT_ASSIGN_OR_RETURN(Dataset ds, Dataset::open(dirs, dc));
  std::optional<SynthConfig> market;  // the oracle's, checked against the store before scoring
  if (options.oracle.enabled()) {
    FXT_ASSIGN_OR_RETURN(market,
                         oracle_market(options.oracle, ds.store_count(), ds.total_snapshots()));
  }
  ds.standardise_features(st->stats);  // the training statistics, never re-measured
  const int nh = static_cast<int>(c.horizons.size());
  GlobalRange g{0, ds.total_snapshots()};
  if (options.split == EvalSplit::kTest) g = ds.range(Split::kTest);
  if (options.split == EvalSplit::kValidation) g = ds.range(Split::kValidation);

  CpuContext ctx(c.threads);
  const std::vector<FittedBaseline>& fitted = st->baselines.fitted();
  // Scores every `step`-th snapshot of g (step 1: all) with the model and every baseline, and
  // gathers their labels and masks, in time order: [rows][H] each.
  struct Scored {
    std::vector<float> model;
    std::vector<std::vector<float>> baselines;
    std::vector<uint8_t> labels, mask;
  };
  auto score_range = [&](GlobalRange range, uint64_t step, Progress* progress) -> Result<Scored> {
    Scored out;
    out.baselines.resize(fitted.size());
    std::vector<float> ml;
    for (size_t i = 0; i < ds.store_count(); ++i) {
      const Dataset::Store& s = ds.store(i);
      const uint64_t n = s.reader.size();
      const uint64_t lo = std::max(range.begin, s.offset), hi = std::min(range.end, s.offset + n);
      std::vector<uint64_t> ends;
      for (uint64_t t = lo; t < hi; ++t) {
        if ((t - range.begin) % step == 0) ends.push_back(t - s.offset);
      }
      if (ends.empty()) continue;
      FXT_RETURN_IF_ERROR(
          score_inference(*st, ctx, s.reader, s.features.data(), ends, &ml, progress));
      out.model.insert(out.model.end(), ml.begin(), ml.end());
      for (size_t b = 0; b < fitted.size(); ++b) {
        FXT_ASSIGN_OR_RETURN(std::vector<float> bl,
                             st->baselines.score(b, s.features.data(), ends, c.stride, c.threads));
        out.baselines[b].insert(out.baselines[b].end(), bl.begin(), bl.end());
      }
      for (uint64_t e : ends) {
        const auto r0 = static_cast<std::ptrdiff_t>(e * static_cast<uint64_t>(nh));
        out.labels.insert(out.labels.end(), s.labels.y.begin() + r0, s.labels.y.begin() + r0 + nh);
        out.mask.insert(out.mask.end(), s.labels.mask.begin() + r0,
                        s.labels.mask.begin() + r0 + nh);
      }
    }
    return out;
  };
  Progress progress("eval", g.end - g.begin, "snap");
  FXT_ASSIGN_OR_RETURN(Scored test, score_range(g, 1, &progress));
  std::vector<float>& model_scores = test.model;
  std::vector<std::vector<float>>& base_scores = test.baselines;
  std::vector<uint8_t>&labels = test.labels, &mask = test.mask;
  if (model_scores.empty()) {
    return InvalidInput("no snapshot to evaluate in the {} split of the given stores",
                        options.split == EvalSplit::kTest         ? "test"
                        : options.split == EvalSplit::kValidation ? "validation"
                                                                  : "whole");
  }
  progress.finish();
  // The oracle's Monte Carlo needs only the row count: it runs beside the stacks, metrics and
  // intervals below (mostly on one core), on all threads but one, and is joined where its
  // comparison is made (or when an error returns first). Its probabilities do not depend on
  // this.
  const size_t scored_rows = model_scores.size() / static_cast<size_t>(nh);
  auto snapshot_of_row = [&](size_t r) { return g.begin + r; };  // one store: global = local
  std::future<Result<OracleDraw>> oracle_draw;
  if (options.oracle.enabled()) {
    oracle_draw = std::async(std::launch::async, [&] {
      return draw_oracle(options.oracle, *market, c.horizons, scored_rows, snapshot_of_row,
                         std::max(1, c.threads - 1), nullptr);
    });
  }
  std::vector<std::string> names;
  for (const FittedBaseline& f : fitted) names.push_back(f.name);

  // The stacks (train/stacking.h), fit on evenly spaced validation rows: the baseline stack
  // joins the baselines, the model stack is reported beside the model.
  nlohmann::json stack_json;
  std::vector<float> stacked_scores;
  const GlobalRange gv = ds.range(Split::kValidation);
  if (options.split == EvalSplit::kTest && !fitted.empty() && options.stack_rows > 0 &&
      gv.end > gv.begin) {
    const uint64_t span = gv.end - gv.begin, want = static_cast<uint64_t>(options.stack_rows);
    const uint64_t step = (span + want - 1) / want;
    FXT_ASSIGN_OR_RETURN(Scored val, score_range(gv, step, nullptr));
    // Stacks that cannot be fit (a horizon without both classes among the validation rows) are
    // skipped with a warning: the evaluation itself stands without them.
    Result<Stacks> stacks =
        fit_stacks(names, val.baselines, val.model, val.labels, val.mask, c.horizons);
    if (stacks.ok()) {
      auto [baseline_stack, model_stack] = apply_stacks(*stacks, base_scores, model_scores);
      stacked_scores = std::move(model_stack);
      base_scores.push_back(std::move(baseline_stack));
      names.emplace_back(kBaselineStackName);
      stack_json = {{"validation_rows", val.labels.size() / static_cast<size_t>(nh)},
                    {"validation_step", step},
                    {"baseline_stack", stacks->baselines.to_json()},
                    {"model_stack", stacks->model.to_json()}};
    } else {
      log_warn("the stacks are skipped: {}", stacks.status().message());
    }
  }
  FXT_ASSIGN_OR_RETURN(Metrics mm, compute_metrics(std::span<const float>(model_scores), labels,
                                                   mask, c.horizons, ScoreKind::kLogit));
  nlohmann::json baseline_metrics = nlohmann::json::object();
  for (size_t b = 0; b < names.size(); ++b) {
    FXT_ASSIGN_OR_RETURN(Metrics m, compute_metrics(std::span<const float>(base_scores[b]), labels,
                                                    mask, c.horizons, ScoreKind::kLogit));
    baseline_metrics[names[b]] = m.to_json();
  }
  if (!stacked_scores.empty()) {
    FXT_ASSIGN_OR_RETURN(Metrics sm, compute_metrics(std::span<const float>(stacked_scores), labels,
                                                     mask, c.horizons, ScoreKind::kLogit));
    stack_json["model"] = sm.to_json();
  }
  FXT_ASSIGN_OR_RETURN(Metrics bm, base_rate_metrics(st->base_rates, labels, mask, c.horizons));
  nlohmann::json ci = nlohmann::json::object();
  nlohmann::json comparison;
  if (options.bootstrap > 0) {
    BootstrapOptions bo;
    bo.replicates = options.bootstrap;
    bo.seed = options.bootstrap_seed;
    bo.threads = c.threads;
    FXT_ASSIGN_OR_RETURN(BootstrapResult mb,
                         bootstrap_metrics(std::span<const float>(model_scores), labels, mask,
                                           c.horizons, ScoreKind::kLogit, bo));
    ci["model"] = mb.to_json();
    for (size_t b = 0; b < names.size(); ++b) {
      FXT_ASSIGN_OR_RETURN(BootstrapResult lb,
                           bootstrap_metrics(std::span<const float>(base_scores[b]), labels, mask,
                                             c.horizons, ScoreKind::kLogit, bo));
      ci[names[b]] = lb.to_json();
    }
    if (!names.empty()) {
      FXT_ASSIGN_OR_RETURN(comparison, compare_with_baselines(model_scores, names, base_scores,
                                                              labels, mask, c.horizons, bo));
    }
    if (!stacked_scores.empty()) {
      FXT_ASSIGN_OR_RETURN(stack_json["vs_best_baseline"],
                           compare_with_baselines(stacked_scores, names, base_scores, labels, mask,
                                                  c.horizons, bo, kStackedSubject));
    }
  }
  nlohmann::json oracle;
  if (options.oracle.enabled()) {
    if (!comparison.is_object()) {
      return UsageError("--oracle needs the baselines and bootstrap intervals (--bootstrap > 0)");
    }
    OracleRows in;
    in.horizons = c.horizons;
    in.model = model_scores;
    in.stacked = stacked_scores;
    in.names = &names;
    in.baselines = &base_scores;
    in.labels = labels;
    in.mask = mask;
    in.comparison = &comparison;
    FXT_ASSIGN_OR_RETURN(const OracleDraw draw, oracle_draw.get());
    in.draw = &draw;
    FXT_ASSIGN_OR_RETURN(oracle, oracle_on_rows(options.oracle, in, c.threads));
  }
  nlohmann::json j;
  j["checkpoint"] = checkpoint_path;
  j["store_dirs"] = dirs;
  j["split"] = options.split == EvalSplit::kTest         ? "test"
               : options.split == EvalSplit::kValidation ? "validation"
                                                         : "all";
  j["rows"] = model_scores.size() / static_cast<size_t>(nh);
  j["horizons"] = c.horizons;
  j["window"] = c.window;
  j["stride"] = c.stride;
  j["model_kind"] = model_kind_name(c.model);
  j["device"] = backend_name(use_cuda);
  j["precision"] = precision_name(c.precision);
  j["base_rates"] = st->base_rates;
  j["model"] = mm.to_json();
  j["baselines"] = baseline_metrics;
  j["baseline_fits"] = st->baselines.summary(/*with_timings=*/false);
  j["base_rate"] = bm.to_json();
  j["bootstrap"] = ci;
  j["vs_best_baseline"] = comparison;
  if (!oracle.is_null()) j["oracle"] = oracle;
  if (!stack_json.is_null()) j["stacked"] = stack_json;
  if (rows != nullptr) {
    rows->horizons = c.horizons;
    rows->base_rates = st->base_rates;
    rows->model_logits = std::move(model_scores);
    rows->stacked_logits = std::move(stacked_scores);
    rows->baseline_names = std::move(names);
    rows->baseline_logits = std::move(base_scores);
    rows->labels = std::move(labels);
    rows->mask = std::move(mask);
  }
  return j;
}

Status predict(const std::string& checkpoint_path, const std::string& store_dir,
               const std::string& out_csv, int threads, const std::string& device,
               Precision precision) {
  FXT_ASSIGN_OR_RETURN(std::unique_ptr<TrainState> st, load_state(checkpoint_path));
  FXT_ASSIGN_OR_RETURN(const bool use_cuda, resolve_cuda(device, st->cfg.model));
  FXT_RETURN_IF_ERROR(check_precision(precision, use_cuda));
  st->cfg.precision = precision;
  const TrainConfig& c = st->cfg;
#if FXT_HAVE_CUDA
  if (use_cuda) st->net.use_gpu(nullptr, st->params, precision);
#endif
  (void)use_cuda;
  FXT_ASSIGN_OR_RETURN(StoreReader store, StoreReader::open(store_dir));
  warn_if_other_instrument(st->store_instruments, store, store_dir);
  FeatureConfig fc;
  fc.stride = c.stride;
  fc.threads = threads;
  std::vector<float> features;
  FXT_RETURN_IF_ERROR(compute_features(store, fc, &features));
  const uint64_t n = store.size();
  standardise(st->stats, features.data(), n);
  CpuContext ctx(threads);
  const int nh = static_cast<int>(c.horizons.size());
  FXT_ASSIGN_OR_RETURN(BufferedFileWriter w, BufferedFileWriter::create(out_csv));
  std::string line = "ts_ns";
  for (int h : c.horizons) fmt::format_to(std::back_inserter(line), ",p_h{}", h);
  line += '\n';
  FXT_RETURN_IF_ERROR(w.write(line));
  constexpr uint64_t kChunk = 4096;  // snapshots scored per pass (bounded memory)
  std::vector<uint64_t> ends;
  std::vector<float> logits;
  Progress progress("predict", n, "snap");
  for (uint64_t t0 = 0; t0 < n; t0 += kChunk) {
    ends.clear();
    for (uint64_t t = t0; t < std::min(n, t0 + kChunk); ++t) ends.push_back(t);
    FXT_RETURN_IF_ERROR(
        score_inference(*st, ctx, store, features.data(), ends, &logits, &progress));
    for (size_t i = 0; i < ends.size(); ++i) {
      line.clear();
      fmt::format_to(std::back_inserter(line), "{}", store.ts_ns[ends[i]]);
      for (int h = 0; h < nh; ++h) {
        const float p =
            model::sigmoid(logits[i * static_cast<size_t>(nh) + static_cast<size_t>(h)]);
        fmt::format_to(std::back_inserter(line), ",{}", p);
      }
      line += '\n';
      FXT_RETURN_IF_ERROR(w.write(line));
    }
  }
  FXT_RETURN_IF_ERROR(w.commit());
  progress.finish();
  return Status::Ok();
}

}  // namespace fxt
