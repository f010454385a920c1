// The dueling head's combination (Wang et al. 2016), forward next to backward, FXT_HD: the one
// copy QNetwork (rl/q_network.cc) and the GPU learner's kernels (rl/device_learner.cu) call. One
// row holds a value stream v [K] and an advantage stream adv [A, K]; per output element k,
// out[a·K + k] = v[k] + adv[a·K + k] − mean_a' adv[a'·K + k], the mean summed in action order and
// then divided by A. C++17-clean (included by .cu files).
#pragma once

#include "core/host_device.h"

namespace fxt::rl {

// Column k of one row: out[a·K + k] for every action a. out may alias adv (the column is read
// whole before it is written).
template <typename T>
FXT_HD inline void dueling_combine(const T* value, const T* adv, int A, int K, int k, T* out) {
  T mean = T(0);
  for (int a = 0; a < A; ++a) mean += adv[a * K + k];
  mean /= static_cast<T>(A);
  for (int a = 0; a < A; ++a) out[a * K + k] = value[k] + adv[a * K + k] - mean;
}

// Its backward for column k: d_value[k] = Σ_a d_out[a·K + k], d_adv[a·K + k] = d_out[a·K + k] −
// d_value[k]/A (written, not accumulated). d_adv may alias d_out.
template <typename T>
FXT_HD inline void dueling_combine_backward(const T* d_out, int A, int K, int k, T* d_value,
                                            T* d_adv) {
  T sum = T(0);
  for (int a = 0; a < A; ++a) sum += d_out[a * K + k];
  d_value[k] = sum;
  for (int a = 0; a < A; ++a) d_adv[a * K + k] = d_out[a * K + k] - sum / static_cast<T>(A);
}

}  // namespace fxt::rl
