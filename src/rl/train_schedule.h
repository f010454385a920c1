// The DQN training loop's schedule, one copy for the CPU trainer (rl/trainer.cc) and the GPU
// trainer (rl/device_trainer.cc, which decides it without reading device data): after each env
// step of all lanes, the
// updates that are due (step >= next_update while the replay holds a batch; one every
// train_frequency env steps), the target updates (every target_update), an evaluation (every
// eval_every), a log line (every log_every, and at every evaluation) and a checkpoint (every
// checkpoint_every). The CPU trainer passes its replay's size; the GPU learner's replay holds
// min(rows·(step − lag), capacity) transitions (set_replay_lag, set_replay_rows), so the GPU
// trainer's host knows it.
// plan() says when k env steps can run as one graph: when nothing is due after the first k − 1 of
// them and at most one update after the last. Header-only; host code.
#pragma once

#include <algorithm>
#include <cstdint>

#include "rl/dqn.h"
#include "rl/trainer.h"

namespace fxt::rl {

class TrainSchedule {
 public:
  TrainSchedule(const DqnConfig& cfg, const TrainOptions& opts, bool checkpoints)
      : n_(cfg.num_envs),
        total_(cfg.total_steps),
        batch_(cfg.batch),
        capacity_(cfg.buffer_size),
        train_frequency_(cfg.train_frequency),
        target_update_(cfg.target_update),
        log_every_(opts.log_every),
        eval_every_(opts.eval_every),
        ckpt_every_(checkpoints ? opts.checkpoint_every : 0),
        next_update_(cfg.learning_starts),
        next_target_(cfg.target_update),
        next_log_(opts.log_every),
        next_eval_(opts.eval_every > 0 ? opts.eval_every : -1),
        next_ckpt_(ckpt_every_ > 0 ? ckpt_every_ : -1) {}

  int64_t step() const { return step_; }
  bool done() const { return step_ >= total_; }
  // The GPU learner's n-step returns store each transition n − 1 steps after it starts
  // (rl/device_learner.h): the replay then holds min(step − lag, capacity) transitions with
  // lag = (n − 1) · lanes. 0 (the default): 1-step returns.
  void set_replay_lag(int64_t lag) { lag_ = lag; }
  // Replay rows per env step (--mirror on the GPU learner: 2, each transition and its mirror).
  void set_replay_rows(int64_t rows) { rows_ = rows; }

  // Where the schedule stands: the step and when each kind of event falls next (a saved run,
  // rl/resume.h). restore() puts back a position of a schedule built from the same config.
  struct Position {
    int64_t step = 0, next_update = 0, next_target = 0, next_log = 0, next_eval = 0, next_ckpt = 0;
  };
  Position position() const {
    return {step_, next_update_, next_target_, next_log_, next_eval_, next_ckpt_};
  }
  void restore(const Position& p) {
    step_ = p.step;
    next_update_ = p.next_update;
    next_target_ = p.next_target;
    next_log_ = p.next_log;
    next_eval_ = p.next_eval;
    next_ckpt_ = p.next_ckpt;
  }

  // The next graph: `iterations` env steps of all lanes (1 or k) and whether the last one is
  // followed by exactly one update inside the graph.
  struct Next {
    int iterations = 1;
    bool update = false;
  };
  Next plan(int k) const {
    if (k <= 1 || step_ + k * n_ > total_) return {};
    for (int i = 1; i < k; ++i)
      if (!quiet(step_ + i * n_)) return {};
    const int64_t end = step_ + k * n_;
    if (!wants_update(end, next_update_)) return {k, false};
    if (!wants_update(end, next_update_ + train_frequency_)) return {k, true};
    return {};
  }

  // Moves the step counter past `iterations` env steps of all lanes.
  void advance(int iterations) { step_ += static_cast<int64_t>(iterations) * n_; }
  // What is due after the current step, in the CPU trainer's order; each call consumes it.
  int take_updates(int64_t replay_size) {
    int u = 0;
    while (step_ >= next_update_ && replay_size >= batch_) ++u, next_update_ += train_frequency_;
    return u;
  }
  int take_updates() { return take_updates(replay_size(step_)); }  // the GPU learner's replay
  int take_targets() {
    int t = 0;
    while (step_ >= next_target_) ++t, next_target_ += target_update_;
    return t;
  }
  bool take_eval() {
    if (next_eval_ <= 0 || step_ < next_eval_) return false;
    next_eval_ += eval_every_;
    return true;
  }
  bool take_log(bool evaluated) {
    if (step_ < next_log_ && !evaluated) return false;
    while (next_log_ <= step_) next_log_ += log_every_;
    return true;
  }
  bool take_checkpoint() {
    if (next_ckpt_ <= 0 || step_ < next_ckpt_) return false;
    next_ckpt_ += ckpt_every_;
    return true;
  }

 private:
  int64_t replay_size(int64_t s) const {
    return std::clamp<int64_t>((s - lag_) * rows_, 0, capacity_);
  }
  bool wants_update(int64_t s, int64_t next) const { return s >= next && replay_size(s) >= batch_; }
  // Nothing is due after env step s.
  bool quiet(int64_t s) const {
    return !wants_update(s, next_update_) && s < next_target_ && (next_eval_ <= 0 || s < next_eval_) &&
           s < next_log_ && (next_ckpt_ <= 0 || s < next_ckpt_);
  }
  int64_t n_, total_, batch_, capacity_, train_frequency_, target_update_;
  int64_t log_every_, eval_every_, ckpt_every_;
  int64_t step_ = 0, next_update_, next_target_, next_log_, next_eval_, next_ckpt_;
  int64_t lag_ = 0, rows_ = 1;
};

}  // namespace fxt::rl
