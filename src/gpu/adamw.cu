// AdamW, clipping and the learning-rate schedule on the GPU (see adamw.h).
//
// Float arithmetic that mirrors fxt::AdamW::step uses the explicitly rounded intrinsics so that
// nvcc cannot contract products and sums into FMAs (the CPU build uses -ffp-contract=off).
#include <cassert>
#include <cmath>
#include <cstdio>
#include <string>

#include "gpu/adamw.h"

namespace fxt::gpu {

namespace {

constexpr uint8_t kInactive = kAdamMaxGroups;  // group id of an element no segment covers
constexpr int kNormThreads = 256;
constexpr int kFinalizeThreads = 256;
constexpr int kUpdateThreads = 256;
constexpr int kUpdateMaxBlocks = 4096;

[[noreturn]] void registration_error(const std::string& what) {
  cuda_fail("gpu::AdamW::add_buffer", what.c_str(), __FILE__, __LINE__);
}

// Every registered buffer, by value as a kernel argument. Buffer k owns the elements
// [start[k], start[k] + n[k]) of the concatenated index space; the buffers follow each other in
// registration order.
struct BufferTable {
  int count;
  float* p[kAdamMaxBuffers];
  float* g[kAdamMaxBuffers];
  float* m[kAdamMaxBuffers];
  float* v[kAdamMaxBuffers];
  const uint8_t* id[kAdamMaxBuffers];
  long long start[kAdamMaxBuffers];
  long long n[kAdamMaxBuffers];
};

// Blocks of the norm partition: a function of the registered element count only.
int norm_blocks(size_t total) {
  size_t b = (total + kAdamNormElemsPerBlock - 1) / kAdamNormElemsPerBlock;
  if (b < 1) b = 1;
  if (b > static_cast<size_t>(kAdamMaxNormBlocks)) b = kAdamMaxNormBlocks;
  return static_cast<int>(b);
}

// Ordered tree over the kThreads doubles of sh (kThreads a power of two); the sum ends in sh[0].
template <int kThreads>
__device__ void block_tree_sum(double* sh) {
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
}

// Launch: norm_blocks(total) blocks of kNormThreads. Block b owns the elements
// [b * chunk, min(total, (b + 1) * chunk)); thread t sums g^2 (double, exact products) of the
// active elements t, t + kNormThreads, ... of each buffer's part of that range.
__global__ void grad_sq_partials_kernel(BufferTable t, long long total, long long chunk,
                                        double* __restrict__ partials) {
  __shared__ double sh[kNormThreads];
  const long long lo = blockIdx.x * chunk;
  const long long hi = min(total, lo + chunk);
  double s = 0.0;
  for (int k = 0; k < t.count; ++k) {
    const long long a = max(lo, t.start[k]);
    const long long e = min(hi, t.start[k] + t.n[k]);
    const float* g = t.g[k];
    const uint8_t* id = t.id[k];
    for (long long i = a + threadIdx.x; i < e; i += kNormThreads) {
      const long long j = i - t.start[k];
      if (id[j] != kInactive) {
        const double x = g[j];
        s += x * x;
      }
    }
  }
  sh[threadIdx.x] = s;
  __syncthreads();
  block_tree_sum<kNormThreads>(sh);
  if (threadIdx.x == 0) partials[blockIdx.x] = sh[0];
}

// fxt::LrSchedule::lr_at.
__device__ double schedule_lr(const LrSchedule& s, long long step) {
  if (step < 0) step = 0;
  if (step < s.warmup_steps) {
    return s.peak_lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  if (step >= s.total_steps) return s.peak_lr * s.min_lr_ratio;
  const double progress = static_cast<double>(step - s.warmup_steps) /
                          static_cast<double>(s.total_steps - s.warmup_steps);
  const double pi = 3.141592653589793238462643383279502884;
  const double cosine = 0.5 * (1.0 + cos(pi * progress));
  return s.peak_lr * __dadd_rn(s.min_lr_ratio, __dmul_rn(1.0 - s.min_lr_ratio, cosine));
}

// Launch: one block of kFinalizeThreads. Thread t sums partials t, t + kFinalizeThreads, ... in
// order, then an ordered tree; thread 0 derives the step's scalars and counters; then threads
// compute each group's float step size lr * mult / bc1 and decay factor 1 - lr * mult * wd
// (gcoef [2][kAdamMaxGroups]).
__global__ void adamw_finalize_kernel(const double* __restrict__ partials, int blocks,
                                      AdamWConfig cfg, LrSchedule sched, const double* external_lr,
                                      int groups, const double* __restrict__ group_mult,
                                      const int* __restrict__ group_decay, AdamWCounters* ctr,
                                      AdamWStats* stats, AdamWStepCoef* coef, float* gcoef) {
  __shared__ double sh[kFinalizeThreads];
  __shared__ double s_lr, s_bc1;
  __shared__ int s_applied;
  double s = 0.0;
  for (int b = threadIdx.x; b < blocks; b += kFinalizeThreads) s += partials[b];
  sh[threadIdx.x] = s;
  __syncthreads();
  block_tree_sum<kFinalizeThreads>(sh);
  if (threadIdx.x == 0) {
    const double norm = sqrt(sh[0]);
    const long long sched_step = ctr->schedule_step;
    const double lr = external_lr != nullptr ? *external_lr : schedule_lr(sched, sched_step);
    ctr->schedule_step = sched_step + 1;  // every call, as the trainer's step
    AdamWStats st{};
    st.grad_norm = norm;
    st.clip_scale = 1.0;
    st.lr = lr;
    st.applied = 0;
    AdamWStepCoef c{1.0f, 1.0f, 0, 0};
    double bc1 = 1.0;
    if (isfinite(norm)) {
      if (cfg.max_grad_norm > 0 && norm > cfg.max_grad_norm) {
        st.clip_scale = cfg.max_grad_norm / norm;
        c.clip = static_cast<float>(st.clip_scale);
        c.clip_on = 1;
      }
      const long long t = ctr->step + 1;
      ctr->step = t;
      bc1 = 1.0 - pow(cfg.beta1, static_cast<double>(t));
      const double bc2 = 1.0 - pow(cfg.beta2, static_cast<double>(t));
      c.inv_sqrt_bc2 = static_cast<float>(1.0 / sqrt(bc2));
      c.applied = 1;
      st.applied = 1;
    }
    *stats = st;
    *coef = c;
    s_lr = lr;
    s_bc1 = bc1;
    s_applied = c.applied;
  }
  __syncthreads();
  if (!s_applied) return;
  for (int g = threadIdx.x; g < groups; g += kFinalizeThreads) {
    const double group_lr = __dmul_rn(s_lr, group_mult[g]);
    gcoef[g] = static_cast<float>(group_lr / s_bc1);
    gcoef[kAdamMaxGroups + g] =
        group_decay[g] ? static_cast<float>(__dsub_rn(1.0, __dmul_rn(group_lr, cfg.weight_decay)))
                       : 1.0f;
  }
}

// Launch: grid-stride over the concatenated elements, kUpdateThreads per block. Per active
// element: g *= clip (written back), then
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g;
//   p = p decay - step_size m / (sqrt(v) / sqrt(bc2) + eps)
// in float, in fxt::AdamW::step's order. The whole kernel is a no-op on a skipped step.
__global__ void adamw_update_kernel(BufferTable t, long long total,
                                    const AdamWStepCoef* __restrict__ coef_p,
                                    const float* __restrict__ gcoef, float beta1, float beta2,
                                    float one_minus_beta1, float one_minus_beta2, float eps) {
  const AdamWStepCoef c = *coef_p;
  if (!c.applied) return;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    int k = 0;
    while (k + 1 < t.count && i >= t.start[k + 1]) ++k;
    const long long j = i - t.start[k];
    const int id = t.id[k][j];
    if (id == kInactive) continue;
    float g = t.g[k][j];
    if (c.clip_on) {
      g = __fmul_rn(g, c.clip);
      t.g[k][j] = g;
    }
    const float m = __fadd_rn(__fmul_rn(beta1, t.m[k][j]), __fmul_rn(one_minus_beta1, g));
    const float v =
        __fadd_rn(__fmul_rn(beta2, t.v[k][j]), __fmul_rn(__fmul_rn(one_minus_beta2, g), g));
    t.m[k][j] = m;
    t.v[k][j] = v;
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(v), c.inv_sqrt_bc2), eps);
    const float step_size = gcoef[id];
    const float decay = gcoef[kAdamMaxGroups + id];
    t.p[k][j] = __fsub_rn(__fmul_rn(t.p[k][j], decay), __fdiv_rn(__fmul_rn(step_size, m), denom));
  }
}

}  // namespace

