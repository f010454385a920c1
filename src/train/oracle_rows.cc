#include "train/oracle_rows.h"

#include <algorithm>
#include <cmath>

#include "core/file_util.h"
#include "core/progress.h"
#include "data/synth_oracle.h"
#include "train/comparison.h"

namespace fxt {

Result<SynthConfig> oracle_market(const OracleSpec& spec, size_t store_count,
                                  uint64_t store_snapshots) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(spec.config));
  const auto cj = nlohmann::json::parse(text, nullptr, false);
  if (cj.is_discarded()) return InvalidInput("{}: not JSON", spec.config);
  FXT_ASSIGN_OR_RETURN(SynthConfig sc, synth_config_from_json(cj, spec.config));
  if (store_count != 1 || store_snapshots != sc.events) {
    return UsageError(
        "--oracle {}: the evaluated data must be the one store generated from it ({} events; "
        "got {} store(s), {} snapshots)",
        spec.config, sc.events, store_count, store_snapshots);
  }
  if (spec.rows < 1 || spec.paths < 1 || spec.max_horizon < 1) {
    return UsageError("--oracle-rows, --oracle-paths and --oracle-max-horizon must be >= 1");
  }
  return sc;
}

Result<OracleDraw> draw_oracle(const OracleSpec& spec, const SynthConfig& market,
                               std::span<const int> horizons, size_t rows,
                               const std::function<uint64_t(size_t)>& snapshot_of_row, int threads,
                               Progress* progress) {
  const size_t n = std::min<size_t>(rows, static_cast<size_t>(spec.rows));
  if (n == 0) return InvalidInput("--oracle: no scored rows");
  OracleDraw d;
  std::vector<uint64_t> events;
  for (size_t k = 0; k < n; ++k) {
    const size_t r = k * rows / n;
    d.picked.push_back(r);
    events.push_back(snapshot_of_row(r));
  }
  for (int h : horizons) {
    if (h <= spec.max_horizon) d.covered.push_back(h);
  }
  if (d.covered.empty()) return UsageError("--oracle-max-horizon is below every horizon");
  OracleOptions oo;
  oo.paths = spec.paths;
  oo.threads = threads;
  FXT_ASSIGN_OR_RETURN(d.probs, synth_oracle(market, events, d.covered, oo, progress));
  return d;
}

Result<nlohmann::json> oracle_on_rows(const OracleSpec& spec, const OracleRows& in, int threads) {
  const std::vector<std::string>& names = *in.names;
  const nlohmann::json& comparison = *in.comparison;
  const size_t nh = in.horizons.size(), rows = in.model.size() / nh;
  const OracleDraw& d = *in.draw;
  const size_t n = d.picked.size();
  const std::vector<size_t>& picked = d.picked;
  const std::vector<int>& covered = d.covered;
  const std::vector<double>& op = d.probs;
  if (n != std::min<size_t>(rows, static_cast<size_t>(spec.rows)) ||
      op.size() != n * covered.size()) {
    return InternalError("--oracle: a draw of {} rows for {} scored rows", n, rows);
  }
  // The picked rows of every array, all horizons (NaN oracle where not covered).
  std::vector<double> oracle(n * nh, std::nan(""));
  std::vector<float> ms(n * nh), bs(n * nh), ss(in.stacked.empty() ? 0 : n * nh);
  std::vector<uint8_t> ys(n * nh), ks(n * nh);
  std::vector<std::string> best_names(nh);
  std::vector<size_t> best(nh);
  for (size_t h = 0; h < nh; ++h) {
    best_names[h] = comparison["horizons"][h]["best_baseline"].get<std::string>();
    best[h] =
        static_cast<size_t>(std::find(names.begin(), names.end(), best_names[h]) - names.begin());
    if (best[h] >= names.size()) {
      return InvalidInput("--oracle: best baseline {} is not among the scored baselines",
                          best_names[h]);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    size_t ci = 0;
    for (size_t h = 0; h < nh; ++h) {
      const size_t at = picked[k] * nh + h, to = k * nh + h;
      ms[to] = in.model[at];
      if (!ss.empty()) ss[to] = in.stacked[at];
      bs[to] = (*in.baselines)[best[h]][at];
      ys[to] = in.labels[at];
      ks[to] = in.mask[at];
      if (in.horizons[h] <= spec.max_horizon) oracle[to] = op[k * covered.size() + ci++];
    }
  }
  BootstrapOptions bo;
  bo.replicates = 200;
  bo.threads = threads;
  const auto spacing = static_cast<int64_t>(std::max<size_t>(1, rows / n));
  FXT_ASSIGN_OR_RETURN(nlohmann::json out, compare_with_oracle(oracle, ms, bs, best_names, ys, ks,
                                                               in.horizons, spacing, bo, ss));
  out["paths"] = spec.paths;
  out["config"] = spec.config;
  return out;
}

}  // namespace fxt
