// The CUDA backend of train() (see cuda_trainer.h, docs/GPU.md).
#include "train/cuda_trainer.h"

#if FXT_HAVE_CUDA

#include <vector>

#include "gpu/batch.h"

namespace fxt::train_detail {

CudaTrainer::CudaTrainer(TrainState& st, const Dataset& ds, const LrSchedule& sched)
    : step_(step_config(st.cfg, sched)) {
  const TrainConfig& c = st.cfg;
  // Concatenate the stores' rows (global row = store offset + local index).
  gpu::TrainData data;
  std::vector<float> features, elapsed;
  std::vector<uint8_t> labels, masks;
  for (size_t i = 0; i < ds.store_count(); ++i) {
    const Dataset::Store& s = ds.store(i);
    features.insert(features.end(), s.features.begin(), s.features.end());
    labels.insert(labels.end(), s.labels.y.begin(), s.labels.y.end());
    masks.insert(masks.end(), s.labels.mask.begin(), s.labels.mask.end());
    if (c.cfc_time_real) {
      const uint64_t n = s.reader.size();
      std::vector<float> e(n);
      gpu::elapsed_per_row(s.reader.ts_ns.data, n, c.stride, st.cfc_time_unit_ns, e.data());
      elapsed.insert(elapsed.end(), e.begin(), e.end());
    }
  }
  for (const Anchor& a : ds.anchors(Split::kTrain)) {
    data.pool.push_back(ds.store(a.store).offset + a.start);
  }
  data.features = features.data();
  data.labels = labels.data();
  data.masks = masks.data();
  data.elapsed = c.cfc_time_real ? elapsed.data() : nullptr;
  data.rows = ds.total_snapshots();
  step_.upload_data(data);
  upload(st);
  st.net.use_gpu(step_.params(), st.params, st.cfg.precision);
}

Status CudaTrainer::download(TrainState& st) const {
  const gpu::TrainHostState h = step_.download_state();
  st.params = h.params;
  if (st.kendall) st.log_sigma = h.log_sigma;
  FXT_RETURN_IF_ERROR(st.opt.import_state(h.opt.step, h.opt.m, h.opt.v));
  st.ctrl = gpu::to_model_state(h.controller);
  return Status::Ok();
}

gpu::TrainStepConfig CudaTrainer::step_config(const TrainConfig& c, const LrSchedule& sched) {
  gpu::TrainStepConfig g;
  g.model = c.perception_config();
  g.batch = c.batch;
  g.window = c.window;
  g.stride = c.stride;
  g.cfc_time_real = c.cfc_time_real;
  g.seed = c.seed;
  model::LossConfig lc;
  lc.weighting = c.weighting;
  lc.trunk_lambda = c.lambda;
  g.loss = gpu::to_gpu_config(lc);
  g.adamw.weight_decay = c.weight_decay;
  g.adamw.max_grad_norm = c.clip;
  g.schedule.peak_lr = sched.peak_lr;
  g.schedule.warmup_steps = sched.warmup_steps;
  g.schedule.total_steps = sched.total_steps;
  g.schedule.min_lr_ratio = sched.min_lr_ratio;
  g.lr_mult_mamba = c.lr_mult_mamba;
  g.lr_mult_cfc = c.lr_mult_cfc;
  g.lr_mult_heads = c.lr_mult_heads;
  g.precision = c.precision;
  return g;
}

void CudaTrainer::upload(const TrainState& st) {
  gpu::TrainHostState h;
  h.params = st.params;
  h.log_sigma = st.log_sigma;
  st.opt.export_state(&h.opt.step, &h.opt.m, &h.opt.v);
  h.opt.schedule_step = st.step;
  h.controller = gpu::to_controller_host(st.ctrl);
  step_.upload_state(h);
}

}  // namespace fxt::train_detail

#endif  // FXT_HAVE_CUDA
