// Purged walk-forward cross-validation (see cv.h, docs/CV.md).
#include "train/cv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/fault.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/random.h"
#include "data/store.h"
#include "train/comparison.h"
#include "train/metrics.h"
#include "train/oracle_rows.h"
#include "train/run_record.h"

namespace fxt {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = HorizonMetrics::kNaN;
constexpr int kCvFormat = 1;
constexpr char kRowsMagic[8] = {'F', 'X', 'T', 'C', 'V', 'R', 'W', '4'};
// Version 3 (no stack flag, no stacked logits) is still read: a fold scored before the stacks.
constexpr char kRowsMagicV3[8] = {'F', 'X', 'T', 'C', 'V', 'R', 'W', '3'};

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}
double num_of(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : kNaN;
}
nlohmann::json range_json(const GlobalRange& r) {
  return nlohmann::json::array({r.begin, r.end});
}

// ---- paired bootstrap -----------------------------------------------------------------------

// The valid rows of one horizon in ascending score order (ties by row), with tie flags.
struct SortedRows {
  std::vector<uint32_t> row;
  std::vector<uint8_t> label, new_tie;
};

SortedRows sort_rows(const float* scores, const uint8_t* labels, const std::vector<uint32_t>& valid,
                     size_t stride) {
  std::vector<uint32_t> order = valid;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const float sa = scores[a * stride], sb = scores[b * stride];
    return sa < sb || (sa == sb && a < b);
  });
  SortedRows s;
  s.row = order;
  for (size_t k = 0; k < order.size(); ++k) {
    s.label.push_back(labels[order[k] * stride] != 0 ? 1 : 0);
    s.new_tie.push_back(k == 0 || scores[order[k] * stride] != scores[order[k - 1] * stride] ? 1
                                                                                             : 0);
  }
  return s;
}

// The Mann-Whitney AUC with integer row weights (null: all 1), ties at half: metrics.h's
// arithmetic, so the values are bit-identical to bootstrap_metrics'.
double weighted_auc(const SortedRows& s, const uint32_t* w) {
  return sorted_rows_auc(
      s.row.size(), [&](size_t k) { return s.label[k] != 0; },
      [&](size_t k) { return s.new_tie[k] != 0; },
      [&](size_t k) { return w == nullptr ? uint64_t{1} : uint64_t{w[s.row[k]]}; });
}

// ---- rows.bin ---------------------------------------------------------------------------------

template <typename T>
void append_raw(std::string& out, const T* data, size_t n) {
  out.append(reinterpret_cast<const char*>(data), n * sizeof(T));
}

// ---- the fold loop ----------------------------------------------------------------------------

std::string fold_dir(const std::string& out_dir, int i) {
  return fmt::format("{}/fold_{}", out_dir, i);
}

// The first key whose value differs between two plan.json objects (for the refusal message).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (const char* key : {"format", "stores", "config", "plan"}) {
    if (!a.contains(key) || !b.contains(key) || a[key] != b[key]) return key;
  }
  return "contents";
}