AdamW::AdamW(const AdamWConfig& cfg, const LrSchedule& schedule)
    : cfg_(cfg),
      schedule_(schedule),
      group_multiplier_dev_(kAdamMaxGroups),
      group_decay_dev_(kAdamMaxGroups),
      group_coef_(2 * static_cast<size_t>(kAdamMaxGroups)),
      partials_(kAdamMaxNormBlocks),
      stats_(1),
      counters_(1),
      coef_(1) {
  group_multiplier_dev_.zero();
  group_decay_dev_.zero();
  group_coef_.zero();
  partials_.zero();
  stats_.zero();
  counters_.zero();
  coef_.zero();
  FXT_CUDA_CHECK(cudaDeviceSynchronize());  // the memsets run on the legacy stream
}

uint8_t AdamW::group_of(double multiplier, bool decay) {
  const int d = decay ? 1 : 0;
  for (size_t g = 0; g < group_multiplier_.size(); ++g) {
    if (group_multiplier_[g] == multiplier && group_decay_[g] == d) return static_cast<uint8_t>(g);
  }
  if (!(std::isfinite(multiplier) && multiplier >= 0)) {
    registration_error("learning-rate multiplier " + std::to_string(multiplier) +
                       " is not finite and >= 0");
  }
  if (group_multiplier_.size() >= static_cast<size_t>(kAdamMaxGroups)) {
    registration_error("more than " + std::to_string(kAdamMaxGroups) +
                       " distinct (multiplier, decay) pairs");
  }
  group_multiplier_.push_back(multiplier);
  group_decay_.push_back(d);
  return static_cast<uint8_t>(group_multiplier_.size() - 1);
}

