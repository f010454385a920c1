#include "rl/replay.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace fxt::rl {

SumTree::SumTree(int capacity) {
  while (leaves_ < capacity) leaves_ *= 2;
  tree_.assign(2 * static_cast<size_t>(leaves_), 0.0);
}

void SumTree::set(int i, double priority) {
  assert(i >= 0 && i < leaves_ && priority >= 0);
  size_t node = static_cast<size_t>(leaves_ + i);
  tree_[node] = priority;
  for (node /= 2; node >= 1; node /= 2) tree_[node] = tree_[2 * node] + tree_[2 * node + 1];
}

int SumTree::find(double mass) const {
  size_t node = 1;
  while (node < static_cast<size_t>(leaves_)) {
    const size_t left = 2 * node;
    if (mass < tree_[left] || tree_[left + 1] <= 0) {
      node = left;
    } else {
      mass -= tree_[left];
      node = left + 1;
    }
  }
  // Rounding can walk into a zero leaf at the right edge: step back to a positive one.
  int i = static_cast<int>(node) - leaves_;
  while (i > 0 && tree_[static_cast<size_t>(leaves_ + i)] <= 0) --i;
  return i;
}

ReplayBuffer::ReplayBuffer(int capacity, int obs_dim, double alpha)
    : capacity_(capacity),
      obs_dim_(obs_dim),
      alpha_(alpha),
      obs_(static_cast<size_t>(capacity) * static_cast<size_t>(obs_dim)),
      next_obs_(obs_.size()),
      reward_(static_cast<size_t>(capacity)),
      discount_(static_cast<size_t>(capacity)),
      action_(static_cast<size_t>(capacity)),
      tree_(alpha > 0 ? capacity : 1) {
  assert(capacity >= 1 && obs_dim >= 1 && alpha >= 0);
}

void ReplayBuffer::add(const Transition& t) {
  const size_t i = static_cast<size_t>(next_), d = static_cast<size_t>(obs_dim_);
  std::copy(t.obs, t.obs + d, obs_.begin() + static_cast<std::ptrdiff_t>(i * d));
  std::copy(t.next_obs, t.next_obs + d, next_obs_.begin() + static_cast<std::ptrdiff_t>(i * d));
  action_[i] = t.action;
  reward_[i] = t.reward;
  discount_[i] = t.discount;
  if (prioritized()) tree_.set(next_, std::pow(max_priority_, alpha_));
  next_ = (next_ + 1) % capacity_;
  size_ = std::min(size_ + 1, capacity_);
}

void ReplayBuffer::sample(int batch, double beta, Rng& rng, ReplayBatch* out) const {
  assert(size_ > 0 && batch >= 1);
  const size_t B = static_cast<size_t>(batch), d = static_cast<size_t>(obs_dim_);
  out->index.resize(B);
  out->action.resize(B);
  out->obs.resize(B * d);
  out->next_obs.resize(B * d);
  out->reward.resize(B);
  out->discount.resize(B);
  out->weight.assign(B, 1.0f);
  if (prioritized()) {
    const double total = tree_.total(), slice = total / static_cast<double>(batch);
    double max_w = 0;
    std::vector<double> w(B);
    for (size_t b = 0; b < B; ++b) {
      const double mass = (static_cast<double>(b) + rng.unit()) * slice;
      const int i = tree_.find(mass);
      out->index[b] = i;
      const double p = tree_.get(i) / total;
      w[b] = std::pow(static_cast<double>(size_) * p, -beta);
      max_w = std::max(max_w, w[b]);
    }
    for (size_t b = 0; b < B; ++b) out->weight[b] = static_cast<float>(w[b] / max_w);
  } else {
    for (size_t b = 0; b < B; ++b)
      out->index[b] = static_cast<int>(rng.uniform(static_cast<uint64_t>(size_)));
  }
  for (size_t b = 0; b < B; ++b) {
    const size_t i = static_cast<size_t>(out->index[b]);
    std::copy_n(obs_.begin() + static_cast<std::ptrdiff_t>(i * d), d,
                out->obs.begin() + static_cast<std::ptrdiff_t>(b * d));
    std::copy_n(next_obs_.begin() + static_cast<std::ptrdiff_t>(i * d), d,
                out->next_obs.begin() + static_cast<std::ptrdiff_t>(b * d));
    out->action[b] = action_[i];
    out->reward[b] = reward_[i];
    out->discount[b] = discount_[i];
  }
}

void ReplayBuffer::update_priorities(std::span<const int> index, std::span<const float> priority) {
  if (!prioritized()) return;
  for (size_t b = 0; b < index.size(); ++b) {
    const double p = std::max(static_cast<double>(priority[b]), 1e-6);
    max_priority_ = std::max(max_priority_, p);
    tree_.set(index[b], std::pow(p, alpha_));
  }
}

NStepAccumulator::NStepAccumulator(int num_lanes, int obs_dim, int n, double gamma)
    : obs_dim_(obs_dim), n_(n), gamma_(gamma), lanes_(static_cast<size_t>(num_lanes)) {
  assert(n >= 1);
}

void NStepAccumulator::emit_front(int lane, const float* next_obs, bool terminal, Transition* t) {
  const auto& q = lanes_[static_cast<size_t>(lane)];
  double ret = 0, g = 1;
  for (const Pending& p : q) {
    ret += g * p.reward;
    g *= gamma_;
  }
  t->obs = q.front().obs.data();
  t->action = q.front().action;
  t->reward = static_cast<float>(ret);
  t->next_obs = next_obs;
  t->discount = terminal ? 0.0f : static_cast<float>(g);
}

}  // namespace fxt::rl
