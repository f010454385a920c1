// Experience replay for the DQN agents: a ring buffer of n-step transitions, optionally
// prioritised (Schaul et al. 2016) through a sum tree, and the per-lane n-step accumulator.
//
// Prioritised sampling: transition i is drawn with probability P(i) = p_i^α / Σ_k p_k^α
// (stratified: the batch's b-th draw is uniform inside the b-th of B equal slices of the total),
// and weighted by w_i = (N·P(i))^−β / max_j w_j over the batch. New transitions get the largest
// priority seen so far so each is replayed at least once with high probability.
// Uniform sampling draws indices uniformly with replacement. Both draw from the caller's Rng, so
// a run is reproducible from its seed. Thread-compatible.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "train/checkpoint.h"

namespace fxt::rl {

// A binary sum tree over `capacity` leaves (rounded up to a power of two): O(log n) update and
// prefix-sum search.
class SumTree {
 public:
  explicit SumTree(int capacity);
  int capacity() const { return leaves_; }
  void set(int i, double priority);
  double get(int i) const { return tree_[static_cast<size_t>(leaves_ + i)]; }
  double total() const { return tree_[1]; }
  // The leaf whose cumulative range [Σ_{k<i} p_k, Σ_{k<=i} p_k) holds `mass` (0 <= mass < total);
  // a mass at or past the total (rounding) gives the last leaf with a positive priority.
  int find(double mass) const;
  // Leaves 0..size-1 set to `leaves` (>= 0), the rest to 0, every sum recomputed: the same bits
  // as the set() calls that led to those leaves (each node is always its children's sum).
  void assign(std::span<const double> leaves);

 private:
  int leaves_ = 1;
  std::vector<double> tree_;  // tree_[1] the root, leaves at [leaves_, 2·leaves_)
};

struct Transition {
  const float* obs = nullptr;       // [obs_dim]
  int action = 0;
  float reward = 0;                 // n-step discounted return
  const float* next_obs = nullptr;  // [obs_dim], the state n steps (or fewer, at an end) later
  float discount = 0;               // γ^k for a bootstrapped k-step return, 0 at a terminal
};

struct ReplayBatch {
  std::vector<int> index;
  std::vector<float> obs, next_obs, reward, discount, weight;  // weight: IS weights (1 uniform)
  std::vector<int> action;
};

class ReplayBuffer {
 public:
  // alpha = 0 selects uniform sampling (no tree); alpha > 0 prioritised.
  ReplayBuffer(int capacity, int obs_dim, double alpha);
  int size() const { return size_; }
  int capacity() const { return capacity_; }
  bool prioritized() const { return alpha_ > 0; }
  // Prioritised: the leaves priority^α and the largest priority seen (new rows get its ^α).
  const SumTree& tree() const { return tree_; }
  double max_priority() const { return max_priority_; }

  void add(const Transition& t);
  void sample(int batch, double beta, Rng& rng, ReplayBatch* out) const;
  // New priorities (e.g. the per-sample loss) of the sampled transitions; raised to alpha here.
  void update_priorities(std::span<const int> index, std::span<const float> priority);

  // The stored transitions, the ring position and (prioritised) the priorities and the largest
  // priority seen, as "replay/..." tensors and meta["replay"] (a saved run, rl/resume.h).
  void save(Checkpoint* ckpt) const;
  // Restores what save() wrote for a buffer of the same capacity, obs_dim and kind, whose
  // actions are below num_actions; on an error (one line naming the file and tensor) the buffer
  // is unchanged.
  Status load(const Checkpoint& ckpt, int num_actions);

 private:
  int capacity_, obs_dim_, size_ = 0, next_ = 0;
  double alpha_, max_priority_ = 1.0;
  std::vector<float> obs_, next_obs_, reward_, discount_;
  std::vector<int> action_;
  SumTree tree_;
};

// Turns each lane's 1-step transitions into n-step ones: after n steps the oldest pending step
// is emitted with reward Σ_k γ^k r_k and discount γ^n; when an episode ends every pending step is
// emitted with the rewards up to the end and discount 0 (terminated) or γ^k (truncated: the last
// state still has a value).
class NStepAccumulator {
 public:
  NStepAccumulator(int num_lanes, int obs_dim, int n, double gamma);
  // One step of lane `lane`; calls emit(Transition) for every completed transition.
  template <typename Emit>
  void push(int lane, const float* obs, int action, float reward, const float* next_obs,
            bool terminated, bool truncated, Emit&& emit);

  // Every lane's pending steps as "nstep/..." tensors (a saved run, rl/resume.h).
  void save(Checkpoint* ckpt) const;
  // Restores what save() wrote for the same lanes, obs_dim and n, actions below num_actions;
  // unchanged on an error.
  Status load(const Checkpoint& ckpt, int num_actions);

 private:
  struct Pending {
    std::vector<float> obs;
    int action;
    float reward;
  };
  void emit_front(int lane, const float* next_obs, bool terminal, Transition* t);
  int obs_dim_, n_;
  double gamma_;
  std::vector<std::deque<Pending>> lanes_;
};

template <typename Emit>
void NStepAccumulator::push(int lane, const float* obs, int action, float reward,
                            const float* next_obs, bool terminated, bool truncated, Emit&& emit) {
  auto& q = lanes_[static_cast<size_t>(lane)];
  q.push_back({std::vector<float>(obs, obs + obs_dim_), action, reward});
  Transition t;
  if (terminated || truncated) {
    while (!q.empty()) {
      emit_front(lane, next_obs, terminated, &t);
      emit(t);
      q.pop_front();
    }
  } else if (static_cast<int>(q.size()) == n_) {
    emit_front(lane, next_obs, false, &t);
    emit(t);
    q.pop_front();
  }
}

}  // namespace fxt::rl
