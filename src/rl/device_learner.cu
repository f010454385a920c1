#include "rl/device_learner.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "core/random.h"
#include "rl/device_act.cuh"
#include "rl/device_batch_ops.cuh"
#include "rl/device_learner_impl.cuh"
#include "rl/device_losses.cuh"
#include "rl/device_transitions.cuh"
#include "rl/env_lane.h"
#include "rl/per_math.h"

namespace fxt::rl {
namespace {

constexpr int kEvalChunk = 32;  // env steps per evaluation graph replay

int max_width(const DeviceLearnerConfig& c) {
  int w = c.obs_dim;
  for (const DeviceLayer& l : c.layers) w = std::max(w, std::max(l.in, l.out));
  if (c.dueling) w = std::max(w, std::max(c.value.in, c.value.out));
  if (c.iqn_embedding > 0) w = std::max(w, std::max(c.embed.in, c.embed.out));
  return w;
}

// Evaluation bookkeeping, one thread per lane (grid ceil(n / 256), 256 threads): the reward
// counts while the lane's first episode runs; *remaining (integer atomics: order-free) counts the
// lanes still in it.
__global__ void eval_accumulate_kernel(const float* reward, const uint8_t* terminated,
                                       const uint8_t* truncated, int n, double* ret,
                                       uint8_t* done) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || done[i]) return;
  ret[i] += static_cast<double>(reward[i]);
  if (terminated[i] || truncated[i]) done[i] = 1;
}
__global__ void eval_remaining_kernel(const uint8_t* done, int n, int* remaining) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *remaining = 0;
  __syncthreads();
  int mine = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) mine += done[i] ? 0 : 1;
  if (mine) atomicAdd(remaining, mine);
}
// rngs[i] = Rng(lane_seed(seed, i, stream)): grid-stride (grid_for), 256 threads.
__global__ void seed_rngs_kernel(Rng* rngs, int n, uint64_t seed, uint64_t stream) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    rngs[i] = Rng(lane_seed(seed, static_cast<uint64_t>(i), stream));
}

}  // namespace

