#include "core/device_info.h"

namespace fxt {

#ifndef FXT_HAVE_CUDA
bool cuda_compiled() {
  return false;
}
std::vector<CudaDevice> list_cuda_devices() {
  return {};
}
#endif

}  // namespace fxt
