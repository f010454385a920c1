#include "rl/dqn.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "rl/dqn_schedule.h"
#include "rl/per_math.h"

namespace fxt::rl {

const char* algo_name(Algo a) {
  return a == Algo::kC51 ? "c51" : a == Algo::kQrDqn ? "qrdqn" : "iqn";
}
const char* exploration_name(Exploration e) {
  return e == Exploration::kEpsilonGreedy ? "egreedy" : "thompson";
}

Status DqnConfig::validate() const {
  auto pos = [](double x) { return std::isfinite(x) && x > 0; };
  if (algo == Algo::kC51) {
    if (support.atoms < 2) return UsageError("--atoms must be >= 2, got {}", support.atoms);
    if (!std::isfinite(support.v_min) || !std::isfinite(support.v_max) ||
        !(support.v_min < support.v_max))
      return UsageError("--v-min {} / --v-max {}: expected finite v_min < v_max", support.v_min,
                        support.v_max);
  } else if (algo == Algo::kQrDqn && quantiles < 1) {
    return UsageError("--quantiles must be >= 1, got {}", quantiles);
  } else if (algo == Algo::kIqn) {
    if (iqn_taus < 1 || iqn_policy_taus < 1 || iqn_embedding < 1)
      return UsageError("--iqn-taus, --iqn-policy-taus and --iqn-embedding must be >= 1");
    if (hidden.empty()) return UsageError("--hidden: IQN needs at least one torso layer");
  }
  for (int h : hidden)
    if (h < 1) return UsageError("--hidden: every layer width must be >= 1, got {}", h);
  if (n_step < 1) return UsageError("--n-step must be >= 1, got {}", n_step);
  if (!(gamma > 0 && gamma <= 1)) return UsageError("--gamma must be in (0, 1], got {}", gamma);
  if (!pos(lr)) return UsageError("--lr must be > 0, got {}", lr);
  if (!pos(adam_eps)) return UsageError("--adam-eps must be > 0, got {}", adam_eps);
  if (!std::isfinite(max_grad_norm)) return UsageError("--max-grad-norm must be finite");
  if (batch < 1) return UsageError("--batch must be >= 1, got {}", batch);
  if (buffer_size < 1) return UsageError("--buffer-size must be >= 1, got {}", buffer_size);
  if (learning_starts < 0) return UsageError("--learning-starts must be >= 0");
  if (train_frequency < 1) return UsageError("--train-frequency must be >= 1");
  if (target_update < 1) return UsageError("--target-update must be >= 1");
  if (!(polyak > 0 && polyak <= 1)) return UsageError("--polyak must be in (0, 1], got {}", polyak);
  if (!std::isfinite(per_alpha) || per_alpha < 0) return UsageError("--per-alpha must be >= 0");
  if (!(per_beta0 >= 0 && per_beta0 <= 1)) return UsageError("--per-beta must be in [0, 1]");
  if (!pos(mdqn.tau)) return UsageError("--m-tau must be > 0, got {}", mdqn.tau);
  if (!std::isfinite(mdqn.alpha) || mdqn.alpha < 0) return UsageError("--m-alpha must be >= 0");
  if (!std::isfinite(mdqn.l0) || mdqn.l0 > 0) return UsageError("--m-l0 must be <= 0");
  if (!(eps_start >= 0 && eps_start <= 1 && eps_end >= 0 && eps_end <= 1))
    return UsageError("--eps-start/--eps-end must be in [0, 1]");
  if (!(exploration_fraction > 0 && exploration_fraction <= 1))
    return UsageError("--exploration-fraction must be in (0, 1]");
  if (symmetric_policy && algo == Algo::kIqn)
    return UsageError("--symmetric-policy: C51 or QR-DQN only (--algo c51 or qrdqn)");
  if (symmetric_policy && exploration != Exploration::kEpsilonGreedy)
    return UsageError(
        "--symmetric-policy: epsilon-greedy exploration only (--exploration egreedy)");
  if (total_steps < 1) return UsageError("--steps must be >= 1");
  if (num_envs < 1) return UsageError("--envs must be >= 1, got {}", num_envs);
  return Status::Ok();
}

double DqnConfig::epsilon_at(int64_t step) const {
  return linear_epsilon(eps_start, eps_end, exploration_fraction, total_steps, step);
}

double DqnConfig::beta_at(int64_t step) const {
  return per_beta(per_beta0, total_steps, step);
}

nlohmann::json DqnConfig::to_json() const {
  return {{"algo", algo_name(algo)},
          {"v_min", support.v_min},
          {"v_max", support.v_max},
          {"atoms", support.atoms},
          {"quantiles", quantiles},
          {"iqn_taus", iqn_taus},
          {"iqn_policy_taus", iqn_policy_taus},
          {"iqn_embedding", iqn_embedding},
          {"hidden", hidden},
          {"dueling", dueling},
          {"double_q", double_q},
          {"n_step", n_step},
          {"gamma", gamma},
          {"lr", lr},
          {"adam_eps", adam_eps},
          {"max_grad_norm", max_grad_norm},
          {"batch", batch},
          {"buffer_size", buffer_size},
          {"learning_starts", learning_starts},
          {"train_frequency", train_frequency},
          {"target_update", target_update},
          {"polyak", polyak},
          {"per_alpha", per_alpha},
          {"per_beta0", per_beta0},
          {"munchausen", munchausen},
          {"mirror", mirror},
          {"symmetric_policy", symmetric_policy},
          {"m_tau", mdqn.tau},
          {"m_alpha", mdqn.alpha},
          {"m_l0", mdqn.l0},
          {"exploration", exploration_name(exploration)},
          {"eps_start", eps_start},
          {"eps_end", eps_end},
          {"exploration_fraction", exploration_fraction},
          {"total_steps", total_steps},
          {"num_envs", num_envs},
          {"seed", seed}};
}

Result<DqnConfig> DqnConfig::from_json(const nlohmann::json& j) {
  DqnConfig c;
  try {
    const std::string algo = j.at("algo").get<std::string>();
    if (algo != "c51" && algo != "qrdqn" && algo != "iqn")
      return InvalidInput("agent config: algo '{}': expected c51, qrdqn or iqn", algo);
    c.algo = algo == "c51" ? Algo::kC51 : algo == "qrdqn" ? Algo::kQrDqn : Algo::kIqn;
    j.at("v_min").get_to(c.support.v_min);
    j.at("v_max").get_to(c.support.v_max);
    j.at("atoms").get_to(c.support.atoms);
    j.at("quantiles").get_to(c.quantiles);
    if (c.algo == Algo::kIqn || j.contains("iqn_taus")) {  // only IQN needs them
      j.at("iqn_taus").get_to(c.iqn_taus);
      j.at("iqn_policy_taus").get_to(c.iqn_policy_taus);
      j.at("iqn_embedding").get_to(c.iqn_embedding);
    }
    j.at("hidden").get_to(c.hidden);
    j.at("dueling").get_to(c.dueling);
    j.at("double_q").get_to(c.double_q);
    j.at("n_step").get_to(c.n_step);
    j.at("gamma").get_to(c.gamma);
    j.at("lr").get_to(c.lr);
    j.at("adam_eps").get_to(c.adam_eps);
    j.at("max_grad_norm").get_to(c.max_grad_norm);
    j.at("batch").get_to(c.batch);
    j.at("buffer_size").get_to(c.buffer_size);
    j.at("learning_starts").get_to(c.learning_starts);
    j.at("train_frequency").get_to(c.train_frequency);
    j.at("target_update").get_to(c.target_update);
    j.at("polyak").get_to(c.polyak);
    j.at("per_alpha").get_to(c.per_alpha);
    j.at("per_beta0").get_to(c.per_beta0);
    j.at("munchausen").get_to(c.munchausen);
    c.mirror = j.value("mirror", false);  // absent before 2026-12-04
    c.symmetric_policy = j.value("symmetric_policy", false);  // absent before 2026-12-05
    j.at("m_tau").get_to(c.mdqn.tau);
    j.at("m_alpha").get_to(c.mdqn.alpha);
    j.at("m_l0").get_to(c.mdqn.l0);
    const std::string expl = j.at("exploration").get<std::string>();
    if (expl != "egreedy" && expl != "thompson")
      return InvalidInput("agent config: exploration '{}': expected egreedy or thompson", expl);
    c.exploration = expl == "egreedy" ? Exploration::kEpsilonGreedy : Exploration::kThompson;
    j.at("eps_start").get_to(c.eps_start);
    j.at("eps_end").get_to(c.eps_end);
    j.at("exploration_fraction").get_to(c.exploration_fraction);
    j.at("total_steps").get_to(c.total_steps);
    j.at("num_envs").get_to(c.num_envs);
    j.at("seed").get_to(c.seed);
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("agent config: {}", e.what());
  }
  Status s = c.validate();
  if (!s.ok()) return InvalidInput("agent config: {}", s.message());
  return c;
}

QNetworkConfig q_network_config(const DqnConfig& cfg, int obs_dim, int num_actions) {
  QNetworkConfig n;
  n.obs_dim = obs_dim;
  n.num_actions = num_actions;
  n.num_outputs = cfg.num_outputs();
  n.hidden = cfg.hidden;
  n.dueling = cfg.dueling;
  n.iqn_embedding = cfg.algo == Algo::kIqn ? cfg.iqn_embedding : 0;
  return n;
}

namespace {
AdamWConfig adam_config(const DqnConfig& cfg) {
  AdamWConfig a;
  a.eps = cfg.adam_eps;
  a.weight_decay = 0;  // plain Adam, as in the DQN literature
  a.max_grad_norm = cfg.max_grad_norm;
  return a;
}
}  // namespace

DqnAgent::DqnAgent(const DqnConfig& cfg, int obs_dim, int num_actions)
    : cfg_(cfg),
      obs_dim_(obs_dim),
      num_actions_(num_actions),
      net_(q_network_config(cfg, obs_dim, num_actions)),
      adam_(adam_config(cfg)) {
  assert(cfg.validate().ok());
  params_.resize(net_.num_params());
  grads_.assign(net_.num_params(), 0.0f);
  net_.init(params_, lane_seed(cfg.seed, 0, 7));
  target_ = params_;
  for (int k = 0; k < cfg.iqn_policy_taus; ++k)
    taus_policy_.push_back((static_cast<float>(k) + 0.5f) / static_cast<float>(cfg.iqn_policy_taus));
  Status s = adam_.add_params(params_, grads_, net_.specs());
  assert(s.ok());
  (void)s;
}

void DqnAgent::set_mirror(MirrorMap m) {
  assert(m.obs && m.action.size() == static_cast<size_t>(num_actions_));
  mirror_ = std::move(m);
}

void DqnAgent::mirror_rows(std::span<const float> obs, int n, std::vector<float>* out) const {
  assert(has_mirror());
  const size_t d = static_cast<size_t>(obs_dim_);
  out->assign(obs.begin(), obs.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(n) * d));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) mirror_.obs({out->data() + i * d, d});
}

