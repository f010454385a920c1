// Summaries of DBN files and snapshot stores for `fxt inspect`: metadata, counts,
// first/last records, time span, the largest time gaps, crossed/locked books.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt {

struct InspectOptions {
  uint8_t dbn_fragment_version = 0;
  int top_gaps = 5;  // how many of the largest time gaps to list
};

Result<nlohmann::json> inspect_dbn(const std::string& path, const InspectOptions& options);
// Opens the store with checksum verification; the summary says it was verified.
Result<nlohmann::json> inspect_store(const std::string& dir, const InspectOptions& options);

}  // namespace fxt
