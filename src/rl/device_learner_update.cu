#include <algorithm>
#include <cassert>

#include "rl/device_batch_ops.cuh"
#include "rl/device_iqn.cuh"
#include "rl/device_learner.h"
#include "rl/device_learner_impl.cuh"
#include "rl/device_losses.cuh"
#include "rl/device_transitions.cuh"

// DeviceC51Learner's update (docs/RL.md "GPU learner"): the sample, the forwards DqnAgent::update
// runs (cuBLAS GEMMs and the batch kernels), the loss kernel, the backward, AdamW and the stats;
// enqueued inside the update graphs.
namespace fxt::rl {

void DeviceC51Learner::forward(const float* params, const float* x, int rows, float* out,
                               bool keep) {
  Impl& m = *impl_;
  const int L = static_cast<int>(cfg_.layers.size());
  const float* in = x;
  for (int l = 0; l < L; ++l) {
    const DeviceLayer& layer = cfg_.layers[static_cast<size_t>(l)];
    float* y = l + 1 == L ? out
               : keep     ? m.acts[static_cast<size_t>(l)].data()
                          : (l % 2 == 0 ? m.tmp0.data() : m.tmp1.data());
    gpu::linear_forward(ctx_, in, params + layer.w_offset, params + layer.b_offset, y, rows,
                        layer.in, layer.out);
    if (l + 1 == L && cfg_.dueling) {  // y holds the advantages: the value stream, then combine
      const DeviceLayer& v = cfg_.value;
      gpu::linear_forward(ctx_, in, params + v.w_offset, params + v.b_offset, m.value.data(), rows,
                          v.in, v.out);
      const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cfg_.atoms);
      dueling_forward_kernel<<<grid_for(n, 256), 256, 0, ctx_.stream()>>>(
          m.value.data(), y, rows, cfg_.num_actions, cfg_.atoms);
      FXT_CUDA_LAUNCH_CHECK();
    }
    if (l + 1 < L) {
      const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(layer.out);
      relu_kernel<<<grid_for(n, 256), 256, 0, ctx_.stream()>>>(y, n);
      FXT_CUDA_LAUNCH_CHECK();
    }
    in = y;
  }
}

void DeviceC51Learner::forward_iqn(const float* params, const float* x, int rows, const float* taus,
                                   int n_tau, float* out, bool keep) {
  Impl& m = *impl_;
  const int L = static_cast<int>(cfg_.layers.size()), E = cfg_.iqn_embedding;
  const int H = cfg_.embed.out, A = cfg_.num_actions;
  cudaStream_t s = ctx_.stream();
  const float* in = x;  // the torso: layers but the last, ReLU'd
  for (int l = 0; l + 1 < L; ++l) {
    const DeviceLayer& layer = cfg_.layers[static_cast<size_t>(l)];
    float* y =
        keep ? m.acts[static_cast<size_t>(l)].data() : (l % 2 == 0 ? m.tmp0.data() : m.tmp1.data());
    gpu::linear_forward(ctx_, in, params + layer.w_offset, params + layer.b_offset, y, rows,
                        layer.in, layer.out);
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(layer.out);
    relu_kernel<<<grid_for(n, 256), 256, 0, s>>>(y, n);
    FXT_CUDA_LAUNCH_CHECK();
    in = y;
  }
  const int R = rows * n_tau;  // one row per (sample, τ)
  float* feat = keep ? m.k_cos.data() : m.s_cos.data();
  float* phi = keep ? m.k_phi.data() : m.s_phi.data();
  float* mix = keep ? m.k_mix.data() : m.s_mix.data();
  const size_t nf = static_cast<size_t>(R) * static_cast<size_t>(E);
  const size_t nh = static_cast<size_t>(R) * static_cast<size_t>(H);
  iqn_cos_kernel<<<grid_for(nf, 256), 256, 0, s>>>(taus, R, E, feat);
  FXT_CUDA_LAUNCH_CHECK();
  const DeviceLayer& em = cfg_.embed;
  gpu::linear_forward(ctx_, feat, params + em.w_offset, params + em.b_offset, phi, R, E, H);
  relu_kernel<<<grid_for(nh, 256), 256, 0, s>>>(phi, nh);
  FXT_CUDA_LAUNCH_CHECK();
  iqn_mix_kernel<<<grid_for(nh, 256), 256, 0, s>>>(in, phi, R, n_tau, H, mix);
  FXT_CUDA_LAUNCH_CHECK();
  const DeviceLayer& head = cfg_.layers.back();
  gpu::linear_forward(ctx_, mix, params + head.w_offset, params + head.b_offset, out, R, H, A);
  if (cfg_.dueling) {  // out holds the advantages [R, A]: the value stream [R, 1], then combine
    const DeviceLayer& v = cfg_.value;
    gpu::linear_forward(ctx_, mix, params + v.w_offset, params + v.b_offset, m.value.data(), R, H,
                        1);
    dueling_forward_kernel<<<grid_for(static_cast<size_t>(R), 256), 256, 0, s>>>(m.value.data(),
                                                                                 out, R, A, 1);
    FXT_CUDA_LAUNCH_CHECK();
  }
}

