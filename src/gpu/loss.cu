// Masked BCE, the horizon controllers and combine_horizons on the GPU (see loss.h).
//
// Float arithmetic that mirrors the CPU uses the explicitly rounded intrinsics (__fmul_rn,
// __fadd_rn, ...) so that nvcc cannot contract a product and a sum into an FMA: the CPU build
// uses -ffp-contract=off, and the same operation order then gives the same float results up to
// the transcendental functions (expf, log1pf: a few ulp apart from glibc).
#include <cassert>
#include <cmath>

#include "gpu/loss.h"

namespace fxt::gpu {

// ---- state and output holders -------------------------------------------------------------------

DeviceControllerState::DeviceControllerState(int horizons)
    : horizons_(horizons), ema_(static_cast<size_t>(horizons)), scalars_(1) {
  assert(horizons >= 1);
  ema_.zero();
  scalars_.zero();
  FXT_CUDA_CHECK(cudaDeviceSynchronize());  // the memsets run on the legacy stream
}

void DeviceControllerState::upload(const Context& ctx, const ControllerHost& host) {
  assert(host.ema.size() == static_cast<size_t>(horizons_));
  ControllerScalars s{};
  s.zmax = host.zmax;
  s.step = static_cast<long long>(host.step);
  s.ema_initialized = host.ema_initialized ? 1 : 0;
  s.zmax_initialized = host.zmax_initialized ? 1 : 0;
  FXT_CUDA_CHECK(cudaMemcpyAsync(ema_.data(), host.ema.data(), host.ema.size() * sizeof(double),
                                 cudaMemcpyHostToDevice, ctx.stream()));
  FXT_CUDA_CHECK(
      cudaMemcpyAsync(scalars_.data(), &s, sizeof s, cudaMemcpyHostToDevice, ctx.stream()));
  ctx.sync();  // `s` and host.ema must outlive the copies
}

ControllerHost DeviceControllerState::download(const Context& ctx) const {
  ControllerHost host;
  host.ema.resize(static_cast<size_t>(horizons_));
  ControllerScalars s{};
  FXT_CUDA_CHECK(cudaMemcpyAsync(host.ema.data(), ema_.data(), host.ema.size() * sizeof(double),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  FXT_CUDA_CHECK(
      cudaMemcpyAsync(&s, scalars_.data(), sizeof s, cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  host.zmax = s.zmax;
  host.step = static_cast<int64_t>(s.step);
  host.ema_initialized = s.ema_initialized != 0;
  host.zmax_initialized = s.zmax_initialized != 0;
  return host;
}

void DeviceControllerState::reset(const Context& ctx) {
  FXT_CUDA_CHECK(cudaMemsetAsync(ema_.data(), 0, ema_.size() * sizeof(double), ctx.stream()));
  FXT_CUDA_CHECK(cudaMemsetAsync(scalars_.data(), 0, sizeof(ControllerScalars), ctx.stream()));
  ctx.sync();
}

LossOutputs::LossOutputs(int horizons)
    : horizons_(horizons),
      total_(1),
      loss_h_(static_cast<size_t>(horizons)),
      partials_(2 * static_cast<size_t>(kLossMaxTiles) * static_cast<size_t>(horizons)),
      weight_(static_cast<size_t>(horizons)),
      lambda_(static_cast<size_t>(horizons)),
      backward_coef_(2 * static_cast<size_t>(horizons)) {
  assert(horizons >= 1 && horizons <= kLossMaxHorizons);
}

LossOutputs::Host LossOutputs::download(const Context& ctx) const {
  const size_t nh = static_cast<size_t>(horizons_);
  Host host;
  host.loss_h.resize(nh);
  std::vector<float> w(nh), l(nh);
  FXT_CUDA_CHECK(cudaMemcpyAsync(&host.total, total_.data(), sizeof(double), cudaMemcpyDeviceToHost,
                                 ctx.stream()));
  FXT_CUDA_CHECK(cudaMemcpyAsync(host.loss_h.data(), loss_h_.data(), nh * sizeof(double),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  FXT_CUDA_CHECK(cudaMemcpyAsync(w.data(), weight_.data(), nh * sizeof(float),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  FXT_CUDA_CHECK(cudaMemcpyAsync(l.data(), lambda_.data(), nh * sizeof(float),
                                 cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  host.weight.assign(w.begin(), w.end());
  host.lambda.assign(l.begin(), l.end());
  return host;
}

namespace {

constexpr int kTileThreads = 256;      // threads of a partials block (rounded to lanes * H)
constexpr int kFinalizeMaxWarps = 32;  // the finalize block: one warp per horizon, at most 32
constexpr int kBackwardThreads = 256;
constexpr int kBackwardMaxBlocks = 2048;

// bce(x, y) = max(x, 0) - x y + log1p(exp(-|x|)), in the CPU's order; (x < 0 ? 0 : x) is
// std::max(x, 0.f) including its NaN behaviour.
__device__ __forceinline__ float bce_value(float x, float y) {
  const float pos = x < 0.0f ? 0.0f : x;
  return __fadd_rn(__fsub_rn(pos, __fmul_rn(x, y)), log1pf(expf(-fabsf(x))));
}

// model::sigmoid<float>: exp of a non-positive number only.
__device__ __forceinline__ float sigmoid_value(float x) {
  if (x >= 0.0f) return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
  const float e = expf(x);
  return __fdiv_rn(e, __fadd_rn(1.0f, e));
}

// Launch: `tiles` blocks of lanes * H threads (lanes = max(1, kTileThreads / H)); block b owns
// rows [b * rows_per_tile, min(rows, (b + 1) * rows_per_tile)). Thread t owns horizon t % H and
// rows r0 + t / H, r0 + t / H + lanes, ... (consecutive threads read consecutive elements).
// Output: part[b * H + h] = sum m bce, part[(tiles + b) * H + h] = sum m, both in double.
__global__ void bce_partials_kernel(const float* __restrict__ logits,
                                    const float* __restrict__ labels,
                                    const float* __restrict__ mask, int rows, int nh,
                                    int rows_per_tile, int lanes, double* __restrict__ part) {
  extern __shared__ double sh[];  // [2][lanes * nh]: num, den
  const int nt = lanes * nh;
  const int t = threadIdx.x;
  const int h = t % nh;
  const int lane = t / nh;
  const int r0 = blockIdx.x * rows_per_tile;
  const int r1 = min(rows, r0 + rows_per_tile);
  double num = 0.0, den = 0.0;
  for (int r = r0 + lane; r < r1; r += lanes) {
    const size_t i = static_cast<size_t>(r) * nh + h;
    const double m = mask[i];
    num += m * static_cast<double>(bce_value(logits[i], labels[i]));
    den += m;
  }
  sh[t] = num;
  sh[nt + t] = den;
  __syncthreads();
  // Ordered tree over the lanes of each horizon (also for lanes not a power of two).
  int half = 1;
  while (half < lanes) half <<= 1;
  for (int s = half >> 1; s > 0; s >>= 1) {
    if (lane < s && lane + s < lanes) {
      sh[t] += sh[t + s * nh];
      sh[nt + t] += sh[nt + t + s * nh];
    }
    __syncthreads();
  }
  if (lane == 0) {
    part[static_cast<size_t>(blockIdx.x) * nh + h] = sh[h];
    part[static_cast<size_t>(gridDim.x + blockIdx.x) * nh + h] = sh[nt + h];
  }
}

// z-scores of the ema across horizons (model::horizon_zscores): mean, population std; valid is
// false (z = 0) before the first update or when the std vanishes.
struct ZStats {
  double mean, sd;
  bool valid;
};
__device__ ZStats zstats(const double* ema, int nh, bool initialized) {
  ZStats z{0.0, 0.0, false};
  if (!initialized) return z;
  double mean = 0.0;
  for (int h = 0; h < nh; ++h) mean = __dadd_rn(mean, ema[h]);
  mean /= static_cast<double>(nh);
  double var = 0.0;
  for (int h = 0; h < nh; ++h) {
    const double d = __dsub_rn(ema[h], mean);
    var = __dadd_rn(var, __dmul_rn(d, d));
  }
  const double sd = sqrt(var / static_cast<double>(nh));
  z.mean = mean;
  z.sd = sd;
  z.valid = sd > 1e-12 * (fabs(mean) + 1e-30);
  return z;
}
__device__ __forceinline__ double zscore(const ZStats& z, double ema) {
  return z.valid ? __dsub_rn(ema, z.mean) / z.sd : 0.0;
}

// Launch: one block of 32 * min(H, 32) threads. Warp w reduces horizons w, w + warps, ... over
// the tiles (lane l sums tiles l, l + 32, ... in order, then a fixed shuffle tree); thread 0 then
// runs the serial controller / combine part in horizon order, as model::loss_step.
// coef[h] = w_h / sum m (the backward's scale), coef[H + h] = sum m.
__global__ void loss_finalize_kernel(LossConfig cfg, int nh, int tiles,
                                     const double* __restrict__ part, const float* log_sigma,
                                     float* dlog_sigma, double* ema, ControllerScalars* sc,
                                     int update_state, double* total_out, double* loss_h_out,
                                     float* weight_out, float* lambda_out, float* coef) {
  extern __shared__ double sums[];  // [2][H]: num, den
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int h = warp; h < nh; h += warps) {
    double num = 0.0, den = 0.0;
    for (int b = lane; b < tiles; b += 32) {
      num += part[static_cast<size_t>(b) * nh + h];
      den += part[static_cast<size_t>(tiles + b) * nh + h];
    }
    for (int off = 16; off > 0; off >>= 1) {
      num += __shfl_down_sync(0xffffffffu, num, off);
      den += __shfl_down_sync(0xffffffffu, den, off);
    }
    if (lane == 0) {
      sums[h] = num;
      sums[nh + h] = den;
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  // L_h as the CPU's float value (0 without any masked row).
  for (int h = 0; h < nh; ++h) {
    const double den = sums[nh + h];
    const float loss = den > 0.0 ? static_cast<float>(sums[h] / den) : 0.0f;
    loss_h_out[h] = static_cast<double>(loss);
    coef[nh + h] = static_cast<float>(den);
  }

  // model::update_controllers: ema first, then zmax from the new ema's z-scores.
  if (update_state) {
    const bool ema_init = sc->ema_initialized != 0;
    for (int h = 0; h < nh; ++h) {
      ema[h] = ema_init ? __dadd_rn(__dmul_rn(1.0 - cfg.ema_alpha, ema[h]),
                                    __dmul_rn(cfg.ema_alpha, loss_h_out[h]))
                        : loss_h_out[h];
    }
    sc->ema_initialized = 1;
    const ZStats z = zstats(ema, nh, true);
    double zabs = 0.0;
    for (int h = 0; h < nh; ++h) zabs = fmax(zabs, fabs(zscore(z, ema[h])));
    sc->zmax = sc->zmax_initialized != 0 ? __dadd_rn(__dmul_rn(1.0 - cfg.zmax_alpha, sc->zmax),
                                                     __dmul_rn(cfg.zmax_alpha, zabs))
                                         : zabs;
    sc->zmax_initialized = 1;
    sc->step += 1;
  }

  // model::combine_horizons<float>.
  const bool ema_init = sc->ema_initialized != 0;
  float total = 0.0f;
  for (int h = 0; h < nh; ++h) {
    const float loss = static_cast<float>(loss_h_out[h]);
    float w = 1.0f;
    if (cfg.weighting == HorizonWeighting::kUniform) {
      total = __fadd_rn(total, loss);
    } else {
      float ls;
      if (cfg.weighting == HorizonWeighting::kKendallClosed) {
        // sigma from the detached ema; before any update from L_h itself.
        const double e = ema_init ? ema[h] : static_cast<double>(loss);
        const double half_log = 0.5 * log(e);
        // std::max(min_log_sigma, half_log): a NaN half_log gives the floor.
        ls = static_cast<float>(cfg.min_log_sigma < half_log ? half_log : cfg.min_log_sigma);
      } else {
        ls = log_sigma[h];
      }
      w = __fmul_rn(0.5f, expf(__fmul_rn(-2.0f, ls)));  // 1 / (2 sigma^2)
      total = __fadd_rn(total, __fadd_rn(__fmul_rn(w, loss), ls));
      if (cfg.weighting == HorizonWeighting::kKendall && dlog_sigma != nullptr) {
        dlog_sigma[h] =
            __fadd_rn(dlog_sigma[h], __fadd_rn(__fmul_rn(__fmul_rn(-2.0f, w), loss), 1.0f));
      }
    }
    weight_out[h] = w;
    const float den = coef[nh + h];
    coef[h] = den > 0.0f ? __fdiv_rn(w, den) : 0.0f;
  }
  *total_out = static_cast<double>(total);

  // model::trunk_lambdas from the (updated) state.
  const bool lambda_on = cfg.trunk_lambda && sc->zmax_initialized != 0 && sc->zmax > 0.0;
  const ZStats z = zstats(ema, nh, ema_init);
  for (int h = 0; h < nh; ++h) {
    double lambda = 1.0;
    if (lambda_on) {
      const double v = 1.0 + zscore(z, ema[h]) / sc->zmax;
      lambda = v < 1.0 ? 1.0 : (2.0 < v ? 2.0 : v);  // std::clamp(v, 1, 2)
    }
    lambda_out[h] = static_cast<float>(lambda);
  }
}

// Launch: grid-stride over the rows * H elements. dlogits[i] += (w_h / den_h) m (sigmoid(x) - y)
// for horizons with den_h > 0 (the CPU skips the others).
__global__ void bce_backward_kernel(const float* __restrict__ logits,
                                    const float* __restrict__ labels,
                                    const float* __restrict__ mask, const float* __restrict__ coef,
                                    int nh, size_t n, float* __restrict__ dlogits) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int h = static_cast<int>(i % static_cast<size_t>(nh));
    if (!(coef[nh + h] > 0.0f)) continue;
    const float g =
        __fmul_rn(__fmul_rn(coef[h], mask[i]), __fsub_rn(sigmoid_value(logits[i]), labels[i]));
    dlogits[i] = __fadd_rn(dlogits[i], g);
  }
}

}  // namespace

void loss_step(const Context& ctx, const LossConfig& cfg, int horizons, int rows,
               const float* logits, const float* labels, const float* mask, const float* log_sigma,
               float* dlogits, float* dlog_sigma, DeviceControllerState& state, bool update_state,
               LossOutputs& out) {
  assert(horizons >= 1 && horizons <= kLossMaxHorizons && rows >= 0);
  assert(state.horizons() == horizons && out.horizons() == horizons);
  assert(cfg.weighting != HorizonWeighting::kKendall || log_sigma != nullptr);
  const int nh = horizons;

  // 1. partials over a fixed partition of the rows (depends on `rows` only).
  int tiles = (rows + kLossRowsPerTile - 1) / kLossRowsPerTile;
  tiles = tiles < 1 ? 1 : (tiles > kLossMaxTiles ? kLossMaxTiles : tiles);
  const int rows_per_tile = (rows + tiles - 1) / tiles;
  const int lanes = kTileThreads / nh > 1 ? kTileThreads / nh : 1;
  const int threads = lanes * nh;
  bce_partials_kernel<<<tiles, threads, 2 * static_cast<size_t>(threads) * sizeof(double),
                        ctx.stream()>>>(logits, labels, mask, rows, nh, rows_per_tile, lanes,
                                        out.partials());
  FXT_CUDA_LAUNCH_CHECK();

  // 2. reductions over the tiles, controllers, combine, lambdas.
  const int warps = nh < kFinalizeMaxWarps ? nh : kFinalizeMaxWarps;
  loss_finalize_kernel<<<1, 32 * warps, 2 * static_cast<size_t>(nh) * sizeof(double),
                         ctx.stream()>>>(cfg, nh, tiles, out.partials(), log_sigma, dlog_sigma,
                                         state.ema(), state.scalars(), update_state ? 1 : 0,
                                         out.total(), out.loss_h(), out.weight(), out.lambda(),
                                         out.backward_coef());
  FXT_CUDA_LAUNCH_CHECK();

  // 3. the BCE gradient.
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(nh);
  if (dlogits != nullptr && n > 0) {
    size_t blocks = (n + kBackwardThreads - 1) / kBackwardThreads;
    if (blocks > kBackwardMaxBlocks) blocks = kBackwardMaxBlocks;
    bce_backward_kernel<<<static_cast<int>(blocks), kBackwardThreads, 0, ctx.stream()>>>(
        logits, labels, mask, out.backward_coef(), nh, n, dlogits);
    FXT_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace fxt::gpu
