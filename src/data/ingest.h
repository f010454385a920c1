// Turning source files into snapshot stores: format detection and dispatch.
//
// One store per source: a DBN file (mbp-10, mbp-1, tbbo, trades or mbo), a Binance
// depth capture, or a LOBSTER message+orderbook pair. DBN definition files given
// alongside are not stores of their own: they supply instrument metadata (symbol,
// tick size, currency, multiplier) to the data files whose instrument ids match.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt {

enum class SourceFormat { kAuto, kDbn, kBinance, kLobster, kTardis };
Result<SourceFormat> parse_source_format(const std::string& name);

struct IngestOptions {
  SourceFormat format = SourceFormat::kAuto;
  uint8_t dbn_fragment_version = 0;     // for .dbn.frag inputs (records without metadata)
  std::string binance_market = "auto";  // auto, spot, usdm
  std::string lobster_date;             // YYYY-MM-DD; default: from the file name
  int64_t tick_px = 0;  // > 0: the instrument's tick (1e-9 units), over a definition or inference
};

// A unit of work: the files that make one store, and the store's directory name.
struct IngestJob {
  SourceFormat format = SourceFormat::kAuto;
  std::vector<std::string> files;  // one file; a LOBSTER pair is {message, orderbook}, a
                                   // Tardis.dev pair {incremental_book_L2, trades}
  std::string name;                // store directory name (from the source file name)
};

// Groups the given paths into jobs (pairs LOBSTER files, separates DBN definitions).
// `definitions` receives the definition-only DBN files.
Result<std::vector<IngestJob>> plan_ingest(const std::vector<std::string>& paths,
                                           const IngestOptions& options,
                                           std::vector<std::string>* definitions);

// Ingests one job into a new store at `store_dir`. Returns the store's summary
// (meta.json counts and the source's own statistics).
Result<nlohmann::json> ingest_to_store(const IngestJob& job,
                                       const std::vector<std::string>& definitions,
                                       const IngestOptions& options, const std::string& store_dir);

// plan_ingest + ingest_to_store for every job, as `fxt ingest` and foxhunt.ingest run it: with
// one job `out` is the store, with several `out` is a dataset folder holding one store per job.
// Returns [{"store": dir, "meta": summary}, ...] in job order.
Result<nlohmann::json> ingest_sources(const std::vector<std::string>& sources,
                                      const IngestOptions& options, const std::string& out);

// The file name without directories and without the .dbn/.zst/.gz/.csv/.frag suffixes.
std::string source_stem(const std::string& path);

}  // namespace fxt