void DeviceC51Learner::iqn_q(const float* params, const float* x, float* q) {
  Impl& m = *impl_;
  const int B = cfg_.batch, K = cfg_.iqn_policy_taus, A = cfg_.num_actions;
  forward_iqn(params, x, B, m.taus_pol.data(), K, m.out_k.data(), false);
  const size_t n = static_cast<size_t>(B) * static_cast<size_t>(A);
  iqn_mean_kernel<<<grid_for(n, 256), 256, 0, ctx_.stream()>>>(m.out_k.data(), B, K, A, q);
  FXT_CUDA_LAUNCH_CHECK();
}

// DqnAgent::update_iqn after the sample: the K-τ values at s' that pick a* (online with double
// Q, else target) or, with Munchausen, the target's at s' and s; the target at s' at τ'; the online
// net at s at τ (kept); the loss kernel; the backward; AdamW; the stats.
void DeviceC51Learner::enqueue_update_iqn() {
  Impl& m = *impl_;
  const int B = cfg_.batch, N = cfg_.iqn_taus;
  cudaStream_t s = ctx_.stream();
  if (cfg_.munchausen) {
    iqn_q(m.target.data(), m.b_next.data(), m.q_sel.data());
    iqn_q(m.target.data(), m.b_obs.data(), m.q_cur.data());
  } else {
    iqn_q(cfg_.double_q ? m.online.data() : m.target.data(), m.b_next.data(), m.q_sel.data());
  }
  forward_iqn(m.target.data(), m.b_next.data(), B, m.taus_next.data(), N, m.next_t.data(), false);
  float* out = m.acts.back().data();
  forward_iqn(m.online.data(), m.b_obs.data(), B, m.taus.data(), N, out, true);
  const float inv_b = 1.0f / static_cast<float>(B);
  const IqnQuantiles layout{m.q_sel.data(), cfg_.munchausen ? m.q_cur.data() : nullptr,
                            m.taus.data(), N, cfg_.num_actions};
  iqn_loss_kernel<<<static_cast<unsigned>(B), kLearnerThreads, m.loss_smem, s>>>(
      layout, out, m.next_t.data(), cfg_.num_actions, cfg_.munchausen, cfg_.mdqn, m.b_act.data(),
      m.b_rew.data(), m.b_disc.data(), is_weights(), inv_b, m.d_out.data(), m.loss_b.data(),
      m.q_b.data());
  FXT_CUDA_LAUNCH_CHECK();
  backward_iqn();
  finish_update();
}

const float* DeviceC51Learner::is_weights() const {
  return impl_->per ? impl_->per->weight() : nullptr;
}

// After the backward: AdamW, the stats and (prioritised) the sampled rows' new priorities.
void DeviceC51Learner::finish_update() {
  Impl& m = *impl_;
  const int B = cfg_.batch;
  cudaStream_t s = ctx_.stream();
  m.adam->step(ctx_, m.lr.data());
  update_stats_kernel<<<1, 1, 0, s>>>(m.loss_b.data(), m.q_b.data(), is_weights(), B,
                                      1.0f / static_cast<float>(B), m.adam->stats(),
                                      m.stats.data());
  FXT_CUDA_LAUNCH_CHECK();
  if (m.per) m.per->enqueue_update(s, m.idx.data(), m.loss_b.data());
}