// Pools the finished folds' test rows into the cv.json object.
Result<nlohmann::json> pool_folds(const CvConfig& cfg, const FoldPlan& plan,
                                  const std::vector<std::string>& stores,
                                  const std::string& out_dir, const OracleSpec& oracle_spec,
                                  const std::optional<SynthConfig>& oracle_config) {
  const std::vector<int>& hz = cfg.train.horizons;
  const size_t nh = hz.size();
  std::vector<float> model, stacked;
  bool all_stacked = true;  // every fold has the model stack (folds scored before it have not)
  std::vector<int> stacked_wins(nh, 0), stacked_compared(nh, 0);
  std::vector<std::string> names;
  std::vector<std::vector<float>> baselines;
  std::vector<double> base;
  std::vector<uint8_t> labels, mask;
  nlohmann::json per_fold = nlohmann::json::array();
  std::vector<int> wins(nh, 0), compared(nh, 0);
  // Where each fold's rows start in the pooled arrays, and its first test snapshot.
  std::vector<size_t> fold_row0;
  std::vector<uint64_t> fold_test0;
  bool first = true;
  for (const Fold& f : plan.folds) {
    const std::string dir = fold_dir(out_dir, f.index);
    FXT_ASSIGN_OR_RETURN(std::string text, read_file(dir + "/eval.json"));
    const auto ev = nlohmann::json::parse(text, nullptr, false);
    if (ev.is_discarded() || !ev.contains("model")) {
      return InvalidInput("{}/eval.json: not an evaluation JSON object", dir);
    }
    FXT_ASSIGN_OR_RETURN(EvalRows r, read_eval_rows(dir + "/rows.bin"));
    if (r.horizons != hz) {
      return InvalidInput("{}/rows.bin: horizons differ from the CV's", dir);
    }
    if (first) {
      names = r.baseline_names;
      baselines.resize(names.size());
      first = false;
    } else if (r.baseline_names != names) {
      return InvalidInput("{}/rows.bin: its baselines differ from the first fold's", dir);
    }
    if (oracle_spec.enabled() && r.rows() != f.test.end - f.test.begin) {
      return InvalidInput("{}/rows.bin: {} rows, not one per snapshot of the test range", dir,
                          r.rows());
    }
    fold_row0.push_back(model.size() / nh);
    fold_test0.push_back(f.test.begin);
    model.insert(model.end(), r.model_logits.begin(), r.model_logits.end());
    all_stacked = all_stacked && !r.stacked_logits.empty();
    if (all_stacked) {
      stacked.insert(stacked.end(), r.stacked_logits.begin(), r.stacked_logits.end());
      const nlohmann::json& sv = ev.contains("stacked") ? ev["stacked"] : nlohmann::json();
      for (size_t h = 0; h < nh && sv.contains("vs_best_baseline"); ++h) {
        const nlohmann::json& e = sv["vs_best_baseline"]["horizons"][h];
        const double a = num_of(e["model_auc"]), b = num_of(e["best_baseline_auc"]);
        if (std::isfinite(a) && std::isfinite(b)) {
          ++stacked_compared[h];
          if (a > b) ++stacked_wins[h];
        }
      }
    }
    for (size_t b = 0; b < names.size(); ++b) {
      baselines[b].insert(baselines[b].end(), r.baseline_logits[b].begin(),
                          r.baseline_logits[b].end());
    }
    labels.insert(labels.end(), r.labels.begin(), r.labels.end());
    mask.insert(mask.end(), r.mask.begin(), r.mask.end());
    for (size_t i = 0; i < r.rows(); ++i)
      base.insert(base.end(), r.base_rates.begin(), r.base_rates.end());
    nlohmann::json auc = {{"model", nlohmann::json::array()},
                          {"best_baseline", nlohmann::json::array()},
                          {"best_baseline_name", nlohmann::json::array()},
                          {"base_rate", nlohmann::json::array()}};
    try {
      const nlohmann::json& vs = ev.at("vs_best_baseline");
      for (size_t h = 0; h < nh; ++h) {
        const double am = num_of(ev["model"]["horizons"][h]["auc"]);
        const double ab = vs.is_object() ? num_of(vs["horizons"][h]["best_baseline_auc"]) : kNaN;
        auc["model"].push_back(num(am));
        auc["best_baseline"].push_back(num(ab));
        auc["best_baseline_name"].push_back(vs.is_object() ? vs["horizons"][h]["best_baseline"]
                                                           : nlohmann::json());
        auc["base_rate"].push_back(ev["base_rate"]["horizons"][h]["auc"]);
        if (std::isfinite(am) && std::isfinite(ab)) {
          ++compared[h];
          if (am > ab) ++wins[h];
        }
      }
      per_fold.push_back(
          {{"fold", f.index},
           {"train", range_json(f.train)},
           {"validation", range_json(f.validation)},
           {"test", range_json(f.test)},
           {"rows", r.rows()},
           {"base_rates", r.base_rates},
           {"training", ev.at("training")},
           {"auc", auc},
           {"mean_auc",
            {{"model", ev["model"]["mean_auc"]},
             {"best_baseline", vs.is_object() ? vs["mean"]["best_baseline_auc"] : nlohmann::json()},
             {"base_rate", ev["base_rate"]["mean_auc"]}}}});
    } catch (const nlohmann::json::exception& e) {
      return InvalidInput("{}/eval.json: {}", dir, e.what());
    }
  }
  FXT_ASSIGN_OR_RETURN(Metrics mm, compute_metrics(std::span<const float>(model), labels, mask, hz,
                                                   ScoreKind::kLogit));
  nlohmann::json pooled_baselines = nlohmann::json::object();
  for (size_t b = 0; b < names.size(); ++b) {
    FXT_ASSIGN_OR_RETURN(Metrics m, compute_metrics(std::span<const float>(baselines[b]), labels,
                                                    mask, hz, ScoreKind::kLogit));
    pooled_baselines[names[b]] = m.to_json();
  }
  // The pooled base-rate predictor: each fold's own training positive rate on its rows.
  FXT_ASSIGN_OR_RETURN(Metrics bm, compute_metrics(std::span<const double>(base), labels, mask, hz,
                                                   ScoreKind::kProbability));
  BootstrapOptions bo;
  bo.replicates = std::max(cfg.bootstrap, 1);
  bo.seed = cfg.bootstrap_seed;
  bo.threads = cfg.train.threads;
  nlohmann::json vs;
  if (!names.empty()) {
    FXT_ASSIGN_OR_RETURN(vs, compare_with_baselines(model, names, baselines, labels, mask, hz, bo));
  }
  if (!all_stacked) stacked.clear();
  nlohmann::json stacked_vs;  // the model stack against the same baselines (train/stacking.h)
  if (!stacked.empty() && !names.empty()) {
    FXT_ASSIGN_OR_RETURN(stacked_vs, compare_with_baselines(stacked, names, baselines, labels, mask,
                                                            hz, bo, kStackedSubject));
    for (size_t h = 0; h < nh; ++h) {
      nlohmann::json& e = stacked_vs["horizons"][h];
      e["folds_won"] = stacked_wins[h];
      e["folds_compared"] = stacked_compared[h];
      if (cfg.bootstrap < 1) {  // no intervals: no verdict
        for (const char* k : {"diff_ci", "model_ci", "best_baseline_ci", "verdict", "line"}) {
          e.erase(k);
        }
      }
    }
  }
  nlohmann::json comparison = nlohmann::json::array();
  for (size_t h = 0; h < nh; ++h) {
    nlohmann::json c = {
        {"horizon", hz[h]},
        {"n_valid", mm.horizons[h].n_valid},
        {"model_auc", num(mm.horizons[h].auc)},
        {"base_rate_auc", num(bm.horizons[h].auc)},
        {"folds_model_wins", wins[h]},
        {"folds_compared", compared[h]},
        {"win_fraction", compared[h] > 0 ? num(static_cast<double>(wins[h]) / compared[h])
                                         : nlohmann::json(nullptr)}};
    if (vs.is_object()) {
      const nlohmann::json& e = vs["horizons"][h];
      c["best_baseline"] = e["best_baseline"];
      c["best_baseline_auc"] = e["best_baseline_auc"];
      c["diff"] = e["diff"];
      if (cfg.bootstrap > 0) {
        c["model_auc_ci"] = e["model_ci"];
        c["best_baseline_auc_ci"] = e["best_baseline_ci"];
        c["diff_ci"] = e["diff_ci"];
        c["verdict"] = e["verdict"];
        c["line"] = e["line"];
      }
    }
    comparison.push_back(std::move(c));
  }
  nlohmann::json mean = {{"model_auc", num(mm.mean_auc)}, {"base_rate_auc", num(bm.mean_auc)}};
  if (vs.is_object()) {
    mean["best_baseline_auc"] = vs["mean"]["best_baseline_auc"];
    mean["diff"] = vs["mean"]["diff"];
    if (cfg.bootstrap > 0) mean["diff_ci"] = vs["mean"]["diff_ci"];
  }

  nlohmann::json cv;
  cv["format"] = kCvFormat;
  cv["scheme"] = cv_scheme_name(plan.scheme);
  cv["unit"] = fold_unit_name(plan.unit);
  cv["folds"] = plan.folds.size();
  cv["train_blocks"] = plan.train_blocks;
  cv["purge"] = cfg.plan.purge;
  cv["embargo"] = cfg.plan.embargo;
  cv["gap"] = plan.gap;
  cv["horizons"] = hz;
  cv["stores"] = stores;
  cv["per_fold"] = per_fold;
  cv["pooled"] = {{"rows", labels.size() / nh},
                  {"model", mm.to_json()},
                  {"baselines", pooled_baselines},
                  {"base_rate", bm.to_json()}};
  cv["bootstrap"] = {
      {"method", "paired-circular-block-bootstrap"},
      {"replicates", cfg.bootstrap},
      {"block_rows", vs.is_object() && cfg.bootstrap > 0 ? vs["block_rows"] : nlohmann::json(0)},
      {"seed", cfg.bootstrap_seed},
      {"lo_percentile", bo.lo_percentile},
      {"hi_percentile", bo.hi_percentile}};
  cv["comparison"] = comparison;
  cv["mean"] = mean;
  if (stacked_vs.is_object()) cv["stacked"] = stacked_vs;
  if (oracle_spec.enabled()) {
    if (!vs.is_object() || cfg.bootstrap < 1) {
      return UsageError("--oracle needs the baselines and bootstrap intervals (--bootstrap > 0)");
    }
    OracleRows in;
    in.horizons = hz;
    in.model = model;
    in.stacked = stacked;
    in.names = &names;
    in.baselines = &baselines;
    in.labels = labels;
    in.mask = mask;
    in.comparison = &vs;
    auto snapshot_of_row = [&](size_t row) {  // the fold holding the pooled row, then its offset
      const size_t k = static_cast<size_t>(
          std::upper_bound(fold_row0.begin(), fold_row0.end(), row) - fold_row0.begin() - 1);
      return fold_test0[k] + (row - fold_row0[k]);
    };
    const size_t rows = model.size() / nh;
    Progress progress("oracle", std::min<size_t>(rows, static_cast<size_t>(oracle_spec.rows)),
                      "rows");
    FXT_ASSIGN_OR_RETURN(const OracleDraw draw,
                         draw_oracle(oracle_spec, *oracle_config, hz, rows, snapshot_of_row,
                                     cfg.train.threads, &progress));
    progress.finish();
    in.draw = &draw;
    FXT_ASSIGN_OR_RETURN(cv["oracle"], oracle_on_rows(oracle_spec, in, cfg.train.threads));
  }
  return cv;
}

