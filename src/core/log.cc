#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

namespace fxt {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
}

void set_log_level(LogLevel level) {
  g_level = level;
}
LogLevel log_level() {
  return g_level;
}

void log_line(LogLevel level, std::string_view message) {
  static constexpr const char* kPrefix[] = {"debug: ", "", "warning: ", "error: ", ""};
  std::string line = kPrefix[static_cast<int>(level)];
  line.append(message);
  line.push_back('\n');
  // One write() per line keeps concurrent lines whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace fxt
