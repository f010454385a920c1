#include "core/fault.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fxt {

void fault_point(const char* name) {
  const char* spec = std::getenv("FXT_FAULT");
  if (spec == nullptr) return;
  const size_t n = std::strlen(name);
  if (std::strncmp(spec, name, n) != 0 || (spec[n] != '\0' && spec[n] != ':')) return;
  const long when = spec[n] == ':' ? std::strtol(spec + n + 1, nullptr, 10) : 1;
  static std::atomic<long> hits{0};
  if (++hits == when) ::kill(::getpid(), SIGKILL);
}

}  // namespace fxt
