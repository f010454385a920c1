// The Q-network of the DQN agents: an MLP torso (Linear + ReLU layers) and a distributional
// head with one output row of `num_outputs` values per action: C51 logits over the atoms, or
// QR-DQN quantiles. With dueling the head is a value stream V [outputs] and an advantage stream
// A [actions, outputs] combined as out[a] = V + A[a] − mean_a' A[a'] (per output element).
//
// Parameters live in one flat buffer described by ParamSpecs (checkpoint names "torso.<l>.weight",
// "head.value.weight", "head.adv.weight", "head.out.weight" and their ".bias"), the layout the
// project's AdamW and Checkpoint use. Templated on the scalar type: float for training, double
// for gradient checks. forward() keeps the activations backward() needs in the Workspace the
// caller owns; backward() accumulates (+=) into the gradient buffer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/random.h"
#include "model/mamba2.h"  // ParamSpec
#include "model/tensor.h"  // CpuContext

namespace fxt::rl {

struct QNetworkConfig {
  int obs_dim = 4;
  int num_actions = 2;
  int num_outputs = 51;            // atoms (C51), quantiles (QR-DQN), 1 (IQN)
  std::vector<int> hidden = {120, 84};
  bool dueling = false;
  // IQN (Dabney et al. 2018b): > 0 adds the quantile embedding φ(τ) = ReLU(W·cos(π·i·τ) + b),
  // i = 0..iqn_embedding−1, multiplied element-wise into the torso output before the head.
  int iqn_embedding = 0;
};

template <typename T>
class QNetwork {
 public:
  struct Workspace {
    int batch = 0;
    std::vector<std::vector<T>> acts;  // acts[0] = input copy, acts[l+1] = ReLU(layer l)
    std::vector<T> value, adv;         // dueling streams [B, outputs], [B, A*outputs]
    std::vector<T> d_act, d_next, d_value, d_adv;
    std::vector<T> cos_feat, emb, mixed, d_mixed;  // IQN: [B·N, E], [B·N, H], [B·N, H], [B·N, H]
    int num_taus = 0;
  };

  explicit QNetwork(QNetworkConfig cfg);

  const QNetworkConfig& config() const { return cfg_; }
  const std::vector<model::ParamSpec>& specs() const { return specs_; }
  size_t num_params() const { return num_params_; }

  // PyTorch's nn.Linear initialisation, U(−1/sqrt(in), 1/sqrt(in)) for weights and biases,
  // drawn in spec order from Rng(seed).
  void init(std::span<T> params, uint64_t seed) const;

  // obs [B, obs_dim] -> out [B, num_actions, num_outputs].
  void forward(model::CpuContext& ctx, std::span<const T> params, std::span<const T> obs, int batch,
               std::span<T> out, Workspace* ws) const;
  // d_out [B, num_actions, num_outputs] -> grads += dL/dparams (ws from the matching forward).
  void backward(model::CpuContext& ctx, std::span<const T> params, std::span<const T> d_out,
                std::span<T> grads, Workspace* ws) const;

  // IQN (iqn_embedding > 0, num_outputs 1): obs [B, obs_dim] and taus [B, N] in (0, 1) ->
  // out [B, N, num_actions], the τ-quantile of each action's return.
  void forward_iqn(model::CpuContext& ctx, std::span<const T> params, std::span<const T> obs,
                   int batch, std::span<const T> taus, int num_taus, std::span<T> out,
                   Workspace* ws) const;
  void backward_iqn(model::CpuContext& ctx, std::span<const T> params, std::span<const T> d_out,
                    std::span<T> grads, Workspace* ws) const;

 private:
  void torso_forward(model::CpuContext& ctx, std::span<const T> params, std::span<const T> obs,
                     int batch, Workspace* ws) const;
  // Torso backward from ws->d_act (the gradient at the torso output, [B, H]).
  void torso_backward(model::CpuContext& ctx, std::span<const T> params, std::span<T> grads,
                      Workspace* ws) const;
  // The head on `rows` rows of x [rows, in] -> out [rows, A·K]; backward accumulates into d_x.
  void head_forward(model::CpuContext& ctx, std::span<const T> params, const T* x, int rows,
                    int in, T* out, Workspace* ws) const;
  void head_backward(model::CpuContext& ctx, std::span<const T> params, const T* x, int rows,
                     int in, const T* d_out, std::span<T> grads, T* d_x, Workspace* ws) const;
  size_t head_spec() const { return 2 * cfg_.hidden.size() + (cfg_.iqn_embedding > 0 ? 2 : 0); }

  const model::ParamSpec& spec(size_t i) const { return specs_[i]; }
  QNetworkConfig cfg_;
  std::vector<model::ParamSpec> specs_;  // torso layers (w, b) then head (w, b[, w, b])
  size_t num_params_ = 0;
};

}  // namespace fxt::rl
