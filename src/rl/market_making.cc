#include "rl/market_making.h"

#include <cassert>
#include <cmath>
#include <limits>

#include <Eigen/Dense>

#include "sim/quoting.h"

namespace fxt::rl {

Status MarketMakingParams::validate() const {
  const auto& m = market;
  auto pos = [](double x) { return std::isfinite(x) && x > 0; };
  if (!std::isfinite(m.s0)) return UsageError("mm: s0 must be finite");
  if (!pos(m.horizon)) return UsageError("mm: horizon must be > 0, got {}", m.horizon);
  if (m.steps < 1) return UsageError("mm: steps must be >= 1, got {}", m.steps);
  if (!std::isfinite(m.sigma) || m.sigma < 0) return UsageError("mm: sigma must be >= 0");
  if (!pos(m.A)) return UsageError("mm: A must be > 0, got {}", m.A);
  if (!pos(m.k)) return UsageError("mm: k must be > 0, got {}", m.k);
  if (!std::isfinite(phi) || phi < 0) return UsageError("mm: phi must be >= 0, got {}", phi);
  if (!std::isfinite(alpha) || alpha < 0) return UsageError("mm: alpha must be >= 0, got {}", alpha);
  if (max_inventory < 1) return UsageError("mm: max_inventory must be >= 1");
  if (num_depths < 2) return UsageError("mm: num_depths must be >= 2, got {}", num_depths);
  if (!std::isfinite(min_depth) || !std::isfinite(max_depth) || !(min_depth < max_depth))
    return UsageError("mm: expected finite min_depth < max_depth, got {} / {}", min_depth,
                      max_depth);
  return Status::Ok();
}

MarketMakingEnv::MarketMakingEnv(const MarketMakingParams& p, int num_envs)
    : p_(p), lanes_(static_cast<size_t>(num_envs)) {
  assert(p.validate().ok() && num_envs >= 1);
}

void MarketMakingEnv::write_obs(const Lane& lane, float* obs) const {
  obs[0] = static_cast<float>(lane.k) / static_cast<float>(p_.market.steps);
  obs[1] = static_cast<float>(lane.q / p_.max_inventory);
}

void MarketMakingEnv::start(Lane* lane, float* obs) const {
  lane->q = p_.market.q0;
  lane->s = p_.market.s0;
  lane->k = 0;
  write_obs(*lane, obs);
}

void MarketMakingEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].mid_rng = Rng(lane_seed(seed, i, 0));
    lanes_[i].fill_rng = Rng(lane_seed(seed, i, 1));
    start(&lanes_[i], obs.data() + 2 * i);
  }
}

void MarketMakingEnv::step_depths(std::span<const double> bid_depth,
                                  std::span<const double> ask_depth, StepResult* out) {
  const int n = num_envs();
  out->resize(n, 2);
  const auto& m = p_.market;
  const double dt = m.horizon / static_cast<double>(m.steps), sd = m.sigma * std::sqrt(dt);
  const double q_max = p_.max_inventory, inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    const double db = lane.q >= q_max ? inf : bid_depth[i];
    const double da = lane.q <= -q_max ? inf : ask_depth[i];
    const sim::ModelMarketFills fills = sim::model_market_fills(m, db, da, lane.fill_rng);
    double reward = 0;
    if (fills.bid) lane.q += 1, reward += db;
    if (fills.ask) lane.q -= 1, reward += da;
    const double ds = sd * sim::standard_normal(lane.mid_rng);
    lane.s += ds;
    reward += lane.q * ds - p_.phi * lane.q * lane.q * dt;
    ++lane.k;
    const bool last = lane.k >= m.steps;
    if (last) reward -= p_.alpha * lane.q * lane.q;
    write_obs(lane, out->next_obs.data() + 2 * i);
    out->reward[i] = static_cast<float>(reward);
    out->terminated[i] = last ? 1 : 0;
    out->truncated[i] = 0;
  }
}

