// The arithmetic of the GPU's matrix products (--precision). Everything else — elementwise
// stages, reductions, the recurrences' state, master weights and optimizer state — is FP32 in
// every mode; the CPU backend is FP32 only (docs/GPU.md "Precision").
#pragma once

#include <optional>
#include <string_view>

namespace fxt {

enum class Precision {
  kFp32,  // FP32 products (cuBLAS SIMT kernels)
  kTf32,  // TF32 tensor-core products (inputs rounded to 10 mantissa bits), FP32 accumulation
  kBf16,  // BF16 tensor-core products (inputs rounded to 7 mantissa bits), FP32 accumulation
};

inline const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

// "fp32", "tf32" or "bf16"; nullopt for anything else (the caller names the flag or key).
inline std::optional<Precision> precision_from_name(std::string_view s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "tf32") return Precision::kTf32;
  if (s == "bf16") return Precision::kBf16;
  return std::nullopt;
}

// The relative error bound of converting one FP32 product input to the format the tensor cores
// read: one unit in the last kept place, so it holds for truncation as well as for rounding to
// nearest (2^-10 for TF32, 2^-7 for BF16; FP32 inputs are read as they are: its own 2^-24).
inline double precision_input_error(Precision p) {
  switch (p) {
    case Precision::kTf32:
      return 1.0 / 1024.0;
    case Precision::kBf16:
      return 1.0 / 128.0;
    case Precision::kFp32:
      break;
  }
  return 1.0 / 16777216.0;
}

}  // namespace fxt
