#include "rl/device_iqn.cuh"

#include <cstddef>

#include "rl/device_net.cuh"  // kPi

namespace fxt::rl {

// Grid-stride (grid_for, 256 threads) over rows·E: feat[r, i] = cos(π·i·τ_r), QNetwork::
// forward_iqn's float arithmetic ((π·i)·τ, then cosf).
__global__ void iqn_cos_kernel(const float* taus, int rows, int E, float* feat) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(E);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x)
    feat[e] = cosf(kPi * static_cast<float>(e % static_cast<size_t>(E)) * taus[e / E]);
}
// Grid-stride over rows·H, rows = batch·n_tau: mixed[r, k] = ψ[r / n_tau, k]·φ[r, k].
__global__ void iqn_mix_kernel(const float* psi, const float* phi, int rows, int n_tau, int H,
                               float* mixed) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(H);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / H, k = e % H;
    mixed[e] = psi[(r / n_tau) * H + k] * phi[e];
  }
}
// The mix's backward (QNetwork::backward_iqn), grid-stride over batch·H, element (b, k) owning
// column k of sample b's N rows: dψ[b, k] = Σ_n d_mixed[bN + n, k]·φ[bN + n, k] in order n, 0
// where ψ was not positive (the torso's last ReLU); d_mixed becomes dφ pre-activation in place,
// d_mixed·ψ where φ > 0, else 0.
__global__ void iqn_mix_backward_kernel(const float* psi, const float* phi, float* d_mixed,
                                        int batch, int N, int H, float* d_psi) {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(H);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t b = e / H, k = e % H;
    const float p = psi[e];
    float acc = 0;
    for (int t = 0; t < N; ++t) {
      const size_t i = (b * N + static_cast<size_t>(t)) * H + k;
      const float g = d_mixed[i];
      acc += g * phi[i];
      d_mixed[i] = phi[i] > 0.0f ? g * p : 0.0f;
    }
    d_psi[e] = p > 0.0f ? acc : 0.0f;
  }
}
// Grid-stride over batch·A: q[b, a] = Σ_k out[b, k, a]/K accumulated in order k (DqnAgent::iqn_q).
__global__ void iqn_mean_kernel(const float* out, int batch, int K, int A, float* q) {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(A);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t b = e / A, a = e % A;
    float acc = 0;
    for (int k = 0; k < K; ++k)
      acc += out[(b * K + static_cast<size_t>(k)) * A + a] / static_cast<float>(K);
    q[e] = acc;
  }
}

}  // namespace fxt::rl