int AdamW::add_buffer(const Context& ctx, float* params, float* grads, size_t n,
                      const std::vector<uint8_t>& weight_decay,
                      const std::vector<double>& lr_multiplier) {
  if (weight_decay.size() != n || lr_multiplier.size() != n) {
    registration_error("per-element lists of " + std::to_string(weight_decay.size()) + " and " +
                       std::to_string(lr_multiplier.size()) + " entries for a buffer of " +
                       std::to_string(n));
  }
  std::vector<uint8_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = group_of(lr_multiplier[i], weight_decay[i] != 0);
  return add_buffer_ids(ctx, params, grads, n, ids);
}

int AdamW::add_buffer(const Context& ctx, float* params, float* grads, size_t n,
                      const std::vector<AdamSegment>& segments) {
  std::vector<uint8_t> ids(n, kInactive);
  for (const AdamSegment& s : segments) {
    if (s.offset > n || s.size > n - s.offset) {
      registration_error("segment [" + std::to_string(s.offset) + ", " +
                         std::to_string(s.offset + s.size) + ") lies outside the buffer of " +
                         std::to_string(n));
    }
    const uint8_t id = group_of(s.lr_multiplier, s.weight_decay);
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      if (ids[i] != kInactive)
        registration_error("segments overlap at element " + std::to_string(i));
      ids[i] = id;
    }
  }
  return add_buffer_ids(ctx, params, grads, n, ids);
}

int AdamW::add_buffer_ids(const Context& ctx, float* params, float* grads, size_t n,
                          const std::vector<uint8_t>& ids) {
  if (buffers_.size() >= static_cast<size_t>(kAdamMaxBuffers)) {
    registration_error("more than " + std::to_string(kAdamMaxBuffers) + " buffers");
  }
  Buffer b;
  b.params = params;
  b.grads = grads;
  b.n = n;
  b.start = total_;
  b.m.resize(n);
  b.v.resize(n);
  b.group_id.resize(n);
  const cudaStream_t st = ctx.stream();
  if (n > 0) {
    FXT_CUDA_CHECK(cudaMemsetAsync(b.m.data(), 0, n * sizeof(float), st));
    FXT_CUDA_CHECK(cudaMemsetAsync(b.v.data(), 0, n * sizeof(float), st));
    FXT_CUDA_CHECK(cudaMemcpyAsync(b.group_id.data(), ids.data(), n, cudaMemcpyHostToDevice, st));
  }
  // The group tables, padded to kAdamMaxGroups.
  std::vector<double> mult(kAdamMaxGroups, 0.0);
  std::vector<int> decay(kAdamMaxGroups, 0);
  for (size_t g = 0; g < group_multiplier_.size(); ++g) {
    mult[g] = group_multiplier_[g];
    decay[g] = group_decay_[g];
  }
  FXT_CUDA_CHECK(cudaMemcpyAsync(group_multiplier_dev_.data(), mult.data(),
                                 mult.size() * sizeof(double), cudaMemcpyHostToDevice, st));
  FXT_CUDA_CHECK(cudaMemcpyAsync(group_decay_dev_.data(), decay.data(), decay.size() * sizeof(int),
                                 cudaMemcpyHostToDevice, st));
  ctx.sync();  // the host vectors must outlive the copies
  total_ += n;
  buffers_.push_back(std::move(b));
  return static_cast<int>(buffers_.size() - 1);
}

