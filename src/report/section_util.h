// Helpers shared by the sections of `fxt report` (report/*_section.cc): reading JSON
// inputs with one-line errors naming the file and the position, defensive field access (a
// missing piece leaves a cell empty rather than failing the report), value formatting and the
// figure wrapper. Internal to src/report.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt::report {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Headline metrics of a section for the comparison table, in display order.
using Headline = std::vector<std::pair<std::string, std::string>>;

Result<nlohmann::json> read_json_file(const std::string& path);
// A number at j[key] (NaN when missing, null or not a number); num(j): j itself.
double num(const nlohmann::json& j, const char* key);
double num(const nlohmann::json& j);
// An interval stored as [lo, hi] (cv.json, the oracle) or {"lo", "hi"} (eval.json); NaN when
// absent.
std::pair<double, double> interval_pair(const nlohmann::json& iv);
// j[key] when it exists, else a static null.
const nlohmann::json& field(const nlohmann::json& j, std::string_view key);
// A run.json field, wherever a record keeps it: top level, "extra" or "metrics".
const nlohmann::json& run_field(const nlohmann::json& run, std::string_view key);
// A scalar (or an array of them) as display text; null as an en dash.
std::string scalar_text(const nlohmann::json& v);
// A run.json value in its unit (durations, UTC times and prices from *_ns / *_px keys).
std::string unit_text(const std::string& key, const nlohmann::json& v);

// An `fxt eval` JSON (model, base_rate and horizons present).
bool is_eval_json(const nlohmann::json& j);

std::string figure(const std::string& svg, const std::string& extra = "");
std::string horizon_name(int h);
std::vector<int> horizons_of(const nlohmann::json& j);

}  // namespace fxt::report
