// Internal to src/train (not public API), built with CUDA only.
#pragma once

#if FXT_HAVE_CUDA

#include <cstdint>
#include <string>

#include "core/status.h"
#include "features/sequences.h"
#include "gpu/train_step.h"
#include "train/optimizer.h"
#include "train/train_state.h"

namespace fxt::train_detail {

// The CUDA backend of train() (docs/GPU.md): the standardised dataset and the whole training
// state move to the device once; epochs run as replays of the captured step; at each epoch's end
// the state comes back into TrainState, so validation, checkpoints and resume are the CPU path's.
class CudaTrainer {
 public:
  CudaTrainer(TrainState& st, const Dataset& ds, const LrSchedule& sched);

  // Runs one epoch's steps and returns their sums (read through mapped memory).
  gpu::StepSums run_epoch(int64_t steps) {
    step_.run(steps);
    return step_.take_sums();
  }

  // Device state -> TrainState (parameters, moments, controllers).
  Status download(TrainState& st) const;

  std::string device_name() const { return step_.context().device_name(); }

 private:
  static gpu::TrainStepConfig step_config(const TrainConfig& c, const LrSchedule& sched);

  // TrainState -> device (fresh or resumed state alike).
  void upload(const TrainState& st);

  gpu::TrainStep step_;
};

}  // namespace fxt::train_detail

#endif  // FXT_HAVE_CUDA
