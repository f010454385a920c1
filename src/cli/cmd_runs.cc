// fxt runs list / fxt runs compare: the run registry (src/train/run_record.h, docs/RUNS.md).
// `list` finds every run.json under the given directories and prints one row per run;
// `compare` says what differs between two runs (config, inputs, environment) and how
// their headline metrics compare.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/log.h"
#include "train/run_record.h"

namespace fxt::cli {

namespace {

namespace fs = std::filesystem;

// How deep `runs list` looks below each directory (a CV run holds fold runs one level down).
constexpr int kMaxScanDepth = 4;

// A table printed with every column padded to its widest cell; the last column is not padded.
std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i > 0) line += "  ";
      line += i + 1 < r.size() ? fmt::format("{:<{}}", r[i], width[i]) : r[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// A JSON value as a table cell: strings bare; floats to 6 significant digits (metrics) or,
// with `exact`, in their shortest round-trip form (config values: a difference never hides).
std::string cell(const nlohmann::json& v, bool exact = false) {
  if (v.is_null()) return "null";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float() && !exact) return fmt::format("{:.6g}", v.get<double>());
  return v.dump();
}

// Flattens objects to "a.b.c" paths and arrays of objects to "a[0].b"; arrays of scalars
// stay one leaf (horizons [30, 100] is one setting).
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::map<std::string, nlohmann::json>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
    return;
  }
  if (j.is_array() && std::any_of(j.begin(), j.end(), [](const nlohmann::json& e) {
        return e.is_object() || e.is_array();
      })) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
    return;
  }
  out[prefix] = j;
}

std::map<std::string, nlohmann::json> flat(const nlohmann::json& j) {
  std::map<std::string, nlohmann::json> out;
  if (!j.is_null()) flatten(j, "", out);
  return out;
}

// ---- list ----------------------------------------------------------------------------------

struct ListArgs {
  std::vector<std::string> dirs;
  bool json = false;
};

// Every run.json at most kMaxScanDepth levels below `dir` (or `dir` itself when it is a file).
Status find_run_files(const std::string& dir, std::vector<std::string>& out) {
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) {
    out.push_back(dir);
    return Status::Ok();
  }
  if (!fs::is_directory(dir, ec)) return NotFound("{}: no such directory", dir);
  std::vector<std::string> found;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && it.depth() >= kMaxScanDepth - 1) it.disable_recursion_pending();
    if (it->path().filename() == kRunRecordFile && it->is_regular_file(ec)) {
      found.push_back(it->path().string());
    }
  }
  if (ec) return IoError("{}: cannot list: {}", dir, ec.message());
  if (fs::exists(fs::path(dir) / kRunRecordFile)) {
    found.push_back((fs::path(dir) / kRunRecordFile).string());
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return Status::Ok();
}

// The run directory shown for a run.json path.
std::string run_dir_of(const std::string& run_json) {
  const fs::path p(run_json);
  return p.filename() == kRunRecordFile ? p.parent_path().string() : run_json;
}

