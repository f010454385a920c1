// The GPU learner's device state (DeviceC51Learner::Impl), shared by device_learner.cu (buffers,
// graphs, acting, evaluation, test hooks) and device_learner_update.cu (the update's forwards,
// losses and backward). CUDA-only (included by those two files).
#pragma once

#include <memory>
#include <vector>

#include "core/random.h"
#include "gpu/adamw.h"
#include "gpu/runtime.h"
#include "rl/device_learner.h"
#include "rl/device_net.cuh"
#include "rl/device_replay.h"

namespace fxt::rl {

struct DeviceC51Learner::Impl {
  gpu::DeviceBuffer<float> online, target, grads, atoms;
  gpu::DeviceBuffer<Rng> act_rngs, sample_rngs;
  gpu::DeviceBuffer<float> mirror_sign;  // the env's mirror: [d] (empty: none)
  gpu::DeviceBuffer<int> mirror_action;  // [A]
  Mirror mirror{nullptr, nullptr};       // --mirror: the stored rows' mirror images (null: none)
  Mirror sym{nullptr, nullptr};          // --symmetric-policy: the policy's mirror (null: none)
  // Symmetric policy: the batch's mirrored states m(s), m(s') [B, d] and the nets' outputs there
  // [B, A·K]: target at m(s'), online at m(s') (double Q), target at m(s) (Munchausen).
  gpu::DeviceBuffer<float> b_obs_m, b_next_m, next_tm, next_om, cur_tm;
  gpu::DeviceBuffer<int> actions, r_act, idx, b_act;
  gpu::DeviceBuffer<float> q_last, r_obs, r_next, r_rew, r_disc;
  // n-step returns: each lane's last n steps, [lane · n + (step mod n)] (empty with n = 1).
  gpu::DeviceBuffer<float> p_obs, p_next, p_rew;
  gpu::DeviceBuffer<int> p_act;
  gpu::DeviceBuffer<uint8_t> p_end;
  gpu::DeviceBuffer<double> lane_ret, recent, lr;
  gpu::DeviceBuffer<DeviceLearnerStats> stats;
  gpu::DeviceBuffer<float> b_obs, b_next, b_rew, b_disc;
  std::vector<gpu::DeviceBuffer<float>> acts;  // online forward at s: each layer's output
  gpu::DeviceBuffer<float> tmp0, tmp1, next_t, next_o, d_out, d_a, d_b, loss_b, q_b;
  gpu::DeviceBuffer<float> cur_t;                  // Munchausen: the target net at s [B, A·K]
  gpu::DeviceBuffer<float> value, d_value, d_adv;  // dueling: [B, K], [B, K], [B, A·K]
  // IQN (R = B·max(N, K) rows): the update's τ and τ' [B·N], the policy τ tiled [B·K]; the
  // online forward at s kept for the backward (cos features [B·N, E], φ [B·N, H], ψ⊙φ [B·N, H]),
  // scratch for the other forwards ([R, E], [R, H], [R, H]); out_k [R·A] the K-τ outputs, q_sel
  // and q_cur [B, A]; d_mix [B·N, H] and d_psi [B, H] for the backward.
  gpu::DeviceBuffer<float> taus, taus_next, taus_pol, k_cos, k_phi, k_mix, s_cos, s_phi, s_mix;
  gpu::DeviceBuffer<float> out_k, q_sel, q_cur, d_mix, d_psi;
  std::unique_ptr<gpu::AdamW> adam;
  std::unique_ptr<DevicePrioritizedReplay> per;  // prioritised replay (cfg.per_alpha > 0)
  gpu::Graph g_env, g_chunk, g_chunk_update, g_update, g_target;
  NetLayout net{};
  size_t act_smem = 0, loss_smem = 0;
  const float* atom_values = nullptr;  // C51's atoms; null for QR-DQN (value_row's switch)
};

}  // namespace fxt::rl
