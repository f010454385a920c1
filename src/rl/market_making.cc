#include "rl/market_making.h"

#include <cassert>
#include <cmath>

#include <algorithm>
#include <vector>

#include "rl/closed_form_lane.h"
#include "rl/rng_state.h"
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

MarketMakingDynamics market_making_dynamics(const MarketMakingParams& p) {
  const auto& m = p.market;
  MarketMakingDynamics d;
  d.arrival_prob = m.A * (m.horizon / static_cast<double>(m.steps));
  d.k = m.k;
  d.dt = m.horizon / static_cast<double>(m.steps);
  d.mid_sd = m.sigma * std::sqrt(d.dt);
  d.phi = p.phi;
  d.alpha = p.alpha;
  d.max_inventory = p.max_inventory;
  d.s0 = m.s0;
  d.q0 = m.q0;
  d.steps = m.steps;
  d.num_depths = p.num_depths;
  d.min_depth = p.min_depth;
  d.max_depth = p.max_depth;
  d.expected_reward = p.expected_reward;
  return d;
}

MarketMakingEnv::MarketMakingEnv(const MarketMakingParams& p, int num_envs)
    : p_(p), d_(market_making_dynamics(p)), lanes_(static_cast<size_t>(num_envs)) {
  assert(p.validate().ok() && num_envs >= 1);
}

bool MarketMakingEnv::mirror(std::span<float> obs, int* action) const {
  obs[1] = -obs[1];
  if (action != nullptr) {
    const int bid = *action / p_.num_depths, ask = *action % p_.num_depths;
    *action = ask * p_.num_depths + bid;
  }
  return true;
}

void MarketMakingEnv::reset(uint64_t seed, std::span<float> obs) {
  assert(obs.size() == lanes_.size() * 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    market_making_seed(&lanes_[i], seed, i);
    market_making_start(d_, &lanes_[i]);
    market_making_obs(d_, lanes_[i], obs.data() + 2 * i);
  }
}

void MarketMakingEnv::step_depths(std::span<const double> bid_depth,
                                  std::span<const double> ask_depth, StepResult* out) {
  const int n = num_envs();
  assert(bid_depth.size() == static_cast<size_t>(n) && ask_depth.size() == static_cast<size_t>(n));
  out->resize(n, 2);
  for (size_t i = 0; i < lanes_.size(); ++i)
    write_step(market_making_step(d_, &lanes_[i], bid_depth[i], ask_depth[i]), i, out);
}

void MarketMakingEnv::write_step(const LaneStep& r, size_t i, StepResult* out) const {
  market_making_obs(d_, lanes_[i], out->next_obs.data() + 2 * i);
  out->reward[i] = static_cast<float>(r.reward);
  out->terminated[i] = r.terminated ? 1 : 0;
  out->truncated[i] = r.truncated ? 1 : 0;
}

void MarketMakingEnv::step(std::span<const int> actions, StepResult* out) {
  const int n = num_envs();
  assert(actions.size() == static_cast<size_t>(n));
  out->resize(n, 2);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    assert(actions[i] >= 0 && actions[i] < num_actions());
    write_step(market_making_step_action(d_, &lanes_[i], actions[i]), i, out);
  }
}

void MarketMakingEnv::reset_finished(const StepResult& last, std::span<float> obs) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (last.terminated[i] || last.truncated[i]) {
      market_making_start(d_, &lanes_[i]);
      market_making_obs(d_, lanes_[i], obs.data() + 2 * i);
    } else {
      obs[2 * i] = last.next_obs[2 * i];
      obs[2 * i + 1] = last.next_obs[2 * i + 1];
    }
  }
}

LaneRecord MarketMakingEnv::save_lanes() const {
  LaneRecord r;
  r.reals_per_lane = 2;
  r.words_per_lane = 9;
  for (const MarketMakingLane& l : lanes_) {
    r.reals.insert(r.reals.end(), {l.q, l.s});
    r.words.push_back(static_cast<uint64_t>(l.k));
    for (const Rng& rng : {l.mid_rng, l.fill_rng}) {
      const auto w = rng_words(rng);
      r.words.insert(r.words.end(), w.begin(), w.end());
    }
  }
  return r;
}

bool MarketMakingEnv::restore_lanes(const LaneRecord& r) {
  if (!r.fits(lanes_.size(), 2, 9)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i)  // a lane between episodes has been restarted
    if (r.words[9 * i] >= static_cast<uint64_t>(d_.steps)) return false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const uint64_t* w = &r.words[9 * i];
    lanes_[i].q = r.reals[2 * i];
    lanes_[i].s = r.reals[2 * i + 1];
    lanes_[i].k = static_cast<int>(w[0]);
    lanes_[i].mid_rng = rng_from_words(std::span<const uint64_t, 4>(w + 1, 4));
    lanes_[i].fill_rng = rng_from_words(std::span<const uint64_t, 4>(w + 5, 4));
  }
  return true;
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
  // ω(t) = exp(M (T - t)) z, M tridiagonal: M_qq = -φkq², off-diagonal A e^{-1}; z_q = e^{-αkq²}.
  // M is Metzler, so N = M + cI (c = max φkq²) is elementwise >= 0 and exp(M dt) w =
  // e^{-c dt} Σ_j (N dt)^j w / j! sums non-negative terms: every entry of ω keeps full relative
  // precision however small (down to e^{-αkQ²} ≈ 1e-131 at the defaults). An eigen-decomposition
  // lost those entries to cancellation (ω <= 0, h = NaN near |q| = Q in the last steps).
  const double c = p.phi * k * Q * Q, off = p.market.A * std::exp(-1.0);
  std::vector<double> w(static_cast<size_t>(n)), term(w.size()), next(w.size()), sum(w.size());
  for (int r = 0; r < n; ++r) w[r] = std::exp(-p.alpha * k * (r - Q) * (r - Q));
  h_.resize(static_cast<size_t>(steps + 1) * static_cast<size_t>(n));
  for (int i = steps; i >= 0; --i) {
    if (i < steps) {  // w <- exp(M dt) w, by the series above (all terms >= 0)
      term = w;
      sum = w;
      for (int j = 1; j < 200; ++j) {
        double rel = 0.0;
        for (int r = 0; r < n; ++r) {
          const double q = r - Q;
          double v = (c - p.phi * k * q * q) * term[r];
          if (r > 0) v += off * term[r - 1];
          if (r + 1 < n) v += off * term[r + 1];
          next[r] = v * dt / j;
        }
        for (int r = 0; r < n; ++r) {
          sum[r] += next[r];
          rel = std::max(rel, next[r] / sum[r]);
        }
        term.swap(next);
        if (rel < 1e-17) break;
      }
      for (int r = 0; r < n; ++r) w[r] = sum[r] * std::exp(-c * dt);
    }
    for (int r = 0; r < n; ++r)
      h_[static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(r)] =
          std::log(w[r]) / k;
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
  const double inv_k = 1.0 / p_.market.k;
  bid->resize(n);
  ask->resize(n);
  for (size_t i = 0; i < n; ++i)
    cartea_jaimungal_depths(h_.data(), p_.max_inventory, inv_k, env.lanes()[i], &(*bid)[i],
                            &(*ask)[i]);
}

}  // namespace fxt::rl
