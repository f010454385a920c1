// CfC recurrence (fused K-loop) and the gated residual heads on the GPU; see cfc_heads.h and
// docs/GPU.md ("CfC and heads on the GPU").
#include "gpu/cfc_heads.h"

namespace fxt::gpu {

namespace {

constexpr double kTauMin = 0.1;  // model::kCfcTauMin

// ---- scalar helpers (the CPU reference's float formulas) ---------------------------------------

__device__ __forceinline__ float softplus_f(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}
__device__ __forceinline__ float sigmoid_f(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}
__device__ __forceinline__ float gelu_f(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
}
__device__ __forceinline__ float gelu_grad_f(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752440f));
  const float pdf = 0.39894228040143267794f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
constexpr size_t kAlignFloats = 64;  // 256 bytes between carved arrays

// ================================================================================================
// CfC recurrence kernels
// ================================================================================================
//
// Fast path (D <= 128): one block per sequence, 2S threads with S = 32, 64 or 128 >= D
// (channels past D idle, their weights zero). The matrix-vector product of a step is
// register-blocked: thread t = 8g + l holds a 4 x S/8 block of W_rec (rows 4g..4g+3 forward, or
// columns 4g..4g+3 backward, against column slice l of the vector) in registers (S/2 floats;
// W_rec never leaves the register file during the K steps), reads only slice l of the vector
// from shared memory (S/32 float4 loads), and the 8 lanes of the group reduce their partial sums
// so that lanes 2r and 2r + 1 both end with channel 4g + r's sum (identical bits); both run the
// channel's cell update, the even lane stores. Why this shape: a step runs D^2 FMAs and moves
// the state vector to the threads that need it; spreading them over 8 warps (64 FMAs and 4
// loads per thread at D = 128) cut the instructions per warp ~2.5x against a thread per
// channel walking all 128 entries, and the B = 256 loops by a third. At B = 1 the step still
// takes ~930 cycles, as in every layout tried: its dependent chain, not issue, bounds it
// (docs/GPU.md, "Latency floor of the K loop").
// The vector is double-buffered in shared memory, one __syncthreads per step; slices sit at
// stride S/8 + 4 floats, so the 8 distinct float4 addresses of a quarter-warp fall on distinct
// banks (S >= 64). The per-position inputs (W_in h + b forward; d_s, tanh, s_prev backward) are
// staged into shared memory CH steps at a time: each chunk is loaded into registers one chunk
// ahead and stored to shared memory at the chunk boundary, so no step waits on global memory.
template <int S>
__host__ __device__ constexpr int slice_stride() {
  return S / 8 + 4;
}
template <int S>
__device__ __forceinline__ int slice_index(int j) {  // entry j of a sliced vector
  return (j / (S / 8)) * slice_stride<S>() + j % (S / 8);
}
// The channel of thread t = 8g + l: 4g + (l >> 1) (lanes 2r and 2r + 1 share channel 4g + r).
__device__ __forceinline__ int group_channel(int t) {
  return 4 * (t >> 3) + ((t >> 1) & 3);
}

// Row 4g + ((l >> 1) & 3) of W v for thread t = 8g + l: w[r * S/8 + jj] = W[4g + r][l S/8 + jj]
// (rows of the thread's group against its column slice); v a sliced shared vector, 16-byte
// aligned. Two FMA chains per row; the group's reduction adds lanes in a fixed order, and the
// last level is a butterfly (a + b == b + a), so both lanes of a channel hold the same bits.
template <int S>
__device__ __forceinline__ float matvec_rows4(const float (&w)[S / 2], const float* v, int l) {
  constexpr int kCols = S / 8;
  const float4* v4 = reinterpret_cast<const float4*>(v + l * slice_stride<S>());
  float a[4][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
  for (int u = 0; u < kCols / 4; ++u) {
    const float4 x = v4[u];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      float& acc = a[r][u & 1];
      acc = fmaf(w[r * kCols + 4 * u + 0], x.x, acc);
      acc = fmaf(w[r * kCols + 4 * u + 1], x.y, acc);
      acc = fmaf(w[r * kCols + 4 * u + 2], x.z, acc);
      acc = fmaf(w[r * kCols + 4 * u + 3], x.w, acc);
    }
  }
  float p[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) p[r] = a[r][0] + a[r][1];
  // Lane bit 2 keeps rows {2 b2, 2 b2 + 1}, bit 1 keeps row 2 b2 + b1, bit 0 adds the pair.
  const bool b2 = (l & 4) != 0, b1 = (l & 2) != 0;
  const float k0 = (b2 ? p[2] : p[0]) + __shfl_xor_sync(0xffffffffu, b2 ? p[0] : p[2], 4);
  const float k1 = (b2 ? p[3] : p[1]) + __shfl_xor_sync(0xffffffffu, b2 ? p[1] : p[3], 4);
  const float v1 = (b1 ? k1 : k0) + __shfl_xor_sync(0xffffffffu, b1 ? k0 : k1, 2);
  return v1 + __shfl_xor_sync(0xffffffffu, v1, 1);
}

// Stages NA per-position arrays [K, D] of one sequence (plus dt [K]) CH steps per chunk through
// registers into a double-buffered shared-memory ring. Chunk ch lives in buffer ch & 1. The
// block has 2S threads: thread t loads column t % S (< D) of rows kk = t / S, t / S + 2, ... of
// every array: no index division, each load a coalesced row across the warp.
template <int NA, int CH, int S>
struct Stager {
  static constexpr int kPer = CH / 2;
  float r[NA][kPer];
  float dtr;

