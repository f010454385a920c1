#include "rl/device_learner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "core/random.h"
#include "rl/device_replay.h"
#include "rl/dqn_schedule.h"
#include "rl/dueling_head.h"
#include "rl/env_lane.h"
#include "rl/per_math.h"

namespace fxt::rl {
namespace {

constexpr int kMaxLayers = 8;
constexpr int kThreads = 128;
constexpr int kEvalChunk = 32;  // env steps per evaluation graph replay
constexpr float kPi = 3.14159265358979323846f;  // QNetwork::forward_iqn's float π

// The network's layout, passed by value to the fused acting kernel.
struct NetLayout {
  DeviceLayer layer[kMaxLayers];  // torso ... head (with dueling, the advantage stream)
  DeviceLayer value;              // dueling: the value stream, from the torso output as the head
  DeviceLayer embed;              // IQN: iqn.embed [H, E]
  int count;
  bool dueling;
  int iqn_e, iqn_k;  // IQN: E cosine features (0: not IQN), K policy τ
};

// --mirror: obs'[k] = sign[k]·obs[k], a' = action[a] (sign null: no mirror). A lane's row then
// takes two replay slots, the transition at next + 2i and its mirror image at next + 2i + 1 (the
// CPU trainer's store order), so `rows` = 2 slots per lane and step.
struct Mirror {
  const float* sign;
  const int* action;
  __host__ __device__ int rows() const { return sign != nullptr ? 2 : 1; }
};

// The ε schedule's constants (linear_epsilon's arguments but the step); thompson: Thompson
// exploration (DqnAgent::act) in place of the ε coin whenever ε > 0.
struct EpsSchedule {
  double start, end, fraction;
  long long total;
  bool thompson;
};

int max_width(const DeviceLearnerConfig& c) {
  int w = c.obs_dim;
  for (const DeviceLayer& l : c.layers) w = std::max(w, std::max(l.in, l.out));
  if (c.dueling) w = std::max(w, std::max(c.value.in, c.value.out));
  if (c.iqn_embedding > 0) w = std::max(w, std::max(c.embed.in, c.embed.out));
  return w;
}

// Expected value Σ_j z_j softmax(logits)_j of one row, summed in the CPU's order
// (c51_expectation): the maximum, then e_j = exp(l_j − max) accumulated into Σ e and Σ e·z.
__device__ float expectation_row(const float* logits, const float* atoms, int K) {
  float mx = logits[0];
  for (int j = 1; j < K; ++j) mx = fmaxf(mx, logits[j]);
  float sum = 0, acc = 0;
  for (int j = 0; j < K; ++j) {
    const float e = expf(logits[j] - mx);
    sum += e;
    acc += e * atoms[j];
  }
  return acc / sum;
}

// An action's expected value in DqnAgent::expected_value's order: C51 (atoms given) Σ z_j
// softmax_j (expectation_row); QR-DQN (atoms null) its K quantiles summed in order, then / K.
__device__ float value_row(const float* row, const float* atoms, int K) {
  if (atoms != nullptr) return expectation_row(row, atoms, K);
  float sum = 0;
  for (int k = 0; k < K; ++k) sum += row[k];
  return sum / static_cast<float>(K);
}

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

// ---- acting ------------------------------------------------------------------------------------
// Launch: grid (N), block kThreads, dynamic shared memory 2·max_width + 3·A + K floats (IQN: one
// more max_width, the buffer z; the last 2·A: Thompson's sampled returns and IQN's τ indices).
// Block i is
// lane i: the MLP forward of obs[i] through every layer (block_dense; with dueling the head is
// the advantage stream, the value stream goes to the last K floats and dueling_combine writes
// the logits over the advantages, thread k column k), then thread a the expected value of action
// a (value_row: atoms null for QR-DQN), then thread 0 the greedy action (the first maximum) or,
// with probability ε, a uniform one from the lane's Rng (CPU order: one unit() draw, then
// uniform(A) only when exploring; no draw at ε = 0). kTrain: ε from the device step counter, and
// the lane's observation and action copied into its replay slot (replay_next + rows·i) mod
// capacity (1-step: ring 0; --mirror: rows 2, the mirror image into the next slot) or, with
// n-step returns (nstep_store_kernel writes both rows), into its row (step mod ring) of the
// lane's ring of the last n steps (r_obs/r_act are then the ring's).
// IQN (net.iqn_e > 0): the torso gives ψ = x; then for k = 0..K−1 in order, with τ = (k + ½)/K,
// y = cos(π·i·τ) [E], z = ReLU(embed(y)) ⊙ ψ [H], y = head(z) [A] (dueling: value into v, combined
// by thread 0), and thread a accumulates q[a] += y[a]/K (DqnAgent::iqn_q's order).
// Thompson (kTrain, eps.thompson and ε > 0; DqnAgent::act's draws from the lane's Rng, no ε coin):
// thread 0, for a = 0..A−1 in order, draws one return of action a — C51 the atom of
// c51_sample_index at one unit(), QR-DQN quantile uniform(K), IQN the head output at policy τ
// index uniform(K) (drawn before the τ loop, which keeps y[a] at that index) — and takes the first
// highest. ε = 0: greedy, no draw.
template <bool kTrain>
__global__ void act_kernel(const float* __restrict__ params, NetLayout net,
                           const float* __restrict__ atoms, int K, int A,
                           const float* __restrict__ obs, int d, Rng* rngs, EpsSchedule eps,
                           const DeviceLearnerStats* stats, int* actions, float* q_out,
                           float* r_obs, int* r_act, int cap, int ring, Mirror mir) {
  extern __shared__ float smem[];
  int width = d;
  for (int l = 0; l < net.count; ++l) width = max(width, net.layer[l].out);
  const bool iqn = net.iqn_e > 0;
  if (iqn) width = max(width, net.iqn_e);
  float* x = smem;
  float* y = smem + width;
  float* q = smem + 2 * width;
  float* v = q + A;  // dueling: the value stream [K]
  float* z = v + K;  // IQN: the head's input [H]
  float* sampled = z + (iqn ? width : 0);            // Thompson: each action's sampled return [A]
  int* tau_k = reinterpret_cast<int*>(sampled + A);  // Thompson, IQN: each action's τ index [A]
  const int lane = blockIdx.x, tid = threadIdx.x;
  // Every thread knows whether this step samples (IQN: threads keep y[a] at the drawn τ).
  double e = 0;
  if (kTrain) e = linear_epsilon(eps.start, eps.end, eps.fraction, eps.total, stats->env_steps);
  const bool thompson = kTrain && eps.thompson && e > 0;
  Rng r(0);  // thread 0: the lane's Rng (kTrain)
  if (kTrain && tid == 0) r = rngs[lane];
  const float* o = obs + static_cast<size_t>(lane) * d;
  for (int i = tid; i < d; i += blockDim.x) x[i] = o[i];
  __syncthreads();
  const int body = iqn ? net.count - 1 : net.count;  // IQN: the torso only here
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
  if (iqn) {  // x holds ψ [H]
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
    for (int a = tid; a < A; a += blockDim.x) {
      q[a] = value_row(x + a * K, atoms, K);
      q_out[static_cast<size_t>(lane) * A + a] = q[a];
    }
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
    } else {
      for (int a = 1; a < A; ++a)
        if (q[a] > q[best]) best = a;
      if (kTrain && e > 0 && r.unit() < e)
        best = static_cast<int>(r.uniform(static_cast<uint64_t>(A)));
    }
    if (kTrain) rngs[lane] = r;
    actions[lane] = best;
  }
  if (kTrain) {
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

// The finished lanes' returns into the ring of the last 100 (lane order, the CPU trainer's), then
// the replay ring, its size (`emitted` rows this step) and the step counter. One thread.
__device__ void advance_counters(const uint8_t* terminated, const uint8_t* truncated, int n,
                                 int emitted, DeviceLearnerStats* stats, double* lane_ret,
                                 double* recent, int cap) {
  for (int i = 0; i < n; ++i) {
    if (!(terminated[i] || truncated[i])) continue;
    recent[stats->recent_next] = lane_ret[i];
    stats->recent_next = (stats->recent_next + 1) % kRecentEpisodes;
    stats->recent_count = min(stats->recent_count + 1, kRecentEpisodes);
    lane_ret[i] = 0;
    ++stats->episodes;
  }
  stats->replay_next = (stats->replay_next + emitted) % cap;
  stats->replay_size = min(stats->replay_size + emitted, cap);
  stats->env_steps += n;
}

// ---- store + advance ---------------------------------------------------------------------------
// Launch: one block of min(N, 1024) threads. Thread i handles lanes i, i + blockDim, …: the lane's
// next_obs, reward and discount into its replay slot (--mirror: and the mirror image's into the
// next) and its running episode return. Then thread
// 0 alone, in lane order (the CPU trainer's order), moves each finished lane's return into the
// ring of the last 100, and advances the replay ring, its size and the step counter.
__global__ void store_kernel(const float* __restrict__ next_obs, const float* __restrict__ reward,
                             const uint8_t* __restrict__ terminated,
                             const uint8_t* __restrict__ truncated, int n, int d, float gamma,
                             DeviceLearnerStats* stats, double* lane_ret, double* recent,
                             float* r_next, float* r_rew, float* r_disc, int cap, Mirror mir) {
  const int next = stats->replay_next, rows = mir.rows();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const size_t slot = static_cast<size_t>((next + rows * i) % cap);
    for (int k = 0; k < d; ++k) r_next[slot * d + k] = next_obs[static_cast<size_t>(i) * d + k];
    r_rew[slot] = reward[i];
    r_disc[slot] = terminated[i] ? 0.0f : gamma;  // 1-step: γ^1; truncated still bootstraps
    lane_ret[i] += static_cast<double>(reward[i]);
    if (rows == 1) continue;
    const size_t ms = (slot + 1) % static_cast<size_t>(cap);  // the mirror image: same r, γ
    for (int k = 0; k < d; ++k) r_next[ms * d + k] = mir.sign[k] * r_next[slot * d + k];
    r_rew[ms] = r_rew[slot];
    r_disc[ms] = r_disc[slot];
  }
  __syncthreads();
  if (threadIdx.x == 0)
    advance_counters(terminated, truncated, n, rows * n, stats, lane_ret, recent, cap);
}

// n-step returns (ring = n > 1). Launch: one block of min(N, 1024) threads; thread i handles lanes
// i, i + blockDim, …. Step t of a lane fills row t mod n of its ring (act_kernel wrote the
// observation and action; here the reward, the end flag and next_obs); from t = n − 1 on, the
// lane stores the transition that started at s = t − n + 1 into replay slot replay_next + i: the
// rewards from s summed as NStepAccumulator does (double, γ^k), up to step t or the end of s's
// episode, whichever is first; discount 0 at a terminal, γ^k when truncated after k steps (from
// that step's next_obs), else γ^n from step t's next_obs. Rows of a new episode follow an
// ended one in the ring, so the n − 1 transitions cut by an episode's end go out during the next
// episode's first n − 1 steps, which store none of their own: one row per lane and step.
__global__ void nstep_store_kernel(
    const float* __restrict__ next_obs, const float* __restrict__ reward,
    const uint8_t* __restrict__ terminated, const uint8_t* __restrict__ truncated, int n, int d,
    double gamma, int ring, DeviceLearnerStats* stats, double* lane_ret, double* recent,
    float* p_obs, int* p_act, float* p_rew, uint8_t* p_end, float* p_next, float* r_obs, int* r_act,
    float* r_next, float* r_rew, float* r_disc, int cap, Mirror mir) {
  const long long t = stats->env_steps / n;
  const int rows = mir.rows();
  const int row = static_cast<int>(t % ring);
  const bool emit = t >= ring - 1;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const size_t lane_row = static_cast<size_t>(i) * ring;
    const size_t cur = lane_row + static_cast<size_t>(row);
    for (int k = 0; k < d; ++k) p_next[cur * d + k] = next_obs[static_cast<size_t>(i) * d + k];
    p_rew[cur] = reward[i];
    p_end[cur] = terminated[i] ? 1 : truncated[i] ? 2 : 0;
    lane_ret[i] += static_cast<double>(reward[i]);
    if (!emit) continue;
    const int first = static_cast<int>((t - ring + 1) % ring);
    double ret = 0, g = 1;
    int last = row;
    bool terminal = false;
    for (int k = 0; k < ring; ++k) {
      const int r = (first + k) % ring;
      ret += g * p_rew[lane_row + static_cast<size_t>(r)];
      g *= gamma;
      last = r;
      const uint8_t end = p_end[lane_row + static_cast<size_t>(r)];
      if (end != 0) {
        terminal = end == 1;
        break;
      }
    }
    const size_t slot = static_cast<size_t>((stats->replay_next + rows * i) % cap);
    const size_t src = lane_row + static_cast<size_t>(first);
    const size_t nxt = lane_row + static_cast<size_t>(last);
    for (int k = 0; k < d; ++k) {
      r_obs[slot * d + k] = p_obs[src * d + k];
      r_next[slot * d + k] = p_next[nxt * d + k];
    }
    r_act[slot] = p_act[src];
    r_rew[slot] = static_cast<float>(ret);
    r_disc[slot] = terminal ? 0.0f : static_cast<float>(g);
    if (rows == 1) continue;
    const size_t ms = (slot + 1) % static_cast<size_t>(cap);  // the mirror image: same r, γ^k
    for (int k = 0; k < d; ++k) {
      r_obs[ms * d + k] = mir.sign[k] * r_obs[slot * d + k];
      r_next[ms * d + k] = mir.sign[k] * r_next[slot * d + k];
    }
    r_act[ms] = mir.action[r_act[slot]];
    r_rew[ms] = r_rew[slot];
    r_disc[ms] = r_disc[slot];
  }
  __syncthreads();
  if (threadIdx.x == 0)
    advance_counters(terminated, truncated, n, emit ? rows * n : 0, stats, lane_ret, recent, cap);
}

// ---- sampling ----------------------------------------------------------------------------------
// Launch: grid ceil(B / kThreads), block kThreads; thread b draws row b's index uniformly from
// [0, replay_size) with its own Rng (draw and draw_index) or reads idx[b] (tests, or the
// prioritised sample kernel's pick), then gathers the transition. IQN (n_tau > 0, draw): then
// the row's N fractions τ and N τ' from the same Rng, each float(unit()) as DqnAgent::update_iqn
// (which draws them all from its one Rng, in that order).
__global__ void sample_kernel(bool draw, bool draw_index, Rng* rngs, int* idx,
                              const DeviceLearnerStats* stats, int B, int d, const float* r_obs,
                              const int* r_act, const float* r_rew, const float* r_next,
                              const float* r_disc, float* b_obs, int* b_act, float* b_rew,
                              float* b_next, float* b_disc, int n_tau, float* taus,
                              float* taus_next) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  int i;
  if (draw) {
    Rng r = rngs[b];
    i = draw_index ? static_cast<int>(r.uniform(static_cast<uint64_t>(stats->replay_size)))
                   : idx[b];
    const size_t t0 = static_cast<size_t>(b) * static_cast<size_t>(n_tau);
    for (int k = 0; k < n_tau; ++k) taus[t0 + k] = static_cast<float>(r.unit());
    for (int k = 0; k < n_tau; ++k) taus_next[t0 + k] = static_cast<float>(r.unit());
    rngs[b] = r;
    idx[b] = i;
  } else {
    i = idx[b];
  }
  const size_t s = static_cast<size_t>(i);
  for (int k = 0; k < d; ++k) {
    b_obs[static_cast<size_t>(b) * d + k] = r_obs[s * d + k];
    b_next[static_cast<size_t>(b) * d + k] = r_next[s * d + k];
  }
  b_act[b] = r_act[s];
  b_rew[b] = r_rew[s];
  b_disc[b] = r_disc[s];
}

