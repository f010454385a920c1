#include "core/fault.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fxt {

void fault_point(const char* name) {
  static const char* const spec = std::getenv("FXT_FAULT");  // read once: points may be hot
  if (spec == nullptr) return;
  const size_t n = std::strlen(name);
  if (std::strncmp(spec, name, n) != 0 || (spec[n] != '\0' && spec[n] != ':')) return;
  char* rest = nullptr;
  const long when = spec[n] == ':' ? std::strtol(spec + n + 1, &rest, 10) : 1;
  int sig = SIGKILL;
  if (rest != nullptr && std::strcmp(rest, ":TERM") == 0) sig = SIGTERM;
  if (rest != nullptr && std::strcmp(rest, ":INT") == 0) sig = SIGINT;
  static std::atomic<long> hits{0};
  if (++hits == when) ::kill(::getpid(), sig);
}

}  // namespace fxt