  // Registers <- chunk ch of every array (zeros outside [0, K)). src[a] points at [K, D] of this
  // sequence, dt_seq at [K] or nullptr.
  __device__ __forceinline__ void load(const float* const (&src)[NA], const float* dt_seq, int ch,
                                       int K, int D) {
    const int k0 = ch * CH, i = threadIdx.x % S, half = threadIdx.x / S;
    const bool mine = ch >= 0 && i < D;
#pragma unroll
    for (int m = 0; m < kPer; ++m) {
      const int kk = half + 2 * m;
      const bool ok = mine && k0 + kk < K;
      const size_t at = static_cast<size_t>(k0 + kk) * D + i;
#pragma unroll
      for (int a = 0; a < NA; ++a) r[a][m] = ok ? src[a][at] : 0.0f;
    }
    const int t = threadIdx.x;
    dtr = (dt_seq != nullptr && ch >= 0 && t < CH && k0 + t < K) ? dt_seq[k0 + t] : 0.0f;
  }
  // Shared buffer buf <- registers. xs: [2][NA][CH][S] (row kk of array a at ((buf NA + a) CH +
  // kk) S), dts: [2][CH].
  __device__ __forceinline__ void store(float* xs, float* dts, int buf, int D) {
    const int i = threadIdx.x % S, half = threadIdx.x / S;
    if (i < D) {
#pragma unroll
      for (int m = 0; m < kPer; ++m) {
#pragma unroll
        for (int a = 0; a < NA; ++a) xs[((buf * NA + a) * CH + half + 2 * m) * S + i] = r[a][m];
      }
    }
    if (threadIdx.x < CH) dts[buf * CH + threadIdx.x] = dtr;
  }
};

constexpr int kFwdChunk = 16;
constexpr int kBwdChunk = 8;

// Forward: grid B, block 2S. Reads xin = W_in h + b; writes act, s_prev, out.
template <int S>
__global__ void __launch_bounds__(2 * S, 2)
    cfc_forward_kernel(const float* __restrict__ w_rec, const float* __restrict__ tau_raw,
                       const float* __restrict__ xin, const float* __restrict__ c0,
                       const float* __restrict__ dt, float dt_const, int K, int D,
                       float* __restrict__ act, float* __restrict__ s_prev,
                       float* __restrict__ out) {
  __shared__ __align__(16) float sbuf[2][8 * slice_stride<S>()];
  __shared__ float xs[2 * kFwdChunk * S];
  __shared__ float dts[2 * kFwdChunk];

  const int b = blockIdx.x, t = threadIdx.x, l = t & 7, grp = t >> 3, i = group_channel(t);
  const bool active = i < D, writer = active && (l & 1) == 0;
  const size_t seq_base = static_cast<size_t>(b) * K * D;
  const float* dt_seq = dt != nullptr ? dt + static_cast<size_t>(b) * K : nullptr;

  // Rows 4 grp .. 4 grp + 3 of W_rec, columns of slice l; zero outside D.
  float w[S / 2];
#pragma unroll
  for (int e = 0; e < S / 2; ++e) {
    const int row = 4 * grp + e / (S / 8), col = l * (S / 8) + e % (S / 8);
    w[e] = (row < D && col < D) ? w_rec[static_cast<size_t>(row) * D + col] : 0.0f;
  }
  float tau = 1.0f, decay_c = 0.0f, s = 0.0f;
  if (active) {
    tau = softplus_f(tau_raw[i]) + static_cast<float>(kTauMin);
    decay_c = expf(-dt_const / tau);
    s = c0[static_cast<size_t>(b) * D + i];
  }

  // Both state buffers start at zero (entries >= D stay zero: W is zero there too, but an
  // uninitialised NaN times zero would not be), then buffer 0 <- c.
  for (int x = t; x < 2 * 8 * slice_stride<S>(); x += blockDim.x) (&sbuf[0][0])[x] = 0.0f;
  __syncthreads();
  if (writer) sbuf[0][slice_index<S>(i)] = s;

  Stager<1, kFwdChunk, S> st;
  const float* src[1] = {xin + seq_base};
  st.load(src, dt_seq, 0, K, D);
  st.store(xs, dts, 0, D);
  st.load(src, dt_seq, 1, K, D);
  __syncthreads();

  size_t r = seq_base + i;  // row k of this channel in [B, K, D], advanced by D per step
  for (int k = 0; k < K; ++k, r += D) {
    const int ch = k / kFwdChunk, kk = k - ch * kFwdChunk, buf = ch & 1;
    const float x_k = active ? xs[(buf * kFwdChunk + kk) * S + i] : 0.0f;
    const float dt_k = dts[buf * kFwdChunk + kk];
    const float pre = x_k + matvec_rows4<S>(w, sbuf[k & 1], l);  // + (W_rec s_{k-1})_i
    const float a = tanhf(pre);
    const float e = dt != nullptr ? expf(-dt_k / tau) : decay_c;
    const float s_new = e * s + (1.0f - e) * a;
    if (writer) {
      out[r] = s_new;
      act[r] = a;
      s_prev[r] = s;
      sbuf[(k + 1) & 1][slice_index<S>(i)] = s_new;
    }
    s = s_new;
    if (kk == kFwdChunk - 1) {  // chunk boundary: registers -> the other buffer, fetch the next
      st.store(xs, dts, buf ^ 1, D);
      st.load(src, dt_seq, ch + 2, K, D);
    }
    __syncthreads();
  }
}

// Backward: grid B, block 2S; thread t updates channel c = group_channel(t) (its group holds a
// block of W_rec's columns: matvec_rows4 against W_rec^T). Per step k (descending), with
// carry = dL/ds_k from step k+1:  g = d_s_k + carry;  d_pre = g (1 - e) (1 - tanh^2);
// dtau += g (s_{k-1} - tanh) e dt / tau^2;  carry = g e + (W_rec^T d_pre)_c. Writes d_pre, the
// per-sequence partials d_tau and d_bias, and adds the final carry (dL/dc) into d_c.
template <int S>
__global__ void __launch_bounds__(2 * S, 2)
    cfc_backward_kernel(const float* __restrict__ w_rec, const float* __restrict__ tau_raw,
                        const float* __restrict__ d_s, const float* __restrict__ act,
                        const float* __restrict__ s_prev, const float* __restrict__ dt,
                        float dt_const, int K, int D, float* __restrict__ d_pre,
                        float* __restrict__ d_tau, float* __restrict__ d_bias,
                        float* __restrict__ d_c) {
  constexpr int kNa = 3;  // d_s, act, s_prev
  __shared__ __align__(16) float dbuf[2][8 * slice_stride<S>()];
  __shared__ float xs[2 * kNa * kBwdChunk * S];
  __shared__ float dts[2 * kBwdChunk];

  const int b = blockIdx.x, t = threadIdx.x, l = t & 7, grp = t >> 3, c = group_channel(t);
  const bool active = c < D, writer = active && (l & 1) == 0;
  const size_t seq_base = static_cast<size_t>(b) * K * D;
  const float* dt_seq = dt != nullptr ? dt + static_cast<size_t>(b) * K : nullptr;

  // Columns 4 grp .. 4 grp + 3 of W_rec (rows of W_rec^T), rows of slice l; zero outside D.
  float w[S / 2];
#pragma unroll
  for (int e = 0; e < S / 2; ++e) {
    const int col = 4 * grp + e / (S / 8), row = l * (S / 8) + e % (S / 8);
    w[e] = (row < D && col < D) ? w_rec[static_cast<size_t>(row) * D + col] : 0.0f;
  }
  float tau = 1.0f, decay_c = 0.0f;
  if (active) {
    tau = softplus_f(tau_raw[c]) + static_cast<float>(kTauMin);
    decay_c = expf(-dt_const / tau);
  }
  const float inv_tau2 = 1.0f / (tau * tau);

  for (int x = t; x < 2 * 8 * slice_stride<S>(); x += blockDim.x) (&dbuf[0][0])[x] = 0.0f;

  Stager<kNa, kBwdChunk, S> st;
  const float* src[kNa] = {d_s + seq_base, act + seq_base, s_prev + seq_base};
  const int last = (K - 1) / kBwdChunk;
  st.load(src, dt_seq, last, K, D);
  st.store(xs, dts, last & 1, D);
  st.load(src, dt_seq, last - 1, K, D);
  __syncthreads();

  float carry = 0.0f, dtau_acc = 0.0f, dbias_acc = 0.0f;
  size_t r = seq_base + static_cast<size_t>(K) * D + c;  // row k + 1 of this channel
  for (int k = K - 1; k >= 0; --k) {
    r -= D;
    const int ch = k / kBwdChunk, kk = k - ch * kBwdChunk, buf = ch & 1;
    const float* xb = xs + (buf * kNa * kBwdChunk + kk) * S;
    float ge = 0.0f;
    if (active) {
      const float ds_k = xb[c];
      const float th = xb[kBwdChunk * S + c];
      const float sp = xb[2 * kBwdChunk * S + c];
      const float dt_k = dt != nullptr ? dts[buf * kBwdChunk + kk] : dt_const;
      const float e = dt != nullptr ? expf(-dt_k / tau) : decay_c;
      const float g = ds_k + carry;
      const float dp = g * (1.0f - e) * (1.0f - th * th);
      dtau_acc += g * (sp - th) * e * dt_k * inv_tau2;
      dbias_acc += dp;
      ge = g * e;
      if (writer) {
        d_pre[r] = dp;
        dbuf[k & 1][slice_index<S>(c)] = dp;
      }
    }
    if (kk == 0) {  // chunk boundary (descending): registers -> the other buffer, fetch the next
      st.store(xs, dts, buf ^ 1, D);
      st.load(src, dt_seq, ch - 2, K, D);
    }
    __syncthreads();
    carry = ge + matvec_rows4<S>(w, dbuf[k & 1], l);  // + (W_rec^T d_pre)_c
  }
  if (writer) {
    const size_t v = static_cast<size_t>(b) * D + c;
    d_tau[v] = dtau_acc;
    d_bias[v] = dbias_acc;
    if (d_c != nullptr) d_c[v] += carry;
  }
}

// Generic path (D > 128): the same recurrence with W_rec read through the read-only cache and
// each thread looping over channels c = t, t + blockDim, ... Grid B, block kGenericThreads.
// Shared memory: the state (or d_pre) vector, double-buffered, 2*D floats (dynamic).
constexpr int kGenericThreads = 256;

__global__ void __launch_bounds__(kGenericThreads)
    cfc_forward_generic_kernel(const float* __restrict__ w_rec, const float* __restrict__ tau_raw,
                               const float* __restrict__ xin, const float* __restrict__ c0,
                               const float* __restrict__ dt, float dt_const, int K, int D,
                               float* __restrict__ act, float* __restrict__ s_prev,
                               float* __restrict__ out) {
  extern __shared__ float sv[];  // [2][D]
  const int b = blockIdx.x;
  const size_t seq_base = static_cast<size_t>(b) * K * D;
  for (int i = threadIdx.x; i < D; i += blockDim.x) sv[i] = c0[static_cast<size_t>(b) * D + i];
  __syncthreads();
  for (int k = 0; k < K; ++k) {
    const float* cur = sv + (k & 1) * D;
    float* nxt = sv + ((k + 1) & 1) * D;
    const float dt_k = dt != nullptr ? dt[static_cast<size_t>(b) * K + k] : dt_const;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
      const float* wr = w_rec + static_cast<size_t>(i) * D;
      float acc = 0.0f;
      for (int j = 0; j < D; ++j) acc = fmaf(__ldg(wr + j), cur[j], acc);
      const size_t r = seq_base + static_cast<size_t>(k) * D + i;
      const float tau = softplus_f(tau_raw[i]) + static_cast<float>(kTauMin);
      const float e = expf(-dt_k / tau);
      const float a = tanhf(xin[r] + acc);
      const float s = cur[i];
      const float s_new = e * s + (1.0f - e) * a;
      act[r] = a;
      s_prev[r] = s;
      out[r] = s_new;
      nxt[i] = s_new;
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kGenericThreads)
    cfc_backward_generic_kernel(const float* __restrict__ w_rec,
                                const float* __restrict__ tau_raw, const float* __restrict__ d_s,
                                const float* __restrict__ act, const float* __restrict__ s_prev,
                                const float* __restrict__ dt, float dt_const, int K, int D,
                                float* __restrict__ d_pre, float* __restrict__ d_tau,
                                float* __restrict__ d_bias, float* __restrict__ d_c) {
  extern __shared__ float sm[];  // dp [2][D], then carry [D]
  float* dp_buf = sm;
  float* carry = sm + 2 * D;
  const int b = blockIdx.x;
  const size_t seq_base = static_cast<size_t>(b) * K * D;
  const size_t vec_base = static_cast<size_t>(b) * D;
  for (int c = threadIdx.x; c < D; c += blockDim.x) {
    carry[c] = 0.0f;
    d_tau[vec_base + c] = 0.0f;
    d_bias[vec_base + c] = 0.0f;
  }
  __syncthreads();
  for (int k = K - 1; k >= 0; --k) {
    float* dpk = dp_buf + (k & 1) * D;
    const float dt_k = dt != nullptr ? dt[static_cast<size_t>(b) * K + k] : dt_const;
    // Elementwise part; carry[c] <- g e (the matvec below adds W_rec^T d_pre). Only thread c
    // touches carry[c], d_tau[c], d_bias[c] here.
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
      const size_t r = seq_base + static_cast<size_t>(k) * D + c;
      const float tau = softplus_f(tau_raw[c]) + static_cast<float>(kTauMin);
      const float e = expf(-dt_k / tau);
      const float th = act[r];
      const float g = d_s[r] + carry[c];
      const float dp = g * (1.0f - e) * (1.0f - th * th);
      d_tau[vec_base + c] += g * (s_prev[r] - th) * e * dt_k * (1.0f / (tau * tau));
      d_bias[vec_base + c] += dp;
      d_pre[r] = dp;
      dpk[c] = dp;
      carry[c] = g * e;
    }
    __syncthreads();
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
      float acc = 0.0f;
      for (int i = 0; i < D; ++i) acc = fmaf(__ldg(w_rec + static_cast<size_t>(i) * D + c), dpk[i], acc);
      carry[c] += acc;
    }
    __syncthreads();
  }
  if (d_c != nullptr) {
    for (int c = threadIdx.x; c < D; c += blockDim.x) d_c[vec_base + c] += carry[c];
  }
}