// ---- the pieces both loss kernels share --------------------------------------------------------
// Threads a of a loss block: qs[a] = the value of action a at s' from next_sel's rows (the online
// net with double Q, else the target) and, with Munchausen (cur non-null), qc[a] = the target
// net's at s. Rows of sample b start at `row`; atoms null for QR-DQN (value_row).
__device__ void action_values(const float* next_sel, const float* cur, size_t row,
                              const float* atoms, int K, int A, float* qs, float* qc) {
  for (int j = threadIdx.x; j < A; j += blockDim.x) {
    qs[j] = value_row(next_sel + row + static_cast<size_t>(j) * K, atoms, K);
    if (cur != nullptr) qc[j] = value_row(cur + row + static_cast<size_t>(j) * K, atoms, K);
  }
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

// ---- the C51 target, loss and gradient ---------------------------------------------------------
// The loss kernel's dynamic shared memory in floats: p [A·K], m [K], log Z [1], then qs, qc, w,
// shift and comp (ints) [A] each.
size_t c51_loss_smem_floats(int A, int K) {
  return static_cast<size_t>(A) * static_cast<size_t>(K) + static_cast<size_t>(K) + 1 +
         5 * static_cast<size_t>(A);
}

// Launch: grid (B), block kThreads, dynamic shared memory c51_loss_smem_floats(A, K). Block b is
// sample b, in DqnAgent::update's arithmetic. The target distribution m is a mixture of C
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
                                const int* b_act, const float* b_rew, const float* b_disc,
                                const float* weight, float inv_b, float* d_out, float* loss_b,
                                float* q_b) {
  extern __shared__ float sm[];
  float* p = sm;                                  // [C, K] the components' probabilities
  float* m = p + static_cast<size_t>(A) * K;      // [K] the projected target
  float* log_z = m + K;                           // [1] the prediction's log partition
  float* qs = log_z + 1;                          // [A] values at s', then row maxima
  float* qc = qs + A;                             // [A] Munchausen: values at s, then row Σ exp
  float* w = qc + A;                              // [A] component weights
  float* shift = w + A;                           // [A] component shifts
  int* comp = reinterpret_cast<int*>(shift + A);  // [A] component rows (actions at s')
  __shared__ int n_comp;
  const int b = blockIdx.x, tid = threadIdx.x;
  const size_t row = static_cast<size_t>(b) * A * K;
  const int a = b_act[b];
  const float r = b_rew[b], g = b_disc[b];
  action_values(next_sel, munchausen ? cur_t : nullptr, row, atoms, K, A, qs, qc);
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
    const float* l = next_t + row + static_cast<size_t>(comp[c]) * K;
    float mx = l[0];
    for (int j = 1; j < K; ++j) mx = fmaxf(mx, l[j]);
    float sum = 0;
    for (int j = 0; j < K; ++j) sum += expf(l[j] - mx);
    qs[c] = mx;
    qc[c] = sum;
  }
  __syncthreads();
  for (int e = tid; e < C * K; e += blockDim.x) {
    const int c = e / K, j = e % K;
    p[e] = expf(next_t[row + static_cast<size_t>(comp[c]) * K + j] - qs[c]) / qc[c];
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
    float mx = pred[0];
    for (int j = 1; j < K; ++j) mx = fmaxf(mx, pred[j]);
    float sum = 0;
    for (int j = 0; j < K; ++j) sum += expf(pred[j] - mx);
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

// ---- the QR-DQN target, loss and gradient ------------------------------------------------------
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

// The loss kernel's dynamic shared memory in floats: the target quantiles [A·K], the per-quantile
// losses [K], then qs, qc, w and comp (ints) [A] each.
size_t qr_loss_smem_floats(int A, int K) {
  return static_cast<size_t>(A) * static_cast<size_t>(K) + static_cast<size_t>(K) +
         4 * static_cast<size_t>(A);
}

// Launch: grid (B), block kThreads, dynamic shared memory qr_loss_smem_floats(A, K). Block b is
// sample b, in DqnAgent::update's arithmetic (K = N quantiles per action). Thread 0 picks the
// components (bootstrap_components: values are quantile means); thread e = c·K + k writes target
// quantile e from the target net's θ'(s', comp[c])_k: plain r + g·θ', Munchausen
// r + bonus + g·(θ' − τ ln π(a'|s')), each of weight w[c]/K. Thread i takes the prediction θ_i
// of the taken action at τ̂_i = (2i + 1)/(2K) and sums over the targets in order the quantile
// Huber loss w·|τ̂_i − 1{u < 0}|·L_1(u), u = target − θ_i, and its gradient (κ = 1: the
// arithmetic of quantile_huber_loss_at in rl/distributional.cc); thread 0 sums the K losses in
// order (the CPU one running sum: equal to float rounding). d_out = w_b·inv_b·dL/dθ on the taken
// action's row, 0 elsewhere (w_b = weight[b], the IS weight; 1 when null).
__global__ void qr_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                               const float* __restrict__ next_sel, const float* __restrict__ cur_t,
                               int K, int A, bool munchausen, MunchausenConfig mc, const int* b_act,
                               const float* b_rew, const float* b_disc, const float* weight,
                               float inv_b, float* d_out, float* loss_b, float* q_b) {
  extern __shared__ float sm[];
  float* tq = sm;                               // [C·K] the target quantiles
  float* lq = tq + static_cast<size_t>(A) * K;  // [K] each predicted quantile's loss
  float* qs = lq + K;                           // [A] values at s', then ln π(a'|s')
  float* qc = qs + A;                           // [A] Munchausen: values at s, then ln π(·|s)
  float* w = qc + A;                            // [A] component weights, then / K
  int* comp = reinterpret_cast<int*>(w + A);    // [A] component rows (actions at s')
  __shared__ int n_comp;
  __shared__ float bonus;
  const int b = blockIdx.x, tid = threadIdx.x;
  const size_t row = static_cast<size_t>(b) * A * K;
  const int a = b_act[b];
  const float r = b_rew[b], g = b_disc[b];
  const float kf = static_cast<float>(K);
  action_values(next_sel, munchausen ? cur_t : nullptr, row, nullptr, K, A, qs, qc);
  __syncthreads();
  if (tid == 0) {
    n_comp = bootstrap_components(munchausen, mc, A, a, qs, qc, comp, w, &bonus);
    for (int c = 0; c < n_comp; ++c) w[c] = w[c] / kf;
  }
  __syncthreads();
  const int C = n_comp;
  const float tau = static_cast<float>(mc.tau);
  for (int e = tid; e < C * K; e += blockDim.x) {
    const int c = e / K;
    const float z = next_t[row + static_cast<size_t>(comp[c]) * K + e % K];
    tq[e] = munchausen ? r + bonus + g * (z - tau * qs[c]) : r + g * z;
  }
  __syncthreads();
  const float* pred = out + row + static_cast<size_t>(a) * K;
  const float wb = (weight != nullptr ? weight[b] : 1.0f) * inv_b;
  for (int i = tid; i < K; i += blockDim.x) {
    const float theta = pred[i];
    const float tau_i = (2.0f * static_cast<float>(i) + 1.0f) / (2.0f * kf);
    float loss, grad;
    quantile_huber_at(theta, tau_i, tq, w, K, C * K, &loss, &grad);
    lq[i] = loss;
    d_out[row + static_cast<size_t>(a) * K + i] = wb * grad;
  }
  for (int e = tid; e < A * K; e += blockDim.x)
    if (e / K != a) d_out[row + e] = 0.0f;
  __syncthreads();
  if (tid == 0) {
    float loss = 0;
    for (int i = 0; i < K; ++i) loss += lq[i];
    loss_b[b] = loss;
    q_b[b] = value_row(pred, nullptr, K);
  }
}

