// The GPU learner's elementwise kernels on a batch (docs/RL.md "GPU learner", rows "forward",
// "backward" and "target"): ReLU and its backward mask between the cuBLAS layers, the dueling
// head's combination and its backward (rl/dueling_head.h), and the Polyak target update.
// CUDA-only (included by the learner's .cu files).
#pragma once

#include <cstddef>

namespace fxt::rl {

// Each a grid-stride kernel: grid grid_for(elements, 256), 256 threads.
// y[i] = max(y[i], 0) (ReLU in place; NaN becomes 0, as the CPU's).
__global__ void relu_kernel(float* y, size_t n);
// d[i] = 0 where y[i] was not positive.
__global__ void relu_mask_kernel(const float* y, float* d, size_t n);
// Dueling (rows·K elements): out [rows, A·K] advantages → logits, with value [rows, K]; and the
// gradient split d_out → d_value [rows, K], d_adv [rows, A·K].
__global__ void dueling_forward_kernel(const float* value, float* out, int rows, int A, int K);
__global__ void dueling_backward_kernel(const float* d_out, float* d_value, float* d_adv, int rows,
                                        int A, int K);
// out [rows, d] = x ⊙ sign per row (n = rows·d elements): the mirrored states.
__global__ void mirror_rows_kernel(const float* sign, const float* x, size_t n, int d, float* out);
// target ← t·online + (1 − t)·target.
__global__ void polyak_kernel(const float* online, float* target, float t, size_t n);

}  // namespace fxt::rl
