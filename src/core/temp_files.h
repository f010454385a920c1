// The temporary files and directories of this process (docs/ROBUSTNESS.md): one registry,
// used by every writer that works under a temporary name (BufferedFileWriter's
// "<path>.tmp-<pid>", StoreWriter's "<dir>.tmp-<pid>/").
//
// - A path is registered while it exists under its temporary name and unregistered once
//   renamed into place or removed.
// - On SIGINT, SIGTERM or SIGHUP the handler (install_temp_cleanup) removes every registered
//   path (a directory with the files directly inside it), then lets the signal kill the
//   process as it would have (exit status 128 + signal). It uses async-signal-safe calls only.
// - A SIGKILL leaves them behind: remove_stale_temps(path) removes "<path>.tmp-<pid>" left by
//   a process that no longer runs, and is called before a new temporary of `path` is made.
//
// Thread-safe; at most kMaxTempPaths paths are registered at once (more are still written
// and cleaned on every normal path, only not by the signal handler).
#pragma once

#include <string>

namespace fxt {

inline constexpr int kMaxTempPaths = 256;

void register_temp_path(const std::string& path);
void unregister_temp_path(const std::string& path);

// Installs the SIGINT/SIGTERM/SIGHUP handler once (later calls do nothing).
void install_temp_cleanup();

// "<path>.tmp-<pid>" of this process.
std::string temp_name(const std::string& path);

// Removes "<path>.tmp-<N>" files and directories whose process N is gone; returns how many.
int remove_stale_temps(const std::string& path);

}  // namespace fxt
