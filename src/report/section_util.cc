#include "report/section_util.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "core/text.h"
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

Result<Csv> read_csv(const std::string& path, const std::vector<std::string>& numeric,
                     const std::vector<std::string>& text) {
  FXT_ASSIGN_OR_RETURN(std::string body, read_file(path));
  Csv csv;
  size_t pos = 0, line_no = 0;
  std::vector<std::string> header;
  std::vector<int> num_index, text_index;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string> fields = split_fields(line, ',');
    if (header.empty()) {
      header = std::move(fields);
      auto find = [&](const std::string& name) -> int {
        auto it = std::find(header.begin(), header.end(), name);
        return it == header.end() ? -1 : static_cast<int>(it - header.begin());
      };
      for (const std::string& name : numeric) {
        const int i = find(name);
        if (i < 0) return InvalidInput("{}:1: no column '{}' in the header", path, name);
        num_index.push_back(i);
      }
      for (const std::string& name : text) {
        const int i = find(name);
        if (i < 0) return InvalidInput("{}:1: no column '{}' in the header", path, name);
        text_index.push_back(i);
      }
      continue;
    }
    if (fields.size() != header.size()) {
      return InvalidInput("{}:{}: {} fields, expected {} as in the header", path, line_no,
                          fields.size(), header.size());
    }
    for (size_t k = 0; k < numeric.size(); ++k) {
      const std::string& f = fields[static_cast<size_t>(num_index[k])];
      char* stop = nullptr;
      const double v = std::strtod(f.c_str(), &stop);
      if (f.empty() || stop != f.c_str() + f.size()) {
        return InvalidInput("{}:{}: bad number '{}' in column {}", path, line_no, f, numeric[k]);
      }
      csv.numbers[numeric[k]].push_back(v);
    }
    for (size_t k = 0; k < text.size(); ++k) {
      csv.strings[text[k]].push_back(fields[static_cast<size_t>(text_index[k])]);
    }
    ++csv.rows;
  }
  if (header.empty()) return InvalidInput("{}: empty file (expected a header line)", path);
  for (const std::string& name : numeric) csv.numbers[name];  // present even with no rows
  for (const std::string& name : text) csv.strings[name];
  return csv;
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