void MarketMakingEnv::step(std::span<const int> actions, StepResult* out) {
  std::vector<double> bid(actions.size()), ask(actions.size());
  for (size_t i = 0; i < actions.size(); ++i) {
    assert(actions[i] >= 0 && actions[i] < num_actions());
    bid[i] = p_.depth(actions[i] / p_.num_depths);
    ask[i] = p_.depth(actions[i] % p_.num_depths);
  }
  step_depths(bid, ask, out);
}

void MarketMakingEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      start(&lanes_[i], obs.data() + 2 * i);
    } else {
      obs[2 * i] = last.next_obs[2 * i];
      obs[2 * i + 1] = last.next_obs[2 * i + 1];
    }
  }
}

void AvellanedaStoikovAgent::depths(const MarketMakingEnv& env, std::vector<double>* bid,
                                    std::vector<double>* ask) const {
  const auto& m = env.params().market;
  const double dt = m.horizon / static_cast<double>(m.steps);
  const size_t n = static_cast<size_t>(env.num_envs());
  bid->resize(n);
  ask->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int lane = static_cast<int>(i);
    const double s = env.mid(lane);
    const double tau = m.horizon - static_cast<double>(env.step_index(lane)) * dt;
    const sim::Quote q = sim::avellaneda_stoikov_quote(s, env.inventory(lane), tau, gamma_,
                                                       m.sigma, m.k);
    (*bid)[i] = s - q.bid;
    (*ask)[i] = q.ask - s;
  }
}

CarteaJaimungalAgent::CarteaJaimungalAgent(const MarketMakingParams& p) : p_(p) {
  const int Q = p.max_inventory, n = 2 * Q + 1, steps = p.market.steps;
  const double k = p.market.k, dt = p.market.horizon / static_cast<double>(steps);
  // M is symmetric tridiagonal: exp(M·τ) = V·exp(D·τ)·Vᵀ from one eigen-decomposition.
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(n, n);
  Eigen::VectorXd z(n);
  for (int r = 0; r < n; ++r) {
    const double q = r - Q;
    M(r, r) = -p.phi * k * q * q;
    if (r > 0) M(r, r - 1) = p.market.A * std::exp(-1.0);
    if (r + 1 < n) M(r, r + 1) = p.market.A * std::exp(-1.0);
    z(r) = std::exp(-p.alpha * k * q * q);
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(M);
  const Eigen::VectorXd vz = eig.eigenvectors().transpose() * z;
  h_.resize(static_cast<size_t>(steps + 1) * static_cast<size_t>(n));
  for (int i = 0; i <= steps; ++i) {
    const double tau = p.market.horizon - i * dt;
    const Eigen::VectorXd w =
        eig.eigenvectors() * (eig.eigenvalues().array() * tau).exp().matrix().cwiseProduct(vz);
    for (int r = 0; r < n; ++r)
      h_[static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(r)] =
          std::log(w(r)) / k;
  }
}

double CarteaJaimungalAgent::h(int step, int q) const {
  const int Q = p_.max_inventory;
  assert(step >= 0 && step <= p_.market.steps && q >= -Q && q <= Q);
  return h_[static_cast<size_t>(step) * static_cast<size_t>(2 * Q + 1) + static_cast<size_t>(q + Q)];
}

void CarteaJaimungalAgent::depths(const MarketMakingEnv& env, std::vector<double>* bid,
                                  std::vector<double>* ask) const {
  const size_t n = static_cast<size_t>(env.num_envs());
  const int Q = p_.max_inventory;
  const double inv_k = 1.0 / p_.market.k, inf = std::numeric_limits<double>::infinity();
  bid->resize(n);
  ask->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int lane = static_cast<int>(i), step = env.step_index(lane);
    const int q = static_cast<int>(std::lround(env.inventory(lane)));
    (*bid)[i] = q < Q ? inv_k + h(step, q) - h(step, q + 1) : inf;
    (*ask)[i] = q > -Q ? inv_k + h(step, q) - h(step, q - 1) : inf;
  }
}

}  // namespace fxt::rl
