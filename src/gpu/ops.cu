// GPU variable selection, LayerNorm and attention pool (gpu/ops.h): fused per-row / per-sequence
// kernels; parameter gradients through deterministic partials + column_sum or a cuBLAS GEMM.
#include <cmath>

#include "gpu/ops.h"

namespace fxt::gpu {
namespace {

// Shared arrays of the attention pool hold nk floats each, padded to a multiple of 4: nvcc
// vectorises the loop over k (loads of up to 4 consecutive scores, e.g. 12 bytes at the tail),
// and compute-sanitizer's memcheck reports such a load past an unpadded array (K = 5).
__host__ __device__ inline int padded_scores(int nk) {
  return (nk + 3) / 4 * 4;
}

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr size_t kDefaultSmem = 48 * 1024;  // dynamic shared memory without an opt-in

// Butterfly reductions: every lane ends with the same bits (a + b == b + a in IEEE float).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Opts a kernel in to more than 48 KB of dynamic shared memory when it needs it (only for
// feature counts far above the model's F = 40; never the case at the shapes the model uses).
template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  if (bytes > kDefaultSmem)
    FXT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

// ---- variable selection -------------------------------------------------------------------------
// Launch: kVsWarps warps per block, warp w handles row blockIdx.x * kVsWarps + w; lane i handles
// features i, i + 32, ... Shared memory: W^T [f, f] (forward) or W [f, f] (backward), then per
// warp two rows of f floats.
constexpr int kVsWarps = 8;
constexpr int kVsThreads = kVsWarps * kWarp;

size_t varsel_smem(int f) {
  return sizeof(float) * (static_cast<size_t>(f) * f + f + static_cast<size_t>(kVsWarps) * 2 * f);
}

__global__ void __launch_bounds__(kVsThreads)
    varsel_forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                          const float* __restrict__ b, float* __restrict__ y,
                          float* __restrict__ gates, int rows, int f) {
  extern __shared__ float sm[];
  float* swt = sm;          // swt[j * f + i] = W[i, j]: lane i reads consecutive banks
  float* sb = swt + f * f;  // [f]
  for (int e = threadIdx.x; e < f * f; e += blockDim.x) {
    const int i = e / f, j = e % f;
    swt[j * f + i] = w[e];
  }
  for (int i = threadIdx.x; i < f; i += blockDim.x) sb[i] = b[i];
  __syncthreads();  // the only block-wide barrier: rows past the end may return below

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r = blockIdx.x * kVsWarps + warp;
  if (r >= rows) return;
  float* sx = sb + f + warp * 2 * f;  // the row's x
  float* sl = sx + f;                 // its logits, then exp(logit - max)
  const size_t base = static_cast<size_t>(r) * f;
  for (int i = lane; i < f; i += kWarp) sx[i] = x[base + i];
  __syncwarp();

  float mx = -INFINITY;
  for (int i = lane; i < f; i += kWarp) {
    float s = 0.0f;
    for (int j = 0; j < f; ++j) s += swt[j * f + i] * sx[j];
    s += sb[i];
    sl[i] = s;
    mx = fmaxf(mx, s);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int i = lane; i < f; i += kWarp) {
    const float e = expf(sl[i] - mx);
    sl[i] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
  const float scale = static_cast<float>(f);
  for (int i = lane; i < f; i += kWarp) {
    const float g = sl[i] * inv;
    gates[base + i] = g;
    y[base + i] = scale * g * sx[i];
  }
}

// dl (scratch) for every row; dx += f g dy + dl W when dx is given.
__global__ void __launch_bounds__(kVsThreads)
    varsel_backward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                           const float* __restrict__ gates, const float* __restrict__ dy,
                           float* __restrict__ dx, float* __restrict__ dl, int rows, int f) {
  extern __shared__ float sm[];
  float* sw = sm;  // W [f, f] row-major: (dl W)_i = sum_j dl_j W[j, i], lane i reads sw[j f + i]
  if (dx != nullptr) {
    for (int e = threadIdx.x; e < f * f; e += blockDim.x) sw[e] = w[e];
  }
  __syncthreads();

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r = blockIdx.x * kVsWarps + warp;
  if (r >= rows) return;
  float* sdl = sm + f * f + f + warp * 2 * f;
  const size_t base = static_cast<size_t>(r) * f;
  const float scale = static_cast<float>(f);

  // dL/dg_i = f dy_i x_i; softmax backward dl_i = g_i (dL/dg_i - sum_j g_j dL/dg_j).
  float dot = 0.0f;
  for (int i = lane; i < f; i += kWarp) dot += gates[base + i] * scale * dy[base + i] * x[base + i];
  dot = warp_sum(dot);
  for (int i = lane; i < f; i += kWarp) {
    const float v = gates[base + i] * (scale * dy[base + i] * x[base + i] - dot);
    sdl[i] = v;
    dl[base + i] = v;
  }
  if (dx == nullptr) return;
  __syncwarp();
  for (int i = lane; i < f; i += kWarp) {
    float s = 0.0f;
    for (int j = 0; j < f; ++j) s += sdl[j] * sw[j * f + i];
    dx[base + i] += scale * gates[base + i] * dy[base + i] + s;
  }
}

// ---- LayerNorm ----------------------------------------------------------------------------------
constexpr int kLnWarps = 8;
constexpr int kLnThreads = kLnWarps * kWarp;
constexpr int kLnTileRows = 32;  // rows per backward block = rows per dw/db partial

// Launch: kLnWarps rows per block, a warp per row. With a residual (add_layernorm_forward) the
// row x = res_b + res_a is formed first and written to sum (each lane reads back only what it
// wrote), then normalised.
template <bool kResidual>
__global__ void __launch_bounds__(kLnThreads)
    layernorm_forward_kernel(const float* __restrict__ x_in, const float* __restrict__ w,
                             const float* __restrict__ b, float* __restrict__ y,
                             float* __restrict__ mean, float* __restrict__ rstd, int rows, int cols,
                             const float* __restrict__ res_a, const float* __restrict__ res_b,
                             float* __restrict__ sum) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int r = blockIdx.x * kLnWarps + warp;
  if (r >= rows) return;
  const size_t base = static_cast<size_t>(r) * cols;
  if constexpr (kResidual) {
    for (int i = lane; i < cols; i += kWarp) sum[base + i] = res_b[base + i] + res_a[base + i];
  }
  const float* xr = kResidual ? sum + base : x_in + base;
  float* yr = y + base;
  const float n = static_cast<float>(cols);
  float s = 0.0f;
  for (int i = lane; i < cols; i += kWarp) s += xr[i];
  const float m = warp_sum(s) / n;
  float v = 0.0f;
  for (int i = lane; i < cols; i += kWarp) v += (xr[i] - m) * (xr[i] - m);
  v = warp_sum(v) / n;
  const float rs = 1.0f / sqrtf(v + static_cast<float>(1e-5));  // model::kNormEps
  for (int i = lane; i < cols; i += kWarp) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
  if (lane == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

// Launch: one block per tile of kLnTileRows rows. Warps compute dx row by row; then thread c
// sums dy xhat and dy of column c over the tile's rows in order into partial[tile, 0:2 cols].
__global__ void __launch_bounds__(kLnThreads)
    layernorm_backward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                              const float* __restrict__ mean, const float* __restrict__ rstd,
                              const float* __restrict__ dy, float* __restrict__ dx,
                              float* __restrict__ partial, int rows, int cols) {
  const int r0 = blockIdx.x * kLnTileRows;
  const int r1 = min(rows, r0 + kLnTileRows);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const float n = static_cast<float>(cols);
  if (dx != nullptr) {
    for (int r = r0 + warp; r < r1; r += kLnWarps) {
      const size_t base = static_cast<size_t>(r) * cols;
      const float m = mean[r], rs = rstd[r];
      float m1 = 0.0f, m2 = 0.0f;
      for (int i = lane; i < cols; i += kWarp) {
        const float xhat = (x[base + i] - m) * rs;
        const float dxhat = dy[base + i] * w[i];
        m1 += dxhat;
        m2 += dxhat * xhat;
      }
      m1 = warp_sum(m1) / n;
      m2 = warp_sum(m2) / n;
      for (int i = lane; i < cols; i += kWarp) {
        const float xhat = (x[base + i] - m) * rs;
        dx[base + i] += rs * (dy[base + i] * w[i] - m1 - xhat * m2);
      }
    }
  }
  if (partial == nullptr) return;
  float* pw = partial + static_cast<size_t>(blockIdx.x) * 2 * cols;
  float* pb = pw + cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float sw = 0.0f, sb = 0.0f;
    for (int r = r0; r < r1; ++r) {
      const size_t e = static_cast<size_t>(r) * cols + c;
      const float xhat = (x[e] - mean[r]) * rstd[r];
      sw += dy[e] * xhat;
      sb += dy[e];
    }
    pw[c] = sw;
    pb[c] = sb;
  }
}

