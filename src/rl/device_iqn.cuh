// The GPU learner's IQN layers on a batch (docs/RL.md "GPU learner", rows "IQN forward" and "IQN
// backward"): the cosine embedding of the sampled τ, the product of the embedding with the torso
// output ψ, that product's backward, and the mean over the K policy τ (QNetwork::forward_iqn /
// backward_iqn and DqnAgent::iqn_q's arithmetic). The dense layers between them are cuBLAS GEMMs
// (gpu::linear_forward/backward). CUDA-only (included by the learner's .cu files).
#pragma once

namespace fxt::rl {

// Each a grid-stride kernel: grid grid_for(elements, 256), 256 threads.
// feat [rows, E] = cos(π·i·τ_r).
__global__ void iqn_cos_kernel(const float* taus, int rows, int E, float* feat);
// mixed [rows, H] = ψ[r / n_tau]·φ[r] (rows = batch·n_tau).
__global__ void iqn_mix_kernel(const float* psi, const float* phi, int rows, int n_tau, int H,
                               float* mixed);
// The mix's backward: d_psi [batch, H], and d_mixed [batch·N, H] becomes dφ in place.
__global__ void iqn_mix_backward_kernel(const float* psi, const float* phi, float* d_mixed,
                                        int batch, int N, int H, float* d_psi);
// q [batch, A] = Σ_k out[b, k, a]/K in order k.
__global__ void iqn_mean_kernel(const float* out, int batch, int K, int A, float* q);

}  // namespace fxt::rl
