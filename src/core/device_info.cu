// CUDA device discovery (compiled only when the CUDA backend is on).
#include <cuda_runtime.h>

#include "core/device_info.h"

namespace fxt {

bool cuda_compiled() {
  return true;
}

std::vector<CudaDevice> list_cuda_devices() {
  std::vector<CudaDevice> out;
  int count = 0;
  // No driver or no GPU: report none rather than fail; the CPU backend is used.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    CudaDevice d;
    d.index = i;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.memory_bytes = p.totalGlobalMem;
    d.multiprocessors = p.multiProcessorCount;
    int clock = 0;
    cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, i);
    d.clock_khz = clock;
    out.push_back(d);
  }
  return out;
}

}  // namespace fxt
