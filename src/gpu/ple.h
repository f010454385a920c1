// Piecewise-linear encoding (model/ple.h) on the GPU: the same formulas, the same float
// operations in the same order, so the CPU and GPU encodings agree bit for bit.
// C++17-clean (included by .cu files).
#pragma once

#include "gpu/runtime.h"

namespace fxt::gpu {

// out [rows, f * bins] = enc(x [rows, f]) with edges [f, bins + 1] (device pointers).
// Launch: one thread per output element, grid-stride.
void ple_encode(const Context& ctx, const float* x, const float* edges, int rows, int f, int bins,
                float* out);
// d_x [rows, f] += sum_t d_enc[r, i bins + t] d enc / dx (model::ple_backward).
// Launch: one thread per (row, feature), its bins summed in order (deterministic).
void ple_backward(const Context& ctx, const float* x, const float* edges, const float* d_enc,
                  int rows, int f, int bins, float* d_x);

}  // namespace fxt::gpu
