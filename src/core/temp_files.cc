#include "core/temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace fxt {
namespace {

constexpr size_t kPathBytes = 4096;

// Slots the signal handler can read without locks: a slot's path is complete before `used`
// is set (release) and is not rewritten while `used` is set.
struct Slot {
  std::atomic<bool> used{false};
  char path[kPathBytes] = {};
};
Slot g_slots[kMaxTempPaths];
std::mutex g_mu;  // serialises register/unregister (never taken by the handler)

// Removes the entries directly inside `dir` (a temporary store is flat), then `dir`.
void remove_dir_signal_safe(const char* dir) {
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      const char* name = d->d_name;
      if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))) {
        ::unlinkat(fd, name, 0);
      }
      off += d->d_reclen;
    }
  }
  ::close(fd);
  ::rmdir(dir);
}

void on_signal(int sig) {
  for (int i = kMaxTempPaths - 1; i >= 0; --i) {
    if (!g_slots[i].used.load(std::memory_order_acquire)) continue;
    const char* p = g_slots[i].path;
    if (::unlink(p) != 0 && (errno == EISDIR || errno == EPERM)) remove_dir_signal_safe(p);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void register_temp_path(const std::string& path) {
  if (path.size() + 1 > kPathBytes) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_relaxed)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.used.store(true, std::memory_order_release);
    return;
  }
}

void unregister_temp_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_relaxed) && path == s.path) {
      s.used.store(false, std::memory_order_release);
      return;
    }
  }
}

void install_temp_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  });
}

std::string temp_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}

int remove_stale_temps(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  fs::path parent = p.parent_path();
  if (parent.empty()) parent = ".";
  const std::string prefix = p.filename().string() + ".tmp-";
  int removed = 0;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // still running
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

}  // namespace fxt