void AdamW::step(const Context& ctx, const double* external_lr) {
  assert(!buffers_.empty());
  BufferTable t{};
  t.count = static_cast<int>(buffers_.size());
  for (size_t k = 0; k < buffers_.size(); ++k) {
    Buffer& b = buffers_[k];
    t.p[k] = b.params;
    t.g[k] = b.grads;
    t.m[k] = b.m.data();
    t.v[k] = b.v.data();
    t.id[k] = b.group_id.data();
    t.start[k] = static_cast<long long>(b.start);
    t.n[k] = static_cast<long long>(b.n);
  }
  const long long total = static_cast<long long>(total_);
  const int blocks = norm_blocks(total_);
  const long long chunk = (total + blocks - 1) / blocks;

  grad_sq_partials_kernel<<<blocks, kNormThreads, 0, ctx.stream()>>>(t, total, chunk,
                                                                     partials_.data());
  FXT_CUDA_LAUNCH_CHECK();

  adamw_finalize_kernel<<<1, kFinalizeThreads, 0, ctx.stream()>>>(
      partials_.data(), blocks, cfg_, schedule_, external_lr,
      static_cast<int>(group_multiplier_.size()), group_multiplier_dev_.data(),
      group_decay_dev_.data(), counters_.data(), stats_.data(), coef_.data(), group_coef_.data());
  FXT_CUDA_LAUNCH_CHECK();

  if (total > 0) {
    long long ublocks = (total + kUpdateThreads - 1) / kUpdateThreads;
    if (ublocks > kUpdateMaxBlocks) ublocks = kUpdateMaxBlocks;
    adamw_update_kernel<<<static_cast<int>(ublocks), kUpdateThreads, 0, ctx.stream()>>>(
        t, total, coef_.data(), group_coef_.data(), static_cast<float>(cfg_.beta1),
        static_cast<float>(cfg_.beta2), static_cast<float>(1.0 - cfg_.beta1),
        static_cast<float>(1.0 - cfg_.beta2), static_cast<float>(cfg_.eps));
    FXT_CUDA_LAUNCH_CHECK();
  }
}

AdamWHostState AdamW::download_state(const Context& ctx) const {
  AdamWHostState s;
  s.m.resize(buffers_.size());
  s.v.resize(buffers_.size());
  const cudaStream_t st = ctx.stream();
  for (size_t k = 0; k < buffers_.size(); ++k) {
    const Buffer& b = buffers_[k];
    s.m[k].resize(b.n);
    s.v[k].resize(b.n);
    if (b.n == 0) continue;
    FXT_CUDA_CHECK(cudaMemcpyAsync(s.m[k].data(), b.m.data(), b.n * sizeof(float),
                                   cudaMemcpyDeviceToHost, st));
    FXT_CUDA_CHECK(cudaMemcpyAsync(s.v[k].data(), b.v.data(), b.n * sizeof(float),
                                   cudaMemcpyDeviceToHost, st));
  }
  AdamWCounters c{};
  FXT_CUDA_CHECK(cudaMemcpyAsync(&c, counters_.data(), sizeof c, cudaMemcpyDeviceToHost, st));
  ctx.sync();
  s.step = static_cast<int64_t>(c.step);
  s.schedule_step = static_cast<int64_t>(c.schedule_step);
  return s;
}

void AdamW::upload_state(const Context& ctx, const AdamWHostState& state) {
  assert(state.m.size() == buffers_.size() && state.v.size() == buffers_.size());
  const cudaStream_t st = ctx.stream();
  for (size_t k = 0; k < buffers_.size(); ++k) {
    const Buffer& b = buffers_[k];
    assert(state.m[k].size() == b.n && state.v[k].size() == b.n);
    if (b.n == 0) continue;
    FXT_CUDA_CHECK(cudaMemcpyAsync(buffers_[k].m.data(), state.m[k].data(), b.n * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
    FXT_CUDA_CHECK(cudaMemcpyAsync(buffers_[k].v.data(), state.v[k].data(), b.n * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
  }
  AdamWCounters c{};
  c.step = static_cast<long long>(state.step);
  c.schedule_step = static_cast<long long>(state.schedule_step);
  FXT_CUDA_CHECK(cudaMemcpyAsync(counters_.data(), &c, sizeof c, cudaMemcpyHostToDevice, st));
  ctx.sync();  // `c` and the host vectors must outlive the copies
}

AdamWStats AdamW::download_stats(const Context& ctx) const {
  AdamWStats s{};
  FXT_CUDA_CHECK(
      cudaMemcpyAsync(&s, stats_.data(), sizeof s, cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  return s;
}

}  // namespace fxt::gpu