// Headline numbers for run.json (flat, compared by `fxt runs compare`).
// The value at `key`, null when `j` is not an object or has no such key. The const
// operator[] of nlohmann::json on a missing key is undefined behaviour: under --baselines none
// (no `diff` in cv.json's comparison) it copied garbage, so run.json held `"auc_diff_h10": ,`
// (not JSON) or fxt failed with "out of memory", depending on the heap.
const nlohmann::json& at_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

nlohmann::json summary_metrics(const nlohmann::json& cv) {
  nlohmann::json m = nlohmann::json::object();
  for (const auto& c : at_or_null(cv, "comparison")) {
    const std::string h = fmt::format("h{}", at_or_null(c, "horizon").get<int>());
    m["auc_model_" + h] = at_or_null(c, "model_auc");
    m["auc_best_baseline_" + h] = at_or_null(c, "best_baseline_auc");
    m["auc_diff_" + h] = at_or_null(c, "diff");
    m["win_fraction_" + h] = at_or_null(c, "win_fraction");
  }
  const nlohmann::json& mean = at_or_null(cv, "mean");
  m["mean_auc_model"] = at_or_null(mean, "model_auc");
  m["mean_auc_best_baseline"] = at_or_null(mean, "best_baseline_auc");
  m["pooled_rows"] = at_or_null(at_or_null(cv, "pooled"), "rows");
  return m;
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

const char* cv_scheme_name(CvScheme s) {
  return s == CvScheme::kWalkForward ? "walk-forward" : "expanding";
}

Result<CvScheme> parse_cv_scheme(const std::string& name) {
  if (name == "walk-forward") return CvScheme::kWalkForward;
  if (name == "expanding") return CvScheme::kExpanding;
  return UsageError("--scheme must be walk-forward or expanding (got '{}')", name);
}

const char* fold_unit_name(FoldUnit u) {
  switch (u) {
    case FoldUnit::kStore:
      return "store";
    case FoldUnit::kBlock:
      return "block";
    default:
      return "auto";
  }
}

Result<FoldUnit> parse_fold_unit(const std::string& name) {
  if (name == "auto") return FoldUnit::kAuto;
  if (name == "store") return FoldUnit::kStore;
  if (name == "block") return FoldUnit::kBlock;
  return UsageError("--by must be auto, store or block (got '{}')", name);
}

// ---- the plan ----------------------------------------------------------------------------------

nlohmann::json FoldPlan::to_json() const {
  nlohmann::json bl = nlohmann::json::array(), fs_ = nlohmann::json::array();
  for (const GlobalRange& b : blocks) bl.push_back(range_json(b));
  for (const Fold& f : folds) {
    fs_.push_back({{"fold", f.index},
                   {"train", range_json(f.train)},
                   {"validation", range_json(f.validation)},
                   {"test", range_json(f.test)},
                   {"stores", nlohmann::json::array({f.first_store, f.end_store})},
                   {"local",
                    {{"train", range_json(f.local_train)},
                     {"validation", range_json(f.local_validation)},
                     {"test", range_json(f.local_test)}}}});
  }
  return {{"unit", fold_unit_name(unit)},
          {"scheme", cv_scheme_name(scheme)},
          {"train_blocks", train_blocks},
          {"gap", gap},
          {"store_sizes", store_sizes},
          {"blocks", bl},
          {"folds", fs_}};
}

uint64_t FoldPlan::total_snapshots() const {
  uint64_t n = 0;
  for (uint64_t s : store_sizes) n += s;
  return n;
}

Result<FoldPlan> plan_folds(const std::vector<uint64_t>& sizes, const FoldPlanConfig& c) {
  if (sizes.empty()) return UsageError("cv needs at least one --store");
  if (c.folds < 1) return UsageError("--folds must be >= 1 (got {})", c.folds);
  if (c.train_blocks < 0) return UsageError("--train-blocks must be >= 0 (got {})", c.train_blocks);
  const auto n_folds = static_cast<size_t>(c.folds);
  FoldPlan p;
  p.scheme = c.scheme;
  p.gap = c.purge + c.embargo;
  p.store_sizes = sizes;
  std::vector<uint64_t> offset{0};
  for (uint64_t s : sizes) offset.push_back(offset.back() + s);
  const uint64_t total = offset.back();
  const size_t n_stores = sizes.size();

  p.unit = c.unit;
  if (p.unit == FoldUnit::kAuto) {
    p.unit = n_stores >= n_folds + 2 ? FoldUnit::kStore : FoldUnit::kBlock;
  }
  size_t m = 0;  // blocks
  if (p.unit == FoldUnit::kStore) {
    const size_t w = c.train_blocks > 0 ? static_cast<size_t>(c.train_blocks)
                                        : (n_stores >= n_folds + 2 ? n_stores - n_folds - 1 : 1);
    if (n_stores < n_folds + 1 + w) {
      return UsageError(
          "--folds {} by store with {} training store(s) needs at least {} stores (got {}): use "
          "fewer folds or --by block",
          c.folds, w, n_folds + 1 + w, n_stores);
    }
    p.train_blocks = static_cast<int>(w);
    m = n_stores;
    for (size_t s = 0; s < n_stores; ++s) p.blocks.push_back({offset[s], offset[s + 1]});
  } else {
    const size_t w =
        c.train_blocks > 0 ? static_cast<size_t>(c.train_blocks) : kDefaultBlockTrainBlocks;
    p.train_blocks = static_cast<int>(w);
    m = n_folds + 1 + w;
    const uint64_t need = p.gap + std::max<uint64_t>(c.min_span, 1);
    if (total / m < need) {
      return UsageError(
          "--folds {} cuts {} snapshots into {} blocks of about {}, fewer than the gap {} "
          "(purge + embargo) plus one window ({}): use fewer --folds or --train-blocks, shorter "
          "horizons or a smaller window",
          c.folds, total, m, total / m, p.gap, std::max<uint64_t>(c.min_span, 1));
    }
    __extension__ using U128 = unsigned __int128;  // total x m may exceed 64 bits
    for (size_t j = 0; j < m; ++j) {
      const auto lo = static_cast<uint64_t>(static_cast<U128>(total) * j / m);
      const auto hi = static_cast<uint64_t>(static_cast<U128>(total) * (j + 1) / m);
      p.blocks.push_back({lo, hi});
    }
  }
  const size_t w = static_cast<size_t>(p.train_blocks);
  for (size_t i = 0; i < n_folds; ++i) {
    const size_t v = m - n_folds - 1 + i;  // validation block; test is v + 1
    const size_t t0 = c.scheme == CvScheme::kWalkForward ? v - w : 0;
    Fold f;
    f.index = static_cast<int>(i);
    const GlobalRange vb = p.blocks[v];
    // The earlier range of each pair ends `gap` before the later one begins.
    f.train = {p.blocks[t0].begin,
               vb.begin >= p.blocks[t0].begin + p.gap ? vb.begin - p.gap : p.blocks[t0].begin};
    f.validation = {vb.begin, vb.end >= vb.begin + p.gap ? vb.end - p.gap : vb.begin};
    f.test = p.blocks[v + 1];
    const struct {
      const char* name;
      GlobalRange r;
      uint64_t need;
    } checks[] = {{"training", f.train, std::max<uint64_t>(c.min_span, 1)},
                  {"validation", f.validation, std::max<uint64_t>(c.min_span, 1)},
                  {"test", f.test, 1}};
    for (const auto& ck : checks) {
      if (ck.r.size() < ck.need) {
        return UsageError(
            "fold {}: the {} range [{}, {}) holds {} snapshots after the gap {} (purge + "
            "embargo); it needs at least {}: use fewer --folds, shorter horizons or a smaller "
            "window",
            i, ck.name, ck.r.begin, ck.r.end, ck.r.size(), p.gap, ck.need);
      }
    }
    // Stores the fold touches: from the one holding train.begin to the one holding test.end - 1.
    f.first_store = static_cast<size_t>(
        std::upper_bound(offset.begin(), offset.end() - 1, f.train.begin) - offset.begin() - 1);
    f.end_store = static_cast<size_t>(
        std::upper_bound(offset.begin(), offset.end() - 1, f.test.end - 1) - offset.begin());
    const uint64_t base = offset[f.first_store];
    f.local_train = {f.train.begin - base, f.train.end - base};
    f.local_validation = {f.validation.begin - base, f.validation.end - base};
    f.local_test = {f.test.begin - base, f.test.end - base};
    p.folds.push_back(f);
  }
  return p;
}

// ---- config ------------------------------------------------------------------------------------

nlohmann::json CvConfig::to_json() const {
  nlohmann::json t = train.to_json();
  // The fold ranges live in the plan; the fraction fields mean nothing here.
  t.erase("split_train");
  t.erase("split_validation");
  t.erase("split_ranges");
  nlohmann::json j = {{"train", t},
                      {"folds", plan.folds},
                      {"scheme", cv_scheme_name(plan.scheme)},
                      {"by", fold_unit_name(plan.unit)},
                      {"train_blocks", plan.train_blocks},
                      {"purge", plan.purge},
                      {"embargo", plan.embargo},
                      {"bootstrap", bootstrap},
                      {"bootstrap_seed", bootstrap_seed}};
  // Only when it is not the default, so a CV from before the stacks still resumes (its folds,
  // scored without stacks, pool without them).
  if (stack_rows != EvalOptions{}.stack_rows) j["stack_rows"] = stack_rows;
  return j;
}

// ---- pooled statistics --------------------------------------------------------------------------

Result<PairedAucResult> paired_auc_bootstrap(std::span<const float> a, std::span<const float> b,
                                             std::span<const uint8_t> labels,
                                             std::span<const uint8_t> mask,
                                             std::span<const int> horizons,
                                             const BootstrapOptions& o) {
  const size_t nh = horizons.size();
  if (nh == 0) return InvalidInput("paired_auc_bootstrap: no horizons given");
  if (a.size() != labels.size() || b.size() != labels.size() || labels.size() % nh != 0 ||
      (!mask.empty() && mask.size() != labels.size())) {
    return InvalidInput(
        "paired_auc_bootstrap: {} and {} scores, {} labels, {} mask entries for {} "
        "horizons do not match",
        a.size(), b.size(), labels.size(), mask.size(), nh);
  }
  if (o.replicates <= 0) return InvalidInput("paired_auc_bootstrap: replicates must be positive");
  const size_t rows = labels.size() / nh;
  if (rows > UINT32_MAX) return InvalidInput("paired_auc_bootstrap: {} rows is too many", rows);
  PairedAucResult res;
  res.replicates = o.replicates;
  int64_t block = std::max<int64_t>(o.block_rows, 1);
  for (int h : horizons) block = std::max<int64_t>(block, h);
  res.block_rows = block;
  res.horizons.resize(nh);
  if (rows == 0) return res;

  // Both arrays' sorted rows per horizon, independent: on up to o.threads threads.
  std::vector<SortedRows> sa(nh), sb(nh);
  for_replicate_ranges(2 * nh, o.threads, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const size_t h = i / 2;
      std::vector<uint32_t> valid;
      for (size_t r = 0; r < rows; ++r) {
        const size_t at = r * nh + h;
        if ((mask.empty() || mask[at] != 0) && !std::isnan(a[at]) && !std::isnan(b[at])) {
          valid.push_back(static_cast<uint32_t>(r));
        }
      }
      if (i % 2 == 0) {
        sa[h] = sort_rows(a.data() + h, labels.data() + h, valid, nh);
      } else {
        sb[h] = sort_rows(b.data() + h, labels.data() + h, valid, nh);
      }
    }
  });
  double sum = 0;
  int defined = 0;
  for (size_t h = 0; h < nh; ++h) {
    PairedAucHorizon& ph = res.horizons[h];
    ph.auc_a = weighted_auc(sa[h], nullptr);
    ph.auc_b = weighted_auc(sb[h], nullptr);
    ph.diff = ph.auc_a - ph.auc_b;
    if (!std::isnan(ph.diff)) {
      sum += ph.diff;
      ++defined;
    }
  }
  if (defined > 0) res.mean_diff = sum / defined;

  // One seed per replicate, drawn up front (as bootstrap_metrics does).
  const auto reps = static_cast<size_t>(o.replicates);
  std::vector<uint64_t> seeds(reps);
  SplitMix64 seeder(o.seed);
  for (uint64_t& s : seeds) s = seeder.next();
  std::vector<double> auc_a(reps * nh, kNaN), auc_b(reps * nh, kNaN);
  auto run = [&](size_t r0, size_t r1) {
    std::vector<uint32_t> w(rows);
    for (size_t r = r0; r < r1; ++r) {
      std::fill(w.begin(), w.end(), 0u);
      SplitMix64 rng(seeds[r]);
      draw_bootstrap_blocks(rng, rows, static_cast<size_t>(block), w);
      for (size_t h = 0; h < nh; ++h) {
        auc_a[r * nh + h] = weighted_auc(sa[h], w.data());
        auc_b[r * nh + h] = weighted_auc(sb[h], w.data());
      }
    }
  };
  for_replicate_ranges(reps, o.threads, run);
  std::vector<double> mean_d(reps, kNaN);
  for (size_t r = 0; r < reps; ++r) {
    double s = 0;
    int n = 0;
    for (size_t h = 0; h < nh; ++h) {
      const double d = auc_a[r * nh + h] - auc_b[r * nh + h];
      if (std::isnan(d)) continue;
      s += d;
      ++n;
    }
    if (n > 0) mean_d[r] = s / n;
  }
  for (size_t h = 0; h < nh; ++h) {
    std::vector<double> va(reps), vb(reps), vd(reps);
    for (size_t r = 0; r < reps; ++r) {
      va[r] = auc_a[r * nh + h];
      vb[r] = auc_b[r * nh + h];
      vd[r] = va[r] - vb[r];
    }
    res.horizons[h].a = bootstrap_interval(std::move(va), o);
    res.horizons[h].b = bootstrap_interval(std::move(vb), o);
    res.horizons[h].d = bootstrap_interval(std::move(vd), o);
  }
  res.mean_d = bootstrap_interval(std::move(mean_d), o);
  res.replicate_a = std::move(auc_a);
  res.replicate_b = std::move(auc_b);
  return res;
}