int layernorm_tiles(int rows) {
  return (rows + kLnTileRows - 1) / kLnTileRows;
}

// ---- attention pool -----------------------------------------------------------------------------
constexpr int kApThreads = 128;  // the backward kernel
constexpr int kApWarps = kApThreads / kWarp;

// Forward launch: one block per sequence, kApFwdThreads threads (16 warps: a lone block at B = 1
// has enough loads in flight). Shared memory: nk scores (then weights) | kApFwdGroups partial
// sums [groups][d]: thread (g, i) sums positions k = g, g + 4, ... of channel i; the groups are
// then added in order.
constexpr int kApFwdThreads = 512, kApFwdWarps = kApFwdThreads / kWarp, kApFwdGroups = 4;
size_t attn_pool_forward_smem(int nk, int d) {
  return sizeof(float) *
         (static_cast<size_t>(padded_scores(nk)) + static_cast<size_t>(kApFwdGroups) * d);
}
__global__ void __launch_bounds__(kApFwdThreads)
    attn_pool_forward_kernel(const float* __restrict__ h, const float* __restrict__ q,
                             float* __restrict__ c, float* __restrict__ attn, int nk, int d,
                             float inv_sqrt_d) {
  extern __shared__ float sa[];  // [padded nk] | part [kApFwdGroups][d]
  float* part = sa + padded_scores(nk);
  const int b = blockIdx.x;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const float* hb = h + static_cast<size_t>(b) * nk * d;
  for (int k = warp; k < nk; k += kApFwdWarps) {
    float s = 0.0f;
    for (int i = lane; i < d; i += kWarp) s += q[i] * hb[static_cast<size_t>(k) * d + i];
    s = warp_sum(s);
    if (lane == 0) sa[k] = s * inv_sqrt_d;
  }
  __syncthreads();
  if (warp == 0) {  // softmax over the nk scores; lane l owns k = l, l + 32, ...
    float mx = -INFINITY;
    for (int k = lane; k < nk; k += kWarp) mx = fmaxf(mx, sa[k]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int k = lane; k < nk; k += kWarp) {
      const float e = expf(sa[k] - mx);
      sa[k] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    for (int k = lane; k < nk; k += kWarp) {
      const float a = sa[k] / sum;
      sa[k] = a;
      attn[static_cast<size_t>(b) * nk + k] = a;
    }
  }
  __syncthreads();
  constexpr int kLanes = kApFwdThreads / kApFwdGroups;
  const int g = threadIdx.x / kLanes;
  for (int i = threadIdx.x % kLanes; i < d; i += kLanes) {
    float acc = 0.0f;
    for (int k = g; k < nk; k += kApFwdGroups) acc += sa[k] * hb[static_cast<size_t>(k) * d + i];
    part[g * d + i] = acc;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < d; i += kApFwdThreads) {
    float acc = part[i];
    for (int gg = 1; gg < kApFwdGroups; ++gg) acc += part[gg * d + i];
    c[static_cast<size_t>(b) * d + i] = acc;
  }
}

// Launch: one block per sequence; shared memory: attn [nk], then da / ds [nk].
// pq (may be nullptr): this sequence's dq partial, row b of [batch, d].
__global__ void __launch_bounds__(kApThreads)
    attn_pool_backward_kernel(const float* __restrict__ h, const float* __restrict__ q,
                              const float* __restrict__ attn, const float* __restrict__ dc,
                              float* __restrict__ dh, float* __restrict__ pq, int nk, int d,
                              float inv_sqrt_d) {
  extern __shared__ float smem[];
  float* sa = smem;      // [nk] a_k
  float* sds = sa + padded_scores(nk);  // [nk] da_k, then ds_k
  const int b = blockIdx.x;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const float* hb = h + static_cast<size_t>(b) * nk * d;
  const float* dcb = dc + static_cast<size_t>(b) * d;
  for (int k = warp; k < nk; k += kApWarps) {
    float s = 0.0f;
    for (int i = lane; i < d; i += kWarp) s += dcb[i] * hb[static_cast<size_t>(k) * d + i];
    s = warp_sum(s);
    if (lane == 0) {
      sds[k] = s;
      sa[k] = attn[static_cast<size_t>(b) * nk + k];
    }
  }
  __syncthreads();
  if (warp == 0) {
    float dot = 0.0f;
    for (int k = lane; k < nk; k += kWarp) dot += sa[k] * sds[k];
    dot = warp_sum(dot);
    for (int k = lane; k < nk; k += kWarp) sds[k] = sa[k] * (sds[k] - dot) * inv_sqrt_d;
  }
  __syncthreads();
  if (dh != nullptr) {
    float* dhb = dh + static_cast<size_t>(b) * nk * d;
    const int n = nk * d;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int k = e / d, i = e - k * d;
      dhb[e] += sa[k] * dcb[i] + sds[k] * q[i];
    }
  }
  if (pq != nullptr) {
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
      float acc = 0.0f;
      for (int k = 0; k < nk; ++k) acc += sds[k] * hb[static_cast<size_t>(k) * d + i];
      pq[static_cast<size_t>(b) * d + i] = acc;
    }
  }
}

}  // namespace

