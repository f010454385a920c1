// Piecewise-linear encoding on the GPU (gpu/ple.h): the formulas of model/ple.cc.
#include "gpu/ple.h"

namespace fxt::gpu {
namespace {

// One thread per output element (r, i, t), grid-stride.
__global__ void ple_encode_kernel(const float* __restrict__ x, const float* __restrict__ edges,
                                  int rows, int f, int bins, float* __restrict__ out) {
  const size_t n = static_cast<size_t>(rows) * f * bins;
  for (size_t o = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(o % bins);
    const size_t ri = o / bins;  // r * f + i
    const int i = static_cast<int>(ri % f);
    const float v = x[ri];
    const float lo = edges[i * (bins + 1) + t], hi = edges[i * (bins + 1) + t + 1];
    out[o] = hi > lo ? fminf(fmaxf((v - lo) / (hi - lo), 0.0f), 1.0f) : 0.0f;
  }
}

// One thread per (r, i): its bins' contributions summed in order t = 0..bins-1.
__global__ void ple_backward_kernel(const float* __restrict__ x, const float* __restrict__ edges,
                                    const float* __restrict__ d_enc, int rows, int f, int bins,
                                    float* __restrict__ d_x) {
  const size_t n = static_cast<size_t>(rows) * f;
  for (size_t ri = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; ri < n;
       ri += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(ri % f);
    const float v = x[ri];
    const float* e = edges + i * (bins + 1);
    const float* d = d_enc + ri * bins;
    float acc = 0.0f;
    for (int t = 0; t < bins; ++t) {
      const float lo = e[t], hi = e[t + 1];
      if (hi > lo && v > lo && v < hi) acc += d[t] / (hi - lo);
    }
    d_x[ri] += acc;
  }
}

}  // namespace

void ple_encode(const Context& ctx, const float* x, const float* edges, int rows, int f, int bins,
                float* out) {
  const size_t n = static_cast<size_t>(rows) * f * bins;
  if (n == 0) return;
  ple_encode_kernel<<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(x, edges, rows, f, bins,
                                                                          out);
  FXT_CUDA_LAUNCH_CHECK();
}

void ple_backward(const Context& ctx, const float* x, const float* edges, const float* d_enc,
                  int rows, int f, int bins, float* d_x) {
  const size_t n = static_cast<size_t>(rows) * f;
  if (n == 0) return;
  ple_backward_kernel<<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(x, edges, d_enc, rows,
                                                                            f, bins, d_x);
  FXT_CUDA_LAUNCH_CHECK();
}

}  // namespace fxt::gpu