// QNetwork::backward_iqn on the kept forward: the head (dueling: value stream, then advantages)
// into d_mix [B·N, H], the mix into dψ and dφ, the embedding (no input gradient), the torso.
void DeviceC51Learner::backward_iqn() {
  Impl& m = *impl_;
  const int B = cfg_.batch, N = cfg_.iqn_taus, A = cfg_.num_actions, E = cfg_.iqn_embedding;
  const int H = cfg_.embed.out, L = static_cast<int>(cfg_.layers.size()), R = B * N;
  cudaStream_t s = ctx_.stream();
  gpu::fill(ctx_, m.grads.data(), 0.0f, cfg_.num_params);
  const size_t nh = static_cast<size_t>(R) * static_cast<size_t>(H);
  gpu::fill(ctx_, m.d_mix.data(), 0.0f, nh);
  const float* dy = m.d_out.data();
  if (cfg_.dueling) {
    dueling_backward_kernel<<<grid_for(static_cast<size_t>(R), 256), 256, 0, s>>>(
        dy, m.d_value.data(), m.d_adv.data(), R, A, 1);
    FXT_CUDA_LAUNCH_CHECK();
    const DeviceLayer& v = cfg_.value;
    gpu::linear_backward(ctx_, m.k_mix.data(), m.online.data() + v.w_offset, m.d_value.data(),
                         m.d_mix.data(), m.grads.data() + v.w_offset, m.grads.data() + v.b_offset,
                         R, H, 1);
    dy = m.d_adv.data();
  }
  const DeviceLayer& head = cfg_.layers.back();
  gpu::linear_backward(ctx_, m.k_mix.data(), m.online.data() + head.w_offset, dy, m.d_mix.data(),
                       m.grads.data() + head.w_offset, m.grads.data() + head.b_offset, R, H, A);
  const float* psi = m.acts[static_cast<size_t>(L - 2)].data();
  const size_t nb = static_cast<size_t>(B) * static_cast<size_t>(H);
  iqn_mix_backward_kernel<<<grid_for(nb, 256), 256, 0, s>>>(psi, m.k_phi.data(), m.d_mix.data(), B,
                                                            N, H, m.d_psi.data());
  FXT_CUDA_LAUNCH_CHECK();
  const DeviceLayer& em = cfg_.embed;
  gpu::linear_backward(ctx_, m.k_cos.data(), m.online.data() + em.w_offset, m.d_mix.data(), nullptr,
                       m.grads.data() + em.w_offset, m.grads.data() + em.b_offset, R, E, H);
  backward_layers(L - 2, m.d_psi.data());  // the torso from dψ (masked by ψ's ReLU)
}

// Layers top, top − 1, …, 0 of the kept forward (x: the batch's obs, then m.acts), from dy (the
// gradient of layer top's output): linear_backward adds into the gradient buffer and the input
// gradient, masked by the ReLU of the layer below; the head (top = L − 1) with the dueling head
// first splits dy to the value and advantage streams, both adding into the torso's dx.
void DeviceC51Learner::backward_layers(int top, const float* dy) {
  Impl& m = *impl_;
  const int B = cfg_.batch, L = static_cast<int>(cfg_.layers.size());
  cudaStream_t s = ctx_.stream();
  float* dx_buf = m.d_a.data();
  float* other = m.d_b.data();
  for (int l = top; l >= 0; --l) {
    const DeviceLayer& layer = cfg_.layers[static_cast<size_t>(l)];
    const float* x = l == 0 ? m.b_obs.data() : m.acts[static_cast<size_t>(l - 1)].data();
    float* dx = l > 0 ? dx_buf : nullptr;
    const size_t nx = static_cast<size_t>(B) * static_cast<size_t>(layer.in);
    if (dx) gpu::fill(ctx_, dx, 0.0f, nx);
    if (l == L - 1 && cfg_.dueling) {  // the gradient split to the streams, both adding into dx
      const size_t n = static_cast<size_t>(B) * static_cast<size_t>(cfg_.atoms);
      dueling_backward_kernel<<<grid_for(n, 256), 256, 0, s>>>(dy, m.d_value.data(), m.d_adv.data(),
                                                               B, cfg_.num_actions, cfg_.atoms);
      FXT_CUDA_LAUNCH_CHECK();
      const DeviceLayer& v = cfg_.value;
      gpu::linear_backward(ctx_, x, m.online.data() + v.w_offset, m.d_value.data(), dx,
                           m.grads.data() + v.w_offset, m.grads.data() + v.b_offset, B, v.in,
                           v.out);
      dy = m.d_adv.data();
    }
    gpu::linear_backward(ctx_, x, m.online.data() + layer.w_offset, dy, dx,
                         m.grads.data() + layer.w_offset, m.grads.data() + layer.b_offset, B,
                         layer.in, layer.out);
    if (dx) {
      relu_mask_kernel<<<grid_for(nx, 256), 256, 0, s>>>(x, dx, nx);
      FXT_CUDA_LAUNCH_CHECK();
      dy = dx;
      std::swap(dx_buf, other);
    }
  }
}

