#include "rl/replay.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "rl/per_math.h"

namespace fxt::rl {

SumTree::SumTree(int capacity) : leaves_(sum_tree_leaves(capacity)) {
  tree_.assign(2 * static_cast<size_t>(leaves_), 0.0);
}

void SumTree::set(int i, double priority) {
  assert(i >= 0 && i < leaves_ && priority >= 0);
  size_t node = static_cast<size_t>(leaves_ + i);
  tree_[node] = priority;
  for (node /= 2; node >= 1; node /= 2) tree_[node] = tree_[2 * node] + tree_[2 * node + 1];
}

int SumTree::find(double mass) const {
  return sum_tree_find(tree_.data(), leaves_, mass);
}

void SumTree::assign(std::span<const double> leaves) {
  assert(leaves.size() <= static_cast<size_t>(leaves_));
  std::fill(tree_.begin(), tree_.end(), 0.0);
  std::copy(leaves.begin(), leaves.end(), tree_.begin() + leaves_);
  sum_tree_rebuild(tree_.data(), leaves_);
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
  if (prioritized()) tree_.set(next_, per_leaf(max_priority_, alpha_));
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
    const double total = tree_.total();
    double max_w = 0;
    std::vector<double> w(B);
    for (size_t b = 0; b < B; ++b) {
      const int i = tree_.find(per_mass(total, batch, static_cast<int>(b), rng.unit()));
      out->index[b] = i;
      w[b] = per_is_weight(size_, tree_.get(i), total, beta);
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
    const double p = per_priority(priority[b]);
    max_priority_ = std::max(max_priority_, p);
    tree_.set(index[b], per_leaf(p, alpha_));
  }
}

void ReplayBuffer::save(Checkpoint* ckpt) const {
  const int64_t n = size_, d = obs_dim_;
  const size_t rows = static_cast<size_t>(n) * static_cast<size_t>(d);
  ckpt->meta["replay"] = {{"capacity", capacity_},
                          {"obs_dim", obs_dim_},
                          {"prioritized", prioritized()},
                          {"size", size_},
                          {"next", next_}};
  // Rows past size_ were never written (still zero): only the first size_ are kept.
  ckpt->set_f32("replay/obs", {n, d}, std::span<const float>(obs_.data(), rows));
  ckpt->set_f32("replay/next_obs", {n, d}, std::span<const float>(next_obs_.data(), rows));
  ckpt->set_f32("replay/reward", {n}, std::span<const float>(reward_.data(), size_));
  ckpt->set_f32("replay/discount", {n}, std::span<const float>(discount_.data(), size_));
  const std::vector<int64_t> action(action_.begin(), action_.begin() + size_);
  ckpt->set_i64("replay/action", {n}, action);
  if (!prioritized()) return;
  std::vector<double> leaves(static_cast<size_t>(size_));
  for (int i = 0; i < size_; ++i) leaves[static_cast<size_t>(i)] = tree_.get(i);
  ckpt->set_f64("replay/priority", {n}, leaves);
  ckpt->set_f64("replay/max_priority", {}, std::span<const double>(&max_priority_, 1));
}

Status ReplayBuffer::load(const Checkpoint& ckpt, int num_actions) {
  const std::string w = ckpt.where();
  FXT_ASSIGN_OR_RETURN(const int64_t cap, ckpt.meta_int("replay", "capacity", 1, INT32_MAX));
  FXT_ASSIGN_OR_RETURN(const int64_t dim, ckpt.meta_int("replay", "obs_dim", 1, INT32_MAX));
  const auto& m = ckpt.meta["replay"];
  if (!m.contains("prioritized") || !m["prioritized"].is_boolean())
    return InvalidInput("{}: meta.replay.prioritized: missing or not a boolean", w);
  if (cap != capacity_ || dim != obs_dim_ || m["prioritized"].get<bool>() != prioritized())
    return InvalidInput(
        "{}: the replay buffer holds capacity {}, obs_dim {}, prioritized {}; this run has {}, {}, "
        "{}",
        w, cap, dim, m["prioritized"].get<bool>(), capacity_, obs_dim_, prioritized());
  FXT_ASSIGN_OR_RETURN(const int64_t n, ckpt.meta_int("replay", "size", 0, capacity_));
  // A ring that is not full has its next slot at its size.
  FXT_ASSIGN_OR_RETURN(const int64_t next, ckpt.meta_int("replay", "next", n < capacity_ ? n : 0,
                                                         n < capacity_ ? n : capacity_ - 1));
  const int64_t d = obs_dim_;
  const int64_t rows_shape[] = {n, d}, n_shape[] = {n};
  FXT_ASSIGN_OR_RETURN(std::vector<float> obs, ckpt.get_f32("replay/obs", rows_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<float> next_obs, ckpt.get_f32("replay/next_obs", rows_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<float> reward, ckpt.get_f32("replay/reward", n_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<float> discount, ckpt.get_f32("replay/discount", n_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> action, ckpt.get_i64("replay/action", n_shape));
  std::vector<double> priority;
  double max_priority = 1.0;
  if (prioritized()) {
    FXT_ASSIGN_OR_RETURN(priority, ckpt.get_f64("replay/priority", n_shape));
    FXT_ASSIGN_OR_RETURN(std::vector<double> mp, ckpt.get_f64("replay/max_priority", {}));
    if (mp.size() != 1 || !(mp[0] > 0))
      return InvalidInput("{}: tensor 'replay/max_priority': expected one positive value", w);
    max_priority = mp[0];
    for (double p : priority)
      if (!(p >= 0)) return InvalidInput("{}: tensor 'replay/priority': a negative priority", w);
  }
  for (int64_t a : action)
    if (a < 0 || a >= num_actions)
      return InvalidInput("{}: tensor 'replay/action': action {}, expected 0 to {}", w, a,
                          num_actions - 1);
  std::fill(obs_.begin(), obs_.end(), 0.0f);
  std::fill(next_obs_.begin(), next_obs_.end(), 0.0f);
  std::fill(reward_.begin(), reward_.end(), 0.0f);
  std::fill(discount_.begin(), discount_.end(), 0.0f);
  std::fill(action_.begin(), action_.end(), 0);
  std::copy(obs.begin(), obs.end(), obs_.begin());
  std::copy(next_obs.begin(), next_obs.end(), next_obs_.begin());
  std::copy(reward.begin(), reward.end(), reward_.begin());
  std::copy(discount.begin(), discount.end(), discount_.begin());
  for (size_t i = 0; i < action.size(); ++i) action_[i] = static_cast<int>(action[i]);
  if (prioritized()) tree_.assign(priority);
  max_priority_ = max_priority;
  size_ = static_cast<int>(n);
  next_ = static_cast<int>(next);
  return Status::Ok();
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

void NStepAccumulator::save(Checkpoint* ckpt) const {
  std::vector<int64_t> count, action;
  std::vector<float> obs, reward;
  for (const auto& q : lanes_) {
    count.push_back(static_cast<int64_t>(q.size()));
    for (const Pending& p : q) {
      obs.insert(obs.end(), p.obs.begin(), p.obs.end());
      action.push_back(p.action);
      reward.push_back(p.reward);
    }
  }
  const int64_t pending = static_cast<int64_t>(action.size());
  ckpt->set_i64("nstep/count", {static_cast<int64_t>(lanes_.size())}, count);
  ckpt->set_f32("nstep/obs", {pending, obs_dim_}, obs);
  ckpt->set_i64("nstep/action", {pending}, action);
  ckpt->set_f32("nstep/reward", {pending}, reward);
}

Status NStepAccumulator::load(const Checkpoint& ckpt, int num_actions) {
  const std::string w = ckpt.where();
  const int64_t lanes_shape[] = {static_cast<int64_t>(lanes_.size())};
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> count, ckpt.get_i64("nstep/count", lanes_shape));
  int64_t pending = 0;
  for (int64_t c : count) {
    // Between steps a lane holds at most n − 1 pending steps (the n-th emits one).
    if (c < 0 || c >= n_)
      return InvalidInput("{}: tensor 'nstep/count': {} pending steps, expected 0 to {}", w, c,
                          n_ - 1);
    pending += c;
  }
  const int64_t obs_shape[] = {pending, obs_dim_}, p_shape[] = {pending};
  FXT_ASSIGN_OR_RETURN(std::vector<float> obs, ckpt.get_f32("nstep/obs", obs_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<int64_t> action, ckpt.get_i64("nstep/action", p_shape));
  FXT_ASSIGN_OR_RETURN(std::vector<float> reward, ckpt.get_f32("nstep/reward", p_shape));
  for (int64_t a : action)
    if (a < 0 || a >= num_actions)
      return InvalidInput("{}: tensor 'nstep/action': action {}, expected 0 to {}", w, a,
                          num_actions - 1);
  const size_t d = static_cast<size_t>(obs_dim_);
  size_t k = 0;
  for (size_t lane = 0; lane < lanes_.size(); ++lane) {
    auto& q = lanes_[lane];
    q.clear();
    for (int64_t j = 0; j < count[lane]; ++j, ++k)
      q.push_back({std::vector<float>(obs.begin() + static_cast<std::ptrdiff_t>(k * d),
                                      obs.begin() + static_cast<std::ptrdiff_t>((k + 1) * d)),
                   static_cast<int>(action[k]), reward[k]});
  }
  return Status::Ok();
}

}  // namespace fxt::rl