void DqnAgent::row_values(const float* rows, const float* m_rows, float* q) const {
  const size_t A = static_cast<size_t>(num_actions_), K = static_cast<size_t>(cfg_.num_outputs());
  for (size_t a = 0; a < A; ++a) q[a] = expected_value(rows + a * K);
  if (m_rows == nullptr) return;
  for (size_t a = 0; a < A; ++a)
    q[a] = 0.5f * (q[a] + expected_value(m_rows + static_cast<size_t>(mirror_.action[a]) * K));
}

void DqnAgent::forward(const std::vector<float>& p, std::span<const float> obs, int n,
                       std::vector<float>* out, QNetwork<float>::Workspace* ws) {
  out->resize(static_cast<size_t>(n) * static_cast<size_t>(num_actions_ * cfg_.num_outputs()));
  net_.forward(ctx_, p, obs, n, *out, ws);
}

float DqnAgent::expected_value(const float* row) const {
  const int K = cfg_.num_outputs();
  if (cfg_.algo == Algo::kC51)
    return c51_expectation<float>(cfg_.support, {row, static_cast<size_t>(K)});
  float sum = 0;
  for (int k = 0; k < K; ++k) sum += row[k];
  return sum / static_cast<float>(K);
}

void DqnAgent::iqn_q(const std::vector<float>& p, std::span<const float> obs, int n,
                     std::vector<float>* out_k, std::vector<float>* q) {
  const size_t A = static_cast<size_t>(num_actions_), K = taus_policy_.size();
  scratch_.resize(static_cast<size_t>(n) * K);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    std::copy(taus_policy_.begin(), taus_policy_.end(), scratch_.begin() + static_cast<std::ptrdiff_t>(i * K));
  out_k->resize(static_cast<size_t>(n) * K * A);
  net_.forward_iqn(ctx_, p, obs, n, scratch_, static_cast<int>(K), *out_k, &ws_aux_);
  q->assign(static_cast<size_t>(n) * A, 0.0f);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    for (size_t k = 0; k < K; ++k)
      for (size_t a = 0; a < A; ++a)
        (*q)[i * A + a] += (*out_k)[(i * K + k) * A + a] / static_cast<float>(K);
}

