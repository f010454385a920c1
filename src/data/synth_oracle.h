// The oracle of the synthetic market (DESIGN §10): the probability that the mid is higher h
// snapshots later, given EVERYTHING the generator knows after an event — the latent drift,
// momentum regime and the full queue window, not only the ten visible levels.
//
// Estimated by Monte Carlo from the generator itself: the stream is regenerated from its config
// (byte-identical), and at each requested event the generator's exact state is copied and
// continued with independent random streams until `paths` continuations have moved the mid at
// every horizon (a label is masked when the mid is unchanged, so p is conditional on a move), or
// max_paths_factor x paths continuations were run; p_h = ups / (ups + downs), 0.5 when none moved.
// Short horizons, where most continuations leave the mid unchanged, thus get as many moved
// samples as long ones.
// Its AUC on labelled rows is the ceiling any model of the snapshots can reach, up to the Monte
// Carlo noise of the finite `paths` (which can only lower it). Event i is snapshot i of the
// store ingested from the synth file (one snapshot per record).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/progress.h"
#include "core/status.h"
#include "data/synth.h"

namespace fxt {

struct OracleOptions {
  int paths = 64;             // moved continuations wanted per horizon
  int max_paths_factor = 32;  // at most paths x this continuations per row
  uint64_t seed = 1;          // of the continuation streams (independent of the market's seed)
  int threads = 1;
};

// events: ascending snapshot indices < config.events. Returns probabilities [events][H].
Result<std::vector<double>> synth_oracle(const SynthConfig& config,
                                         std::span<const uint64_t> events,
                                         std::span<const int> horizons,
                                         const OracleOptions& options,
                                         Progress* progress = nullptr);

}  // namespace fxt