// grads[bias + c] += sum_b d_bias[b, c];  grads[tau_raw + c] += sigmoid(tau_raw[c]) sum_b
// d_tau[b, c], both summed in a fixed order. Launch: grid ceil(D / 32), block 32 x kReduceLanes:
// thread (x, y) sums sequences y, y + 8, ... of channel c in order, then a fixed shared-memory
// tree over the 8 lanes.
constexpr int kReduceLanes = 8;
__global__ void cfc_reduce_vectors_kernel(const float* __restrict__ d_tau,
                                          const float* __restrict__ d_bias,
                                          const float* __restrict__ tau_raw, int B, int D,
                                          float* __restrict__ g_bias, float* __restrict__ g_tau) {
  __shared__ float red[2][kReduceLanes][33];
  const int c = blockIdx.x * 32 + threadIdx.x, y = threadIdx.y;
  float st = 0.0f, sb = 0.0f;
  if (c < D) {
    for (int b = y; b < B; b += kReduceLanes) {
      st += d_tau[static_cast<size_t>(b) * D + c];
      sb += d_bias[static_cast<size_t>(b) * D + c];
    }
  }
  red[0][y][threadIdx.x] = st;
  red[1][y][threadIdx.x] = sb;
  __syncthreads();
  for (int w = kReduceLanes / 2; w > 0; w /= 2) {
    if (y < w) {
      red[0][y][threadIdx.x] += red[0][y + w][threadIdx.x];
      red[1][y][threadIdx.x] += red[1][y + w][threadIdx.x];
    }
    __syncthreads();
  }
  if (y == 0 && c < D) {
    g_bias[c] += red[1][0][threadIdx.x];
    g_tau[c] += red[0][0][threadIdx.x] * sigmoid_f(tau_raw[c]);
  }
}