// ---- rows.bin -----------------------------------------------------------------------------------
// magic "FXTCVRW4", u32 horizons H, u32 baselines B, u32 stacked S (0/1), u64 rows N,
// i32 horizons[H], f64 base_rates[H], B x (u32 name length, name bytes), f32 model_logits[N*H],
// B x f32 baseline_logits[N*H], S x f32 stacked_logits[N*H], u8 labels[N*H], u8 mask[N*H], u32
// CRC32 of every byte before it; host (little-endian) byte order. "FXTCVRW3" is the same
// without S and the stacked logits. The CRC makes a flipped bit an error, not other AUCs.

Status write_eval_rows(const std::string& path, const EvalRows& r) {
  const size_t nh = r.horizons.size();
  const uint64_t n = r.rows();
  bool ok = nh > 0 && r.base_rates.size() == nh && r.labels.size() == n * nh &&
            r.mask.size() == n * nh && r.model_logits.size() == n * nh &&
            r.baseline_names.size() == r.baseline_logits.size() &&
            (r.stacked_logits.empty() || r.stacked_logits.size() == n * nh);
  for (const std::vector<float>& b : r.baseline_logits) ok = ok && b.size() == n * nh;
  if (!ok) return InternalError("write_eval_rows {}: inconsistent row arrays", path);
  std::string out(kRowsMagic, sizeof(kRowsMagic));
  const uint32_t head[3] = {static_cast<uint32_t>(nh),
                            static_cast<uint32_t>(r.baseline_names.size()),
                            r.stacked_logits.empty() ? 0U : 1U};
  append_raw(out, head, 3);
  append_raw(out, &n, 1);
  append_raw(out, r.horizons.data(), nh);
  append_raw(out, r.base_rates.data(), nh);
  for (const std::string& name : r.baseline_names) {
    const auto len = static_cast<uint32_t>(name.size());
    append_raw(out, &len, 1);
    out += name;
  }
  append_raw(out, r.model_logits.data(), n * nh);
  for (const std::vector<float>& b : r.baseline_logits) append_raw(out, b.data(), n * nh);
  if (!r.stacked_logits.empty()) append_raw(out, r.stacked_logits.data(), n * nh);
  append_raw(out, r.labels.data(), n * nh);
  append_raw(out, r.mask.data(), n * nh);
  const uint32_t crc = crc32_update(0, out.data(), out.size());
  append_raw(out, &crc, 1);
  return write_file_atomic(path, out);
}

