// The closed-form reference agents evaluated on the GPU (docs/RL.md): one thread per episode runs
// the whole episode — seed the lane as the env's reset does, then the agent's control
// (rl/closed_form_lane.h) and the env's step (rl/*_lane.h) until it ends — so a reference over
// 65,536 paired paths costs one kernel. Lane i is episode i of evaluate_reference() with the same
// seed: the same mid paths and fill draws, so the results pair with the CPU's and with any
// policy's evaluated on that seed. Returns add the float-rounded rewards in double, as the CPU
// evaluation does. Synchronous (allocates, launches, downloads): for evaluation, not for a
// captured step. Defined only in CUDA builds (fxt_rl_gpu); C++17-clean.
#pragma once

#include <cstdint>
#include <vector>

#include "rl/execution_lane.h"
#include "rl/market_making_lane.h"

namespace fxt::rl {

struct DeviceEvaluation {
  std::vector<double> returns;         // [episodes]
  std::vector<double> mean_inventory;  // [steps + 1]: mean over episodes at steps 0..T
};

// The execution closed-form agent (speed v(T − t)·q).
DeviceEvaluation evaluate_execution_optimal_on_device(const ExecutionDynamics& d, int episodes,
                                                      uint64_t seed);
// The Cartea–Jaimungal agent from its table h (CarteaJaimungalAgent: [(steps + 1)·(2Q + 1)],
// Q = max_inventory) and inv_k = 1/k.
DeviceEvaluation evaluate_cartea_jaimungal_on_device(const MarketMakingDynamics& d,
                                                     const std::vector<double>& h,
                                                     int max_inventory, double inv_k, int episodes,
                                                     uint64_t seed);

}  // namespace fxt::rl
