// Order entry and response latency of the simulated exchange (DESIGN §7.1): constant, or
// linearly interpolated from a recorded latency file. Feed latency is always constant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/types.h"

namespace fxt::sim {

class LatencyModel {
 public:
  LatencyModel() = default;
  // Constant latencies from `config`, or, when config.file is set, the file's curve for
  // entry and response (config.entry_ns / response_ns are then ignored). Negative constant
  // latencies are a usage error.
  static Result<LatencyModel> create(const LatencyConfig& config);

  // Reads a CSV "ts_ns,entry_ns,response_ns" (header line first, then one row per
  // sample, ts_ns strictly increasing, latencies >= 0). Bad rows give "file:line: ...".
  static Result<LatencyModel> load_file(const std::string& path, int64_t feed_ns);

  int64_t feed_ns() const { return feed_ns_; }
  // Latency of a message sent at `at_ns` (ns): the file's value linearly interpolated
  // between the samples around at_ns, clamped to the first/last sample outside them.
  int64_t entry_ns(int64_t at_ns) const { return lookup(entry_, at_ns, entry_const_); }
  int64_t response_ns(int64_t at_ns) const { return lookup(response_, at_ns, response_const_); }

  size_t samples() const { return ts_.size(); }
  // The recorded curve (empty: constant latencies), for the GPU lanes' copy of it.
  const std::vector<int64_t>& sample_ts() const { return ts_; }
  const std::vector<int64_t>& entry_samples() const { return entry_; }
  const std::vector<int64_t>& response_samples() const { return response_; }

 private:
  int64_t lookup(const std::vector<int64_t>& values, int64_t at_ns, int64_t constant) const;

  int64_t feed_ns_ = 0;
  int64_t entry_const_ = 0;
  int64_t response_const_ = 0;
  std::vector<int64_t> ts_;  // empty: constant latencies
  std::vector<int64_t> entry_;
  std::vector<int64_t> response_;
};

}  // namespace fxt::sim