// ---- IQN: the embedding, the target, loss and gradient -----------------------------------------
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

// The loss kernel's dynamic shared memory in floats: the target quantiles [A·N], the
// per-fraction losses [N], then qs, qc, w and comp (ints) [A] each.
size_t iqn_loss_smem_floats(int A, int N) {
  return qr_loss_smem_floats(A, N);
}

// Launch: grid (B), block kThreads, dynamic shared memory iqn_loss_smem_floats(A, N). Block b is
// sample b of DqnAgent::update_iqn: out [B, N, A] the online net at s at the sampled τ, next_t
// [B, N, A] the target net at s' at τ', q_sel [B, A] the K-τ values at s' that pick a* (online
// with double Q, else target; the target's with Munchausen), q_cur [B, A] the target's at s
// (Munchausen, else null). Thread 0 picks the components (bootstrap_components); thread e =
// c·N + k writes target e from θ'(s', τ'_k, comp[c]): plain r + g·θ', Munchausen r + bonus +
// g·(θ' − τ ln π(a'|s')), weight w[c]/N. Thread i takes θ_i = out[b, i, a] at taus[b, i] and sums
// the quantile Huber loss over the targets in order (quantile_huber_at); thread 0 sums the N
// losses in order and the mean Σ θ_i/N. d_out = w_b·inv_b·dL/dθ at column a of the N rows, 0
// elsewhere (w_b = weight[b], the IS weight; 1 when null).
__global__ void iqn_loss_kernel(const float* __restrict__ out, const float* __restrict__ next_t,
                                const float* __restrict__ q_sel, const float* __restrict__ q_cur,
                                const float* __restrict__ taus, int N, int A, bool munchausen,
                                MunchausenConfig mc, const int* b_act, const float* b_rew,
                                const float* b_disc, const float* weight, float inv_b, float* d_out,
                                float* loss_b, float* q_b) {
  extern __shared__ float sm[];
  float* tq = sm;                               // [C·N] the target quantiles
  float* lq = tq + static_cast<size_t>(A) * N;  // [N] each predicted quantile's loss
  float* qs = lq + N;                           // [A] values at s', then ln π(a'|s')
  float* qc = qs + A;                           // [A] Munchausen: values at s, then ln π(·|s)
  float* w = qc + A;                            // [A] component weights, then / N
  int* comp = reinterpret_cast<int*>(w + A);    // [A] component columns (actions at s')
  __shared__ int n_comp;
  __shared__ float bonus;
  const int b = blockIdx.x, tid = threadIdx.x;
  const size_t row = static_cast<size_t>(b) * N * A;  // sample b's [N, A] block
  const int a = b_act[b];
  const float r = b_rew[b], g = b_disc[b];
  const float nf = static_cast<float>(N);
  for (int j = tid; j < A; j += blockDim.x) {
    qs[j] = q_sel[static_cast<size_t>(b) * A + j];
    if (munchausen) qc[j] = q_cur[static_cast<size_t>(b) * A + j];
  }
  __syncthreads();
  if (tid == 0) {
    n_comp = bootstrap_components(munchausen, mc, A, a, qs, qc, comp, w, &bonus);
    for (int c = 0; c < n_comp; ++c) w[c] = w[c] / nf;
  }
  __syncthreads();
  const int C = n_comp;
  const float tau = static_cast<float>(mc.tau);
  for (int e = tid; e < C * N; e += blockDim.x) {
    const int c = e / N;
    const float z = next_t[row + static_cast<size_t>(e % N) * A + comp[c]];
    tq[e] = munchausen ? r + bonus + g * (z - tau * qs[c]) : r + g * z;
  }
  __syncthreads();
  const float wb = (weight != nullptr ? weight[b] : 1.0f) * inv_b;
  for (int i = tid; i < N; i += blockDim.x) {
    const size_t at = row + static_cast<size_t>(i) * A + a;
    float loss, grad;
    quantile_huber_at(out[at], taus[static_cast<size_t>(b) * N + i], tq, w, N, C * N, &loss, &grad);
    lq[i] = loss;
    d_out[at] = wb * grad;
  }
  for (int e = tid; e < N * A; e += blockDim.x)
    if (e % A != a) d_out[row + e] = 0.0f;
  __syncthreads();
  if (tid == 0) {
    float loss = 0, mean = 0;
    for (int i = 0; i < N; ++i) {
      loss += lq[i];
      mean += out[row + static_cast<size_t>(i) * A + a] / nf;
    }
    loss_b[b] = loss;
    q_b[b] = mean;
  }
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

// Grid-stride elementwise kernels (grid ceil(n / 256) capped at 1024 blocks, 256 threads).
__global__ void relu_kernel(float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (!(y[i] > 0.0f)) y[i] = 0.0f;
}
// d[i] = 0 where the layer output y[i] was not positive (ReLU's backward, as the CPU's).
__global__ void relu_mask_kernel(const float* y, float* d, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (!(y[i] > 0.0f)) d[i] = 0.0f;
}
// The dueling head on a batch (grid-stride over rows·K elements, grid_for, 256 threads): element
// (r, k) owns column k of row r. Forward: out's advantages [rows, A·K] become the logits in place,
// with value [rows, K]; backward: d_out [rows, A·K] → d_value [rows, K], d_adv [rows, A·K].
__global__ void dueling_forward_kernel(const float* value, float* out, int rows, int A, int K) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(K);
  const size_t AK = static_cast<size_t>(A) * static_cast<size_t>(K);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / static_cast<size_t>(K);
    float* o = out + r * AK;
    dueling_combine(value + r * static_cast<size_t>(K), o, A, K, static_cast<int>(e % K), o);
  }
}
__global__ void dueling_backward_kernel(const float* d_out, float* d_value, float* d_adv, int rows,
                                        int A, int K) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(K);
  const size_t AK = static_cast<size_t>(A) * static_cast<size_t>(K);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / static_cast<size_t>(K);
    dueling_combine_backward(d_out + r * AK, A, K, static_cast<int>(e % K),
                             d_value + r * static_cast<size_t>(K), d_adv + r * AK);
  }
}
// target ← t·online + (1 − t)·target (DqnAgent::update_target's float arithmetic).
__global__ void polyak_kernel(const float* online, float* target, float t, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    target[i] = t * online[i] + (1 - t) * target[i];
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

unsigned grid_for(size_t n, int threads) {
  return static_cast<unsigned>(std::min<size_t>((n + threads - 1) / threads, 1024));
}

}  // namespace