Result<EvalRows> read_eval_rows(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string in, read_file(path));
  const bool v3 = in.size() >= sizeof(kRowsMagicV3) &&
                  std::memcmp(in.data(), kRowsMagicV3, sizeof(kRowsMagicV3)) == 0;
  const size_t words = v3 ? 2 : 3;  // u32 header words before the row count
  const size_t kHead = sizeof(kRowsMagic) + words * sizeof(uint32_t) + sizeof(uint64_t);
  if (in.size() < kHead + sizeof(uint32_t) ||
      (!v3 && std::memcmp(in.data(), kRowsMagic, sizeof(kRowsMagic)) != 0)) {
    return InvalidInput("{}: not a CV rows file (expected magic FXTCVRW4 at offset 0)", path);
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, in.data() + in.size() - sizeof(stored_crc), sizeof(stored_crc));
  in.resize(in.size() - sizeof(stored_crc));
  if (const uint32_t crc = crc32_update(0, in.data(), in.size()); crc != stored_crc) {
    return InvalidInput(
        "{}: CRC32 {:08x} does not match the stored {:08x}: the file is corrupt; remove the "
        "fold's eval.json and rerun fxt cv to score the fold again",
        path, crc, stored_crc);
  }
  uint32_t head[3] = {0, 0, 0};
  uint64_t n = 0;
  std::memcpy(head, in.data() + sizeof(kRowsMagic), words * sizeof(uint32_t));
  std::memcpy(&n, in.data() + sizeof(kRowsMagic) + words * sizeof(uint32_t), sizeof(n));
  const size_t nh = head[0], nb = head[1], ns = head[2];
  if (ns > 1) return InvalidInput("{}: offset 16: stacked flag {} (expected 0 or 1)", path, ns);
  if (nh < 1 || nh > 8) {
    return InvalidInput("{}: offset 8: {} horizons (expected 1-8)", path, nh);
  }
  if (nb > 16) return InvalidInput("{}: offset 12: {} baselines (expected 0-16)", path, nb);
  if (n > (uint64_t{1} << 40)) {
    return InvalidInput("{}: offset {}: {} rows is too many", path, 8 + 4 * words, n);
  }
  size_t at = kHead;
  auto take = [&](void* dst, size_t bytes) -> Status {
    if (in.size() - at < bytes) {
      return InvalidInput("{}: truncated at offset {} (expected {} more bytes)", path, at, bytes);
    }
    std::memcpy(dst, in.data() + at, bytes);
    at += bytes;
    return Status::Ok();
  };
  EvalRows r;
  const size_t cells = static_cast<size_t>(n) * nh;
  r.horizons.resize(nh);
  r.base_rates.resize(nh);
  FXT_RETURN_IF_ERROR(take(r.horizons.data(), nh * sizeof(int32_t)));
  FXT_RETURN_IF_ERROR(take(r.base_rates.data(), nh * sizeof(double)));
  for (size_t b = 0; b < nb; ++b) {
    uint32_t len = 0;
    FXT_RETURN_IF_ERROR(take(&len, sizeof(len)));
    if (len > 64) return InvalidInput("{}: offset {}: a baseline name of {} bytes", path, at, len);
    std::string name(len, '\0');
    FXT_RETURN_IF_ERROR(take(name.data(), len));
    r.baseline_names.push_back(std::move(name));
  }
  const size_t want = at + cells * ((1 + nb + ns) * sizeof(float) + 2 * sizeof(uint8_t));
  if (in.size() != want) {
    return InvalidInput("{}: {} bytes, expected {} for {} rows of {} horizons and {} baselines",
                        path, in.size(), want, n, nh, nb);
  }
  r.model_logits.resize(cells);
  r.baseline_logits.assign(nb, std::vector<float>(cells));
  r.labels.resize(cells);
  r.mask.resize(cells);
  FXT_RETURN_IF_ERROR(take(r.model_logits.data(), cells * sizeof(float)));
  for (std::vector<float>& b : r.baseline_logits) {
    FXT_RETURN_IF_ERROR(take(b.data(), cells * sizeof(float)));
  }
  if (ns == 1) {
    r.stacked_logits.resize(cells);
    FXT_RETURN_IF_ERROR(take(r.stacked_logits.data(), cells * sizeof(float)));
  }
  FXT_RETURN_IF_ERROR(take(r.labels.data(), cells));
  FXT_RETURN_IF_ERROR(take(r.mask.data(), cells));
  return r;
}

