// The backend choice of train(), evaluate() and predict() (declared in trainer.h).
#include "train/trainer.h"

#include <string>
#include <vector>

#include "core/device_info.h"

namespace fxt {

Result<bool> resolve_cuda(const std::string& device, ModelKind model) {
  if (device != "auto" && device != "cpu" && device != "cuda") {
    return UsageError("--device must be auto, cpu or cuda (got '{}')", device);
  }
  if (device == "cpu") return false;
  const bool have_gpu = cuda_compiled() && !list_cuda_devices().empty();
  if (device == "auto") return have_gpu && model == ModelKind::kPerception;
  if (!cuda_compiled()) return UsageError("--device cuda: this build has no CUDA backend");
  if (!have_gpu) return UsageError("--device cuda: no CUDA device is available");
  if (model != ModelKind::kPerception) {
    return UsageError("--device cuda: --model logreg runs on the CPU only");
  }
  return true;
}

Status check_precision(Precision precision, bool use_cuda) {
  if (use_cuda || precision == Precision::kFp32) return Status::Ok();
  return UsageError(
      "--precision {}: the CPU backend computes in FP32 only (it needs --device cuda)",
      precision_name(precision));
}

std::string backend_name(bool cuda) {
  if (!cuda) return "cpu";
  const std::vector<CudaDevice> d = list_cuda_devices();
  return d.empty() ? "cuda" : d.front().name;
}

}  // namespace fxt
