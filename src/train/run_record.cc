#include "train/run_record.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "data/store.h"

namespace fxt {

namespace fs = std::filesystem;

namespace {

std::vector<std::string>& command_line_slot() {
  static std::vector<std::string> argv;
  return argv;
}

// POSIX shell quoting where needed, so the command line can be pasted back into a shell.
std::string shell_quote(const std::string& arg) {
  if (arg.empty()) return "''";
  const bool plain = std::all_of(arg.begin(), arg.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return std::isalnum(u) || std::string_view("-_./=:,+@%^").find(ch) != std::string_view::npos;
  });
  if (plain) return arg;
  std::string out = "'";
  for (char ch : arg) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string join_command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

// UTC with milliseconds: 2026-12-02T19:25:09.123Z.
std::string utc_string(int64_t unix_ns) {
  return utc_text(unix_ns, 3);
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Peak resident set of this process in bytes (Linux reports ru_maxrss in KiB).
int64_t peak_rss_bytes() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// CRC32 of a whole file, continuing from `crc`, read in 1 MiB chunks.
Status crc_file(const std::string& path, uint32_t& crc, uint64_t& bytes) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return IoError("{}: cannot open for reading", path);
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const size_t got = std::fread(buf.data(), 1, buf.size(), f.get());
    crc = crc32_update(crc, buf.data(), got);
    bytes += got;
    if (got < buf.size()) break;
  }
  if (std::ferror(f.get())) return IoError("{}: read error", path);
  return Status::Ok();
}

}  // namespace

void set_command_line(int argc, char** argv) {
  auto& slot = command_line_slot();
  slot.clear();
  for (int i = 0; i < argc; ++i) slot.emplace_back(argv[i]);
}

const std::vector<std::string>& command_line() {
  return command_line_slot();
}

std::string config_hash(const nlohmann::json& config) {
  // FNV-1a 64: offset basis 14695981039346656037, prime 1099511628211.
  uint64_t h = 14695981039346656037ull;
  for (const char ch : config.dump()) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

Result<nlohmann::json> store_checksum(const std::string& store_dir) {
  std::error_code ec;
  if (!fs::is_directory(store_dir, ec)) {
    return NotFound("{}: not a directory (expected a store)", store_dir);
  }
  const std::string path = fs::absolute(fs::path(store_dir)).lexically_normal().string();
  // Every regular file, relative names in byte order (stable across file systems).
  std::vector<std::string> names;
  for (fs::recursive_directory_iterator it(store_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      names.push_back(fs::relative(it->path(), store_dir, ec).generic_string());
    }
  }
  if (ec) return IoError("{}: cannot list the directory: {}", store_dir, ec.message());
  std::sort(names.begin(), names.end());

  uint64_t total_bytes = 0;
  for (const std::string& n : names) {
    const auto size = fs::file_size(fs::path(store_dir) / n, ec);
    if (ec) return IoError("{}/{}: cannot stat: {}", store_dir, n, ec.message());
    total_bytes += size;
  }
  uint32_t crc = 0;
  std::string method;
  bool data_verified = false;  // every byte of the data checked against the checksum
  if (std::find(names.begin(), names.end(), "meta.json") != names.end()) {
    // meta.json holds every column's CRC32 and size. Opening the store checks the columns
    // against them (once per process, unless --no-verify), so the identity covers the data.
    method = "meta-crc32";
    FXT_ASSIGN_OR_RETURN(const std::string meta_text, read_file(store_dir + "/meta.json"));
    const auto meta = nlohmann::json::parse(meta_text, nullptr, false);
    if (meta.is_object() && meta.value("format", "") == "foxhunt-store") {
      FXT_RETURN_IF_ERROR(StoreReader::open(store_dir).status());
      data_verified = store_verification() != StoreVerification::kNever;
    }
    uint64_t bytes = 0;
    FXT_RETURN_IF_ERROR(crc_file(store_dir + "/meta.json", crc, bytes));
  } else {
    method = "files-crc32";
    for (const std::string& n : names) {
      crc = crc32_update(crc, n.data(), n.size() + 1);  // the name and its terminating NUL
      uint64_t bytes = 0;
      FXT_RETURN_IF_ERROR(crc_file(store_dir + "/" + n, crc, bytes));
    }
    data_verified = true;
  }
  return nlohmann::json{{"path", path},
                        {"method", method},
                        {"checksum", fmt::format("crc32:{:08x}", crc)},
                        {"data_verified", data_verified},
                        {"files", names.size()},
                        {"bytes", total_bytes}};
}

Result<std::string> file_checksum(const std::string& path) {
  uint32_t crc = 0;
  uint64_t bytes = 0;
  FXT_RETURN_IF_ERROR(crc_file(path, crc, bytes));
  return fmt::format("crc32:{:08x}", crc);
}

RunRecord::RunRecord(std::string kind)
    : kind_(std::move(kind)),
      command_line_(command_line()),
      start_unix_ns_(unix_now_ns()),
      start_steady_(std::chrono::steady_clock::now()) {}

void RunRecord::set_config(const nlohmann::json& resolved_config) {
  config_ = resolved_config;
}

Status RunRecord::add_input_store(const std::string& store_dir) {
  FXT_ASSIGN_OR_RETURN(nlohmann::json entry, store_checksum(store_dir));
  inputs_.push_back(std::move(entry));
  return Status::Ok();
}

void RunRecord::set_device(std::string name) {
  device_ = std::move(name);
}

void RunRecord::set(const std::string& key, nlohmann::json value) {
  assert(std::none_of(std::begin(kRunRecordKeys), std::end(kRunRecordKeys),
                      [&](const char* k) { return key == k; }) &&
         "RunRecord::set with a key the record owns");
  extra_[key] = std::move(value);
}

void RunRecord::set_argv(std::vector<std::string> argv) {
  command_line_ = std::move(argv);
}

void RunRecord::set_metrics(nlohmann::json summary) {
  metrics_ = std::move(summary);
}

nlohmann::json RunRecord::to_json() const {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_steady_).count();
  nlohmann::json j = extra_;
  j["format"] = kRunRecordFormat;
  j["kind"] = kind_;
  j["fxt_version"] = FXT_VERSION;
  j["command_line"] = join_command_line(command_line_);
  j["argv"] = command_line_;
  j["config"] = config_.is_null() ? nlohmann::json::object() : config_;
  j["config_hash"] = config_hash(j["config"]);
  j["inputs"] = inputs_;
  j["git_revision"] = FXT_GIT_REV;
  j["build_type"] = FXT_BUILD_TYPE;
  j["device"] = device_;
  j["host"] = host_name();
  std::error_code ec;
  j["cwd"] = fs::current_path(ec).string();  // relative paths of the command line start here
  j["start_unix_ns"] = start_unix_ns_;
  j["start_utc"] = utc_string(start_unix_ns_);
  j["end_utc"] = utc_string(unix_now_ns());
  j["wall_seconds"] = wall;
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["metrics"] = metrics_;
  return j;
}