// ---- run_cv -------------------------------------------------------------------------------------

Result<CvSetup> prepare_cv(const CvConfig& config_in, const std::vector<std::string>& store_dirs) {
  CvSetup setup;
  CvConfig& cfg = setup.config;
  cfg = config_in;
  if (store_dirs.empty()) return UsageError("cv needs at least one --store");
  if (cfg.bootstrap < 0) return UsageError("--bootstrap must be >= 0 (got {})", cfg.bootstrap);
  cfg.train.split = SplitConfig{};  // each fold sets its own ranges
  FXT_RETURN_IF_ERROR(cfg.train.validate());
  const int max_h = *std::max_element(cfg.train.horizons.begin(), cfg.train.horizons.end());
  const uint64_t stride = static_cast<uint64_t>(cfg.train.stride);
  cfg.plan.purge = std::max<uint64_t>(cfg.plan.purge, static_cast<uint64_t>(max_h) * stride);
  cfg.plan.min_span = static_cast<uint64_t>(cfg.train.window - 1) * stride + 1;

  std::vector<uint64_t> sizes;
  for (const std::string& d : store_dirs) {
    setup.stores.push_back(fs::absolute(fs::path(d)).lexically_normal().string());
    FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(setup.stores.back()));
    sizes.push_back(r.size());
  }
  FXT_ASSIGN_OR_RETURN(setup.plan, plan_folds(sizes, cfg.plan));
  setup.plan_json = {{"format", kCvFormat},
                     {"stores", setup.stores},
                     {"config", cfg.to_json()},
                     {"plan", setup.plan.to_json()}};
  return setup;
}

namespace {

// Refuses a plan file that describes another CV; absent files pass (`present` tells which).
Status check_plan_file(const std::string& path, const nlohmann::json& plan_json, bool* present) {
  *present = fs::exists(path);
  if (!*present) return Status::Ok();
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  const auto old = nlohmann::json::parse(text, nullptr, false);
  if (old.is_discarded()) return InvalidInput("{}: not valid JSON", path);
  if (old != plan_json) {
    return UsageError(
        "{} holds a different CV (\"{}\" differs): rerun with the same stores and flags, or use "
        "another --out",
        path, first_difference(old, plan_json));
  }
  return Status::Ok();
}

}  // namespace

