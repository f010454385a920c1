// Device-side assembly of a training batch (DESIGN §2.6, §5.1): the anchors of a step are drawn
// and their windows gathered on the GPU, so the captured training step needs no host work.
//
// Representation (set up once per training run by the caller, read-only afterwards):
// - The dataset's stores are concatenated in order into one row space: the global row of
//   snapshot t of store s is Dataset::store(s).offset + t (the offsets are cumulative sizes).
// - An anchor is the global row of its window's first position (offset + Anchor::start); the
//   window's position k is row + k * stride, always inside the anchor's store.
// - features [n_rows, f]: Dataset's rows AFTER standardise_features (the device keeps the
//   standardised matrix; nothing is recomputed, so a gathered x is a byte copy of Dataset's).
// - labels, masks [n_rows, horizons] uint8: Labels::y and Labels::mask, concatenated likewise;
//   gathered as float 0/1 exactly as Dataset::gather converts them.
// - elapsed [n_rows] float (only for `--cfc-time real`): per row, the value Dataset::
//   gather_elapsed writes for a window position at that row; fill it with elapsed_per_row()
//   per store (it depends only on the row, the stride and the time unit, as every training
//   window is regular).
// C++17-clean (included by .cu files).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/runtime.h"

namespace fxt::gpu {

// The sampler seed of a global step: identical to trainer.cc's seed_for_step (one splitmix64
// step from seed + golden * step).
__host__ __device__ inline uint64_t step_seed(uint64_t seed, int64_t step) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(step) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// fxt::Rng (core/random.h: xoshiro256** seeded by four splitmix64 outputs, rejection-sampled
// uniform) restated for host and device; the same seed gives the same stream as fxt::Rng.
class SamplerRng {
 public:
  __host__ __device__ explicit SamplerRng(uint64_t seed) {
    for (uint64_t& s : s_) {
      uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);  // splitmix64
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      s = z ^ (z >> 31);
    }
  }
  __host__ __device__ uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound), bound > 0: rejects the lowest (2^64 mod bound) values, as Rng.
  __host__ __device__ uint64_t uniform(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }

 private:
  __host__ __device__ static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// anchors[i] = pool[rng.uniform(pool_size)] for i < batch, in order, with
// SamplerRng rng(step_seed(seed, *step)): exactly
// Dataset::sample_train(Rng(seed_for_step(seed, step)), batch) with pool = the global rows of
// anchors(kTrain) (nullptr: anchors receives the pool indices). *step is read on the device when
// the kernel runs (a graph replay uses the counter's current value; the caller decides whether it
// advances before or after). pool [pool_size] and anchors [batch] are device memory;
// pool_size > 0. Launch: one block; the xoshiro256** stream is drawn by one thread, the
// rejection test and modulo by a thread per draw (batch.cu).
void sample_anchors(const Context& ctx, const uint64_t* pool, uint64_t pool_size, uint64_t seed,
                    const int64_t* step, int batch, uint64_t* anchors);
// The draws alone: picks[i] = rng.uniform(pool_size), the pool indices sample_anchors looks up
// (pool_size may exceed any real pool; the tests use bounds near 2^64, where rejections happen).
void sample_pool_indices(const Context& ctx, uint64_t pool_size, uint64_t seed, const int64_t* step,
                         int batch, uint64_t* picks);

// Shapes of a training window.
struct WindowShape {
  int window = 64;    // K positions
  int stride = 1;     // S rows between positions
  int features = 40;  // f, kFeatureDim
  int horizons = 1;   // H
};

// For each of the `batch` anchors, in order (batch index b, position k, row = anchors[b] + k S):
//   x[b, k, :] = features[row, :]                       x [batch, K, f]
//   y[b, k, :] = labels[row, :], m[b, k, :] = masks[row, :] (as float)   y, m [batch, K, H]
//   dt[b, k]   = elapsed[row]                           dt [batch, K], only when dt != nullptr
// which is Dataset::gather (and gather_elapsed) of each anchor, written at offset b K.
// Launch: a grid-stride loop over every output element (coalesced copies).
void gather_windows(const Context& ctx, const uint64_t* anchors, int batch,
                    const WindowShape& shape, const float* features, const uint8_t* labels,
                    const uint8_t* masks, const float* elapsed, float* x, float* y, float* m,
                    float* dt);

// ---- scoring windows (inference: every snapshot scored with the window that ends at it) -------
// Row of position k of the window of `window` positions at stride S ending at snapshot `end` of
// one store: window_positions (features/sequences.h) restated for host and device. Near the
// store's start fewer than K positions exist; the window is then left-padded with its first
// row: available = end / S + 1, real = min(available, K), pad = K - real,
// first = end - (real - 1) S, row(k) = first + max(k - pad, 0) S.
__host__ __device__ inline uint64_t scoring_row(uint64_t end, int k, int window, int stride) {
  const auto s = static_cast<uint64_t>(stride);
  const uint64_t available = end / s + 1;
  const int real = available < static_cast<uint64_t>(window) ? static_cast<int>(available) : window;
  const int pad = window - real;
  const uint64_t first = end - static_cast<uint64_t>(real - 1) * s;
  return k < pad ? first : first + static_cast<uint64_t>(k - pad) * s;
}

// x[b, k, :] = features[scoring_row(ends[b], k), :] for the `batch` windows (x [batch, K, f]);
// dt[b, k] = elapsed[that row] when dt != nullptr (elapsed_per_row's values: the padded rows
// of an early window all sit below S, where elapsed is 0, as window_elapsed gives). Launch: a
// grid-stride loop over the output elements (consecutive threads copy one row's features).
void gather_scoring_windows(const Context& ctx, const uint64_t* ends, int batch, int window,
                            int stride, int features, const float* feature_rows,
                            const float* elapsed, float* x, float* dt);

// Host: the per-row elapsed input of one store of n snapshots with timestamps ts_ns [n]:
// out[t] = max(ts[t] - ts[t - stride], 0) / unit_ns for t >= stride, else 0 (ts[t] - ts[t]),
// rounded to float exactly as Dataset::gather_elapsed does. out [n] is host memory (the
// store's slice of the concatenated array, uploaded by the caller).
void elapsed_per_row(const int64_t* ts_ns, uint64_t n, int stride, double unit_ns, float* out);

}  // namespace fxt::gpu