constexpr int kFastMaxD = 128;

// The fast kernels' padded width S for D <= kFastMaxD (their block is 2S threads): 32, 64, 128.
int fast_width(int D) { return D <= 32 ? 32 : (D <= 64 ? 64 : 128); }

// ================================================================================================
// Head kernels
// ================================================================================================

// z1[h, r, j] += b1[h][j] (in place) and a1 = GELU(z1). Grid-stride over H*R*mid.
// I: the element index type (fits_index32).
template <typename I>
__global__ void heads_bias_gelu_kernel(const float* __restrict__ params, long long size,
                                       long long off_b1, int R, int H, int mid,
                                       float* __restrict__ z1, float* __restrict__ a1) {
  const I n = static_cast<I>(H) * R * mid;
  const I per_head = static_cast<I>(R) * mid;
  for (I x = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<I>(gridDim.x) * blockDim.x) {
    const int h = static_cast<int>(x / per_head);
    const int j = static_cast<int>(x % mid);
    const float z = z1[x] + params[h * size + off_b1 + j];
    z1[x] = z;
    a1[x] = gelu_f(z);
  }
}

// Sum over a warp by a butterfly: every lane ends with the identical value (each level adds the
// same two operands in either order), so the result is deterministic and lane-independent.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

constexpr int kWarpsPerBlock = 8;

