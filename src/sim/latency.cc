#include "sim/latency.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>

namespace fxt::sim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool parse_i64(std::string_view s, int64_t* out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

Result<LatencyModel> LatencyModel::create(const LatencyConfig& config) {
  if (config.feed_ns < 0 || config.entry_ns < 0 || config.response_ns < 0)
    return UsageError("latency must be >= 0 ns (feed {}, entry {}, response {})", config.feed_ns,
                      config.entry_ns, config.response_ns);
  if (!config.file.empty()) return load_file(config.file, config.feed_ns);
  LatencyModel m;
  m.feed_ns_ = config.feed_ns;
  m.entry_const_ = config.entry_ns;
  m.response_const_ = config.response_ns;
  return m;
}

Result<LatencyModel> LatencyModel::load_file(const std::string& path, int64_t feed_ns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("{}: cannot open latency file", path);
  LatencyModel m;
  m.feed_ns_ = feed_ns;
  std::string line;
  uint64_t line_no = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view row = trim(line);
    if (row.empty()) continue;  // blank lines (a trailing newline) are allowed
    if (!header_seen) {
      if (row != "ts_ns,entry_ns,response_ns")
        return InvalidInput("{}:{}: expected the header 'ts_ns,entry_ns,response_ns', got '{}'",
                            path, line_no, row);
      header_seen = true;
      continue;
    }
    int64_t v[3];
    size_t start = 0;
    int fields = 0;
    bool good = true;
    while (good) {
      size_t comma = row.find(',', start);
      std::string_view field = row.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (fields >= 3 || !parse_i64(field, &v[fields])) {
        good = false;
        break;
      }
      ++fields;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (!good || fields != 3)
      return InvalidInput("{}:{}: expected three integers 'ts_ns,entry_ns,response_ns', got '{}'",
                          path, line_no, row);
    if (v[1] < 0 || v[2] < 0)
      return InvalidInput("{}:{}: latencies must be >= 0 ns, got '{}'", path, line_no, row);
    if (!m.ts_.empty() && v[0] <= m.ts_.back())
      return InvalidInput("{}:{}: ts_ns must increase (previous {}, got {})", path, line_no,
                          m.ts_.back(), v[0]);
    m.ts_.push_back(v[0]);
    m.entry_.push_back(v[1]);
    m.response_.push_back(v[2]);
  }
  if (in.bad()) return IoError("{}: read error", path);
  if (!header_seen)
    return InvalidInput("{}:1: expected the header 'ts_ns,entry_ns,response_ns', got an empty file",
                        path);
  if (m.ts_.empty())
    return InvalidInput("{}:{}: expected at least one 'ts_ns,entry_ns,response_ns' row", path,
                        line_no + 1);
  return m;
}

int64_t LatencyModel::lookup(const std::vector<int64_t>& values, int64_t at_ns,
                             int64_t constant) const {
  if (ts_.empty()) return constant;
  return interpolate_latency(ts_.data(), values.data(), ts_.size(), at_ns);
}

}  // namespace fxt::sim
