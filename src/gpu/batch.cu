// Device-side training-batch assembly (gpu/batch.h): the CPU sampler's xoshiro256** stream
// reproduced bit for bit, and the window gather of Dataset::gather / gather_elapsed.
#include <algorithm>
#include <limits>

#include "gpu/batch.h"

namespace fxt::gpu {
namespace {

constexpr int kSampleThreads = 128;

// Launch: one block. Thread 0 runs the xoshiro256** stream (sequential, cheap: shifts, xors and
// a multiply per draw) into shared memory; the rejection test and the 64-bit modulo of
// SamplerRng::uniform (the costly part) then run a thread per draw. A draw below the
// rejection threshold (probability < pool_size / 2^64 per draw) means the later draws shift:
// thread 0 then redoes the batch with SamplerRng::uniform itself, so the picks always equal
// Rng's. Finally the block loads the pool entries in parallel (or writes the indices when
// pool is nullptr: sample_pool_indices).
__global__ void __launch_bounds__(kSampleThreads)
    sample_anchors_kernel(const uint64_t* __restrict__ pool, uint64_t pool_size, uint64_t seed,
                          const int64_t* __restrict__ step, int batch,
                          uint64_t* __restrict__ anchors) {
  extern __shared__ uint64_t pick[];  // [batch]: raw draws, then pool indices
  if (threadIdx.x == 0) {
    SamplerRng rng(step_seed(seed, *step));
    for (int i = 0; i < batch; ++i) pick[i] = rng.next();
  }
  __syncthreads();
  const uint64_t threshold = (0 - pool_size) % pool_size;  // SamplerRng::uniform's
  int rejected = 0;
  for (int i = threadIdx.x; i < batch; i += blockDim.x) rejected |= pick[i] < threshold;
  if (__syncthreads_or(rejected)) {
    if (threadIdx.x == 0) {
      SamplerRng rng(step_seed(seed, *step));
      for (int i = 0; i < batch; ++i) pick[i] = rng.uniform(pool_size);
    }
  } else {
    for (int i = threadIdx.x; i < batch; i += blockDim.x) pick[i] %= pool_size;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < batch; i += blockDim.x) anchors[i] = pool ? pool[pick[i]] : pick[i];
}

// ---- gather -------------------------------------------------------------------------------------
constexpr int kGatherThreads = 256;

// Launch: grid-stride loop over n_x + n_y + n_dt output elements (x first, then y and m, then
// dt); consecutive threads copy consecutive elements of one row.
__global__ void __launch_bounds__(kGatherThreads)
    gather_windows_kernel(const uint64_t* __restrict__ anchors, int window, int stride, int f,
                          int nh, const float* __restrict__ features,
                          const uint8_t* __restrict__ labels, const uint8_t* __restrict__ masks,
                          const float* __restrict__ elapsed, float* __restrict__ x,
                          float* __restrict__ y, float* __restrict__ m, float* __restrict__ dt,
                          unsigned n_x, unsigned n_y, unsigned n_dt) {
  const unsigned total = n_x + n_y + n_dt;
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += gridDim.x * blockDim.x) {
    if (idx < n_x) {
      const unsigned p = idx / f, j = idx - p * f;  // position (b K + k), feature
      const unsigned b = p / window, k = p - b * window;
      const uint64_t row = anchors[b] + static_cast<uint64_t>(k) * stride;
      x[idx] = features[row * f + j];
    } else if (idx < n_x + n_y) {
      const unsigned e = idx - n_x;
      const unsigned p = e / nh, j = e - p * nh;
      const unsigned b = p / window, k = p - b * window;
      const uint64_t row = anchors[b] + static_cast<uint64_t>(k) * stride;
      y[e] = static_cast<float>(labels[row * nh + j]);
      m[e] = static_cast<float>(masks[row * nh + j]);
    } else {
      const unsigned e = idx - n_x - n_y;
      const unsigned b = e / window, k = e - b * window;
      dt[e] = elapsed[anchors[b] + static_cast<uint64_t>(k) * stride];
    }
  }
}

// Launch: grid-stride loop over n_x + n_dt output elements (x first, then dt).
__global__ void __launch_bounds__(kGatherThreads)
    gather_scoring_kernel(const uint64_t* __restrict__ ends, int window, int stride, int f,
                          const float* __restrict__ features, const float* __restrict__ elapsed,
                          float* __restrict__ x, float* __restrict__ dt, unsigned n_x,
                          unsigned n_dt) {
  const unsigned total = n_x + n_dt;
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += gridDim.x * blockDim.x) {
    if (idx < n_x) {
      const unsigned p = idx / f, j = idx - p * f;  // position (b K + k), feature
      const unsigned b = p / window, k = p - b * window;
      x[idx] = features[scoring_row(ends[b], static_cast<int>(k), window, stride) * f + j];
    } else {
      const unsigned e = idx - n_x;
      const unsigned b = e / window, k = e - b * window;
      dt[e] = elapsed[scoring_row(ends[b], static_cast<int>(k), window, stride)];
    }
  }
}

