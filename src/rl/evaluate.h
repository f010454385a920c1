// Evaluation of a policy on seeded episodes: `episodes` lanes of the env reset with one seed, one
// episode each, so two policies evaluated with the same seed see the same randomness (the same
// mid paths and fill draws in the model envs): their per-episode returns pair up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "rl/dqn.h"
#include "rl/env_spec.h"

namespace fxt::rl {

struct EvalResult {
  std::vector<double> returns;         // per episode
  std::vector<double> mean_inventory;  // model envs: mean inventory at steps 0..T (else empty)
  std::vector<double> mean_abs_inventory;  // model envs: mean |inventory| at steps 0..T
  double mean = 0, std = 0;            // of returns (sample std)
};

// The agent's greedy policy.
EvalResult evaluate_agent(DqnAgent* agent, const EnvSpec& spec, int episodes, uint64_t seed);
// A closed-form reference: "optimal" (execution), "as" (mm, Avellaneda–Stoikov with gamma) or
// "cj" (mm, Cartea–Jaimungal with the env's φ, α). Unknown names give a usage error.
Result<EvalResult> evaluate_reference(const EnvSpec& spec, const std::string& reference,
                                      double gamma, int episodes, uint64_t seed);

// The JSON comparison of `fxt rl eval`: both means and stds, the paired difference
// (policy − reference) with its standard error, the relative gap |Δ|/|reference mean| and,
// for model envs, the largest gap between the mean inventory paths as a fraction of q_scale.
nlohmann::json compare_to_reference(const EvalResult& policy, const EvalResult& reference,
                                    double q_scale);

}  // namespace fxt::rl