// One warp per (h, r), lanes over j < mid: z2 += b2 (in place), g = w_g.z2 + b_g,
// m = w_m.z2 + b_m, logits[r, h] (= skip without b_s, from the skip GEMM) += b_s + sigmoid(g) m.
// Grid ceil(H*R / 8), block 256.
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    heads_output_kernel(const float* __restrict__ params, HeadOffsets o, int R, int H, int mid,
                        float* __restrict__ z2, float* __restrict__ logits) {
  const long long w = blockIdx.x * static_cast<long long>(kWarpsPerBlock) + threadIdx.x / 32;
  if (w >= static_cast<long long>(H) * R) return;  // whole warps exit together
  const int lane = threadIdx.x % 32;
  const int h = static_cast<int>(w / R), r = static_cast<int>(w % R);
  const float* p = params + h * o.size;
  float* z2r = z2 + (static_cast<size_t>(h) * R + r) * mid;
  float g = 0.0f, m = 0.0f;
  for (int j = lane; j < mid; j += 32) {
    const float z = z2r[j] + p[o.b2 + j];
    z2r[j] = z;
    g = fmaf(p[o.wg + j], z, g);
    m = fmaf(p[o.wm + j], z, m);
  }
  g = warp_sum(g) + p[o.bg];
  m = warp_sum(m) + p[o.bm];
  if (lane == 0) {
    float* lo = logits + static_cast<size_t>(r) * H + h;
    *lo = (*lo + p[o.bs]) + sigmoid_f(g) * m;
  }
}

// Column layout of the backward scratch matrix U [R, ldu] (per row r):
//   [0, H*mid)                dz1 of head h at h*mid   (first da1, then scaled by GELU')
//   [H*mid, H*mid + H)        dl = dlogits[r, h]        (dL/dskip)
//   [c_dz2, c_dz2 + H*mid)    dz2 of head h at c_dz2 + h*mid
//   [c_dgm, c_dgm + 2H)       dg, dm of head h at c_dgm + 2h, + 2h + 1
// so that [dz1 | dl] is the left operand of the single ds GEMM, and one column sum of
// U[:, :used] gives every bias gradient.
struct HeadBwdLayout {
  int c_dl, c_dz2, c_dgm, used, ldu;
  size_t u, a1, v, sums, total;  // float offsets into scratch
};
HeadBwdLayout head_bwd_layout(const HeadDims& d) {
  HeadBwdLayout l;
  l.c_dl = d.heads * d.mid;
  l.c_dz2 = l.c_dl + d.heads;
  l.c_dgm = l.c_dz2 + d.heads * d.mid;
  l.used = l.c_dgm + 2 * d.heads;
  l.ldu = static_cast<int>(round_up(static_cast<size_t>(l.used), 32));
  size_t at = 0;
  l.u = at, at += round_up(static_cast<size_t>(d.rows) * l.ldu, kAlignFloats);
  l.a1 = at, at += round_up(static_cast<size_t>(d.heads) * d.rows * d.mid, kAlignFloats);
  l.v = at, at += round_up(static_cast<size_t>(d.heads) * (d.mid + 1) * d.d, kAlignFloats);
  l.sums = at, at += round_up(static_cast<size_t>(l.used), kAlignFloats);
  l.total = at;
  return l;
}

// One warp per (h, r): recompute g, m from the saved z2, then dskip = dl, dm = dl sigmoid(g),
// dg = dl sigmoid'(g) m, dz2 = dg w_g + dm w_m; also a1 = GELU(z1) for the W2 gradient.
// Grid ceil(H*R / 8), block 256.
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    heads_output_backward_kernel(const float* __restrict__ params, HeadOffsets o, int R, int H,
                                 int mid, const float* __restrict__ z1,
                                 const float* __restrict__ z2, const float* __restrict__ dlogits,
                                 HeadBwdLayout l, float* __restrict__ u, float* __restrict__ a1) {
  const long long w = blockIdx.x * static_cast<long long>(kWarpsPerBlock) + threadIdx.x / 32;
  if (w >= static_cast<long long>(H) * R) return;
  const int lane = threadIdx.x % 32;
  const int h = static_cast<int>(w / R), r = static_cast<int>(w % R);
  const float* p = params + h * o.size;
  const size_t zrow = (static_cast<size_t>(h) * R + r) * mid;
  float g = 0.0f, m = 0.0f;
  for (int j = lane; j < mid; j += 32) {
    const float z = z2[zrow + j];
    g = fmaf(p[o.wg + j], z, g);
    m = fmaf(p[o.wm + j], z, m);
    a1[zrow + j] = gelu_f(z1[zrow + j]);
  }
  g = warp_sum(g) + p[o.bg];
  m = warp_sum(m) + p[o.bm];
  const float sg = sigmoid_f(g);
  const float dl = dlogits[static_cast<size_t>(r) * H + h];
  const float dm = dl * sg;
  const float dg = dl * sg * (1.0f - sg) * m;
  float* ur = u + static_cast<size_t>(r) * l.ldu;
  for (int j = lane; j < mid; j += 32) ur[l.c_dz2 + h * mid + j] = dg * p[o.wg + j] + dm * p[o.wm + j];
  if (lane == 0) {
    ur[l.c_dl + h] = dl;
    ur[l.c_dgm + 2 * h] = dg;
    ur[l.c_dgm + 2 * h + 1] = dm;
  }
}

// U[r, h*mid + j] (= da1) *= GELU'(z1[h, r, j]). Grid-stride over R*H*mid.
// I: the element index type, as heads_bias_gelu_kernel.
template <typename I>
__global__ void heads_gelu_backward_kernel(const float* __restrict__ z1, int R, int H, int mid,
                                           int ldu, float* __restrict__ u) {
  const I hm = static_cast<I>(H) * mid;
  const I n = static_cast<I>(R) * hm;
  for (I x = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<I>(gridDim.x) * blockDim.x) {
    const I rq = x / hm;
    const int r = static_cast<int>(rq);
    const int hj = static_cast<int>(x - rq * hm);
    const int h = hj / mid, j = hj % mid;
    u[static_cast<size_t>(r) * ldu + hj] *= gelu_grad_f(z1[(static_cast<size_t>(h) * R + r) * mid + j]);
  }
}