DeviceC51Learner::DeviceC51Learner(const DeviceLearnerConfig& cfg, DeviceVecEnv* env,
                                   const gpu::Context& ctx, const std::vector<float>& params)
    : cfg_(cfg), env_(env), ctx_(ctx), impl_(std::make_unique<Impl>()) {
  const int L = static_cast<int>(cfg.layers.size());
  assert(L >= 1 && L <= kMaxLayers);
  assert(params.size() == cfg.num_params);
  assert(env->num_envs() == cfg.num_envs && env->obs_dim() == cfg.obs_dim &&
         env->num_actions() == cfg.num_actions);
  assert(cfg.layers.back().out == cfg.num_actions * cfg.atoms);
  assert(!cfg.dueling || (cfg.value.out == cfg.atoms && cfg.value.in == cfg.layers.back().in));
  const bool iqn = cfg.iqn_embedding > 0;
  assert(cfg.quantile || iqn ? cfg.atom_values.empty()
                             : static_cast<int>(cfg.atom_values.size()) == cfg.atoms);
  assert(!iqn ||
         (cfg.atoms == 1 && L >= 2 && cfg.embed.in == cfg.iqn_embedding &&
          cfg.embed.out == cfg.layers.back().in && cfg.iqn_taus >= 1 && cfg.iqn_policy_taus >= 1));
  assert(cfg.buffer_size >= cfg.num_envs);
  assert(cfg.n_step >= 1);
  assert(!(cfg.mirror || cfg.symmetric_policy) || !cfg.mirror_sign.empty());
  assert(!cfg.symmetric_policy || (!iqn && !cfg.thompson));  // DqnConfig::validate's refusals
  Impl& m = *impl_;
  const size_t P = cfg.num_params, N = static_cast<size_t>(cfg.num_envs);
  const size_t B = static_cast<size_t>(cfg.batch), d = static_cast<size_t>(cfg.obs_dim);
  const size_t cap = static_cast<size_t>(cfg.buffer_size);
  const size_t AK = static_cast<size_t>(cfg.num_actions) * static_cast<size_t>(cfg.atoms);
  const size_t W = static_cast<size_t>(max_width(cfg));
  m.online.upload(params);
  m.target.upload(params);
  m.grads.resize(P);
  m.grads.zero();
  if (!cfg.quantile && !iqn) m.atoms.upload(cfg.atom_values);
  m.act_rngs.resize(N);
  if (!cfg.mirror_sign.empty()) {
    assert(cfg.mirror_sign.size() == static_cast<size_t>(cfg.obs_dim) &&
           cfg.mirror_action.size() == static_cast<size_t>(cfg.num_actions));
    m.mirror_sign.upload(cfg.mirror_sign);
    m.mirror_action.upload(cfg.mirror_action);
    if (cfg.mirror) m.mirror = {m.mirror_sign.data(), m.mirror_action.data()};
    if (cfg.symmetric_policy) m.sym = {m.mirror_sign.data(), m.mirror_action.data()};
  }
  m.sample_rngs.resize(B);
  m.actions.resize(N);
  m.q_last.resize(N * static_cast<size_t>(cfg.num_actions));
  m.r_obs.resize(cap * d);
  m.r_next.resize(cap * d);
  m.r_act.resize(cap);
  m.r_rew.resize(cap);
  m.r_disc.resize(cap);
  if (cfg.n_step > 1) {
    const size_t rows = N * static_cast<size_t>(cfg.n_step);
    m.p_obs.resize(rows * d);
    m.p_next.resize(rows * d);
    m.p_rew.resize(rows);
    m.p_act.resize(rows);
    m.p_end.resize(rows);
  }
  m.lane_ret.resize(N);
  m.recent.resize(kRecentEpisodes);
  m.stats.resize(1);
  m.lr.upload(std::vector<double>{cfg.lr});
  m.idx.resize(B);
  m.b_act.resize(B);
  m.b_obs.resize(B * d);
  m.b_next.resize(B * d);
  m.b_rew.resize(B);
  m.b_disc.resize(B);
  m.acts.resize(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l)
    m.acts[static_cast<size_t>(l)].resize(
        B * static_cast<size_t>(cfg.layers[static_cast<size_t>(l)].out));
  m.tmp0.resize(B * W);
  m.tmp1.resize(B * W);
  m.next_t.resize(B * AK);
  m.next_o.resize(B * AK);
  m.d_out.resize(B * AK);
  m.d_a.resize(B * W);
  m.d_b.resize(B * W);
  m.loss_b.resize(B);
  m.q_b.resize(B);
  const size_t K = static_cast<size_t>(cfg.atoms);
  if (cfg.munchausen) m.cur_t.resize(B * AK);
  if (cfg.symmetric_policy) {
    m.b_obs_m.resize(B * d);
    m.b_next_m.resize(B * d);
    m.next_tm.resize(B * AK);
    m.next_om.resize(B * AK);
    m.cur_tm.resize(B * AK);
  }
  // IQN: the head runs on B·N or B·K rows (its value stream too).
  const size_t NT = static_cast<size_t>(cfg.iqn_taus),
               KT = static_cast<size_t>(cfg.iqn_policy_taus);
  const size_t head_rows = iqn ? B * std::max(NT, KT) : B;
  if (cfg.dueling) {
    m.value.resize(head_rows * K);
    m.d_value.resize(head_rows * K);
    m.d_adv.resize(head_rows * AK);
  }
  if (iqn) {
    const size_t E = static_cast<size_t>(cfg.iqn_embedding), H = static_cast<size_t>(cfg.embed.out);
    const size_t R = head_rows, A = static_cast<size_t>(cfg.num_actions);
    m.taus.resize(B * NT);
    m.taus_next.resize(B * NT);
    std::vector<float> pol(B * KT);
    for (size_t i = 0; i < pol.size(); ++i)  // DqnAgent's taus_policy_, one copy per row
      pol[i] = (static_cast<float>(i % KT) + 0.5f) / static_cast<float>(KT);
    m.taus_pol.upload(pol);
    m.k_cos.resize(B * NT * E);
    m.k_phi.resize(B * NT * H);
    m.k_mix.resize(B * NT * H);
    m.s_cos.resize(R * E);
    m.s_phi.resize(R * H);
    m.s_mix.resize(R * H);
    m.out_k.resize(R * A);
    m.q_sel.resize(B * A);
    m.q_cur.resize(B * A);
    m.next_t.resize(B * NT * A);
    m.d_out.resize(B * NT * A);
    m.d_mix.resize(B * NT * H);
    m.d_psi.resize(B * H);
    m.acts.back().resize(B * NT * A);  // the kept head output [B, N, A]
  }
  m.atom_values = cfg.quantile || iqn ? nullptr : m.atoms.data();
  m.net.count = L;
  for (int l = 0; l < L; ++l) m.net.layer[l] = cfg.layers[static_cast<size_t>(l)];
  m.net.value = cfg.value;
  m.net.dueling = cfg.dueling;
  m.net.embed = cfg.embed;
  m.net.iqn_e = cfg.iqn_embedding;
  m.net.iqn_k = cfg.iqn_policy_taus;
  m.act_smem = ((iqn ? 3 : 2) * W + 3 * static_cast<size_t>(cfg.num_actions) + K) * sizeof(float);
  m.loss_smem = (iqn || cfg.quantile
                     ? quantile_loss_smem_floats(cfg.num_actions, iqn ? cfg.iqn_taus : cfg.atoms,
                                                 cfg.symmetric_policy)
                     : c51_loss_smem_floats(cfg.num_actions, cfg.atoms)) *
                sizeof(float);
  FXT_CUDA_CHECK(cudaFuncSetAttribute(act_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(m.act_smem)));
  const int loss_smem = static_cast<int>(m.loss_smem);
  if (iqn) {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(iqn_loss_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, loss_smem));
  } else if (cfg.quantile) {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(qr_dqn_loss_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, loss_smem));
  } else {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(c51_loss_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, loss_smem));
  }
  gpu::AdamWConfig ac;
  ac.eps = cfg.adam_eps;
  ac.weight_decay = 0;  // plain Adam, as DqnAgent
  ac.max_grad_norm = cfg.max_grad_norm;
  m.adam = std::make_unique<gpu::AdamW>(ac, gpu::LrSchedule{});
  m.adam->add_buffer(ctx, m.online.data(), m.grads.data(), P, cfg.segments);
  if (cfg.per_alpha > 0)
    m.per = std::make_unique<DevicePrioritizedReplay>(cfg.buffer_size, cfg.batch, cfg.per_alpha,
                                                      cfg.per_beta0, cfg.total_steps);
  reset(0);
  if (cfg.train_frequency % cfg.num_envs == 0) chunk_ = cfg.train_frequency / cfg.num_envs;
  m.g_env.capture(ctx, [&] { enqueue_env_step(); });
  m.g_update.capture(ctx, [&] { enqueue_update(true); });
  m.g_target.capture(ctx, [&] { enqueue_target_update(); });
  if (chunk_ > 0) {
    m.g_chunk.capture(ctx, [&] {
      for (int k = 0; k < chunk_; ++k) enqueue_env_step();
    });
    m.g_chunk_update.capture(ctx, [&] {
      for (int k = 0; k < chunk_; ++k) enqueue_env_step();
      enqueue_update(true);
    });
  }
}

