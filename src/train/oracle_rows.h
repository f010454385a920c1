// The synthetic market's oracle beside scored rows (fxt eval --oracle, fxt cv --oracle): the
// oracle's probabilities (data/synth_oracle.h) on evenly spaced rows, compared with the model
// and the best baseline on exactly those rows (compare_with_oracle, train/comparison.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/progress.h"
#include "core/status.h"
#include "data/synth.h"

namespace fxt {

struct OracleSpec {
  // OUT.synth.json of `fxt synth --latent` for the evaluated store; empty = no oracle.
  std::string config;
  int rows = 2000;         // evenly spaced rows it scores
  int paths = 64;          // Monte Carlo continuations that moved the mid, per row and horizon
  int max_horizon = 1000;  // largest horizon it covers (its cost grows with the horizon)
  bool enabled() const { return !config.empty(); }
};

// The oracle's Monte Carlo part, which needs only how many rows are scored: the spec's evenly
// spaced rows among them, the horizons it covers (<= max_horizon) and its probabilities
// [picked][covered]. snapshot_of_row(r) is row r's snapshot index in the one store `market`
// (oracle_market()'s) generated. fxt eval draws it while the scores' metrics are computed.
struct OracleDraw {
  std::vector<size_t> picked;
  std::vector<int> covered;
  std::vector<double> probs;
};
// Errors (exit code 2): no horizon <= max_horizon, no rows. threads: of the Monte Carlo (the
// probabilities do not depend on it).
Result<OracleDraw> draw_oracle(const OracleSpec& spec, const SynthConfig& market,
                               std::span<const int> horizons, size_t rows,
                               const std::function<uint64_t(size_t)>& snapshot_of_row, int threads,
                               Progress* progress);

// The scored rows: [rows][H] model logits, each baseline's, labels and mask (0/1), and
// `comparison`, compare_with_baselines()'s JSON for them (it names each horizon's best
// baseline), and `draw`, draw_oracle() of these rows (required).
struct OracleRows {
  std::span<const int> horizons;
  std::span<const float> model;
  std::span<const float> stacked;  // the model stack's logits (train/stacking.h); empty = none
  const std::vector<std::string>* names = nullptr;
  const std::vector<std::vector<float>>* baselines = nullptr;
  std::span<const uint8_t> labels, mask;
  const nlohmann::json* comparison = nullptr;
  const OracleDraw* draw = nullptr;
};

// The market the spec's config describes, checked against the evaluated data (one store of
// the config's event count) and the spec's counts: a one-line error (exit code 2) otherwise.
// fxt cv calls it before training, so a wrong store fails at once.
Result<SynthConfig> oracle_market(const OracleSpec& spec, size_t store_count,
                                  uint64_t store_snapshots);

// The oracle (rows.draw) against the scored rows: JSON of compare_with_oracle() plus "paths" and
// "config" (with a model stack, compare_with_oracle's stacked_* fields too). threads: of the
// bootstrap.
Result<nlohmann::json> oracle_on_rows(const OracleSpec& spec, const OracleRows& rows, int threads);

}  // namespace fxt
