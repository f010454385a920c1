#include "gpu/runtime.h"
#include "sim/fill_rules_device.h"

namespace fxt::sim {
namespace {

// Launch: 1-D grid of 256-thread blocks, one thread per case.
__global__ void evaluate_kernel(const FillRuleCase* cases, FillRuleOutcome* out, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) evaluate_fill_rules(cases[i], &out[i]);
}

}  // namespace

std::vector<FillRuleOutcome> evaluate_fill_rules_on_device(const std::vector<FillRuleCase>& cases) {
  if (cases.empty()) return {};
  gpu::DeviceBuffer<FillRuleCase> in;
  in.upload(cases);
  gpu::DeviceBuffer<FillRuleOutcome> out(cases.size());
  const unsigned blocks = static_cast<unsigned>((cases.size() + 255) / 256);
  evaluate_kernel<<<blocks, 256>>>(in.data(), out.data(), cases.size());
  FXT_CUDA_LAUNCH_CHECK();
  return out.download();
}

}  // namespace fxt::sim