// ---- variable selection -------------------------------------------------------------------------

void varsel_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                    float* gates, int rows, int f) {
  if (rows <= 0) return;
  const size_t smem = varsel_smem(f);
  allow_smem(varsel_forward_kernel, smem);
  const int grid = (rows + kVsWarps - 1) / kVsWarps;
  varsel_forward_kernel<<<grid, kVsThreads, smem, ctx.stream()>>>(x, w, b, y, gates, rows, f);
  FXT_CUDA_LAUNCH_CHECK();
}

size_t varsel_backward_scratch(int rows, int f) {
  return static_cast<size_t>(rows) * static_cast<size_t>(f);
}

void varsel_backward(const Context& ctx, const float* x, const float* w, const float* gates,
                     const float* dy, float* dx, float* dw, float* db, int rows, int f,
                     float* scratch) {
  if (rows <= 0 || (dx == nullptr && dw == nullptr && db == nullptr)) return;
  float* dl = scratch;  // [rows, f]
  const size_t smem = varsel_smem(f);
  allow_smem(varsel_backward_kernel, smem);
  const int grid = (rows + kVsWarps - 1) / kVsWarps;
  varsel_backward_kernel<<<grid, kVsThreads, smem, ctx.stream()>>>(x, w, gates, dy, dx, dl, rows,
                                                                   f);
  FXT_CUDA_LAUNCH_CHECK();
  // Through the logits l = W x + b: dw += dl^T x (split over rows, deterministic), db += sum_r dl.
  if (dw != nullptr) gemm_tn_rows(ctx, f, f, rows, dl, f, 0, x, f, 0, 1.0f, dw, f, 0);
  if (db != nullptr) column_sum(ctx, dl, rows, f, f, db, /*accumulate=*/true);
}

