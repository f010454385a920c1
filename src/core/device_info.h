// Which accelerators this process can use. Without CUDA compiled in, or without
// a driver or GPU at run time, the list is empty and the CPU backend is used.
#pragma once

#include <cstdint>
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

}  // namespace fxt
