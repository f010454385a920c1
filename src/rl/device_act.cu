#include "rl/device_act.cuh"

#include "rl/dqn_schedule.h"
#include "rl/dueling_head.h"

namespace fxt::rl {
namespace {

// One dense layer in one block: y[u] = Σ_i w[u, i]·x[i] + b[u] for u = tid, tid + blockDim, …
// (each a sequential dot product), ReLU'd when relu.
__device__ void block_dense(const float* __restrict__ params, const DeviceLayer& L, const float* x,
                            float* y, bool relu) {
  const float* w = params + L.w_offset;
  const float* b = params + L.b_offset;
  for (int u = threadIdx.x; u < L.out; u += blockDim.x) {
    const float* wr = w + static_cast<size_t>(u) * L.in;
    float acc = 0;
    for (int i = 0; i < L.in; ++i) acc += wr[i] * x[i];
    acc += b[u];
    y[u] = (relu && !(acc > 0.0f)) ? 0.0f : acc;
  }
}

// The lane's forward in one block from observation o (⊙ sign when sign is non-null: the mirror
// image) through every layer (IQN: the torso only), ping-ponging between the buffers x and y
// (dueling: the value stream into v [K], then dueling_combine, thread k column k). Returns the
// buffer holding the output. Every thread calls it; it ends synchronised.
__device__ float* block_forward(const float* __restrict__ params, const NetLayout& net,
                                const float* o, const float* sign, int d, int A, int K, float* x,
                                float* y, float* v) {
  const int tid = threadIdx.x;
  for (int i = tid; i < d; i += blockDim.x) x[i] = sign != nullptr ? sign[i] * o[i] : o[i];
  __syncthreads();
  const int body = net.iqn_e > 0 ? net.count - 1 : net.count;  // IQN: the torso only here
  for (int l = 0; l < body; ++l) {
    const bool head = l + 1 == net.count;
    block_dense(params, net.layer[l], x, y, !head);
    if (head && net.dueling) block_dense(params, net.value, x, v, false);
    __syncthreads();
    if (head && net.dueling) {
      for (int k = tid; k < K; k += blockDim.x) dueling_combine(v, y, A, K, k, y);
      __syncthreads();
    }
    float* t = x;
    x = y;
    y = t;
  }
  return x;
}

}  // namespace

// ---- acting ------------------------------------------------------------------------------------
// Launch: grid (N), block kLearnerThreads, dynamic shared memory 2·max_width + 3·A + K floats (IQN:
// one more max_width, the buffer z; the last 2·A: Thompson's sampled returns and IQN's τ indices).
// Block i is
// lane i: the MLP forward of obs[i] through every layer (block_dense; with dueling the head is
// the advantage stream, the value stream goes to the last K floats and dueling_combine writes
// the logits over the advantages, thread k column k), then thread a the expected value of action
// a (value_row: atoms null for QR-DQN), then thread 0 the greedy action (the first maximum) or,
// with probability ε, a uniform one from the lane's Rng (CPU order: one unit() draw, then
// uniform(A) only when exploring; no draw at ε = 0). train: ε from the device step counter, and
// the lane's observation and action copied into its replay slot (replay_next + rows·i) mod
// capacity (1-step: ring 0; --mirror: rows 2, the mirror image into the next slot) or, with
// n-step returns (nstep_store_kernel writes both rows), into its row (step mod ring) of the
// lane's ring of the last n steps (r_obs/r_act are then the ring's).
// IQN (net.iqn_e > 0): the torso gives ψ = x; then for k = 0..K−1 in order, with τ = (k + ½)/K,
// y = cos(π·i·τ) [E], z = ReLU(embed(y)) ⊙ ψ [H], y = head(z) [A] (dueling: value into v, combined
// by thread 0), and thread a accumulates q[a] += y[a]/K (DqnAgent::iqn_q's order).
// Thompson (train, eps.thompson and ε > 0; DqnAgent::act's draws from the lane's Rng, no ε coin):
// thread 0, for a = 0..A−1 in order, draws one return of action a — C51 the atom of
// c51_sample_index at one unit(), QR-DQN quantile uniform(K), IQN the head output at policy τ
// index uniform(K) (drawn before the τ loop, which keeps y[a] at that index) — and takes the first
// highest. ε = 0: greedy, no draw.
__global__ void act_kernel(bool train, const float* __restrict__ params, NetLayout net,
                           const float* __restrict__ atoms, int K, int A,
                           const float* __restrict__ obs, int d, Rng* rngs, EpsSchedule eps,
                           const DeviceLearnerStats* stats, int* actions, float* q_out,
                           float* r_obs, int* r_act, int cap, int ring, Mirror mir, Mirror sym) {
  extern __shared__ float smem[];
  int width = d;
  for (int l = 0; l < net.count; ++l) width = max(width, net.layer[l].out);
  const bool iqn = net.iqn_e > 0;
  if (iqn) width = max(width, net.iqn_e);
  float* x = smem;
  float* y = smem + width;
  float* q = smem + 2 * width;
  float* v = q + A;                                  // dueling: the value stream [K]
  float* z = v + K;                                  // IQN: the head's input [H]
  float* sampled = z + (iqn ? width : 0);            // Thompson: each action's sampled return [A]
  int* tau_k = reinterpret_cast<int*>(sampled + A);  // Thompson, IQN: each action's τ index [A]
  const int lane = blockIdx.x, tid = threadIdx.x;
  // Every thread knows whether this step samples (IQN: threads keep y[a] at the drawn τ).
  double e = 0;
  if (train) e = linear_epsilon(eps.start, eps.end, eps.fraction, eps.total, stats->env_steps);
  const bool thompson = train && eps.thompson && e > 0;
  Rng r(0);  // thread 0: the lane's Rng (training; evaluation with the symmetric policy)
  if (rngs != nullptr && tid == 0) r = rngs[lane];
  const float* o = obs + static_cast<size_t>(lane) * d;
  x = block_forward(params, net, o, nullptr, d, A, K, x, y, v);
  y = x == smem ? smem + width : smem;  // the other buffer
  if (iqn) {                            // x holds ψ [H]
    const DeviceLayer& head = net.layer[net.count - 1];
    const int H = net.embed.out, KP = net.iqn_k;
    for (int a = tid; a < A; a += blockDim.x) q[a] = 0.0f;
    if (thompson && tid == 0)  // DqnAgent::act's draws, in action order
      for (int a = 0; a < A; ++a) tau_k[a] = static_cast<int>(r.uniform(static_cast<uint64_t>(KP)));
    __syncthreads();
    for (int k = 0; k < KP; ++k) {
      const float tau = (static_cast<float>(k) + 0.5f) / static_cast<float>(KP);
      for (int i = tid; i < net.iqn_e; i += blockDim.x)
        y[i] = cosf(kPi * static_cast<float>(i) * tau);
      __syncthreads();
      block_dense(params, net.embed, y, z, true);
      for (int u = tid; u < H; u += blockDim.x) z[u] = x[u] * z[u];  // block_dense's own u
      __syncthreads();
      block_dense(params, head, z, y, false);
      if (net.dueling) block_dense(params, net.value, z, v, false);
      __syncthreads();
      if (net.dueling && tid == 0) dueling_combine(v, y, A, 1, 0, y);
      __syncthreads();
      for (int a = tid; a < A; a += blockDim.x) {
        q[a] += y[a] / static_cast<float>(KP);
        if (thompson && tau_k[a] == k) sampled[a] = y[a];
      }
      __syncthreads();
    }
    for (int a = tid; a < A; a += blockDim.x) q_out[static_cast<size_t>(lane) * A + a] = q[a];
  } else {  // x holds the logits [A, K]
    for (int a = tid; a < A; a += blockDim.x) q[a] = value_row(x + a * K, atoms, K);
    if (sym.sign != nullptr) {  // DqnAgent::row_values: q[a] = ½[q(s, a) + q(m(s), m(a))]
      __syncthreads();          // x is read; the mirror's forward reuses the buffers
      const float* xm = block_forward(params, net, o, sym.sign, d, A, K, smem, smem + width, v);
      for (int a = tid; a < A; a += blockDim.x)
        q[a] = 0.5f * (q[a] + value_row(xm + sym.action[a] * K, atoms, K));
    }
    for (int a = tid; a < A; a += blockDim.x) q_out[static_cast<size_t>(lane) * A + a] = q[a];
  }
  __syncthreads();
  if (tid == 0) {
    int best = 0;
    if (thompson) {  // one sampled return per action (DqnAgent::act's order); the first highest
      float best_v = 0;
      for (int a = 0; a < A; ++a) {
        float val;
        if (iqn) {
          val = sampled[a];
        } else if (atoms != nullptr) {
          val = atoms[c51_sample_index<float>(x + a * K, K, r.unit())];
        } else {
          val = x[a * K + static_cast<int>(r.uniform(static_cast<uint64_t>(K)))];
        }
        if (a == 0 || val > best_v) best = a, best_v = val;
      }
    } else if (train && e > 0 && r.unit() < e) {  // DqnAgent::act's order: the ε coin first
      best = static_cast<int>(r.uniform(static_cast<uint64_t>(A)));
    } else {
      for (int a = 1; a < A; ++a)
        if (q[a] > q[best]) best = a;
      // Symmetric policy: a tie of best with its mirror image (a state that is its own mirror)
      // goes to either by a fair coin (DqnAgent::act's).
      if (sym.sign != nullptr && rngs != nullptr) {
        const int mb = sym.action[best];
        if (mb != best && q[mb] == q[best] && r.unit() < 0.5) best = mb;
      }
    }
    if (rngs != nullptr) rngs[lane] = r;
    actions[lane] = best;
  }
  if (train) {
    const long long step = stats->env_steps / gridDim.x;
    const size_t slot = ring > 0
                            ? static_cast<size_t>(lane) * ring + static_cast<size_t>(step % ring)
                            : static_cast<size_t>((stats->replay_next + mir.rows() * lane) % cap);
    for (int i = tid; i < d; i += blockDim.x) r_obs[slot * d + i] = o[i];
    const bool mirror = ring == 0 && mir.sign != nullptr;  // n-step: nstep_store_kernel mirrors
    const size_t mslot = (slot + 1) % static_cast<size_t>(cap);
    if (mirror)
      for (int i = tid; i < d; i += blockDim.x) r_obs[mslot * d + i] = mir.sign[i] * o[i];
    __syncthreads();
    if (tid == 0) r_act[slot] = actions[lane];
    if (tid == 0 && mirror) r_act[mslot] = mir.action[actions[lane]];
  }
}

}  // namespace fxt::rl