void DqnAgent::q_values(std::span<const float> obs, int n, std::vector<float>* q) {
  if (cfg_.algo == Algo::kIqn) {
    iqn_q(params_, obs, n, &out_, q);
    return;
  }
  forward(params_, obs, n, &out_, &ws_aux_);
  const bool sym = cfg_.symmetric_policy;
  if (sym) {
    mirror_rows(obs, n, &obs_m_);
    forward(params_, obs_m_, n, &out_m_, &ws_aux_);
  }
  const size_t A = static_cast<size_t>(num_actions_), K = static_cast<size_t>(cfg_.num_outputs());
  q->resize(static_cast<size_t>(n) * A);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    row_values(&out_[i * A * K], sym ? &out_m_[i * A * K] : nullptr, &(*q)[i * A]);
}

void DqnAgent::act(std::span<const float> obs, int n, double epsilon, Rng& rng,
                   std::vector<int>* actions) {
  const size_t A = static_cast<size_t>(num_actions_), K = static_cast<size_t>(cfg_.num_outputs());
  std::vector<float> q;
  q_values(obs, n, &q);
  actions->resize(static_cast<size_t>(n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    int best = 0;
    if (cfg_.exploration == Exploration::kThompson && epsilon > 0) {
      // One return drawn from each action's distribution; the highest wins.
      float best_v = 0;
      for (size_t a = 0; a < A; ++a) {
        const float* row = &out_[(i * A + a) * K];
        float v = 0;
        if (cfg_.algo == Algo::kIqn) {
          const size_t k = rng.uniform(taus_policy_.size());  // one τ of the K: a sampled return
          v = out_[(i * taus_policy_.size() + k) * A + a];
        } else if (cfg_.algo == Algo::kC51) {
          const int j = c51_sample_index<float>(row, static_cast<int>(K), rng.unit());
          v = static_cast<float>(cfg_.support.atom(j));
        } else {
          v = row[rng.uniform(K)];
        }
        if (a == 0 || v > best_v) best = static_cast<int>(a), best_v = v;
      }
    } else if (epsilon > 0 && rng.unit() < epsilon) {
      best = static_cast<int>(rng.uniform(A));
    } else {
      for (size_t a = 1; a < A; ++a)
        if (q[i * A + a] > q[i * A + static_cast<size_t>(best)]) best = static_cast<int>(a);
      // A state that is its own mirror ties every action with its mirror image: a fair coin
      // picks between them, so the policy (not only its values) is symmetric.
      if (cfg_.symmetric_policy) {
        const int mb = mirror_.action[static_cast<size_t>(best)];
        if (mb != best &&
            q[i * A + static_cast<size_t>(mb)] == q[i * A + static_cast<size_t>(best)] &&
            rng.unit() < 0.5)
          best = mb;
      }
    }
    (*actions)[i] = best;
  }
}

UpdateStats DqnAgent::update(ReplayBuffer* replay, double beta, Rng& rng) {
  if (cfg_.algo == Algo::kIqn) return update_iqn(replay, beta, rng);
  const int B = cfg_.batch;
  const size_t A = static_cast<size_t>(num_actions_), K = static_cast<size_t>(cfg_.num_outputs());
  replay->sample(B, beta, rng, &batch_);
  forward(target_, batch_.next_obs, B, &out_next_target_, &ws_aux_);
  const bool need_online_next = cfg_.double_q && !cfg_.munchausen;
  if (need_online_next) forward(params_, batch_.next_obs, B, &out_next_online_, &ws_aux_);
  if (cfg_.munchausen) forward(target_, batch_.obs, B, &out_cur_target_, &ws_aux_);
  // --symmetric-policy: the same networks at the mirrored states; every value that picks the
  // bootstrap (argmax or softmax policy) is ½[Q(s, a) + Q(m(s), m(a))], and the bootstrap
  // distribution of action j is the even mixture of Z(s', j) and Z(m(s'), m(j)).
  const bool sym = cfg_.symmetric_policy;
  if (sym) {
    mirror_rows(batch_.next_obs, B, &next_obs_m_);
    forward(target_, next_obs_m_, B, &out_next_target_m_, &ws_aux_);
    if (need_online_next) forward(params_, next_obs_m_, B, &out_next_online_m_, &ws_aux_);
    if (cfg_.munchausen) {
      mirror_rows(batch_.obs, B, &obs_m_);
      forward(target_, obs_m_, B, &out_cur_target_m_, &ws_aux_);
    }
  }
  forward(params_, batch_.obs, B, &out_, &ws_train_);  // last: backward reads ws_train_
  d_out_.assign(out_.size(), 0.0f);

  std::vector<float> m(K), p(K), p_m(K), q_next(A), q_cur(A), online(A), log_pi(A), targets,
      target_w;
  std::vector<float> p_next(A * K);
  std::vector<float> priority(static_cast<size_t>(B));
  UpdateStats stats;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (size_t b = 0; b < static_cast<size_t>(B); ++b) {
    const size_t a = static_cast<size_t>(batch_.action[b]);
    const float r = batch_.reward[b], g = batch_.discount[b], w = batch_.weight[b];
    const float* next_t = &out_next_target_[b * A * K];
    const float* next_tm = sym ? &out_next_target_m_[b * A * K] : nullptr;
    auto mj = [&](size_t j) { return static_cast<size_t>(mirror_.action[j]); };
    row_values(next_t, next_tm, q_next.data());
    float log_pi_a = 0;
    if (cfg_.munchausen) {
      row_values(&out_cur_target_[b * A * K], sym ? &out_cur_target_m_[b * A * K] : nullptr,
                 q_cur.data());
      log_policy<float>(q_cur, cfg_.mdqn.tau, log_pi);
      log_pi_a = log_pi[a];
    }
    size_t a_star = 0;  // the bootstrap action (not used by the Munchausen target)
    if (!cfg_.munchausen) {
      if (need_online_next)
        row_values(&out_next_online_[b * A * K], sym ? &out_next_online_m_[b * A * K] : nullptr,
                   online.data());
      const std::vector<float>& pick = need_online_next ? online : q_next;
      for (size_t j = 1; j < A; ++j)
        if (pick[j] > pick[a_star]) a_star = j;
    }
    const std::span<const float> pred(&out_[(b * A + a) * K], K);
    const std::span<float> d_pred(&d_out_[(b * A + a) * K], K);
    float loss = 0;
    if (cfg_.algo == Algo::kC51) {
      if (cfg_.munchausen) {
        for (size_t j = 0; j < A; ++j) {
          const std::span<float> pj(p_next.data() + j * K, K);
          softmax_row<float>({next_t + j * K, K}, pj);
          if (!sym) continue;
          softmax_row<float>({next_tm + mj(j) * K, K}, p_m);
          for (size_t k = 0; k < K; ++k) pj[k] = 0.5f * (pj[k] + p_m[k]);
        }
        c51_munchausen_target<float>(cfg_.support, cfg_.mdqn, r, g, log_pi_a, q_next, p_next, m);
      } else {
        std::fill(m.begin(), m.end(), 0.0f);
        softmax_row<float>({next_t + a_star * K, K}, p);
        if (sym) {
          softmax_row<float>({next_tm + mj(a_star) * K, K}, p_m);
          for (size_t k = 0; k < K; ++k) p[k] = 0.5f * (p[k] + p_m[k]);
        }
        c51_project_add<float>(cfg_.support, r, g, p, 1.0f, m);
      }
      loss = c51_loss<float>(pred, m, w * inv_b, d_pred);
    } else {
      targets.clear();
      target_w.clear();
      if (cfg_.munchausen) {
        const float tau = static_cast<float>(cfg_.mdqn.tau);
        const float bonus = munchausen_bonus<float>(cfg_.mdqn, log_pi_a);
        log_policy<float>(q_next, cfg_.mdqn.tau, log_pi);
        const float share = sym ? 0.5f : 1.0f;  // the mixture's halves
        for (size_t j = 0; j < A; ++j) {
          const float pi = std::exp(log_pi[j]);
          for (size_t k = 0; k < K; ++k) {
            targets.push_back(r + bonus + g * (next_t[j * K + k] - tau * log_pi[j]));
            target_w.push_back(share * pi / static_cast<float>(K));
            if (!sym) continue;
            targets.push_back(r + bonus + g * (next_tm[mj(j) * K + k] - tau * log_pi[j]));
            target_w.push_back(share * pi / static_cast<float>(K));
          }
        }
      } else {
        const float share = sym ? 0.5f : 1.0f;
        for (size_t k = 0; k < K; ++k) {
          targets.push_back(r + g * next_t[a_star * K + k]);
          target_w.push_back(share / static_cast<float>(K));
          if (!sym) continue;
          targets.push_back(r + g * next_tm[mj(a_star) * K + k]);
          target_w.push_back(share / static_cast<float>(K));
        }
      }
      loss = quantile_huber_loss<float>(pred, targets, target_w, w * inv_b, d_pred);
    }
    priority[b] = loss;
    stats.loss += static_cast<double>(w * loss) * inv_b;
    stats.mean_q += static_cast<double>(expected_value(pred.data())) * inv_b;
  }
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  net_.backward(ctx_, params_, d_out_, grads_, &ws_train_);
  const StepStats st = adam_.step(cfg_.lr);
  stats.grad_norm = st.grad_norm;
  replay->update_priorities(batch_.index, priority);
  return stats;
}

UpdateStats DqnAgent::update_iqn(ReplayBuffer* replay, double beta, Rng& rng) {
  const int B = cfg_.batch, N = cfg_.iqn_taus;
  const size_t A = static_cast<size_t>(num_actions_), n = static_cast<size_t>(N);
  replay->sample(B, beta, rng, &batch_);
  taus_.resize(static_cast<size_t>(B) * n);
  taus_next_.resize(taus_.size());
  for (float& t : taus_) t = static_cast<float>(rng.unit());
  for (float& t : taus_next_) t = static_cast<float>(rng.unit());
  // Bootstrap action / policy from K evenly spaced τ; target quantiles at N' sampled τ'.
  std::vector<float> q_next, q_cur, out_k;
  if (cfg_.munchausen) {
    iqn_q(target_, batch_.next_obs, B, &out_k, &q_next);
    iqn_q(target_, batch_.obs, B, &out_k, &q_cur);
  } else {
    iqn_q(cfg_.double_q ? params_ : target_, batch_.next_obs, B, &out_k, &q_next);
  }
  out_next_target_.resize(taus_next_.size() * A);
  net_.forward_iqn(ctx_, target_, batch_.next_obs, B, taus_next_, N, out_next_target_, &ws_aux_);
  out_.resize(taus_.size() * A);
  net_.forward_iqn(ctx_, params_, batch_.obs, B, taus_, N, out_, &ws_train_);
  d_out_.assign(out_.size(), 0.0f);
  std::vector<float> theta(n), d_theta(n), targets, target_w, log_pi(A), log_pi_next(A);
  std::vector<float> priority(static_cast<size_t>(B));
  UpdateStats stats;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (size_t b = 0; b < static_cast<size_t>(B); ++b) {
    const size_t a = static_cast<size_t>(batch_.action[b]);
    const float r = batch_.reward[b], g = batch_.discount[b], w = batch_.weight[b];
    const float* next = &out_next_target_[b * n * A];  // [N', A]
    targets.clear();
    target_w.clear();
    if (cfg_.munchausen) {
      const float tau = static_cast<float>(cfg_.mdqn.tau);
      log_policy<float>({&q_cur[b * A], A}, cfg_.mdqn.tau, log_pi);
      log_policy<float>({&q_next[b * A], A}, cfg_.mdqn.tau, log_pi_next);
      const float bonus = munchausen_bonus<float>(cfg_.mdqn, log_pi[a]);
      for (size_t j = 0; j < A; ++j) {
        const float pi = std::exp(log_pi_next[j]);
        for (size_t k = 0; k < n; ++k) {
          targets.push_back(r + bonus + g * (next[k * A + j] - tau * log_pi_next[j]));
          target_w.push_back(pi / static_cast<float>(N));
        }
      }
    } else {
      size_t a_star = 0;
      for (size_t j = 1; j < A; ++j)
        if (q_next[b * A + j] > q_next[b * A + a_star]) a_star = j;
      for (size_t k = 0; k < n; ++k) {
        targets.push_back(r + g * next[k * A + a_star]);
        target_w.push_back(1.0f / static_cast<float>(N));
      }
    }
    for (size_t i = 0; i < n; ++i) theta[i] = out_[(b * n + i) * A + a];
    const float loss = quantile_huber_loss_at<float>(theta, {&taus_[b * n], n}, targets, target_w,
                                                     w * inv_b, d_theta);
    float mean = 0;
    for (size_t i = 0; i < n; ++i) {
      d_out_[(b * n + i) * A + a] = d_theta[i];
      mean += theta[i] / static_cast<float>(N);
    }
    priority[b] = loss;
    stats.loss += static_cast<double>(w * loss) * inv_b;
    stats.mean_q += static_cast<double>(mean) * inv_b;
  }
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  net_.backward_iqn(ctx_, params_, d_out_, grads_, &ws_train_);
  const StepStats st = adam_.step(cfg_.lr);
  stats.grad_norm = st.grad_norm;
  replay->update_priorities(batch_.index, priority);
  return stats;
}

void DqnAgent::update_target() {
  if (cfg_.polyak >= 1) {
    target_ = params_;
    return;
  }
  const float t = static_cast<float>(cfg_.polyak);
  for (size_t i = 0; i < params_.size(); ++i) target_[i] = t * params_[i] + (1 - t) * target_[i];
}

void DqnAgent::save(Checkpoint* ckpt) const {
  ckpt->config["agent"] = cfg_.to_json();
  ckpt->config["obs_dim"] = obs_dim_;
  ckpt->config["num_actions"] = num_actions_;
  for (const auto& s : net_.specs()) {
    std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
    ckpt->set_f32(s.name, shape, std::span<const float>(params_.data() + s.offset, s.size));
    ckpt->set_f32("target/" + s.name, shape,
                  std::span<const float>(target_.data() + s.offset, s.size));
  }
  adam_.save_state(ckpt);
}

Status DqnAgent::load(const Checkpoint& ckpt) {
  for (const auto& s : net_.specs()) {
    std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
    FXT_RETURN_IF_ERROR(
        ckpt.read_f32_into(s.name, shape, std::span<float>(params_.data() + s.offset, s.size)));
    FXT_RETURN_IF_ERROR(ckpt.read_f32_into("target/" + s.name, shape,
                                           std::span<float>(target_.data() + s.offset, s.size)));
  }
  return adam_.load_state(ckpt);
}

}  // namespace fxt::rl
