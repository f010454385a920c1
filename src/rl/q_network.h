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
  int num_outputs = 51;            // atoms (C51) or quantiles (QR-DQN)
  std::vector<int> hidden = {120, 84};
  bool dueling = false;
};

template <typename T>
class QNetwork {
 public:
  struct Workspace {
    int batch = 0;
    std::vector<std::vector<T>> acts;  // acts[0] = input copy, acts[l+1] = ReLU(layer l)
    std::vector<T> value, adv;         // dueling streams [B, outputs], [B, A*outputs]
    std::vector<T> d_act, d_next, d_value, d_adv;
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

 private:
  const model::ParamSpec& spec(size_t i) const { return specs_[i]; }
  QNetworkConfig cfg_;
  std::vector<model::ParamSpec> specs_;  // torso layers (w, b) then head (w, b[, w, b])
  size_t num_params_ = 0;
};

}  // namespace fxt::rl
