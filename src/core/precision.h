// The arithmetic of the GPU's matrix products (--precision). Everything else — elementwise
// stages, reductions, the recurrences' state, master weights and optimizer state — is FP32 in
// every mode; the CPU backend is FP32 only (docs/GPU.md "Precision").
//
// bf16 is a true BF16 mode: the Context converts each cuBLAS product's A and B to BF16 (round to
// nearest even) in a workspace of its own and multiplies them on the BF16 tensor cores with FP32
// accumulation and an FP32 output. (cuBLAS's FP32-operand CUBLAS_COMPUTE_32F_FAST_16BF, tried
// first, ran this model on the TF32 kernels: identical results and step times on the H200,
// 2026-12-05.) Products of at most kSmallGemmRows rows stay FP32 in every mode.
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
// read. A format of s significant bits (the implicit leading one included) keeps places down to
// 2^(1-s) of the leading bit, and the leading bit is <= |x|, so a conversion is off by at most
// one unit in the last kept place, 2^(1-s) |x|, when it may truncate, and by half of it, 2^-s |x|,
// when it rounds to nearest:
//   TF32 (s = 11): 2^-10, one unit, since cuBLAS's kernels may truncate;
//   BF16 (s = 8): 2^-8, half a unit, since the bf16 path converts with __float2bfloat16_rn
//     (round to nearest even) itself;
//   FP32 inputs are read as they are: its own 2^-24.
inline double precision_input_error(Precision p) {
  switch (p) {
    case Precision::kTf32:
      return 1.0 / 1024.0;
    case Precision::kBf16:
      return 1.0 / 256.0;
    case Precision::kFp32:
      break;
  }
  return 1.0 / 16777216.0;
}

}  // namespace fxt
