// `fxt rl train --device cuda`: the DQN training loop of rl/trainer.h driving the GPU learner
// (rl/device_learner.h) and a DeviceVecEnv, with the CPU trainer's schedule (updates every
// train_frequency env steps after learning_starts, target updates every target_update), its
// metrics.jsonl lines, run results and checkpoint bytes format. The metrics are read back from
// the device only at a log, evaluation or checkpoint step; evaluation runs greedy on the device
// (evaluate_agent's episodes: `eval_episodes` lanes seeded with eval_seed, one episode each).
// Built into fxt_rl_gpu (CUDA builds only).
#pragma once

#include <memory>

#include "core/status.h"
#include "rl/device_env.h"
#include "rl/device_learner.h"
#include "rl/dqn.h"
#include "rl/env_spec.h"
#include "rl/trainer.h"

namespace fxt::rl {

// Ok when the GPU learner implements every option cfg asks for; else a one-line usage error
// naming the first one it does not (more than 7 torso layers, num_envs above buffer_size, or above
// half of it with --mirror; the symmetric policy with what the CPU agent refuses it with: IQN,
// Thompson exploration).
Status device_learner_supports(const DqnConfig& cfg);

// The learner's config from a validated, supported DqnConfig and the env's dimensions: the
// QNetwork's layer layout (with dueling, the value stream apart from the advantage head) and
// AdamW segments (its ParamSpecs), C51's atom values of the Support or QR-DQN's quantile count;
// IQN: the embedding layer apart from the torso and head, and N, K and E.
DeviceLearnerConfig device_learner_config(const DqnConfig& cfg, int obs_dim, int num_actions);
// --mirror or --symmetric-policy: d's mirror_sign and mirror_action from the env's mirror
// (env_mirror_map); an error when the env has none or its mirror is not a sign flip of
// observation entries.
Status set_device_mirror(const EnvSpec& spec, DeviceLearnerConfig* d);

// The device env of spec with n lanes (the CPU env's dynamics, rl/device_env.h).
std::unique_ptr<DeviceVecEnv> make_device_env(const EnvSpec& spec, int n);

// Copies the learner's online and target parameters and AdamW state into agent (same config),
// through the checkpoint layout DqnAgent::load reads, so agent.save() writes the GPU's state.
Status copy_device_state(const DeviceC51Learner& learner, DqnAgent* agent);

// Trains on the GPU from agent's initial parameters; at the end (and at checkpoint_every) agent
// holds the device state and the checkpoint is written from it. Fails with a usage error for
// options device_learner_supports() refuses.
Result<TrainResult> train_dqn_device(const EnvSpec& spec, const TrainOptions& opts,
                                     DqnAgent* agent);

}  // namespace fxt::rl
