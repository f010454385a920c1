#include "model/ple.h"

#include <algorithm>
#include <cmath>

namespace fxt::model {

template <typename T>
void ple_encode(const T* x, const T* edges, int64_t rows, int f, int bins, T* out) {
  const int64_t width = static_cast<int64_t>(f) * bins;
  for (int64_t r = 0; r < rows; ++r) {
    for (int i = 0; i < f; ++i) {
      const T v = x[r * f + i];
      const T* e = edges + static_cast<int64_t>(i) * (bins + 1);
      T* o = out + r * width + static_cast<int64_t>(i) * bins;
      for (int t = 0; t < bins; ++t) {
        const T lo = e[t], hi = e[t + 1];
        o[t] = hi > lo ? std::min(std::max((v - lo) / (hi - lo), T(0)), T(1)) : T(0);
      }
    }
  }
}

template <typename T>
void ple_backward(const T* x, const T* edges, const T* d_enc, int64_t rows, int f, int bins,
                  T* d_x) {
  const int64_t width = static_cast<int64_t>(f) * bins;
  for (int64_t r = 0; r < rows; ++r) {
    for (int i = 0; i < f; ++i) {
      const T v = x[r * f + i];
      const T* e = edges + static_cast<int64_t>(i) * (bins + 1);
      const T* d = d_enc + r * width + static_cast<int64_t>(i) * bins;
      T acc = T(0);
      for (int t = 0; t < bins; ++t) {
        const T lo = e[t], hi = e[t + 1];
        if (hi > lo && v > lo && v < hi) acc += d[t] / (hi - lo);
      }
      d_x[r * f + i] += acc;
    }
  }
}

template <typename T>
void ple_default_edges(int f, int bins, T* edges) {
  for (int i = 0; i < f; ++i) {
    for (int t = 0; t <= bins; ++t) {
      edges[static_cast<int64_t>(i) * (bins + 1) + t] = T(-3) + T(6) * T(t) / T(bins);
    }
  }
}

void ple_edges_from_sample(std::vector<float>& values, int bins, float* edges) {
  std::fill(edges, edges + bins + 1, 0.0f);
  if (values.empty()) return;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  int kept = 0;
  for (int t = 0; t <= bins; ++t) {
    const auto at = static_cast<size_t>(std::llround(t * (n - 1.0) / bins));
    const float v = values[at];
    if (kept == 0 || v > edges[kept - 1]) edges[kept++] = v;
  }
  for (int t = kept; t <= bins; ++t) edges[t] = edges[kept - 1];
}

#define FXT_INSTANTIATE_PLE(T)                                                        \
  template void ple_encode<T>(const T*, const T*, int64_t, int, int, T*);             \
  template void ple_backward<T>(const T*, const T*, const T*, int64_t, int, int, T*); \
  template void ple_default_edges<T>(int, int, T*);

FXT_INSTANTIATE_PLE(float)
FXT_INSTANTIATE_PLE(double)
#undef FXT_INSTANTIATE_PLE

}  // namespace fxt::model
