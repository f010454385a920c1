// fxt version: what this binary is and what it runs on.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/device_info.h"

namespace fxt::cli {

void register_version(CLI::App& app) {
  app.set_version_flag("--version",
                       fmt::format("fxt {} ({} build, git {})", FXT_VERSION, FXT_BUILD_TYPE,
                                   FXT_GIT_REV),
                       "print the version and exit");
  add_command(app, "version", "print the build and the devices this binary can use", [] {
    fmt::print("fxt {} ({} build, git {})\n", FXT_VERSION, FXT_BUILD_TYPE, FXT_GIT_REV);
    fmt::print("cuda backend: {}\n", cuda_compiled() ? "compiled in" : "not compiled");
    const auto devices = list_cuda_devices();
    // Compiled in is not usable: say whether a GPU is actually there.
    if (devices.empty()) {
      fmt::print("gpu: none found{}\n", cuda_compiled() ? " (train/eval run on the CPU)" : "");
    }
    for (const auto& d : devices) {
      fmt::print("gpu {}: {} (sm_{}{}, {:.1f} GiB, {} SMs)\n", d.index, d.name, d.major, d.minor,
                 static_cast<double>(d.memory_bytes) / (1 << 30), d.multiprocessors);
    }
    return Status::Ok();
  });
}

}  // namespace fxt::cli