struct DeviceC51Learner::Impl {
  gpu::DeviceBuffer<float> online, target, grads, atoms;
  gpu::DeviceBuffer<Rng> act_rngs, sample_rngs;
  gpu::DeviceBuffer<float> mirror_sign;  // --mirror: [d] (empty: none)
  gpu::DeviceBuffer<int> mirror_action;  // [A]
  Mirror mirror{nullptr, nullptr};
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
    m.mirror = {m.mirror_sign.data(), m.mirror_action.data()};
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
    m.acts[static_cast<size_t>(l)].resize(B * static_cast<size_t>(cfg.layers[static_cast<size_t>(l)].out));
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
  m.loss_smem = (iqn            ? iqn_loss_smem_floats(cfg.num_actions, cfg.iqn_taus)
                 : cfg.quantile ? qr_loss_smem_floats(cfg.num_actions, cfg.atoms)
                                : c51_loss_smem_floats(cfg.num_actions, cfg.atoms)) *
                sizeof(float);
  FXT_CUDA_CHECK(cudaFuncSetAttribute(act_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(m.act_smem)));
  FXT_CUDA_CHECK(cudaFuncSetAttribute(act_kernel<false>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(m.act_smem)));
  if (iqn) {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(iqn_loss_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(m.loss_smem)));
  } else if (cfg.quantile) {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(qr_loss_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(m.loss_smem)));
  } else {
    FXT_CUDA_CHECK(cudaFuncSetAttribute(c51_loss_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(m.loss_smem)));
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
  act_kernel<true><<<static_cast<unsigned>(N), kThreads, m.act_smem, ctx_.stream()>>>(
      m.online.data(), m.net, m.atom_values, cfg_.atoms, cfg_.num_actions, env_->obs(), d,
      m.act_rngs.data(), eps, m.stats.data(), m.actions.data(), m.q_last.data(),
      nstep ? m.p_obs.data() : m.r_obs.data(), nstep ? m.p_act.data() : m.r_act.data(),
      cfg_.buffer_size, nstep ? cfg_.n_step : 0, m.mirror);
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
  iqn_loss_kernel<<<static_cast<unsigned>(B), kThreads, m.loss_smem, s>>>(
      out, m.next_t.data(), m.q_sel.data(), cfg_.munchausen ? m.q_cur.data() : nullptr,
      m.taus.data(), N, cfg_.num_actions, cfg_.munchausen, cfg_.mdqn, m.b_act.data(),
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
  // The torso from dψ (already masked by ψ's ReLU), as enqueue_update's loop.
  dy = m.d_psi.data();
  float* dx_buf = m.d_a.data();
  float* other = m.d_b.data();
  for (int l = L - 2; l >= 0; --l) {
    const DeviceLayer& layer = cfg_.layers[static_cast<size_t>(l)];
    const float* x = l == 0 ? m.b_obs.data() : m.acts[static_cast<size_t>(l - 1)].data();
    float* dx = l > 0 ? dx_buf : nullptr;
    const size_t nx = static_cast<size_t>(B) * static_cast<size_t>(layer.in);
    if (dx) gpu::fill(ctx_, dx, 0.0f, nx);
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
  sample_kernel<<<static_cast<unsigned>((B + kThreads - 1) / kThreads), kThreads, 0, s>>>(
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
  float* out = m.acts.back().data();
  forward(m.online.data(), m.b_obs.data(), B, out, true);
  const float inv_b = 1.0f / static_cast<float>(B);
  const float* next_sel = online_next ? m.next_o.data() : m.next_t.data();
  const float* cur_t = cfg_.munchausen ? m.cur_t.data() : nullptr;
  if (cfg_.quantile) {
    qr_loss_kernel<<<static_cast<unsigned>(B), kThreads, m.loss_smem, s>>>(
        out, m.next_t.data(), next_sel, cur_t, cfg_.atoms, cfg_.num_actions, cfg_.munchausen,
        cfg_.mdqn, m.b_act.data(), m.b_rew.data(), m.b_disc.data(), is_weights(), inv_b,
        m.d_out.data(), m.loss_b.data(), m.q_b.data());
  } else {
    c51_loss_kernel<<<static_cast<unsigned>(B), kThreads, m.loss_smem, s>>>(
        out, m.next_t.data(), next_sel, cur_t, m.atoms.data(), cfg_.atoms, cfg_.num_actions,
        static_cast<float>(cfg_.v_min), static_cast<float>(cfg_.v_max),
        static_cast<float>((cfg_.v_max - cfg_.v_min) / (cfg_.atoms - 1)), cfg_.munchausen,
        cfg_.mdqn, m.b_act.data(), m.b_rew.data(), m.b_disc.data(), is_weights(), inv_b,
        m.d_out.data(), m.loss_b.data(), m.q_b.data());
  }
  FXT_CUDA_LAUNCH_CHECK();
  // Backward: grads = 0, then layer by layer from the head (linear_backward adds into dx, dw, db).
  gpu::fill(ctx_, m.grads.data(), 0.0f, cfg_.num_params);
  const float* dy = m.d_out.data();
  float* dx_buf = m.d_a.data();
  float* other = m.d_b.data();
  for (int l = L - 1; l >= 0; --l) {
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
  finish_update();
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

void DeviceC51Learner::env_step() { impl_->g_env.launch(ctx_); }
void DeviceC51Learner::env_chunk() {
  assert(chunk_ > 0);
  impl_->g_chunk.launch(ctx_);
}
void DeviceC51Learner::env_chunk_update() {
  assert(chunk_ > 0);
  impl_->g_chunk_update.launch(ctx_);
}
void DeviceC51Learner::update() { impl_->g_update.launch(ctx_); }
void DeviceC51Learner::update_target() { impl_->g_target.launch(ctx_); }

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
  ret.zero();
  done.zero();
  ctx_.sync();
  eval_env->reset(seed, ctx_.stream());
  const EpsSchedule none{0, 0, 1, 1, false};
  cudaStream_t s = ctx_.stream();
  gpu::Graph g;
  g.capture(ctx_, [&] {
    for (int k = 0; k < kEvalChunk; ++k) {
      act_kernel<false><<<static_cast<unsigned>(n), kThreads, m.act_smem, s>>>(
          m.online.data(), m.net, m.atom_values, cfg_.atoms, A, eval_env->obs(), cfg_.obs_dim,
          nullptr, none, nullptr, actions.data(), q.data(), nullptr, nullptr, 1, 0,
          Mirror{nullptr, nullptr});
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
