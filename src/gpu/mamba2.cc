// Host glue of the GPU Mamba2 block: conversions from the CPU model's config and layout.
#include "gpu/mamba2.h"

#include "model/mamba2.h"

namespace fxt::gpu {

Mamba2GpuDims mamba2_gpu_dims(const model::Mamba2Config& cfg) {
  Mamba2GpuDims d;
  d.in_dim = cfg.in_dim;
  d.d_model = cfg.d_model;
  d.d_inner = cfg.d_inner();
  d.head_dim = cfg.head_dim;
  d.n_heads = cfg.n_heads();
  d.d_state = cfg.d_state;
  d.d_conv = cfg.d_conv;
  return d;
}

Mamba2GpuOffsets mamba2_gpu_offsets(const model::Mamba2Layout& layout) {
  Mamba2GpuOffsets o;
  o.in_proj_w = layout.in_proj_w;
  o.conv_w = layout.conv_w;
  o.conv_b = layout.conv_b;
  o.dt_bias = layout.dt_bias;
  o.a_log = layout.a_log;
  o.d_skip = layout.d_skip;
  o.norm_w = layout.norm_w;
  o.out_proj_w = layout.out_proj_w;
  o.total = layout.total;
  return o;
}

}  // namespace fxt::gpu
