#include "rl/device_transitions.cuh"

namespace fxt::rl {
namespace {

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

}  // namespace

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
// Launch: grid ceil(B / kLearnerThreads), block kLearnerThreads; thread b draws row b's index
// uniformly from [0, replay_size) with its own Rng (draw and draw_index) or reads idx[b] (tests, or
// the prioritised sample kernel's pick), then gathers the transition. IQN (n_tau > 0, draw): then
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

}  // namespace fxt::rl
