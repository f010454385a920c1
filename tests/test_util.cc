#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

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