// "12.3s", "4m05s", "2h03m".
std::string format_wall(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  const double s = v.get<double>();
  if (s < 60) return fmt::format("{:.1f}s", s);
  const auto total = static_cast<int64_t>(std::llround(s));
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

std::string headline(const nlohmann::json& metrics) {
  std::string out;
  for (const auto& [k, v] : flat(metrics)) {
    if (!v.is_number()) continue;
    if (!out.empty()) out += ' ';
    out += k + "=" + cell(v);
  }
  return out.empty() ? "-" : out;
}

Status run_list(const ListArgs& a) {
  std::vector<std::string> files;
  for (const std::string& d : a.dirs) FXT_RETURN_IF_ERROR(find_run_files(d, files));
  if (files.empty()) {
    return NotFound("no {} found under {} (searched {} levels)", kRunRecordFile,
                    fmt::join(a.dirs, ", "), kMaxScanDepth);
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string& f : files) {
    auto r = read_run_record(f);
    if (!r.ok()) {
      log_warn("skipped: {}", r.status().message());
      continue;
    }
    const nlohmann::json& j = *r;
    runs.push_back({{"path", run_dir_of(f)},
                    {"kind", j.value("kind", "")},
                    {"start_utc", j.value("start_utc", "")},
                    {"wall_seconds", j.value("wall_seconds", nlohmann::json())},
                    {"device", j.value("device", "")},
                    {"git_revision", j.value("git_revision", "")},
                    {"config_hash", j.value("config_hash", "")},
                    {"metrics", j.value("metrics", nlohmann::json::object())}});
  }
  if (a.json) {
    std::fputs((runs.dump(2) + "\n").c_str(), stdout);
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {
      {"path", "kind", "start (UTC)", "wall", "device", "git", "config", "metrics"}};
  for (const nlohmann::json& r : runs) {
    std::string start = r["start_utc"].get<std::string>();
    if (const size_t dot = start.find('.'); dot != std::string::npos) start.resize(dot);
    rows.push_back({r["path"].get<std::string>(), r["kind"].get<std::string>(), start,
                    format_wall(r["wall_seconds"]), r["device"].get<std::string>(),
                    r["git_revision"].get<std::string>().substr(0, 10),
                    r["config_hash"].get<std::string>().substr(0, 8), headline(r["metrics"])});
  }
  std::fputs(format_table(rows).c_str(), stdout);
  return Status::Ok();
}

// ---- compare -------------------------------------------------------------------------------

struct CompareArgs {
  std::string a, b;
  bool json = false;
};

const nlohmann::json kAbsent = "(absent)";

// Keys whose values differ between two flattened objects, with both values.
nlohmann::json differing(const nlohmann::json& a, const nlohmann::json& b) {
  const auto fa = flat(a), fb = flat(b);
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& k : keys) {
    const auto ia = fa.find(k), ib = fb.find(k);
    const nlohmann::json& va = ia == fa.end() ? kAbsent : ia->second;
    const nlohmann::json& vb = ib == fb.end() ? kAbsent : ib->second;
    if (va != vb) out.push_back({{"key", k}, {"a", va}, {"b", vb}});
  }
  return out;
}

// Input stores keyed by path: a store present in one run only, or with another checksum.
nlohmann::json input_differences(const nlohmann::json& a, const nlohmann::json& b) {
  auto by_path = [](const nlohmann::json& inputs) {
    std::map<std::string, std::string> m;
    if (!inputs.is_array()) return m;
    for (const nlohmann::json& e : inputs) {
      m[e.value("path", "")] = e.value("checksum", "");
    }
    return m;
  };
  const auto ma = by_path(a), mb = by_path(b);
  std::set<std::string> paths;
  for (const auto& [p, c] : ma) paths.insert(p);
  for (const auto& [p, c] : mb) paths.insert(p);
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& p : paths) {
    const auto ia = ma.find(p), ib = mb.find(p);
    const std::string ca = ia == ma.end() ? "(absent)" : ia->second;
    const std::string cb = ib == mb.end() ? "(absent)" : ib->second;
    if (ca != cb) out.push_back({{"key", p}, {"a", ca}, {"b", cb}});
  }
  return out;
}

nlohmann::json compare_records(const nlohmann::json& a, const nlohmann::json& b) {
  nlohmann::json env_a = nlohmann::json::object(), env_b = nlohmann::json::object();
  for (const char* k : {"kind", "git_revision", "build_type", "fxt_version", "device", "host"}) {
    env_a[k] = a.value(k, nlohmann::json());
    env_b[k] = b.value(k, nlohmann::json());
  }
  nlohmann::json metrics = nlohmann::json::array();
  const auto ma = flat(a.value("metrics", nlohmann::json::object()));
  const auto mb = flat(b.value("metrics", nlohmann::json::object()));
  std::set<std::string> keys;
  for (const auto& [k, v] : ma) keys.insert(k);
  for (const auto& [k, v] : mb) keys.insert(k);
  for (const std::string& k : keys) {
    const auto ia = ma.find(k), ib = mb.find(k);
    nlohmann::json row = {{"key", k},
                          {"a", ia == ma.end() ? kAbsent : ia->second},
                          {"b", ib == mb.end() ? kAbsent : ib->second},
                          {"diff", nullptr}};
    if (row["a"].is_number() && row["b"].is_number()) {
      row["diff"] = row["b"].get<double>() - row["a"].get<double>();
    }
    metrics.push_back(std::move(row));
  }
  return {{"config_hash", {{"a", a.value("config_hash", "")}, {"b", b.value("config_hash", "")}}},
          {"config", differing(a.value("config", nlohmann::json::object()),
                               b.value("config", nlohmann::json::object()))},
          {"inputs", input_differences(a.value("inputs", nlohmann::json::array()),
                                       b.value("inputs", nlohmann::json::array()))},
          {"environment", differing(env_a, env_b)},
          {"metrics", metrics}};
}

