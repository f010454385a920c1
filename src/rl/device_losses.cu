#include "rl/device_losses.cuh"

#include "rl/device_net.cuh"

namespace fxt::rl {
namespace {

// Threads a of a loss block: qs[a] = the value of action a at s' from next_sel's rows (the online
// net with double Q, else the target) and, with Munchausen (cur non-null), qc[a] = the target
// net's at s. Rows of sample b start at `row`; atoms null for QR-DQN (value_row). Symmetric
// policy (mo.action non-null): each then ½[q(s, a) + q(m(s), m(a))] with q(m(s), ·) from mo's
// rows (DqnAgent::row_values).
__device__ void action_values(const float* next_sel, const float* cur, size_t row,
                              const float* atoms, int K, int A, const MirrorOutputs& mo, float* qs,
                              float* qc) {
  for (int j = threadIdx.x; j < A; j += blockDim.x) {
    qs[j] = value_row(next_sel + row + static_cast<size_t>(j) * K, atoms, K);
    if (cur != nullptr) qc[j] = value_row(cur + row + static_cast<size_t>(j) * K, atoms, K);
    if (mo.action == nullptr) continue;
    const size_t mj = row + static_cast<size_t>(mo.action[j]) * K;
    qs[j] = 0.5f * (qs[j] + value_row(mo.next_sel + mj, atoms, K));
    if (cur != nullptr) qc[j] = 0.5f * (qc[j] + value_row(mo.cur_t + mj, atoms, K));
  }
}

// One logit row's maximum and Σ_j exp(l_j − max) summed in order (softmax_row's arithmetic).
__device__ void softmax_stats(const float* l, int K, float* mx_out, float* sum_out) {
  float mx = l[0];
  for (int j = 1; j < K; ++j) mx = fmaxf(mx, l[j]);
  float sum = 0;
  for (int j = 0; j < K; ++j) sum += expf(l[j] - mx);
  *mx_out = mx;
  *sum_out = sum;
}

// Thread 0 of a loss block: the bootstrap target's components as DqnAgent::update picks them,
// from action_values' qs and qc: plain, one, the first argmax a* of qs, weight 1 (*bonus 0);
// Munchausen, every a' in order with weight π(a'|s') (log_policy_row: qs becomes ln π(a'|s') in
// place, qc ln π(·|s)) and *bonus = munchausen_bonus of ln π(a|s). Returns the count C.
__device__ int bootstrap_components(bool munchausen, const MunchausenConfig& mc, int A, int a,
                                    float* qs, float* qc, int* comp, float* w, float* bonus) {
  if (munchausen) {
    log_policy_row(qc, A, mc.tau, qc);
    *bonus = munchausen_bonus(mc, qc[a]);
    log_policy_row(qs, A, mc.tau, qs);
    for (int c = 0; c < A; ++c) {
      comp[c] = c;
      w[c] = expf(qs[c]);
    }
    return A;
  }
  int best = 0;
  for (int j = 1; j < A; ++j)
    if (qs[j] > qs[best]) best = j;
  comp[0] = best;
  w[0] = 1.0f;
  *bonus = 0.0f;
  return 1;
}

// One predicted quantile θ at fraction tau_i against M targets tq with weights w[e / K] (the
// component's weight, K targets per component): the quantile Huber loss Σ_e w·|τ − 1{u < 0}|·
// L_1(u), u = tq[e] − θ, and its dL/dθ, summed over e in order (κ = 1: quantile_huber_loss_at's
// arithmetic in rl/distributional.cc).
__device__ void quantile_huber_at(float theta, float tau_i, const float* tq, const float* w, int K,
                                  int M, float* loss_out, float* grad_out) {
  float loss = 0, grad = 0;
  for (int e = 0; e < M; ++e) {
    const float tw = w[e / K];
    const float u = tq[e] - theta;
    const float au = fabsf(u);
    const float huber = au <= 1.0f ? 0.5f * u * u : au - 0.5f;
    const float dhuber = au <= 1.0f ? u : (u > 0.0f ? 1.0f : -1.0f);  // dL/du
    const float k = fabsf(tau_i - (u < 0.0f ? 1.0f : 0.0f));
    loss += tw * k * huber;
    grad -= tw * k * dhuber;  // du/dθ = −1
  }
  *loss_out = loss;
  *grad_out = grad;
}

}  // namespace

// ---- the C51 target, loss and gradient ---------------------------------------------------------
// The loss kernel's dynamic shared memory in floats: p [A·K], m [K], log Z [1], then qs, qc, w,
// shift, comp (ints), and the mirror rows' maxima and sums [A] each.
size_t c51_loss_smem_floats(int A, int K) {
  return static_cast<size_t>(A) * static_cast<size_t>(K) + static_cast<size_t>(K) + 1 +
         7 * static_cast<size_t>(A);
}

// Launch: grid (B), block kLearnerThreads, dynamic shared memory c51_loss_smem_floats(A, K). Block
// b is sample b, in DqnAgent::update's arithmetic. The target distribution m is a mixture of C
// components, component c the target net's softmax at s' of action comp[c] with atoms
// shift[c] + g·z_j and weight w[c] (thread 0 picks them, bootstrap_components):
//   - plain: one, the first argmax a* of the expected values at s' (online net with double Q,
//     else target), shift r, weight 1;
//   - Munchausen: every action a' in order, weight π(a'|s') and shift r + bonus − g·τ·ln π(a'|s')
//     (log_policy_row, munchausen_bonus and munchausen_shift of rl/dqn_schedule.h: π from the
//     target net's values at s', the bonus from ln π(a|s) of its values at s).
// Thread c: component c's row max and Σ exp in order; p_j = exp(l_j − max)/Σ (softmax_row's
// arithmetic). The projection is gathered per target atom i over (c, j) in order (the CPU
// scatters, c51_project_add, in the same order, so each m_i sees the same additions); then the
// cross-entropy −Σ m ln softmax(pred) (thread 0, in order) and d_out = w_b·inv_b·(softmax(pred) −
// m) on the taken action's row, 0 elsewhere (w_b = weight[b], the IS weight; 1 when null).
__global__ void c51_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                                const float* __restrict__ next_sel, const float* __restrict__ cur_t,
                                const float* __restrict__ atoms, int K, int A, float v_min,
                                float v_max, float dz, bool munchausen, MunchausenConfig mc,
                                MirrorOutputs mo, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b) {
  extern __shared__ float sm[];
  float* p = sm;                                  // [C, K] the components' probabilities
  float* m = p + static_cast<size_t>(A) * K;      // [K] the projected target
  float* log_z = m + K;                           // [1] the prediction's log partition
  float* qs = log_z + 1;                          // [A] values at s', then row maxima
  float* qc = qs + A;                             // [A] Munchausen: values at s, then row Σ exp
  float* w = qc + A;                              // [A] component weights
  float* shift = w + A;                           // [A] component shifts
  int* comp = reinterpret_cast<int*>(shift + A);  // [A] component rows (actions at s')
  float* mx_m = shift + 2 * A;                    // [A] symmetric: the mirror rows' maxima
  float* sum_m = mx_m + A;                        // [A] and their Σ exp
  __shared__ int n_comp;
  const int b = blockIdx.x, tid = threadIdx.x;
  const size_t row = static_cast<size_t>(b) * A * K;
  const int a = b_act[b];
  const float r = b_rew[b], g = b_disc[b];
  action_values(next_sel, munchausen ? cur_t : nullptr, row, atoms, K, A, mo, qs, qc);
  __syncthreads();
  if (tid == 0) {
    float bonus;
    n_comp = bootstrap_components(munchausen, mc, A, a, qs, qc, comp, w, &bonus);
    for (int c = 0; c < n_comp; ++c)
      shift[c] = munchausen ? munchausen_shift(mc, r, bonus, g, qs[c]) : r;
  }
  __syncthreads();
  const int C = n_comp;
  for (int c = tid; c < C; c += blockDim.x) {
    softmax_stats(next_t + row + static_cast<size_t>(comp[c]) * K, K, &qs[c], &qc[c]);
    if (mo.action != nullptr)  // symmetric: the same of Z(m(s'), m(comp[c]))
      softmax_stats(mo.next_t + row + static_cast<size_t>(mo.action[comp[c]]) * K, K, &mx_m[c],
                    &sum_m[c]);
  }
  __syncthreads();
  for (int e = tid; e < C * K; e += blockDim.x) {
    const int c = e / K, j = e % K;
    p[e] = expf(next_t[row + static_cast<size_t>(comp[c]) * K + j] - qs[c]) / qc[c];
    if (mo.action != nullptr) {  // the even mixture's probabilities, DqnAgent::update's
      const float* lm = mo.next_t + row + static_cast<size_t>(mo.action[comp[c]]) * K;
      p[e] = 0.5f * (p[e] + expf(lm[j] - mx_m[c]) / sum_m[c]);
    }
  }
  __syncthreads();
  for (int i = tid; i < K; i += blockDim.x) {
    float acc = 0;
    for (int c = 0; c < C; ++c) {
      for (int j = 0; j < K; ++j) {
        const float mass = w[c] * p[c * K + j];
        if (mass == 0.0f) continue;
        const C51Split<float> s = c51_split<float>(shift[c], g, atoms[j], v_min, v_max, dz, K);
        if (s.l == i)
          acc += mass * s.wl;
        else if (s.u == i)
          acc += mass * s.wu;
      }
    }
    m[i] = acc;
  }
  __syncthreads();
  const float* pred = out + row + static_cast<size_t>(a) * K;
  if (tid == 0) {
    float mx, sum;
    softmax_stats(pred, K, &mx, &sum);
    const float lz = mx + logf(sum);
    float loss = 0;
    for (int j = 0; j < K; ++j) loss -= m[j] * (pred[j] - lz);
    *log_z = lz;
    loss_b[b] = 1.0f * loss;
    q_b[b] = expectation_row(pred, atoms, K);
  }
  __syncthreads();
  const float lz = *log_z;
  const float wb = (weight != nullptr ? weight[b] : 1.0f) * inv_b;  // the CPU's w·inv_b
  for (int e = tid; e < A * K; e += blockDim.x) {
    const int act = e / K, j = e % K;
    d_out[row + e] = act == a ? wb * (expf(pred[j] - lz) - m[j]) : 0.0f;
  }
}