DeviceC51Learner::~DeviceC51Learner() = default;

void DeviceC51Learner::reset(uint64_t env_seed) {
  Impl& m = *impl_;
  const int N = cfg_.num_envs, B = cfg_.batch;
  env_->reset(env_seed, ctx_.stream());
  seed_rngs_kernel<<<grid_for(static_cast<size_t>(N), 256), 256, 0, ctx_.stream()>>>(
      m.act_rngs.data(), N, cfg_.seed, 11);
  seed_rngs_kernel<<<grid_for(static_cast<size_t>(B), 256), 256, 0, ctx_.stream()>>>(
      m.sample_rngs.data(), B, cfg_.seed, 13);
  FXT_CUDA_LAUNCH_CHECK();
  ctx_.sync();
  m.lane_ret.zero();
  m.recent.zero();
  m.stats.zero();
  m.r_obs.zero();
  m.r_next.zero();
  m.r_act.zero();
  m.r_rew.zero();
  m.r_disc.zero();
  if (m.per) m.per->reset();
  if (cfg_.n_step > 1) {
    m.p_obs.zero();
    m.p_next.zero();
    m.p_rew.zero();
    m.p_act.zero();
    m.p_end.zero();
  }
}

void DeviceC51Learner::enqueue_env_step() {
  Impl& m = *impl_;
  const int N = cfg_.num_envs, d = cfg_.obs_dim;
  const EpsSchedule eps{cfg_.eps_start, cfg_.eps_end, cfg_.exploration_fraction,
                        static_cast<long long>(cfg_.total_steps), cfg_.thompson};
  const bool nstep = cfg_.n_step > 1;
  act_kernel<<<static_cast<unsigned>(N), kLearnerThreads, m.act_smem, ctx_.stream()>>>(
      true, m.online.data(), m.net, m.atom_values, cfg_.atoms, cfg_.num_actions, env_->obs(), d,
      m.act_rngs.data(), eps, m.stats.data(), m.actions.data(), m.q_last.data(),
      nstep ? m.p_obs.data() : m.r_obs.data(), nstep ? m.p_act.data() : m.r_act.data(),
      cfg_.buffer_size, nstep ? cfg_.n_step : 0, m.mirror, m.sym);
  FXT_CUDA_LAUNCH_CHECK();
  env_->step(m.actions.data(), ctx_.stream());
  if (m.per) m.per->enqueue_insert(ctx_.stream(), m.stats.data(), N, cfg_.n_step, m.mirror.rows());
  const unsigned threads = static_cast<unsigned>(std::min(N, 1024));
  if (nstep) {
    nstep_store_kernel<<<1, threads, 0, ctx_.stream()>>>(
        env_->next_obs(), env_->reward(), env_->terminated(), env_->truncated(), N, d, cfg_.gamma,
        cfg_.n_step, m.stats.data(), m.lane_ret.data(), m.recent.data(), m.p_obs.data(),
        m.p_act.data(), m.p_rew.data(), m.p_end.data(), m.p_next.data(), m.r_obs.data(),
        m.r_act.data(), m.r_next.data(), m.r_rew.data(), m.r_disc.data(), cfg_.buffer_size,
        m.mirror);
  } else {
    store_kernel<<<1, threads, 0, ctx_.stream()>>>(
        env_->next_obs(), env_->reward(), env_->terminated(), env_->truncated(), N, d,
        static_cast<float>(cfg_.gamma), m.stats.data(), m.lane_ret.data(), m.recent.data(),
        m.r_next.data(), m.r_rew.data(), m.r_disc.data(), cfg_.buffer_size, m.mirror);
  }
  FXT_CUDA_LAUNCH_CHECK();
}

