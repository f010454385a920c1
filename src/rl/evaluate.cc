#include "rl/evaluate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>

#include "rl/execution.h"
#include "rl/market_making.h"
#include "sim/model_market.h"  // mean_and_std

namespace fxt::rl {

namespace {
// Runs one episode per lane; step_fn(env, obs, out) chooses actions and steps the env.
using StepFn = std::function<void(VecEnv&, std::span<const float>, StepResult*)>;

double lane_inventory(const VecEnv& env, int i) {
  if (auto* e = dynamic_cast<const ExecutionEnv*>(&env)) return e->inventory(i);
  if (auto* m = dynamic_cast<const MarketMakingEnv*>(&env)) return m->inventory(i);
  return 0;
}

EvalResult run_episodes(const EnvSpec& spec, int episodes, uint64_t seed, const StepFn& step_fn) {
  // Scores the criterion itself: a policy trained on market making's expected reward is still
  // evaluated on the drawn one.
  EnvSpec scored = spec;
  scored.mm.expected_reward = false;
  auto env = scored.make(episodes);
  const bool model_env = spec.name != "cartpole";
  const size_t n = static_cast<size_t>(episodes);
  std::vector<float> obs(n * static_cast<size_t>(env->obs_dim()));
  env->reset(seed, obs);
  EvalResult r;
  r.returns.assign(n, 0.0);
  std::vector<uint8_t> done(n, 0);
  size_t remaining = n;
  auto record_inventory = [&](size_t k) {
    if (!model_env) return;
    if (r.mean_inventory.size() <= k) {
      r.mean_inventory.resize(k + 1, 0.0);
      r.mean_abs_inventory.resize(k + 1, 0.0);
    }
    for (size_t i = 0; i < n; ++i) {
      const double q = lane_inventory(*env, static_cast<int>(i)) / static_cast<double>(n);
      r.mean_inventory[k] += q;
      r.mean_abs_inventory[k] += std::abs(q);
    }
  };
  record_inventory(0);
  StepResult out;
  for (size_t k = 1; remaining > 0; ++k) {
    step_fn(*env, obs, &out);
    record_inventory(k);  // model envs: every lane ends on the same step
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      r.returns[i] += out.reward[i];
      if (out.terminated[i] || out.truncated[i]) done[i] = 1, --remaining;
    }
    if (remaining > 0) env->reset_finished(out, obs);
  }
  sim::mean_and_std(r.returns, &r.mean, &r.std);
  return r;
}
}  // namespace

EvalResult evaluate_agent(DqnAgent* agent, const EnvSpec& spec, int episodes, uint64_t seed) {
  Rng unused(0);
  std::vector<int> actions;
  return run_episodes(spec, episodes, seed,
                      [&](VecEnv& env, std::span<const float> obs, StepResult* out) {
                        agent->act(obs, env.num_envs(), 0.0, unused, &actions);
                        env.step(actions, out);
                      });
}

Result<EvalResult> evaluate_reference(const EnvSpec& spec, const std::string& reference,
                                      double gamma, int episodes, uint64_t seed) {
  if (spec.name == "execution" && reference == "optimal") {
    std::vector<double> speeds;
    return run_episodes(spec, episodes, seed,
                        [&](VecEnv& env, std::span<const float>, StepResult* out) {
                          auto& e = static_cast<ExecutionEnv&>(env);
                          e.optimal_speeds(&speeds);
                          e.step_speeds(speeds, out);
                        });
  }
  if (spec.name == "mm" && (reference == "as" || reference == "cj" || reference == "cj-grid")) {
    if (reference == "as" && !(std::isfinite(gamma) && gamma > 0))
      return UsageError("--gamma must be > 0 for the AS reference, got {}", gamma);
    std::unique_ptr<MarketMakingAgent> agent;
    if (reference == "as") {
      agent = std::make_unique<AvellanedaStoikovAgent>(gamma);
    } else {
      agent = std::make_unique<CarteaJaimungalAgent>(spec.mm);
    }
    // cj-grid: the CJ depths rounded to the nearest depth of the env's action grid (what the
    // best grid policy can do is at least this, near enough).
    const MarketMakingDynamics d = market_making_dynamics(spec.mm);
    auto to_grid = [&](double depth) {
      const double x = (depth - d.min_depth) / (d.max_depth - d.min_depth) * (d.num_depths - 1);
      return d.depth(static_cast<int>(std::clamp(std::round(x), 0.0, d.num_depths - 1.0)));
    };
    std::vector<double> bid, ask;
    return run_episodes(spec, episodes, seed,
                        [&](VecEnv& env, std::span<const float>, StepResult* out) {
                          auto& m = static_cast<MarketMakingEnv&>(env);
                          agent->depths(m, &bid, &ask);
                          if (reference == "cj-grid")
                            for (size_t i = 0; i < bid.size(); ++i)
                              bid[i] = to_grid(bid[i]), ask[i] = to_grid(ask[i]);
                          m.step_depths(bid, ask, out);
                        });
  }
  return UsageError(
      "--reference '{}' does not apply to env '{}' (execution: optimal; mm: as, cj, cj-grid)",
      reference, spec.name);
}

nlohmann::json compare_to_reference(const EvalResult& policy, const EvalResult& reference,
                                    double q_scale) {
  std::vector<double> diff(policy.returns.size());
  for (size_t i = 0; i < diff.size(); ++i) diff[i] = policy.returns[i] - reference.returns[i];
  double d_mean = 0, d_std = 0;
  sim::mean_and_std(diff, &d_mean, &d_std);
  const double se = diff.size() > 1 ? d_std / std::sqrt(static_cast<double>(diff.size())) : 0.0;
  nlohmann::json j = {{"policy_mean", policy.mean},
                      {"policy_std", policy.std},
                      {"reference_mean", reference.mean},
                      {"reference_std", reference.std},
                      {"paired_diff_mean", d_mean},
                      {"paired_diff_std", d_std},
                      {"paired_diff_se", se},
                      {"relative_gap", reference.mean != 0 ? std::abs(d_mean / reference.mean)
                                                           : std::abs(d_mean)}};
  if (!policy.mean_inventory.empty() && policy.mean_inventory.size() == reference.mean_inventory.size()) {
    double worst = 0;
    for (size_t k = 0; k < policy.mean_inventory.size(); ++k)
      worst = std::max(worst, std::abs(policy.mean_inventory[k] - reference.mean_inventory[k]));
    j["max_inventory_gap"] = worst / q_scale;
    // E|q| averaged over the steps and at the end: a policy symmetric in q has a mean
    // inventory path near 0 however far single paths drift.
    auto time_mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x / static_cast<double>(v.size());
      return s;
    };
    j["policy_mean_abs_inventory"] = time_mean(policy.mean_abs_inventory);
    j["reference_mean_abs_inventory"] = time_mean(reference.mean_abs_inventory);
    j["policy_final_abs_inventory"] = policy.mean_abs_inventory.back();
    j["reference_final_abs_inventory"] = reference.mean_abs_inventory.back();
    j["policy_inventory_path"] = policy.mean_inventory;
    j["reference_inventory_path"] = reference.mean_inventory;
  }
  return j;
}

}  // namespace fxt::rl