std::string format_differences(const std::string& title, const nlohmann::json& rows,
                               const std::string& none) {
  std::string out = title + ":\n";
  if (rows.empty()) return out + "  " + none + "\n";
  std::vector<std::vector<std::string>> t = {{"  key", "A", "B"}};
  for (const nlohmann::json& r : rows) {
    t.push_back({"  " + r["key"].get<std::string>(), cell(r["a"], true), cell(r["b"], true)});
  }
  return out + format_table(t);
}

Status run_compare(const CompareArgs& args) {
  FXT_ASSIGN_OR_RETURN(nlohmann::json a, read_run_record(args.a));
  FXT_ASSIGN_OR_RETURN(nlohmann::json b, read_run_record(args.b));
  nlohmann::json d = compare_records(a, b);
  if (args.json) {
    d["a"] = args.a;
    d["b"] = args.b;
    std::fputs((d.dump(2) + "\n").c_str(), stdout);
    return Status::Ok();
  }
  std::string out =
      fmt::format("A: {} ({}, {})\nB: {} ({}, {})\n\n", args.a, cell(a["kind"]),
                  cell(a["start_utc"]), args.b, cell(b["kind"]), cell(b["start_utc"]));
  const std::string ha = d["config_hash"]["a"], hb = d["config_hash"]["b"];
  out += format_differences(ha == hb
                                ? fmt::format("config (hash {}, identical)", ha.substr(0, 8))
                                : fmt::format("config ({} keys differ; hash {} vs {})",
                                              d["config"].size(), ha.substr(0, 8), hb.substr(0, 8)),
                            d["config"], "no difference");
  out += format_differences("inputs", d["inputs"],
                            fmt::format("same stores and checksums ({})", a["inputs"].size()));
  out += format_differences("environment", d["environment"], "same");
  out += "metrics:\n";
  if (d["metrics"].empty()) {
    out += "  none recorded\n";
  } else {
    std::vector<std::vector<std::string>> t = {{"  metric", "A", "B", "B - A"}};
    for (const nlohmann::json& r : d["metrics"]) {
      t.push_back({"  " + r["key"].get<std::string>(), cell(r["a"]), cell(r["b"]),
                   r["diff"].is_number() ? fmt::format("{:+.6g}", r["diff"].get<double>()) : "-"});
    }
    out += format_table(t);
  }
  std::fputs(out.c_str(), stdout);
  return Status::Ok();
}

}  // namespace

void register_runs(CLI::App& app) {
  CLI::App* runs = app.add_subcommand(
      "runs", "the run registry: list run directories, compare two runs (docs/RUNS.md)");
  runs->require_subcommand(1);

  auto l = std::make_shared<ListArgs>();
  CLI::App* list = add_command(*runs, "list",
                               "one row per run.json found under DIR (up to 4 levels): kind, "
                               "start, wall time, device, git, config hash, metrics",
                               [l] { return run_list(*l); });
  list->add_option("dirs", l->dirs, "directories to scan (or run.json files)")->required();
  list->add_flag("--json", l->json, "print a JSON array instead of the table");

  auto c = std::make_shared<CompareArgs>();
  CLI::App* cmp = add_command(*runs, "compare",
                              "config keys, inputs and environment that differ between two "
                              "runs, and their metrics side by side",
                              [c] { return run_compare(*c); });
  cmp->add_option("a", c->a, "run directory A (or its run.json)")->required();
  cmp->add_option("b", c->b, "run directory B (or its run.json)")->required();
  cmp->add_flag("--json", c->json, "print the differences as JSON");
}

}  // namespace fxt::cli