Result<CvResult> run_cv(const CvConfig& config_in, const std::vector<std::string>& store_dirs,
                        const std::string& out_dir, const CvOptions& options) {
  RunRecord record("cv");
  if (out_dir.empty()) return UsageError("cv needs --out");
  FXT_ASSIGN_OR_RETURN(const CvSetup setup, prepare_cv(config_in, store_dirs));
  const CvConfig& cfg = setup.config;
  const std::vector<std::string>& stores = setup.stores;
  const FoldPlan& plan = setup.plan;
  const nlohmann::json& plan_json = setup.plan_json;
  const int n_folds = static_cast<int>(plan.folds.size());
  if (options.only_fold >= n_folds) {
    return UsageError("--fold {} is out of range: the plan has {} folds (0 to {})",
                      options.only_fold, n_folds, n_folds - 1);
  }
  if (options.pool_only && options.only_fold >= 0) {
    return UsageError("--fold and --pool-only exclude each other");
  }
  std::optional<SynthConfig> market;  // the oracle's, checked before any training
  if (options.oracle.enabled()) {
    FXT_ASSIGN_OR_RETURN(market,
                         oracle_market(options.oracle, stores.size(), plan.total_snapshots()));
  }

  // plan.json first: a rerun must describe the same CV. A single fold (--fold) checks it when
  // present but writes its own copy inside its folder; the gather step (--pool-only) checks
  // every fold's copy and writes plan.json.
  const std::string plan_path = out_dir + "/plan.json";
  bool have_plan = false;
  FXT_RETURN_IF_ERROR(check_plan_file(plan_path, plan_json, &have_plan));
  std::error_code ec;
  if (options.only_fold >= 0) {
    const std::string dir = fold_dir(out_dir, options.only_fold);
    bool have_fold_plan = false;
    FXT_RETURN_IF_ERROR(check_plan_file(dir + "/cv_plan.json", plan_json, &have_fold_plan));
    if (!have_fold_plan) {
      fs::create_directories(dir, ec);
      if (ec) return IoError("cannot create {}: {}", dir, ec.message());
      FXT_RETURN_IF_ERROR(write_file_atomic(dir + "/cv_plan.json", plan_json.dump(2) + "\n"));
    }
  } else if (options.pool_only) {
    for (const Fold& f : plan.folds) {
      const std::string dir = fold_dir(out_dir, f.index);
      if (!fs::exists(dir + "/eval.json")) {
        return UsageError(
            "--pool-only: fold {} is not finished ({}/eval.json is missing): run its job first",
            f.index, dir);
      }
      bool have_fold_plan = false;
      FXT_RETURN_IF_ERROR(check_plan_file(dir + "/cv_plan.json", plan_json, &have_fold_plan));
    }
    if (!have_plan) FXT_RETURN_IF_ERROR(write_file_atomic(plan_path, plan_json.dump(2) + "\n"));
  } else if (!have_plan) {
    if (fs::exists(out_dir) && !fs::is_empty(out_dir, ec)) {
      return UsageError("{} is not empty and holds no plan.json: use a new --out directory",
                        out_dir);
    }
    fs::create_directories(out_dir, ec);
    if (ec) return IoError("cannot create {}: {}", out_dir, ec.message());
    FXT_RETURN_IF_ERROR(write_file_atomic(plan_path, plan_json.dump(2) + "\n"));
  }

  CvResult result;
  int finished_here = 0;
  for (const Fold& f : plan.folds) {
    const std::string dir = fold_dir(out_dir, f.index);
    if (fs::exists(dir + "/eval.json")) {
      ++result.folds_finished;
      log_info("fold_{} ({}/{}): finished earlier", f.index, f.index + 1, n_folds);
      continue;
    }
    if (options.pool_only) continue;  // never trains (every fold was finished above)
    if (options.only_fold >= 0 && f.index != options.only_fold) continue;
    if (options.stop_after_folds > 0 && finished_here >= options.stop_after_folds) break;
    TrainConfig tc = cfg.train;
    tc.split.explicit_ranges = true;
    tc.split.train_range = f.local_train;
    tc.split.validation_range = f.local_validation;
    tc.split.test_range = f.local_test;
    const std::vector<std::string> fold_stores(
        stores.begin() + static_cast<std::ptrdiff_t>(f.first_store),
        stores.begin() + static_cast<std::ptrdiff_t>(f.end_store));
    TrainOptions to;
    to.resume = fs::exists(dir + "/last.ckpt");
    to.stop_after_epochs = options.stop_after_epochs;
    log_info("fold_{} ({}/{}): train [{}, {}) validation [{}, {}) test [{}, {}){}", f.index,
             f.index + 1, n_folds, f.train.begin, f.train.end, f.validation.begin, f.validation.end,
             f.test.begin, f.test.end, to.resume ? ", resuming from last.ckpt" : "");
    FXT_ASSIGN_OR_RETURN(const TrainSummary ts, train(tc, fold_stores, dir, to));
    if (!ts.stopped_early && ts.epochs_run < tc.epochs) break;  // paused by stop_after_epochs

    EvalOptions eo;
    eo.split = EvalSplit::kTest;
    eo.threads = tc.threads;
    eo.device = tc.device;
    eo.bootstrap = cfg.bootstrap;
    eo.bootstrap_seed = cfg.bootstrap_seed;
    eo.stack_rows = cfg.stack_rows;
    EvalRows rows;
    FXT_ASSIGN_OR_RETURN(nlohmann::json ev, evaluate(dir + "/best.ckpt", {}, eo, &rows));
    ev["fold"] = f.index;
    ev["ranges"] = {{"train", range_json(f.train)},
                    {"validation", range_json(f.validation)},
                    {"test", range_json(f.test)}};
    ev["training"] = {{"epochs", ts.epochs_run},
                      {"steps", ts.steps},
                      {"best_epoch", ts.best_epoch},
                      {"stopped_early", ts.stopped_early}};
    FXT_RETURN_IF_ERROR(write_eval_rows(dir + "/rows.bin", rows));
    fault_point("cv.rows_written");
    FXT_RETURN_IF_ERROR(write_file_atomic(dir + "/eval.json", ev.dump(2) + "\n"));  // last
    ++result.folds_finished;
    ++finished_here;
  }
  // A single fold leaves OUT's top level alone (other folds may be writing beside it); its
  // training run record is fold_<i>/run.json.
  if (options.only_fold >= 0) return result;

  record.set_config(plan_json["config"]);
  for (const std::string& s : stores) FXT_RETURN_IF_ERROR(record.add_input_store(s));
  record.set("folds", n_folds);
  record.set("folds_finished", result.folds_finished);
  if (result.folds_finished == n_folds) {
    FXT_ASSIGN_OR_RETURN(result.cv, pool_folds(cfg, plan, stores, out_dir, options.oracle, market));
    FXT_RETURN_IF_ERROR(write_file_atomic(out_dir + "/cv.json", result.cv.dump(2) + "\n"));
    result.complete = true;
    record.set_metrics(summary_metrics(result.cv));
  }
  record.set("complete", result.complete);
  FXT_RETURN_IF_ERROR(record.write(out_dir));
  return result;
}