void DeviceC51Learner::enqueue_update(bool sample) {
  Impl& m = *impl_;
  const int B = cfg_.batch, d = cfg_.obs_dim, L = static_cast<int>(cfg_.layers.size());
  cudaStream_t s = ctx_.stream();
  // Prioritised: the indices (and IS weights) from the tree, u from the row's Rng or (tests,
  // !sample) the given draws; the sample kernel then only gathers (and draws IQN's τ).
  if (m.per)
    m.per->enqueue_sample(s, sample ? m.sample_rngs.data() : nullptr, m.stats.data(), m.idx.data());
  sample_kernel<<<static_cast<unsigned>((B + kLearnerThreads - 1) / kLearnerThreads),
                  kLearnerThreads, 0, s>>>(
      sample, !m.per, m.sample_rngs.data(), m.idx.data(), m.stats.data(), B, d, m.r_obs.data(),
      m.r_act.data(), m.r_rew.data(), m.r_next.data(), m.r_disc.data(), m.b_obs.data(),
      m.b_act.data(), m.b_rew.data(), m.b_next.data(), m.b_disc.data(),
      cfg_.iqn_embedding > 0 ? cfg_.iqn_taus : 0, m.taus.data(), m.taus_next.data());
  FXT_CUDA_LAUNCH_CHECK();
  if (cfg_.iqn_embedding > 0) {
    enqueue_update_iqn();
    return;
  }
  // The forwards DqnAgent::update runs: the target at s', the online net at s' (double Q, not
  // with Munchausen), the target at s (Munchausen), the online net at s (activations kept).
  const bool online_next = cfg_.double_q && !cfg_.munchausen;
  forward(m.target.data(), m.b_next.data(), B, m.next_t.data(), false);
  if (online_next) forward(m.online.data(), m.b_next.data(), B, m.next_o.data(), false);
  if (cfg_.munchausen) forward(m.target.data(), m.b_obs.data(), B, m.cur_t.data(), false);
  MirrorOutputs mo{nullptr, nullptr, nullptr, nullptr};
  if (m.sym.sign != nullptr) {  // the same forwards at the mirrored states m(s'), m(s)
    const size_t nd = static_cast<size_t>(B) * static_cast<size_t>(d);
    mirror_rows_kernel<<<grid_for(nd, 256), 256, 0, s>>>(m.sym.sign, m.b_next.data(), nd, d,
                                                         m.b_next_m.data());
    FXT_CUDA_LAUNCH_CHECK();
    forward(m.target.data(), m.b_next_m.data(), B, m.next_tm.data(), false);
    if (online_next) forward(m.online.data(), m.b_next_m.data(), B, m.next_om.data(), false);
    if (cfg_.munchausen) {
      mirror_rows_kernel<<<grid_for(nd, 256), 256, 0, s>>>(m.sym.sign, m.b_obs.data(), nd, d,
                                                           m.b_obs_m.data());
      FXT_CUDA_LAUNCH_CHECK();
      forward(m.target.data(), m.b_obs_m.data(), B, m.cur_tm.data(), false);
    }
    mo = {m.next_tm.data(), online_next ? m.next_om.data() : m.next_tm.data(),
          cfg_.munchausen ? m.cur_tm.data() : nullptr, m.sym.action};
  }
  float* out = m.acts.back().data();
  forward(m.online.data(), m.b_obs.data(), B, out, true);
  const float inv_b = 1.0f / static_cast<float>(B);
  const float* next_sel = online_next ? m.next_o.data() : m.next_t.data();
  const float* cur_t = cfg_.munchausen ? m.cur_t.data() : nullptr;
  if (cfg_.quantile) {
    const QrDqnQuantiles layout{next_sel, cur_t, mo, cfg_.atoms, cfg_.num_actions};
    qr_dqn_loss_kernel<<<static_cast<unsigned>(B), kLearnerThreads, m.loss_smem, s>>>(
        layout, out, m.next_t.data(), cfg_.num_actions, cfg_.munchausen, cfg_.mdqn, m.b_act.data(),
        m.b_rew.data(), m.b_disc.data(), is_weights(), inv_b, m.d_out.data(), m.loss_b.data(),
        m.q_b.data());
  } else {
    c51_loss_kernel<<<static_cast<unsigned>(B), kLearnerThreads, m.loss_smem, s>>>(
        out, m.next_t.data(), next_sel, cur_t, m.atoms.data(), cfg_.atoms, cfg_.num_actions,
        static_cast<float>(cfg_.v_min), static_cast<float>(cfg_.v_max),
        static_cast<float>((cfg_.v_max - cfg_.v_min) / (cfg_.atoms - 1)), cfg_.munchausen,
        cfg_.mdqn, mo, m.b_act.data(), m.b_rew.data(), m.b_disc.data(), is_weights(), inv_b,
        m.d_out.data(), m.loss_b.data(), m.q_b.data());
  }
  FXT_CUDA_LAUNCH_CHECK();
  // Backward: grads = 0, then layer by layer from the head.
  gpu::fill(ctx_, m.grads.data(), 0.0f, cfg_.num_params);
  backward_layers(L - 1, m.d_out.data());
  finish_update();
}

}  // namespace fxt::rl