// ---- LayerNorm ----------------------------------------------------------------------------------

void layernorm_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                       float* mean, float* rstd, int rows, int cols) {
  if (rows <= 0) return;
  const int grid = (rows + kLnWarps - 1) / kLnWarps;
  layernorm_forward_kernel<false><<<grid, kLnThreads, 0, ctx.stream()>>>(
      x, w, b, y, mean, rstd, rows, cols, nullptr, nullptr, nullptr);
  FXT_CUDA_LAUNCH_CHECK();
}

void add_layernorm_forward(const Context& ctx, const float* a, const float* x, float* sum,
                           const float* w, const float* b, float* y, float* mean, float* rstd,
                           int rows, int cols) {
  if (rows <= 0) return;
  const int grid = (rows + kLnWarps - 1) / kLnWarps;
  layernorm_forward_kernel<true>
      <<<grid, kLnThreads, 0, ctx.stream()>>>(nullptr, w, b, y, mean, rstd, rows, cols, a, x, sum);
  FXT_CUDA_LAUNCH_CHECK();
}

size_t layernorm_backward_scratch(int rows, int cols) {
  return static_cast<size_t>(layernorm_tiles(rows)) * 2 * static_cast<size_t>(cols);
}

void layernorm_backward(const Context& ctx, const float* x, const float* w, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dw, float* db,
                        int rows, int cols, float* scratch) {
  const bool params = dw != nullptr || db != nullptr;
  if (rows <= 0 || (dx == nullptr && !params)) return;
  const int tiles = layernorm_tiles(rows);
  float* partial = params ? scratch : nullptr;  // [tiles, 2 cols]: dw | db per tile
  layernorm_backward_kernel<<<tiles, kLnThreads, 0, ctx.stream()>>>(x, w, mean, rstd, dy, dx,
                                                                    partial, rows, cols);
  FXT_CUDA_LAUNCH_CHECK();
  if (dw != nullptr) column_sum(ctx, partial, tiles, cols, 2 * cols, dw, /*accumulate=*/true);
  if (db != nullptr)
    column_sum(ctx, partial + cols, tiles, cols, 2 * cols, db, /*accumulate=*/true);
}

