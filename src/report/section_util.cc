#include "report/section_util.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "report/chart.h"
#include "report/html.h"

namespace fxt::report {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Reading inputs: JSON and CSV files with one-line errors naming the file and the position.

Result<json> read_json_file(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidInput("{}: not valid JSON at byte {}: {}", path, e.byte, e.what());
  }
}

// A number at j[key] (NaN when missing, null or not a number).
double num(const json& j, const char* key) {
  if (!j.is_object()) return kNaN;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNaN;
  return it->get<double>();
}
double num(const json& j) {
  return j.is_number() ? j.get<double>() : kNaN;
}
std::pair<double, double> interval_pair(const json& iv) {
  if (iv.is_array() && iv.size() == 2) return {num(iv[0]), num(iv[1])};
  return {num(iv, "lo"), num(iv, "hi")};
}

// j[key] when it exists, else a static null.
const json& field(const json& j, std::string_view key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A run.json field, wherever a record keeps it: top level, "extra" or "metrics" (the common
// run record of src/train/run_record.h nests command-specific fields under "extra").
const json& run_field(const json& run, std::string_view key) {
  for (const json* j : {&run, &field(run, "extra"), &field(run, "metrics")}) {
    const json& v = field(*j, key);
    if (!v.is_null()) return v;
  }
  return field(run, key);
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number()) return format_number(v.get<double>(), 6);
  if (v.is_null()) return "\u2013";
  if (v.is_array()) {
    std::string s;
    for (const json& e : v) s += (s.empty() ? "" : ", ") + scalar_text(e);
    return s;
  }
  return v.dump();
}

// A run.json value in its unit: an integer `*_ns` as a duration (an epoch timestamp, past
// 1973, as a UTC time), an integer `tick_px` / `*_px` as a decimal price (1e-9 units);
// objects key by key with the unit's suffix dropped ("feed 1 ms, entry 0 s").
std::string unit_text(const std::string& key, const json& v) {
  const bool ns = key.ends_with("_ns"), px = key == "tick_px" || key.ends_with("_px");
  if (v.is_object()) {
    std::string s;
    for (const auto& [k, x] : v.items()) {
      const bool unit = (k.ends_with("_ns") || k.ends_with("_px")) && x.is_number_integer();
      s += (s.empty() ? "" : ", ") + (unit ? k.substr(0, k.size() - 3) : k) + " " + unit_text(k, x);
    }
    return s;
  }
  if (ns && v.is_number_integer()) {
    const auto t = v.get<int64_t>();
    if (t >= 100'000'000'000'000'000) return utc_text(t, 3);
    return duration_text(static_cast<double>(t) * 1e-9);
  }
  if (px && v.is_number_integer()) {
    return format_number(static_cast<double>(v.get<int64_t>()) / 1e9, 9);
  }
  return scalar_text(v);
}

bool is_eval_json(const json& j) {
  return j.is_object() && j.contains("model") && j.contains("base_rate") && j.contains("horizons");
}

std::string figure(const std::string& svg, const std::string& extra) {
  return "<figure class=\"fxt-figure\">" + svg + extra + "</figure>\n";
}

std::string horizon_name(int h) {
  return fmt::format("h{}", h);
}

std::vector<int> horizons_of(const json& j) {
  std::vector<int> hs;
  for (const json& h : field(j, "horizons")) {
    if (h.is_number_integer()) hs.push_back(h.get<int>());
  }
  return hs;
}

}  // namespace fxt::report