void DeviceC51Learner::enqueue_target_update() {
  Impl& m = *impl_;
  if (cfg_.polyak >= 1) {
    gpu::copy(ctx_, m.online.data(), m.target.data(), cfg_.num_params);
    return;
  }
  polyak_kernel<<<grid_for(cfg_.num_params, 256), 256, 0, ctx_.stream()>>>(
      m.online.data(), m.target.data(), static_cast<float>(cfg_.polyak), cfg_.num_params);
  FXT_CUDA_LAUNCH_CHECK();
}

void DeviceC51Learner::env_step() {
  impl_->g_env.launch(ctx_);
}
void DeviceC51Learner::env_chunk() {
  assert(chunk_ > 0);
  impl_->g_chunk.launch(ctx_);
}
void DeviceC51Learner::env_chunk_update() {
  assert(chunk_ > 0);
  impl_->g_chunk_update.launch(ctx_);
}
void DeviceC51Learner::update() {
  impl_->g_update.launch(ctx_);
}
void DeviceC51Learner::update_target() {
  impl_->g_target.launch(ctx_);
}

DeviceLearnerStats DeviceC51Learner::stats() const {
  ctx_.sync();
  return impl_->stats.download()[0];
}

double DeviceC51Learner::recent_return_mean() const {
  const DeviceLearnerStats st = stats();
  if (st.recent_count == 0) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> ring = impl_->recent.download();
  // Oldest first, as the CPU trainer's deque: Σ r / count in insertion order.
  double mean = 0;
  for (int k = 0; k < st.recent_count; ++k) {
    const int at = (st.recent_next - st.recent_count + k + kRecentEpisodes) % kRecentEpisodes;
    mean += ring[static_cast<size_t>(at)] / static_cast<double>(st.recent_count);
  }
  return mean;
}

