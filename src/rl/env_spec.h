// Which environment a run uses and with what parameters: the one place that turns a name
// ("cartpole", "execution", "mm") into a VecEnv, the env's suggested C51 support and its
// JSON form (stored in checkpoints and run.json so `fxt rl eval` rebuilds the same env).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "rl/distributional.h"
#include "rl/execution.h"
#include "rl/market_making.h"
#include "rl/vec_env.h"

namespace fxt::rl {

struct EnvSpec {
  std::string name = "cartpole";  // cartpole | execution | mm
  ExecutionParams execution;
  MarketMakingParams mm;

  Status validate() const;
  std::unique_ptr<VecEnv> make(int num_envs) const;
  // A support covering the env's returns (cartpole: CleanRL's [−100, 100]).
  Support default_support() const;
  nlohmann::json to_json() const;
  static Result<EnvSpec> from_json(const nlohmann::json& j);
};

}  // namespace fxt::rl