// ---- attention pool -----------------------------------------------------------------------------

namespace {
// 1/sqrt(d) rounded as the CPU op rounds it (float sqrt and division are IEEE on both sides).
float inv_sqrt(int d) {
  return 1.0f / std::sqrt(static_cast<float>(d));
}
}  // namespace

void attn_pool_forward(const Context& ctx, const float* h, const float* q, float* c, float* attn,
                       int batch, int k, int d) {
  if (batch <= 0) return;
  const size_t smem = attn_pool_forward_smem(k, d);
  allow_smem(attn_pool_forward_kernel, smem);
  attn_pool_forward_kernel<<<batch, kApFwdThreads, smem, ctx.stream()>>>(h, q, c, attn, k, d,
                                                                         inv_sqrt(d));
  FXT_CUDA_LAUNCH_CHECK();
}

size_t attn_pool_backward_scratch(int batch, int d) {
  return static_cast<size_t>(batch) * static_cast<size_t>(d);
}

void attn_pool_backward(const Context& ctx, const float* h, const float* q, const float* attn,
                        const float* dc, float* dh, float* dq, int batch, int k, int d,
                        float* scratch) {
  if (batch <= 0 || (dh == nullptr && dq == nullptr)) return;
  float* pq = dq != nullptr ? scratch : nullptr;  // [batch, d] per-sequence dq partials
  const size_t smem = sizeof(float) * 2 * static_cast<size_t>(padded_scores(k));
  allow_smem(attn_pool_backward_kernel, smem);
  attn_pool_backward_kernel<<<batch, kApThreads, smem, ctx.stream()>>>(h, q, attn, dc, dh, pq, k, d,
                                                                       inv_sqrt(d));
  FXT_CUDA_LAUNCH_CHECK();
  if (dq != nullptr) column_sum(ctx, pq, batch, d, d, dq, /*accumulate=*/true);
}

}  // namespace fxt::gpu
