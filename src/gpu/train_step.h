// The whole training step on the GPU (DESIGN §5.1), captured once as a CUDA Graph and replayed:
//
//   sample anchors (device RNG, the CPU sampler's exact sequence) -> gather windows from the
//   device-resident dataset -> perception forward -> masked BCE + controllers (+ kendall) ->
//   backward with the trunk scale λ -> global-norm clipping + AdamW (lr from the device step
//   counter) -> per-epoch sums
//
// Nothing in the step allocates, synchronises or branches on the host; the step counter, the
// learning rate and the controller state live on the device. The host reads the epoch's sums
// (loss, per-horizon loss, gradient norm, skipped steps) through mapped pinned
// memory when it reports (take_sums). The same seed and data give identical bytes run to run.
//
// InferenceGpu runs the model forward for validation, evaluation and prediction: host windows
// in, host logits out (the CPU backend's Net::forward contract).
//
// Host-side C++20; not included by .cu files. docs/GPU.md describes the step and its numbers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/adamw.h"
#include "gpu/loss.h"
#include "gpu/perception.h"
#include "gpu/runtime.h"
#include "model/params.h"
#include "model/perception.h"

namespace fxt::gpu {

struct TrainStepConfig {
  model::PerceptionConfig model;  // features and horizons set
  int batch = 32;                 // B
  int window = 64;                // K
  int stride = 1;                 // S
  bool cfc_time_real = false;     // dt per position from the elapsed-time input
  uint64_t seed = 1;              // sampler seed (seed_for_step)
  LossConfig loss;                // the model's weighting and λ
  AdamWConfig adamw;
  LrSchedule schedule;
  // Learning-rate multiplier per model parameter group ("mamba", "cfc", "heads").
  double lr_mult_mamba = 1.0, lr_mult_cfc = 1.0, lr_mult_heads = 1.0;
  Precision precision = Precision::kFp32;  // the matrix products' arithmetic
};

// The dataset as the device keeps it (gpu/batch.h): concatenated rows of every store.
struct TrainData {
  const float* features = nullptr;  // [rows, F] standardised
  const uint8_t* labels = nullptr;  // [rows, H]
  const uint8_t* masks = nullptr;   // [rows, H]
  const float* elapsed = nullptr;   // [rows] (cfc_time_real only)
  uint64_t rows = 0;
  std::vector<uint64_t> pool;  // global first rows of the training windows
};

// Everything of the training state that lives on the device, as host copies (checkpoints,
// resume, tests). Moments: buffer 0 the model, buffer 1 kendall's log σ when present.
struct TrainHostState {
  std::vector<float> params, log_sigma;
  AdamWHostState opt;
  ControllerHost controller;
};

// The per-epoch sums read through mapped memory.
struct StepSums {
  int64_t steps = 0;
  double loss = 0, grad_norm = 0;
  int64_t skipped = 0;
  std::vector<double> loss_h;  // [H]
};

class TrainStep {
 public:
  // Allocates everything (model, optimizer, batch buffers) for cfg on `device`.
  TrainStep(const TrainStepConfig& cfg, int device = 0);
  ~TrainStep();

  const Context& context() const { return *ctx_; }
  const TrainStepConfig& config() const { return cfg_; }
  PerceptionGpu& model() { return model_; }
  const float* params() const { return params_.data(); }

  // Uploads the dataset (synchronous; replaces a previous one; invalidates the graph).
  void upload_data(const TrainData& data);
  // Sets / reads the full training state; `step` = the global step (sampler and schedule).
  void upload_state(const TrainHostState& state);
  TrainHostState download_state() const;

  // Runs n training steps: captures the step as a graph on the first call, then replays it.
  void run(int64_t n);
  // The same step without a graph (the capture/replay equivalence test, profiling).
  void run_uncaptured(int64_t n);
  // Waits for the queued steps, returns the sums since the last call and zeroes them.
  StepSums take_sums();
  // Graph nodes of the captured step (0 before the first run).
  size_t graph_nodes() const { return graph_.node_count(); }
  // Where the time goes: n uncaptured steps with CUDA events between the phases (sample +
  // gather, each layer of the forward, loss, each layer of the backward, optimizer;
  // PhaseTimer); mean milliseconds per phase. Launch
  // gaps of uncaptured work are included, so the sum exceeds a graph replay's step time.
  std::vector<std::pair<std::string, double>> profile_phases(int n);

 private:
  // mark(name): records an event ending the phase `name` when profiling, else nothing.
  void enqueue_step();
  void mark(const char* phase);
  PhaseTimer* timer_ = nullptr;  // set while profile_phases runs

  TrainStepConfig cfg_;
  std::unique_ptr<Context> ctx_;
  PerceptionGpu model_;
  int horizons_ = 0;
  bool kendall_ = false;
  // Data.
  DeviceBuffer<float> features_, elapsed_;
  DeviceBuffer<uint8_t> labels_, masks_;
  DeviceBuffer<uint64_t> pool_, anchors_;
  // Batch.
  DeviceBuffer<float> x_, y_, m_, dt_, dlogits_;
  // Model, loss, optimizer.
  DeviceBuffer<float> params_, grads_, log_sigma_, dlog_sigma_;
  std::unique_ptr<AdamW> opt_;
  DeviceControllerState ctrl_;
  LossOutputs loss_out_;
  // Reporting: device sums [kSumLossH + H] (steps, loss, grad norm, skipped, loss_h...),
  // copied into mapped pinned memory when read.
  DeviceBuffer<double> sums_;
  MappedHost<double> report_;
  Graph graph_;
};

// Forward passes for validation, evaluation and prediction on the GPU: host windows in, host
// logits out. Parameters: a device pointer owned elsewhere (a TrainStep's), or a host copy
// uploaded with set_params.
class InferenceGpu {
 public:
  explicit InferenceGpu(const model::PerceptionConfig& cfg, int device = 0);
  ~InferenceGpu();
  void set_params(const std::vector<float>& host);  // uploads (owned copy)
  void use_params(const float* device_params);      // non-owning (e.g. TrainStep::params())
  void set_precision(Precision p) { ctx_->set_precision(p); }  // the products' arithmetic
  // x [b, k, F] host; dt [b, k] host or nullptr. Logits [b, k, H] (last = false) or [b, H]
  // (last = true) into *out. Synchronous.
  void forward(const float* x, const float* dt, int b, int k, int stride, bool last,
               std::vector<float>* out);
  std::string device_name() const { return ctx_->device_name(); }

 private:
  std::unique_ptr<Context> ctx_;
  PerceptionGpu model_;
  DeviceBuffer<float> own_params_, x_, dt_;
  const float* params_ = nullptr;
};

// Per-element AdamW weight-decay flags and group learning-rate multipliers of the perception
// parameters, from their specs (decay flag and group) — the CPU optimizer's registration.
void perception_adam_tables(const std::vector<model::ModelParamSpec>& specs, size_t total,
                            double mult_mamba, double mult_cfc, double mult_heads,
                            std::vector<uint8_t>* decay, std::vector<double>* mult);

}  // namespace fxt::gpu
