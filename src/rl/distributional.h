// The distributional pieces of the DQN agents, forward next to backward, templated on the scalar
// type (float for training, double for gradient checks). docs/RL.md has the formulas.
//
// C51 (Bellemare et al. 2017): a categorical distribution on the fixed support
// z_j = v_min + j·Δz, Δz = (v_max − v_min)/(atoms − 1). A target atom r + g·z_j (clipped to the
// support) at b = (Tz − v_min)/Δz splits its mass between l = floor(b) and u = ceil(b) in
// proportion (u − b, b − l); when b lands exactly on an atom (l = u) the whole mass goes there.
// QR-DQN (Dabney et al. 2018): N quantiles at midpoints τ̂_i = (2i + 1)/(2N), the quantile Huber
// loss ρ_τ(u) = |τ − 1{u < 0}|·L_κ(u)/κ averaged over targets.
// Munchausen (Vieillard et al. 2020): targets r + α·clip(τ·ln π(a|s), l0, 0) + γ Σ_a' π(a'|s')
// (Z(s', a') − τ ln π(a'|s')), π = softmax(q/τ) of the target network's expected values.
#pragma once

#include <span>

#include "rl/dqn_schedule.h"  // MunchausenConfig and the Munchausen terms

namespace fxt::rl {

struct Support {
  double v_min = -100;
  double v_max = 100;
  int atoms = 51;
  double delta() const { return (v_max - v_min) / (atoms - 1); }
  double atom(int j) const { return v_min + j * delta(); }
};

// m += weight · (projection of the atoms shift + scale·z_j with probabilities p_j).
template <typename T>
void c51_project_add(const Support& s, T shift, T scale, std::span<const T> p, T weight,
                     std::span<T> m);

// Expected value Σ_j z_j softmax(logits)_j of one row of `atoms` logits.
template <typename T>
T c51_expectation(const Support& s, std::span<const T> logits);
// softmax of one row.
template <typename T>
void softmax_row(std::span<const T> logits, std::span<T> p);

// Cross-entropy −Σ_j m_j ln softmax(logits)_j of one row against a target distribution m (sums
// to 1). d_logits = weight·(softmax(logits) − m) is written (not accumulated).
template <typename T>
T c51_loss(std::span<const T> logits, std::span<const T> m, T weight, std::span<T> d_logits);

// Quantile Huber loss of predicted quantiles theta [N] against targets [M] with target weights w
// [M] (Σ w = 1; plain QR-DQN uses w = 1/M): Σ_i Σ_j w_j ρ_τ̂i(target_j − theta_i), κ = 1.
// d_theta = weight · dL/dtheta is written (not accumulated).
template <typename T>
T quantile_huber_loss(std::span<const T> theta, std::span<const T> targets,
                      std::span<const T> target_w, T weight, std::span<T> d_theta);
// The same loss with the quantile fractions given (IQN samples τ_i ~ U(0, 1)).
template <typename T>
T quantile_huber_loss_at(std::span<const T> theta, std::span<const T> taus,
                         std::span<const T> targets, std::span<const T> target_w, T weight,
                         std::span<T> d_theta);

// ln softmax(q/τ) of one row of expected action values (log_policy_row of rl/dqn_schedule.h).
template <typename T>
void log_policy(std::span<const T> q, double tau, std::span<T> log_pi);

// The Munchausen C51 target distribution for one transition: r (n-step return), g (bootstrap
// discount, 0 at a terminal), log_pi_a = ln π(a|s) from the target network, q_next [A] and
// p_next [A, atoms] the target network's values and probabilities at s'. Writes m [atoms].
template <typename T>
void c51_munchausen_target(const Support& s, const MunchausenConfig& mc, T r, T g, T log_pi_a,
                           std::span<const T> q_next, std::span<const T> p_next, std::span<T> m);

}  // namespace fxt::rl