// Partials of dw_g[h][j] = sum_r dg[r, h] z2[h, r, j] and dw_m likewise, per chunk of
// kGmChunkRows rows: part [chunks][H][2][mid] (add_chunk_partials sums the chunks in order).
// Launch: grid (chunks, H), a thread per j (block round_up(mid, 32)); rows in order.
constexpr int kGmChunkRows = 256;
__global__ void heads_gate_mix_partials_kernel(const float* __restrict__ u, int ldu, int c_dgm,
                                               const float* __restrict__ z2, int R, int H, int mid,
                                               float* __restrict__ part) {
  const int ch = blockIdx.x, h = blockIdx.y, j = threadIdx.x;
  if (j >= mid) return;
  const int r0 = ch * kGmChunkRows, r1 = min(R, r0 + kGmChunkRows);
  const float* zh = z2 + static_cast<size_t>(h) * R * mid + j;
  const float* uh = u + c_dgm + 2 * h;
  float ag = 0.0f, am = 0.0f;
  for (int r = r0; r < r1; ++r) {
    const float z = zh[static_cast<size_t>(r) * mid];
    ag += uh[static_cast<size_t>(r) * ldu] * z;
    am += uh[static_cast<size_t>(r) * ldu + 1] * z;
  }
  float* out = part + (static_cast<size_t>(ch) * H + h) * 2 * mid;
  out[j] = ag;
  out[mid + j] = am;
}

// V [H*(mid+1), D]: row h*mid + j = lambda_h W1[h][j, :], row H*mid + h = lambda_h w_s[h], so
// that ds += [dz1 | dl] V is the whole trunk gradient of all heads in one GEMM.
__global__ void heads_build_v_kernel(const float* __restrict__ params, HeadOffsets o, int H,
                                     int mid, int D, const float* __restrict__ trunk_scale,
                                     float* __restrict__ v) {
  const size_t n = static_cast<size_t>(H) * (mid + 1) * D;
  for (size_t x = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int row = static_cast<int>(x / D), col = static_cast<int>(x % D);
    int h;
    const float* src;
    if (row < H * mid) {
      h = row / mid;
      src = params + h * o.size + o.w1 + static_cast<size_t>(row % mid) * D;
    } else {
      h = row - H * mid;
      src = params + h * o.size + o.ws;
    }
    const float lambda = trunk_scale != nullptr ? trunk_scale[h] : 1.0f;
    v[x] = lambda * src[col];
  }
}

// dparams[h]: b1 += sums[h*mid + j], b2 += sums[c_dz2 + h*mid + j], b_s += sums[c_dl + h],
// b_g += sums[c_dgm + 2h], b_m += sums[c_dgm + 2h + 1]. Grid-stride over H*(2*mid + 3).
__global__ void heads_scatter_biases_kernel(const float* __restrict__ sums, HeadOffsets o, int H,
                                            int mid, HeadBwdLayout l, float* __restrict__ dparams) {
  const int per = 2 * mid + 3;
  const int n = H * per;
  for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < n; x += gridDim.x * blockDim.x) {
    const int h = x / per, k = x % per;
    float* dp = dparams + h * o.size;
    if (k < mid) {
      dp[o.b1 + k] += sums[h * mid + k];
    } else if (k < 2 * mid) {
      dp[o.b2 + (k - mid)] += sums[l.c_dz2 + h * mid + (k - mid)];
    } else if (k == 2 * mid) {
      dp[o.bg] += sums[l.c_dgm + 2 * h];
    } else if (k == 2 * mid + 1) {
      dp[o.bm] += sums[l.c_dgm + 2 * h + 1];
    } else {
      dp[o.bs] += sums[l.c_dl + h];
    }
  }
}

}  // namespace

// ================================================================================================
// CfC host side
// ================================================================================================

size_t cfc_workspace_floats(const CfcDims& dims) {
  const size_t n = static_cast<size_t>(dims.batch) * dims.seq_len * dims.hidden;
  const size_t v = static_cast<size_t>(dims.batch) * dims.hidden;
  return 5 * round_up(n, kAlignFloats) + 2 * round_up(v, kAlignFloats);
}

CfcWorkspace cfc_workspace_carve(const CfcDims& dims, float* base) {
  const size_t n = round_up(static_cast<size_t>(dims.batch) * dims.seq_len * dims.hidden,
                            kAlignFloats);
  const size_t v = round_up(static_cast<size_t>(dims.batch) * dims.hidden, kAlignFloats);
  CfcWorkspace ws;
  ws.xin = base;
  ws.act = base + n;
  ws.s_prev = base + 2 * n;
  ws.out = base + 3 * n;
  ws.d_pre = base + 4 * n;
  ws.d_tau = base + 5 * n;
  ws.d_bias = base + 5 * n + v;
  return ws;
}

void cfc_forward(const Context& ctx, const CfcDims& dims, const CfcOffsets& o, const float* params,
                 const float* h, const float* c, const float* dt, float dt_const,
                 const CfcWorkspace& ws) {
  const int B = dims.batch, K = dims.seq_len, D = dims.hidden, in = dims.in_dim;
  if (B <= 0 || K <= 0) return;
  // xin = h W_in^T + b over all B*K rows (one broadcast + one GEMM).
  linear_forward(ctx, h, params + o.w_in, params + o.bias, ws.xin, B * K, in, D);
  const float* w_rec = params + o.w_rec;
  const float* tau_raw = params + o.tau_raw;
  if (D <= kFastMaxD) {
    switch (fast_width(D)) {
      case 32:
        cfc_forward_kernel<32><<<B, 64, 0, ctx.stream()>>>(
            w_rec, tau_raw, ws.xin, c, dt, dt_const, K, D, ws.act, ws.s_prev, ws.out);
        break;
      case 64:
        cfc_forward_kernel<64><<<B, 128, 0, ctx.stream()>>>(
            w_rec, tau_raw, ws.xin, c, dt, dt_const, K, D, ws.act, ws.s_prev, ws.out);
        break;
      default:
        cfc_forward_kernel<128><<<B, 256, 0, ctx.stream()>>>(
            w_rec, tau_raw, ws.xin, c, dt, dt_const, K, D, ws.act, ws.s_prev, ws.out);
        break;
    }
  } else {
    const size_t smem = 2 * static_cast<size_t>(D) * sizeof(float);
    cfc_forward_generic_kernel<<<B, kGenericThreads, smem, ctx.stream()>>>(
        w_rec, tau_raw, ws.xin, c, dt, dt_const, K, D, ws.act, ws.s_prev, ws.out);
  }
  FXT_CUDA_LAUNCH_CHECK();
}

