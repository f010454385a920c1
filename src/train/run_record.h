// The run registry: every run directory (train, eval, cv, backtest, quickstart)
// holds one run.json written through RunRecord, so `fxt runs list` and
// `fxt runs compare` can say what a run was and what differs between two runs.
//
// run.json (format 1) records the command line, the resolved config and its
// hash, the input stores and their checksums, the git revision, build type,
// fxt version, device, start/end time, wall time, peak memory and the headline
// metrics. docs/RUNS.md describes every field.
//
// Config hash: FNV-1a 64 over the canonical dump of the config (nlohmann's
// dump() with no indentation: object keys sorted, so key order never matters),
// written as 16 lower-case hex digits.
//
// Store checksum: a store keeps a CRC32 per column in meta.json and the reader
// verifies them on open, so a store's checksum is the CRC32 of its meta.json
// bytes (method "meta-crc32") after the store has been opened and its columns
// checked against them ("data_verified": false only under --no-verify). Any other directory (or a store without
// meta.json) gets the CRC32 of every regular file's name and bytes in name
// order (method "files-crc32").
//
// Not thread-safe; one RunRecord per run, written by the thread that owns the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt {

constexpr int kRunRecordFormat = 1;
constexpr const char* kRunRecordFile = "run.json";

// The top-level keys RunRecord itself writes (set() may not use them).
inline constexpr const char* kRunRecordKeys[] = {
    "format",      "kind",      "fxt_version",   "command_line", "argv",         "config",
    "config_hash", "inputs",    "git_revision",  "build_type",   "device",       "host",
    "cwd",         "start_utc", "start_unix_ns", "end_utc",      "wall_seconds", "peak_rss_bytes",
    "metrics"};

// The process's command line, set once by main() (src/cli/main.cc) before parsing.
void set_command_line(int argc, char** argv);
const std::vector<std::string>& command_line();

// FNV-1a 64 of the canonical dump of `config`, as 16 hex digits.
std::string config_hash(const nlohmann::json& config);

// Path, checksum method and checksum ("crc32:xxxxxxxx") of a store directory;
// fails with a one-line error when the directory cannot be read.
Result<nlohmann::json> store_checksum(const std::string& store_dir);

// "crc32:xxxxxxxx" of one file's bytes (a checkpoint an eval read, ...).
Result<std::string> file_checksum(const std::string& path);

class RunRecord {
 public:
  // kind: "train" | "eval" | "cv" | "backtest" | "quickstart"; records the start time.
  explicit RunRecord(std::string kind);

  // Stored with its hash (config_hash above).
  void set_config(const nlohmann::json& resolved_config);
  // Path + checksum of the store's files (see store_checksum).
  Status add_input_store(const std::string& store_dir);
  // Default "cpu"; the CUDA device name when one is used.
  void set_device(std::string name);
  // Extra fields (summary metrics, paths, timings, ...), stored at the top level of
  // run.json next to the record's own fields. A key the record owns (format, kind,
  // config, inputs, metrics, device, ... see kRunRecordKeys) is a programmer error.
  void set(const std::string& key, nlohmann::json value);
  // Replaces the command line taken from command_line() (runs started in-process).
  void set_argv(std::vector<std::string> argv);
  // Headline metrics compared by `fxt runs compare`: a flat object of numbers
  // (nested objects are flattened with '.' by the comparer).
  void set_metrics(nlohmann::json summary);

  // Writes RUN_DIR/run.json atomically, creating RUN_DIR if needed; adds end
  // time, wall time, peak memory (getrusage ru_maxrss), git revision
  // (FXT_GIT_REV), build type (FXT_BUILD_TYPE) and fxt version.
  Status write(const std::string& run_dir) const;
  // UsageError when RUN_DIR/run.json already records a run of another kind (an eval
  // pointed at a training run's directory): a command never overwrites another run's
  // record. write() checks it too; call it before the work to fail early.
  Status claim(const std::string& run_dir) const;
  // The record as write() would store it at this moment.
  nlohmann::json to_json() const;

  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::string device_ = "cpu";
  std::vector<std::string> command_line_;
  nlohmann::json config_;  // null until set_config
  nlohmann::json inputs_ = nlohmann::json::array();
  nlohmann::json extra_ = nlohmann::json::object();  // top-level extras, never a reserved key
  nlohmann::json metrics_ = nlohmann::json::object();
  int64_t start_unix_ns_ = 0;
  std::chrono::steady_clock::time_point start_steady_;
};

// Reads and checks RUN_DIR/run.json (or a path to a run.json file); clear
// one-line errors naming the file for a missing file, bad JSON or a wrong format.
Result<nlohmann::json> read_run_record(const std::string& run_dir);

}  // namespace fxt
