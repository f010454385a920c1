// The arithmetic of the GPU's matrix products (--precision). Everything else — elementwise
// stages, reductions, the recurrences' state, master weights and optimizer state — is FP32 in
// every mode; the CPU backend is FP32 only (docs/GPU.md "Precision").
//
// There is no bf16 mode: cuBLAS 13's FP32-operand BF16 compute type (CUBLAS_COMPUTE_32F_FAST_16BF)
// ran this model on the same TF32 kernels as CUBLAS_COMPUTE_32F_FAST_TF32 on the H200 (identical
// results and step times, 2026-12-05), so a flag built on it would be TF32 under another name. A
// true BF16 path needs BF16 operands in memory (docs/GPU.md).
#pragma once

#include <optional>
#include <string_view>

namespace fxt {

enum class Precision {
  kFp32,  // FP32 products (cuBLAS SIMT kernels)
  kTf32,  // TF32 tensor-core products (inputs rounded to 10 mantissa bits), FP32 accumulation
};

inline const char* precision_name(Precision p) {
  return p == Precision::kTf32 ? "tf32" : "fp32";
}

// "fp32" or "tf32"; nullopt for anything else (the caller names the flag or key).
inline std::optional<Precision> precision_from_name(std::string_view s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "tf32") return Precision::kTf32;
  return std::nullopt;
}

// The relative error bound of converting one FP32 product input to the format the tensor cores
// read: one unit in the last kept place, so it holds for truncation as well as for rounding to
// nearest (2^-10 for TF32; FP32 inputs are read as they are: its own 2^-24).
inline double precision_input_error(Precision p) {
  return p == Precision::kTf32 ? 1.0 / 1024.0 : 1.0 / 16777216.0;
}

}  // namespace fxt