std::vector<float> DeviceC51Learner::online() const {
  ctx_.sync();
  return impl_->online.download();
}
std::vector<float> DeviceC51Learner::target() const {
  ctx_.sync();
  return impl_->target.download();
}
gpu::AdamWHostState DeviceC51Learner::adam_state() const {
  return impl_->adam->download_state(ctx_);
}
std::vector<int> DeviceC51Learner::last_actions() const {
  ctx_.sync();
  return impl_->actions.download();
}
std::vector<float> DeviceC51Learner::last_q() const {
  ctx_.sync();
  return impl_->q_last.download();
}
std::vector<Rng> DeviceC51Learner::act_rngs() const {
  ctx_.sync();
  std::vector<Rng> out(static_cast<size_t>(cfg_.num_envs), Rng(0));  // Rng has no default
  FXT_CUDA_CHECK(cudaMemcpy(out.data(), impl_->act_rngs.data(), out.size() * sizeof(Rng),
                            cudaMemcpyDeviceToHost));
  return out;
}
std::vector<int> DeviceC51Learner::last_indices() const {
  ctx_.sync();
  return impl_->idx.download();
}

DeviceC51Learner::ReplayRows DeviceC51Learner::replay() const {
  ctx_.sync();
  const Impl& m = *impl_;
  return {m.r_obs.download(), m.r_rew.download(), m.r_next.download(), m.r_disc.download(),
          m.r_act.download()};
}

std::vector<double> DeviceC51Learner::evaluate(DeviceVecEnv* eval_env, uint64_t seed) {
  Impl& m = *impl_;
  const int n = eval_env->num_envs(), A = cfg_.num_actions;
  assert(eval_env->obs_dim() == cfg_.obs_dim && eval_env->num_actions() == A);
  gpu::DeviceBuffer<double> ret(static_cast<size_t>(n));
  gpu::DeviceBuffer<uint8_t> done(static_cast<size_t>(n));
  gpu::DeviceBuffer<int> actions(static_cast<size_t>(n)), remaining(1);
  gpu::DeviceBuffer<float> q(static_cast<size_t>(n) * static_cast<size_t>(A));
  // Symmetric policy: eval lane i's tie coin from Rng(lane_seed(seed, i, 19)) (the CPU's
  // evaluate_agent draws its coins from one Rng(0): the same law, not the same draws).
  gpu::DeviceBuffer<Rng> coin(m.sym.sign != nullptr ? static_cast<size_t>(n) : 0);
  if (m.sym.sign != nullptr) {
    seed_rngs_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, ctx_.stream()>>>(coin.data(),
                                                                                       n, seed, 19);
    FXT_CUDA_LAUNCH_CHECK();
  }
  ret.zero();
  done.zero();
  ctx_.sync();
  eval_env->reset(seed, ctx_.stream());
  const EpsSchedule none{0, 0, 1, 1, false};
  cudaStream_t s = ctx_.stream();
  gpu::Graph g;
  g.capture(ctx_, [&] {
    for (int k = 0; k < kEvalChunk; ++k) {
      act_kernel<<<static_cast<unsigned>(n), kLearnerThreads, m.act_smem, s>>>(
          false, m.online.data(), m.net, m.atom_values, cfg_.atoms, A, eval_env->obs(),
          cfg_.obs_dim, m.sym.sign != nullptr ? coin.data() : nullptr, none, nullptr,
          actions.data(), q.data(), nullptr, nullptr, 1, 0, Mirror{nullptr, nullptr}, m.sym);
      FXT_CUDA_LAUNCH_CHECK();
      eval_env->step(actions.data(), s);
      eval_accumulate_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
          eval_env->reward(), eval_env->terminated(), eval_env->truncated(), n, ret.data(),
          done.data());
      FXT_CUDA_LAUNCH_CHECK();
    }
    eval_remaining_kernel<<<1, 256, 0, s>>>(done.data(), n, remaining.data());
    FXT_CUDA_LAUNCH_CHECK();
  });
  for (;;) {
    g.launch(ctx_);
    ctx_.sync();
    if (remaining.download()[0] == 0) break;
  }
  return ret.download();
}