// ---- the quantile loss (QR-DQN and IQN) -------------------------------------------------------
// The kernel's dynamic shared memory in floats: the target quantiles [A·K], the per-quantile
// losses [K], then qs, qc, w and comp (ints) [A] each.
size_t quantile_loss_smem_floats(int A, int K, bool symmetric) {
  return (symmetric ? 2 : 1) * static_cast<size_t>(A) * static_cast<size_t>(K) +
         static_cast<size_t>(K) + 4 * static_cast<size_t>(A);
}

// Block b is sample b, in DqnAgent::update's (QR-DQN) or update_iqn's (IQN) arithmetic, with K =
// layout.count() predicted quantiles of the taken action. Thread 0 picks the components
// (bootstrap_components, from layout.values: the quantile means, or IQN's K-τ means); thread e =
// c·K + k writes target quantile e from the target net's quantile k of action comp[c]
// (layout.at): plain r + g·θ', Munchausen r + bonus + g·(θ' − τ ln π(a'|s')), each of weight
// w[c]/K. Thread i takes the prediction θ_i of the taken action at fraction layout.fraction(b, i)
// and sums over the targets in order the quantile Huber loss w·|τ_i − 1{u < 0}|·L_1(u),
// u = target − θ_i, and its gradient (quantile_huber_at); thread 0 sums the K losses in order (the
// CPU one running sum: equal to float rounding) and the mean (layout.mean). d_out =
// w_b·inv_b·dL/dθ at the taken action's quantiles, 0 elsewhere (w_b = weight[b], the IS weight;
// 1 when null).
template <class Layout>
__device__ __forceinline__ void quantile_loss(const Layout& layout, const float* __restrict__ out,
                                              const float* __restrict__ next_t, int A,
                                              bool munchausen, MunchausenConfig mc,
                                              const int* b_act, const float* b_rew,
                                              const float* b_disc, const float* weight, float inv_b,
                                              float* d_out, float* loss_b, float* q_b) {
  extern __shared__ float sm[];
  const int K = layout.count();
  float* tq = sm;  // [C·K·halves] the target quantiles
  float* lq = tq + static_cast<size_t>(layout.halves()) * A * K;  // [K] each quantile's loss
  float* qs = lq + K;                         // [A] values at s', then ln π(a'|s')
  float* qc = qs + A;                         // [A] Munchausen: values at s, then ln π(·|s)
  float* w = qc + A;                          // [A] component weights, then / K
  int* comp = reinterpret_cast<int*>(w + A);  // [A] component actions at s'
  __shared__ int n_comp;
  __shared__ float bonus;
  const int b = blockIdx.x, tid = threadIdx.x;
  const size_t row = layout.block(b);  // sample b's outputs
  const int a = b_act[b];
  const float r = b_rew[b], g = b_disc[b];
  const float kf = static_cast<float>(K);
  layout.values(b, qs, qc);
  __syncthreads();
  const int halves = layout.halves();  // symmetric: each target quantile, then its mirror's
  const int per = halves * K;          // targets per component
  if (tid == 0) {
    n_comp = bootstrap_components(munchausen, mc, A, a, qs, qc, comp, w, &bonus);
    for (int c = 0; c < n_comp; ++c) w[c] = (halves == 2 ? 0.5f * w[c] : w[c]) / kf;
  }
  __syncthreads();
  const int C = n_comp;
  const float tau = static_cast<float>(mc.tau);
  for (int e = tid; e < C * per; e += blockDim.x) {
    const int c = e / per, k = (e % per) / halves;
    const float z = e % halves == 0 ? next_t[row + layout.at(k, comp[c])]
                                    : layout.mirror_target(row, k, comp[c]);
    tq[e] = munchausen ? r + bonus + g * (z - tau * qs[c]) : r + g * z;
  }
  __syncthreads();
  const float wb = (weight != nullptr ? weight[b] : 1.0f) * inv_b;
  for (int i = tid; i < K; i += blockDim.x) {
    const size_t at = row + layout.at(i, a);
    float loss, grad;
    quantile_huber_at(out[at], layout.fraction(b, i), tq, w, per, C * per, &loss, &grad);
    lq[i] = loss;
    d_out[at] = wb * grad;
  }
  for (int e = tid; e < A * K; e += blockDim.x)
    if (layout.action_of(e) != a) d_out[row + e] = 0.0f;
  __syncthreads();
  if (tid == 0) {
    float loss = 0;
    for (int i = 0; i < K; ++i) loss += lq[i];
    loss_b[b] = loss;
    q_b[b] = layout.mean(out + row, a);
  }
}