void cfc_backward(const Context& ctx, const CfcDims& dims, const CfcOffsets& o, const float* params,
                  const float* h, const float* dt, float dt_const, const float* d_s,
                  const CfcWorkspace& ws, float* grads, float* d_h, float* d_c) {
  const int B = dims.batch, K = dims.seq_len, D = dims.hidden, in = dims.in_dim;
  if (B <= 0 || K <= 0) return;
  const float* w_rec = params + o.w_rec;
  const float* tau_raw = params + o.tau_raw;
  if (D <= kFastMaxD) {
    switch (fast_width(D)) {
      case 32:
        cfc_backward_kernel<32><<<B, 64, 0, ctx.stream()>>>(
            w_rec, tau_raw, d_s, ws.act, ws.s_prev, dt, dt_const, K, D, ws.d_pre, ws.d_tau,
            ws.d_bias, d_c);
        break;
      case 64:
        cfc_backward_kernel<64><<<B, 128, 0, ctx.stream()>>>(
            w_rec, tau_raw, d_s, ws.act, ws.s_prev, dt, dt_const, K, D, ws.d_pre, ws.d_tau,
            ws.d_bias, d_c);
        break;
      default:
        cfc_backward_kernel<128><<<B, 256, 0, ctx.stream()>>>(
            w_rec, tau_raw, d_s, ws.act, ws.s_prev, dt, dt_const, K, D, ws.d_pre, ws.d_tau,
            ws.d_bias, d_c);
        break;
    }
  } else {
    const size_t smem = 3 * static_cast<size_t>(D) * sizeof(float);
    cfc_backward_generic_kernel<<<B, kGenericThreads, smem, ctx.stream()>>>(
        w_rec, tau_raw, d_s, ws.act, ws.s_prev, dt, dt_const, K, D, ws.d_pre, ws.d_tau,
        ws.d_bias, d_c);
  }
  FXT_CUDA_LAUNCH_CHECK();

  cfc_reduce_vectors_kernel<<<(D + 31) / 32, dim3(32, kReduceLanes), 0, ctx.stream()>>>(
      ws.d_tau, ws.d_bias, tau_raw, B, D, grads + o.bias, grads + o.tau_raw);
  FXT_CUDA_LAUNCH_CHECK();

  const int rows = B * K;
  // dW_rec += d_pre^T s_prev; dW_in += d_pre^T h; d_h += d_pre W_in (all rows at once).
  gemm_tn_rows(ctx, D, D, rows, ws.d_pre, D, 0, ws.s_prev, D, 0, 1.0f, grads + o.w_rec, D, 0);
  gemm_tn_rows(ctx, D, in, rows, ws.d_pre, D, 0, h, in, 0, 1.0f, grads + o.w_in, in, 0);
  if (d_h != nullptr) {
    gemm(ctx, false, false, rows, in, D, 1.0f, ws.d_pre, D, params + o.w_in, in, 1.0f, d_h, in);
  }
}

// ================================================================================================
// Heads host side
// ================================================================================================

size_t heads_forward_scratch_floats(const HeadDims& d) {
  return round_up(static_cast<size_t>(d.heads) * d.rows * d.mid, kAlignFloats);
}

size_t heads_backward_scratch_floats(const HeadDims& d) { return head_bwd_layout(d).total; }

void heads_forward(const Context& ctx, const HeadDims& dims, const HeadOffsets& o,
                   const float* params, const float* s, float* logits, float* z1, float* z2,
                   float* scratch) {
  const int R = dims.rows, H = dims.heads, D = dims.d, mid = dims.mid;
  if (R <= 0 || H <= 0) return;
  const long long zs = static_cast<long long>(R) * mid;  // per-head stride of z1, z2, a1
  float* a1 = scratch;
  // z1[h] = s W1[h]^T (all heads, shared s), then + b1 and GELU in one pass.
  gemm_batched(ctx, false, true, R, mid, D, 1.0f, s, D, 0, params + o.w1, D, o.size, 0.0f, z1, mid,
               zs, H);
  const size_t n_z = static_cast<size_t>(H) * zs;
  if (fits_index32(n_z)) {
    heads_bias_gelu_kernel<uint32_t><<<grid_stride_blocks(n_z, 256, 8192), 256, 0, ctx.stream()>>>(
        params, o.size, o.b1, R, H, mid, z1, a1);
  } else {
    heads_bias_gelu_kernel<uint64_t><<<grid_stride_blocks(n_z, 256, 8192), 256, 0, ctx.stream()>>>(
        params, o.size, o.b1, R, H, mid, z1, a1);
  }
  FXT_CUDA_LAUNCH_CHECK();
  // z2[h] = a1[h] W2[h]^T (b2 added by the output kernel).
  gemm_batched(ctx, false, true, R, mid, mid, 1.0f, a1, mid, zs, params + o.w2, mid, o.size, 0.0f,
               z2, mid, zs, H);
  // logits[r, h] = s[r] . w_s[h] for all heads: w_s rows sit at stride size in params.
  gemm(ctx, false, true, R, H, D, 1.0f, s, D, params + o.ws, static_cast<int>(o.size), 0.0f, logits,
       H);
  const long long warps = static_cast<long long>(H) * R;
  heads_output_kernel<<<static_cast<int>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                        32 * kWarpsPerBlock, 0, ctx.stream()>>>(params, o, R, H, mid, z2, logits);
  FXT_CUDA_LAUNCH_CHECK();
}

