#include "rl/env_spec.h"

#include "rl/cartpole.h"

namespace fxt::rl {

Status EnvSpec::validate() const {
  if (name == "cartpole") return Status::Ok();
  if (name == "execution") return execution.validate();
  if (name == "mm") return mm.validate();
  return UsageError("--env '{}': expected cartpole, execution or mm", name);
}

std::unique_ptr<VecEnv> EnvSpec::make(int num_envs) const {
  if (name == "execution") return std::make_unique<ExecutionEnv>(execution, num_envs);
  if (name == "mm") return std::make_unique<MarketMakingEnv>(mm, num_envs);
  return std::make_unique<CartPoleEnv>(num_envs);
}

Support EnvSpec::default_support() const {
  Support s;
  if (name == "execution") {
    // Sensible policies cost about as much as TWAP (k/T + φT/3 + b/2)·q0²; three times that
    // covers the exploring ones, and worse returns clip to v_min.
    const auto& e = execution;
    const double twap = (e.temp_impact / e.horizon + e.phi * e.horizon / 3 + e.perm_impact / 2) *
                        e.q0 * e.q0;
    s.v_min = -3 * twap;
    s.v_max = 0.25 * twap;
  } else if (name == "mm") {
    s.v_min = -50;
    s.v_max = 150;
  }
  return s;
}

nlohmann::json EnvSpec::to_json() const {
  nlohmann::json j = {{"name", name}};
  if (name == "execution") {
    const auto& e = execution;
    j["params"] = {{"horizon", e.horizon},         {"steps", e.steps},
                   {"q0", e.q0},                   {"s0", e.s0},
                   {"sigma", e.sigma},             {"temp_impact", e.temp_impact},
                   {"perm_impact", e.perm_impact}, {"phi", e.phi},
                   {"alpha", e.alpha},             {"num_speeds", e.num_speeds},
                   {"max_speed", e.max_speed}};
  } else if (name == "mm") {
    const auto& m = mm;
    j["params"] = {{"s0", m.market.s0},         {"horizon", m.market.horizon},
                   {"steps", m.market.steps},   {"sigma", m.market.sigma},
                   {"A", m.market.A},           {"k", m.market.k},
                   {"q0", m.market.q0},         {"phi", m.phi},
                   {"alpha", m.alpha},          {"max_inventory", m.max_inventory},
                   {"num_depths", m.num_depths}, {"min_depth", m.min_depth},
                   {"max_depth", m.max_depth},  {"expected_reward", m.expected_reward}};
  }
  return j;
}

Result<EnvSpec> EnvSpec::from_json(const nlohmann::json& j) {
  EnvSpec s;
  try {
    j.at("name").get_to(s.name);
    if (s.name == "execution") {
      const auto& p = j.at("params");
      auto& e = s.execution;
      p.at("horizon").get_to(e.horizon);
      p.at("steps").get_to(e.steps);
      p.at("q0").get_to(e.q0);
      p.at("s0").get_to(e.s0);
      p.at("sigma").get_to(e.sigma);
      p.at("temp_impact").get_to(e.temp_impact);
      p.at("perm_impact").get_to(e.perm_impact);
      p.at("phi").get_to(e.phi);
      p.at("alpha").get_to(e.alpha);
      p.at("num_speeds").get_to(e.num_speeds);
      p.at("max_speed").get_to(e.max_speed);
    } else if (s.name == "mm") {
      const auto& p = j.at("params");
      auto& m = s.mm;
      p.at("s0").get_to(m.market.s0);
      p.at("horizon").get_to(m.market.horizon);
      p.at("steps").get_to(m.market.steps);
      p.at("sigma").get_to(m.market.sigma);
      p.at("A").get_to(m.market.A);
      p.at("k").get_to(m.market.k);
      p.at("q0").get_to(m.market.q0);
      p.at("phi").get_to(m.phi);
      p.at("alpha").get_to(m.alpha);
      p.at("max_inventory").get_to(m.max_inventory);
      p.at("num_depths").get_to(m.num_depths);
      p.at("min_depth").get_to(m.min_depth);
      p.at("max_depth").get_to(m.max_depth);
      m.expected_reward = p.value("expected_reward", false);  // absent before 2026-12-04
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("env config: {}", e.what());
  }
  Status st = s.validate();
  if (!st.ok()) return InvalidInput("env config: {}", st.message());
  return s;
}

}  // namespace fxt::rl
