// fxt features --store DIR --out FILE.csv: the 40 features and the labels of every snapshot.
//
// Raw features by default; --standardised applies stats measured over the whole store
// (there is no training split here). Undefined raw values are written as empty fields.
#include <cmath>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_util.h"
#include "core/progress.h"
#include "features/features.h"
#include "features/labels.h"

namespace fxt::cli {

namespace {
struct FeaturesArgs {
  std::string store, out, horizons = "30,100,300,1000,6000";
  int stride = 1;
  int64_t min_move_ticks = 0;
  bool standardised = false;
};

Status run_features(const FeaturesArgs& a) {
  LabelConfig lc;
  FXT_ASSIGN_OR_RETURN(lc.horizons, parse_horizons(a.horizons));
  lc.min_move_ticks = a.min_move_ticks;
  FXT_RETURN_IF_ERROR(validate_label_config(lc));
  if (a.stride < 1) return UsageError("--stride must be >= 1 (got {})", a.stride);
  FXT_ASSIGN_OR_RETURN(StoreReader store, StoreReader::open(a.store));
  FeatureConfig fc;
  fc.stride = a.stride;
  std::vector<float> x;
  FXT_RETURN_IF_ERROR(compute_features(store, fc, &x));
  Labels labels;
  FXT_RETURN_IF_ERROR(compute_labels(store, lc, &labels));
  const uint64_t n = store.size();
  if (a.standardised) standardise(measure_feature_stats(x.data(), 0, n), x.data(), n);

  FXT_ASSIGN_OR_RETURN(BufferedFileWriter w, BufferedFileWriter::create(a.out));
  std::string line = "ts_ns";
  for (const char* name : feature_names()) fmt::format_to(std::back_inserter(line), ",{}", name);
  for (int h : lc.horizons) fmt::format_to(std::back_inserter(line), ",y_h{},mask_h{}", h, h);
  line += '\n';
  FXT_RETURN_IF_ERROR(w.write(line));
  Progress progress("features", n, "snapshots");
  const int nh = labels.horizons;
  for (uint64_t t = 0; t < n; ++t) {
    line.clear();
    fmt::format_to(std::back_inserter(line), "{}", store.ts_ns[t]);
    const float* row = x.data() + t * kFeatureDim;
    for (int k = 0; k < kFeatureDim; ++k) {
      // Shortest round-trip float text; undefined (NaN) is an empty field.
      if (std::isnan(row[k])) {
        line += ',';
      } else {
        fmt::format_to(std::back_inserter(line), ",{}", row[k]);
      }
    }
    for (int h = 0; h < nh; ++h) {
      fmt::format_to(std::back_inserter(line), ",{},{}", labels.y[t * nh + h],
                     labels.mask[t * nh + h]);
    }
    line += '\n';
    FXT_RETURN_IF_ERROR(w.write(line));
    progress.advance();
  }
  FXT_RETURN_IF_ERROR(w.commit());
  progress.finish();
  return Status::Ok();
}
}  // namespace

void register_features(CLI::App& app) {
  auto a = std::make_shared<FeaturesArgs>();
  CLI::App* cmd = add_command(app, "features",
                              "write a store's 40 features and direction labels per snapshot "
                              "as CSV (DESIGN §2.4-2.5, docs/FEATURES.md)",
                              [a] { return run_features(*a); });
  cmd->add_option("--store", a->store, "snapshot store directory")->required();
  cmd->add_option("--out", a->out, "output CSV file (written atomically)")->required();
  cmd->add_option("--stride", a->stride, "decision stride S: the previous position is t - S")
      ->capture_default_str()
      ->check(int_range(1, 1 << 20));
  cmd->add_flag("--standardised", a->standardised,
                "standardise with mean/std of the whole store, clip to +-10, undefined -> 0");
  cmd->add_option("--horizons", a->horizons, "label horizons in snapshots, 1 to 8")
      ->capture_default_str();
  cmd->add_option("--min-move-ticks", a->min_move_ticks,
                  "mask labels whose mid moves fewer ticks than this")
      ->capture_default_str()
      ->check(int_range(0, 1000000000));
}

}  // namespace fxt::cli