void DeviceC51Learner::load_replay(const std::vector<float>& obs, const std::vector<int>& action,
                                   const std::vector<float>& reward,
                                   const std::vector<float>& next_obs,
                                   const std::vector<float>& discount) {
  Impl& m = *impl_;
  const size_t n = action.size(), d = static_cast<size_t>(cfg_.obs_dim);
  assert(n >= 1 && n <= static_cast<size_t>(cfg_.buffer_size));
  assert(obs.size() == n * d && next_obs.size() == n * d && reward.size() == n &&
         discount.size() == n);
  (void)d;  // only the assertion reads it
  ctx_.sync();
  m.r_obs.upload(obs.data(), obs.size());
  m.r_next.upload(next_obs.data(), next_obs.size());
  m.r_act.upload(action.data(), n);
  m.r_rew.upload(reward.data(), n);
  m.r_disc.upload(discount.data(), n);
  std::vector<DeviceLearnerStats> st = m.stats.download();
  st[0].replay_size = static_cast<int>(n);
  st[0].replay_next = static_cast<int>(n % static_cast<size_t>(cfg_.buffer_size));
  m.stats.upload(st.data(), 1);
  if (m.per) {  // n ReplayBuffer::add calls on an empty buffer: leaf max_priority^α each
    const double mp = m.per->max_priority();
    m.per->set_leaves(std::vector<double>(n, per_leaf(mp, cfg_.per_alpha)), mp);
  }
}

void DeviceC51Learner::update_on(const std::vector<int>& indices, const std::vector<float>& taus,
                                 const std::vector<float>& taus_next) {
  Impl& m = *impl_;
  assert(indices.size() == static_cast<size_t>(cfg_.batch));
  assert(!m.per);  // prioritised: update_on_draws
  ctx_.sync();
  m.idx.upload(indices.data(), indices.size());
  upload_taus(taus, taus_next);
  enqueue_update(false);
  ctx_.sync();
}

void DeviceC51Learner::update_on_draws(const std::vector<double>& units,
                                       const std::vector<float>& taus,
                                       const std::vector<float>& taus_next) {
  Impl& m = *impl_;
  assert(m.per && units.size() == static_cast<size_t>(cfg_.batch));
  ctx_.sync();
  m.per->set_units(units);
  upload_taus(taus, taus_next);
  enqueue_update(false);
  ctx_.sync();
}

void DeviceC51Learner::upload_taus(const std::vector<float>& taus,
                                   const std::vector<float>& taus_next) {
  Impl& m = *impl_;
  if (cfg_.iqn_embedding > 0) {
    const size_t n = static_cast<size_t>(cfg_.batch) * static_cast<size_t>(cfg_.iqn_taus);
    assert(taus.size() == n && taus_next.size() == n);
    m.taus.upload(taus.data(), n);
    m.taus_next.upload(taus_next.data(), n);
  }
}

std::vector<float> DeviceC51Learner::last_weights() const {
  ctx_.sync();
  return impl_->per ? impl_->per->weights()
                    : std::vector<float>(static_cast<size_t>(cfg_.batch), 1.0f);
}
std::vector<double> DeviceC51Learner::sum_tree() const {
  assert(impl_->per);
  ctx_.sync();
  return impl_->per->tree();
}
double DeviceC51Learner::max_priority() const {
  assert(impl_->per);
  ctx_.sync();
  return impl_->per->max_priority();
}
void DeviceC51Learner::set_priorities(const std::vector<double>& leaves, double max_priority) {
  assert(impl_->per);
  ctx_.sync();
  impl_->per->set_leaves(leaves, max_priority);
}
std::vector<int> DeviceC51Learner::find_leaves(const std::vector<double>& masses) const {
  assert(impl_->per);
  ctx_.sync();
  return impl_->per->find(ctx_.stream(), masses);
}

}  // namespace fxt::rl
