#include "test_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fxt::test {
namespace fs = std::filesystem;

std::string shared_data_dir() {
  const char* env = std::getenv("FXT_DATA_DIR");
  std::string dir = env != nullptr ? env : FXT_SHARED_DATA;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  return fs::canonical(dir, ec).string();
}

std::string shared_file(const std::string& relative) {
  std::string dir = shared_data_dir();
  return dir.empty() ? "" : dir + "/" + relative;
}

std::string scratch_dir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name()
                                     : std::string("global");
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  fs::path dir = fs::temp_directory_path() / ("fxt-test-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(counter++) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string jsonl_without(const std::string& path, const std::string& key) {
  std::string out, line;
  std::istringstream in(file_bytes(path));
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) j.erase(key);
    out += j.dump() + "\n";
  }
  return out;
}

std::string shared_fixture(const std::string& name, const std::string& recipe,
                           const std::function<bool(const std::string& dir)>& build) {
  // One directory per build tree (the binary's path) and fixture name.
  const std::string binary = FXT_BINARY;
  const fs::path dir =
      fs::temp_directory_path() /
      ("fxt-fixture-" + name + "-" + std::to_string(std::hash<std::string>{}(binary) % 1000000007));
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0) {
    ADD_FAILURE() << binary << ": cannot stat the fxt binary";
    return "";
  }
  std::ostringstream stamp;
  stamp << st.st_size << " " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << "\n" << recipe;
  const std::string lock_path = dir.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    ADD_FAILURE() << lock_path << ": cannot lock";
    if (fd >= 0) ::close(fd);
    return "";
  }
  const fs::path stamp_path = dir / ".fixture-stamp";
  const std::string have = file_bytes(stamp_path.string());
  std::string result = dir.string();
  if (have != stamp.str()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec || !build(dir.string())) {
      ADD_FAILURE() << dir.string() << ": building the shared fixture failed";
      fs::remove_all(dir, ec);
      result.clear();
    } else {
      write_bytes(stamp_path.string(), stamp.str());  // written last: the fixture is complete
    }
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return result;
}

std::string shared_fxt_fixture(const std::string& name, const std::vector<std::string>& commands) {
  std::string recipe;
  for (const std::string& c : commands) recipe += c + "\n";
  return shared_fixture(name, recipe, [&commands](const std::string& d) {
    for (std::string c : commands) {
      for (size_t at = c.find("DIR"); at != std::string::npos; at = c.find("DIR", at)) {
        c.replace(at, 3, d);
      }
      const CommandResult r = run_fxt(c);
      if (r.exit_code != 0) {
        ADD_FAILURE() << c << "\n" << r.output;
        return false;
      }
    }
    return true;
  });
}

CommandResult run_fxt(const std::string& args) {
  CommandResult r;
  std::string cmd = std::string(FXT_BINARY) + " " + args + " 2>&1";
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace fxt::test
