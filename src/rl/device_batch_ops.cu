#include "rl/device_batch_ops.cuh"

#include "rl/dueling_head.h"

namespace fxt::rl {

// Grid-stride elementwise kernels (grid ceil(n / 256) capped at 1024 blocks, 256 threads).
__global__ void relu_kernel(float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (!(y[i] > 0.0f)) y[i] = 0.0f;
}
// d[i] = 0 where the layer output y[i] was not positive (ReLU's backward, as the CPU's).
__global__ void relu_mask_kernel(const float* y, float* d, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (!(y[i] > 0.0f)) d[i] = 0.0f;
}
// The dueling head on a batch (grid-stride over rows·K elements, grid_for, 256 threads): element
// (r, k) owns column k of row r. Forward: out's advantages [rows, A·K] become the logits in place,
// with value [rows, K]; backward: d_out [rows, A·K] → d_value [rows, K], d_adv [rows, A·K].
__global__ void dueling_forward_kernel(const float* value, float* out, int rows, int A, int K) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(K);
  const size_t AK = static_cast<size_t>(A) * static_cast<size_t>(K);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / static_cast<size_t>(K);
    float* o = out + r * AK;
    dueling_combine(value + r * static_cast<size_t>(K), o, A, K, static_cast<int>(e % K), o);
  }
}
__global__ void dueling_backward_kernel(const float* d_out, float* d_value, float* d_adv, int rows,
                                        int A, int K) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(K);
  const size_t AK = static_cast<size_t>(A) * static_cast<size_t>(K);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / static_cast<size_t>(K);
    dueling_combine_backward(d_out + r * AK, A, K, static_cast<int>(e % K),
                             d_value + r * static_cast<size_t>(K), d_adv + r * AK);
  }
}
// The symmetric policy's mirrored batch: out[r, k] = sign[k]·x[r, k] (DqnAgent::mirror_rows on a
// sign-flip mirror: ±x exactly).
__global__ void mirror_rows_kernel(const float* sign, const float* x, size_t n, int d, float* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = sign[i % static_cast<size_t>(d)] * x[i];
}
// target ← t·online + (1 − t)·target (DqnAgent::update_target's float arithmetic).
__global__ void polyak_kernel(const float* online, float* target, float t, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    target[i] = t * online[i] + (1 - t) * target[i];
}

}  // namespace fxt::rl