Status RunRecord::claim(const std::string& run_dir) const {
  std::error_code ec;
  const std::string path = run_dir + "/" + kRunRecordFile;
  if (!fs::exists(path, ec)) return Status::Ok();
  auto text = read_file(path);
  nlohmann::json j = text.ok() ? nlohmann::json::parse(text.value(), nullptr, false)
                               : nlohmann::json();
  const std::string kind =
      j.is_object() && j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>()
                                                                   : "unreadable";
  if (kind == kind_) return Status::Ok();
  return UsageError("{} records a {} run: give this {} run a directory of its own", path, kind,
                    kind_);
}

Status RunRecord::write(const std::string& run_dir) const {
  FXT_RETURN_IF_ERROR(claim(run_dir));
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return IoError("cannot create run directory {}: {}", run_dir, ec.message());
  return write_file_atomic(run_dir + "/" + kRunRecordFile, to_json().dump(2) + "\n");
}

Result<nlohmann::json> read_run_record(const std::string& run_dir) {
  std::error_code ec;
  const std::string path = fs::is_directory(run_dir, ec) ? run_dir + "/" + kRunRecordFile : run_dir;
  if (!fs::exists(path, ec)) {
    return NotFound("{}: no such run record (expected a run directory holding {})", path,
                    kRunRecordFile);
  }
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message ends with " - <what it saw>; <what it expected>".
    const std::string what = e.what();
    const size_t dash = what.rfind(" - ");
    return InvalidInput("{}: invalid JSON at byte {}: {}", path, e.byte,
                        dash == std::string::npos ? what : what.substr(dash + 3));
  }
  if (!j.is_object()) return InvalidInput("{}: expected a JSON object (a run record)", path);
  if (!j.contains("format")) {
    return InvalidInput("{}: no \"format\" field (written before the run registry; rerun it)",
                        path);
  }
  if (!j["format"].is_number_integer() || j["format"].get<int64_t>() != kRunRecordFormat) {
    return InvalidInput("{}: run record format {} (this fxt reads format {})", path,
                        j["format"].dump(), kRunRecordFormat);
  }
  for (const char* key : {"kind", "config", "config_hash", "metrics", "start_utc"}) {
    if (!j.contains(key)) return InvalidInput("{}: missing field \"{}\"", path, key);
  }
  return j;
}

}  // namespace fxt