// The kernels: one per layout, the same body.
__global__ void qr_dqn_loss_kernel(QrDqnQuantiles layout, const float* __restrict__ out,
                                   const float* __restrict__ next_t, int A, bool munchausen,
                                   MunchausenConfig mc, const int* b_act, const float* b_rew,
                                   const float* b_disc, const float* weight, float inv_b,
                                   float* d_out, float* loss_b, float* q_b) {
  quantile_loss(layout, out, next_t, A, munchausen, mc, b_act, b_rew, b_disc, weight, inv_b, d_out,
                loss_b, q_b);
}
__global__ void iqn_loss_kernel(IqnQuantiles layout, const float* __restrict__ out,
                                const float* __restrict__ next_t, int A, bool munchausen,
                                MunchausenConfig mc, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b) {
  quantile_loss(layout, out, next_t, A, munchausen, mc, b_act, b_rew, b_disc, weight, inv_b, d_out,
                loss_b, q_b);
}

// One thread: the batch means in the CPU's order (Σ_b double(w_b·loss_b)·inv_b, w_b the IS weight
// or 1 when weight is null), the optimizer's grad norm, and the update counter.
__global__ void update_stats_kernel(const float* loss_b, const float* q_b, const float* weight,
                                    int B, float inv_b, const gpu::AdamWStats* adam,
                                    DeviceLearnerStats* stats) {
  double loss = 0, q = 0;
  for (int b = 0; b < B; ++b) {
    const float wl = weight != nullptr ? weight[b] * loss_b[b] : loss_b[b];
    loss += static_cast<double>(wl) * static_cast<double>(inv_b);
    q += static_cast<double>(q_b[b]) * static_cast<double>(inv_b);
  }
  stats->loss = loss;
  stats->mean_q = q;
  stats->grad_norm = adam->grad_norm;
  ++stats->updates;
}

}  // namespace fxt::rl