// ---- the table ----------------------------------------------------------------------------------

std::string format_cv_table(const nlohmann::json& cv) {
  auto f4 = [](const nlohmann::json& v) {
    return v.is_number() ? fmt::format("{:.4f}", v.get<double>()) : std::string("   n/a");
  };
  auto s4 = [](const nlohmann::json& v) {
    return v.is_number() ? fmt::format("{:+.4f}", v.get<double>()) : std::string("    n/a");
  };
  auto ci = [&](const nlohmann::json& c, const char* key, bool sign) {
    if (!c.contains(key)) return std::string();
    const auto& iv = c[key];
    return sign ? fmt::format(" [{}, {}]", s4(iv[0]), s4(iv[1]))
                : fmt::format(" [{}, {}]", f4(iv[0]), f4(iv[1]));
  };
  std::string out;
  const auto& hz = cv["horizons"];
  fmt::format_to(std::back_inserter(out),
                 "cv: {} by {}, {} folds, {} training block(s), gap {} snapshots (purge {} + "
                 "embargo {})\n",
                 cv["scheme"].get<std::string>(), cv["unit"].get<std::string>(),
                 cv["folds"].get<int>(), cv["train_blocks"].get<int>(), cv["gap"].get<uint64_t>(),
                 cv["purge"].get<uint64_t>(), cv["embargo"].get<uint64_t>());
  fmt::format_to(std::back_inserter(out), "{:<5} {:<19} {:>8} {:<8} {:>7} {:>7} {:<12} {:>7}\n",
                 "fold", "test range", "rows", "horizon", "model", "best", "(baseline)", "base");
  for (const auto& f : cv["per_fold"]) {
    for (size_t h = 0; h < hz.size(); ++h) {
      const std::string range = h == 0 ? fmt::format("[{}, {})", f["test"][0].get<uint64_t>(),
                                                     f["test"][1].get<uint64_t>())
                                       : std::string();
      const auto& bn = f["auc"]["best_baseline_name"][h];
      fmt::format_to(std::back_inserter(out), "{:<5} {:<19} {:>8} {:<8} {:>7} {:>7} {:<12} {:>7}\n",
                     h == 0 ? std::to_string(f["fold"].get<int>()) : std::string(), range,
                     h == 0 ? std::to_string(f["rows"].get<uint64_t>()) : std::string(),
                     fmt::format("h{}", hz[h].get<int>()), f4(f["auc"]["model"][h]),
                     f4(f["auc"]["best_baseline"][h]),
                     bn.is_string() ? bn.get<std::string>() : std::string("-"),
                     f4(f["auc"]["base_rate"][h]));
    }
  }
  const auto& bs = cv["bootstrap"];
  const int reps = bs["replicates"].get<int>();
  fmt::format_to(std::back_inserter(out), "pooled over {} folds, {} test rows",
                 cv["folds"].get<int>(), cv["pooled"]["rows"].get<uint64_t>());
  if (reps > 0) {
    fmt::format_to(std::back_inserter(out),
                   "; {:g}% paired circular block-bootstrap intervals (block {} rows, {} "
                   "replicates)",
                   bs["hi_percentile"].get<double>() - bs["lo_percentile"].get<double>(),
                   bs["block_rows"].get<int64_t>(), reps);
  }
  out += '\n';
  const int wide = reps > 0 ? 24 : 7, wide_d = reps > 0 ? 27 : 8;
  fmt::format_to(std::back_inserter(out), "{:<8} {:<{}} {:<{}} {:<12} {:>7}  {:<{}} {}\n",
                 "horizon", "model AUC", wide, "best baseline AUC", wide, "(baseline)", "base",
                 "model - best", wide_d, "folds won");
  for (const auto& c : cv["comparison"]) {
    fmt::format_to(
        std::back_inserter(out), "{:<8} {:<{}} {:<{}} {:<12} {:>7}  {:<{}} {}/{}\n",
        fmt::format("h{}", c["horizon"].get<int>()),
        f4(c["model_auc"]) + ci(c, "model_auc_ci", false), wide,
        f4(c.value("best_baseline_auc", nlohmann::json())) + ci(c, "best_baseline_auc_ci", false),
        wide, c.value("best_baseline", std::string("-")), f4(c["base_rate_auc"]),
        s4(c.value("diff", nlohmann::json())) + ci(c, "diff_ci", true), wide_d,
        c["folds_model_wins"].get<int>(), c["folds_compared"].get<int>());
  }
  const auto& m = cv["mean"];
  fmt::format_to(std::back_inserter(out), "{:<8} {:<{}} {:<{}} {:<12} {:>7}  {}\n", "mean",
                 f4(m["model_auc"]), wide, f4(m.value("best_baseline_auc", nlohmann::json())), wide,
                 "", f4(m["base_rate_auc"]),
                 s4(m.value("diff", nlohmann::json())) + ci(m, "diff_ci", true));
  for (const auto& c : cv["comparison"]) {
    if (c.contains("line")) out += c["line"].get<std::string>() + "\n";
  }
  if (cv.contains("stacked")) {
    for (const auto& e : cv["stacked"]["horizons"]) {
      if (!e.contains("line")) continue;
      fmt::format_to(std::back_inserter(out), "{}; folds won {}/{}\n", e["line"].get<std::string>(),
                     e["folds_won"].get<int>(), e["folds_compared"].get<int>());
    }
  }
  if (cv.contains("oracle")) out += oracle_lines(cv["oracle"], "pooled test rows");
  return out;
}

}  // namespace fxt