void heads_backward(const Context& ctx, const HeadDims& dims, const HeadOffsets& o,
                    const float* params, const float* s, const float* z1, const float* z2,
                    const float* dlogits, const float* trunk_scale, float* ds, float* dparams,
                    float* scratch) {
  const int R = dims.rows, H = dims.heads, D = dims.d, mid = dims.mid;
  if (R <= 0 || H <= 0) return;
  const HeadBwdLayout l = head_bwd_layout(dims);
  float* u = scratch + l.u;
  float* a1 = scratch + l.a1;
  float* v = scratch + l.v;
  float* sums = scratch + l.sums;
  const long long zs = static_cast<long long>(R) * mid;
  const int ldsz = static_cast<int>(o.size);

  // Output layer back to dz2, dg, dm, dl (and a1 recomputed).
  const long long warps = static_cast<long long>(H) * R;
  heads_output_backward_kernel<<<static_cast<int>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                                 32 * kWarpsPerBlock, 0, ctx.stream()>>>(params, o, R, H, mid, z1,
                                                                         z2, dlogits, l, u, a1);
  FXT_CUDA_LAUNCH_CHECK();
  // Weight and bias gradients are sums over all R rows: gemm_tn_rows / column_sum split the rows
  // into chunks (deterministic partials, then an ordered sum), as a single GEMM with k = R would
  // run on a few output tiles. dW2[h] += dz2[h]^T a1[h].
  gemm_tn_rows(ctx, mid, mid, R, u + l.c_dz2, l.ldu, mid, a1, mid, zs, 1.0f, dparams + o.w2, mid,
               o.size, H);
  // da1[h] = dz2[h] W2[h] into the dz1 columns, then * GELU'(z1).
  gemm_batched(ctx, false, false, R, mid, mid, 1.0f, u + l.c_dz2, l.ldu, mid, params + o.w2, mid,
               o.size, 0.0f, u, l.ldu, mid, H);
  const size_t n_z = static_cast<size_t>(R) * H * mid;
  if (fits_index32(n_z)) {
    heads_gelu_backward_kernel<uint32_t>
        <<<grid_stride_blocks(n_z, 256, 8192), 256, 0, ctx.stream()>>>(z1, R, H, mid, l.ldu, u);
  } else {
    heads_gelu_backward_kernel<uint64_t>
        <<<grid_stride_blocks(n_z, 256, 8192), 256, 0, ctx.stream()>>>(z1, R, H, mid, l.ldu, u);
  }
  FXT_CUDA_LAUNCH_CHECK();
  // dW1[h] += dz1[h]^T s (s shared: one product over the H*mid adjacent dz1 columns per chunk).
  gemm_tn_rows(ctx, mid, D, R, u, l.ldu, mid, s, D, 0, 1.0f, dparams + o.w1, D, o.size, H);
  // dw_g[h], dw_m[h] += [dg dm]^T z2[h]: [2, mid] outputs per head over R rows, by one partials
  // kernel for all heads (chunks of rows) and an ordered sum of the chunks; w_m follows w_g at a
  // row stride >= mid in the standard layout (w_m = w_g + mid + 1), else per-row products.
  const int gm_chunks = (R + kGmChunkRows - 1) / kGmChunkRows;
  const size_t gm_floats = static_cast<size_t>(gm_chunks) * H * 2 * mid;
  if (o.wm - o.wg >= mid && mid <= 1024 && gm_floats <= ctx.reduce_scratch_floats()) {
    heads_gate_mix_partials_kernel<<<dim3(gm_chunks, H), (mid + 31) / 32 * 32, 0, ctx.stream()>>>(
        u, l.ldu, l.c_dgm, z2, R, H, mid, ctx.reduce_scratch());
    FXT_CUDA_LAUNCH_CHECK();
    add_chunk_partials(ctx, ctx.reduce_scratch(), gm_chunks, H, 2, mid, true, dparams + o.wg,
                       static_cast<int>(o.wm - o.wg), o.size);
  } else {
    gemm_tn_rows(ctx, 1, mid, R, u + l.c_dgm, l.ldu, 2, z2, mid, zs, 1.0f, dparams + o.wg, mid,
                 o.size, H);
    gemm_tn_rows(ctx, 1, mid, R, u + l.c_dgm + 1, l.ldu, 2, z2, mid, zs, 1.0f, dparams + o.wm,
                 mid, o.size, H);
  }
  // dw_s[h] += dl[:, h]^T s for all heads at once (rows of dw_s at stride size).
  gemm_tn_rows(ctx, H, D, R, dlogits, H, 0, s, D, 0, 1.0f, dparams + o.ws, ldsz, 0);
  // Every bias: the column sums of U's used columns, then scattered.
  column_sum(ctx, u, R, l.used, l.ldu, sums, /*accumulate=*/false);
  heads_scatter_biases_kernel<<<grid_stride_blocks(static_cast<size_t>(H) * (2 * mid + 3), 256,
                                                   8192),
                                256, 0, ctx.stream()>>>(sums, o, H, mid, l, dparams);
  FXT_CUDA_LAUNCH_CHECK();
  // ds += sum_h lambda_h (dz1[h] W1[h] + dl[:, h] w_s[h]) = [dz1 | dl] V: one GEMM.
  if (ds != nullptr) {
    heads_build_v_kernel<<<grid_stride_blocks(static_cast<size_t>(H) * (mid + 1) * D, 256, 8192),
                           256, 0, ctx.stream()>>>(params, o, H, mid, D, trunk_scale, v);
    FXT_CUDA_LAUNCH_CHECK();
    gemm(ctx, false, false, R, D, H * (mid + 1), 1.0f, u, l.ldu, v, D, 1.0f, ds, D);
  }
}

void gather_last_positions(const Context& ctx, const float* s, int batch, int seq_len, int d,
                           float* out) {
  if (batch <= 0 || seq_len <= 0 || d <= 0) return;
  const size_t row = static_cast<size_t>(d) * sizeof(float);
  FXT_CUDA_CHECK(cudaMemcpy2DAsync(out, row, s + static_cast<size_t>(seq_len - 1) * d,
                                   row * seq_len, row, batch, cudaMemcpyDeviceToDevice,
                                   ctx.stream()));
}

}  // namespace fxt::gpu
