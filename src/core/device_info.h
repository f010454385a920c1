// Which accelerators this process can use. Without CUDA compiled in, or without
// a driver or GPU at run time, the list is empty and the CPU backend is used.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxt {

struct CudaDevice {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  uint64_t memory_bytes = 0;
  int multiprocessors = 0;
  int clock_khz = 0;
};

bool cuda_compiled();
std::vector<CudaDevice> list_cuda_devices();

// Thrown by the GPU layer when a device allocation fails (the device is shared or the sizes are
// too large): the command unwinds (temporary files removed) and `main` prints its message as
// one line, exit 1. Every other CUDA failure is a bug and aborts (gpu/runtime.h).
class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fxt