[[noreturn]] void usage_fail(const char* what) {
  cuda_fail(what, "invalid argument", __FILE__, __LINE__);
}

}  // namespace

void sample_anchors(const Context& ctx, const uint64_t* pool, uint64_t pool_size, uint64_t seed,
                    const int64_t* step, int batch, uint64_t* anchors) {
  if (batch <= 0) return;
  if (pool_size == 0) usage_fail("sample_anchors: empty anchor pool");
  const size_t smem = sizeof(uint64_t) * static_cast<size_t>(batch);
  if (smem > 48 * 1024)
    FXT_CUDA_CHECK(cudaFuncSetAttribute(sample_anchors_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
  sample_anchors_kernel<<<1, kSampleThreads, smem, ctx.stream()>>>(pool, pool_size, seed, step,
                                                                   batch, anchors);
  FXT_CUDA_LAUNCH_CHECK();
}

void sample_pool_indices(const Context& ctx, uint64_t pool_size, uint64_t seed, const int64_t* step,
                         int batch, uint64_t* picks) {
  sample_anchors(ctx, nullptr, pool_size, seed, step, batch, picks);
}

void gather_windows(const Context& ctx, const uint64_t* anchors, int batch,
                    const WindowShape& shape, const float* features, const uint8_t* labels,
                    const uint8_t* masks, const float* elapsed, float* x, float* y, float* m,
                    float* dt) {
  if (batch <= 0 || shape.window <= 0) return;
  const uint64_t positions = static_cast<uint64_t>(batch) * static_cast<uint64_t>(shape.window);
  const uint64_t n_x = positions * static_cast<uint64_t>(shape.features);
  const uint64_t n_y = positions * static_cast<uint64_t>(shape.horizons);
  const uint64_t n_dt = dt != nullptr ? positions : 0;
  if (n_x + n_y + n_dt > std::numeric_limits<unsigned>::max() / 2)
    usage_fail("gather_windows: batch too large for 32-bit element indexing");
  const uint64_t total = n_x + n_y + n_dt;
  const auto grid =
      static_cast<int>(std::min<uint64_t>((total + kGatherThreads - 1) / kGatherThreads, 4096));
  gather_windows_kernel<<<grid, kGatherThreads, 0, ctx.stream()>>>(
      anchors, shape.window, shape.stride, shape.features, shape.horizons, features, labels, masks,
      elapsed, x, y, m, dt, static_cast<unsigned>(n_x), static_cast<unsigned>(n_y),
      static_cast<unsigned>(n_dt));
  FXT_CUDA_LAUNCH_CHECK();
}

void gather_scoring_windows(const Context& ctx, const uint64_t* ends, int batch, int window,
                            int stride, int features, const float* feature_rows,
                            const float* elapsed, float* x, float* dt) {
  if (batch <= 0 || window <= 0) return;
  if (stride < 1) usage_fail("gather_scoring_windows: stride must be >= 1");
  const uint64_t positions = static_cast<uint64_t>(batch) * static_cast<uint64_t>(window);
  const uint64_t n_x = positions * static_cast<uint64_t>(features);
  const uint64_t n_dt = dt != nullptr ? positions : 0;
  if (n_x + n_dt > std::numeric_limits<unsigned>::max() / 2)
    usage_fail("gather_scoring_windows: batch too large for 32-bit element indexing");
  const uint64_t total = n_x + n_dt;
  const auto grid =
      static_cast<int>(std::min<uint64_t>((total + kGatherThreads - 1) / kGatherThreads, 4096));
  gather_scoring_kernel<<<grid, kGatherThreads, 0, ctx.stream()>>>(
      ends, window, stride, features, feature_rows, elapsed, x, dt, static_cast<unsigned>(n_x),
      static_cast<unsigned>(n_dt));
  FXT_CUDA_LAUNCH_CHECK();
}

void elapsed_per_row(const int64_t* ts_ns, uint64_t n, int stride, double unit_ns, float* out) {
  const auto s = static_cast<uint64_t>(stride);
  for (uint64_t t = 0; t < n; ++t) {
    const uint64_t prev = t >= s ? t - s : t;
    const int64_t gap = ts_ns[t] - ts_ns[prev];
    out[t] = static_cast<float>(static_cast<double>(std::max<int64_t>(gap, 0)) / unit_ns);
  }
}

}  // namespace fxt::gpu
