// The perception model on the GPU: the order of model::perception_* (src/model/perception.cc)
// with the GPU blocks. Every backward op accumulates, so the gradient scratch is zeroed first.
#include "gpu/perception.h"

#include <algorithm>

#include "gpu/ops.h"
#include "gpu/ple.h"

namespace fxt::gpu {

namespace {
void zero(const Context& ctx, float* p, size_t n) {
  if (n) FXT_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), ctx.stream()));
}
}  // namespace

PerceptionGpu::PerceptionGpu(const model::PerceptionConfig& cfg)
    : cfg_(cfg), layout_(model::perception_layout(cfg)) {
  m1_dims_ = mamba2_gpu_dims(cfg.m1());
  m2_dims_ = mamba2_gpu_dims(cfg.m2());
  m1_off_ = mamba2_gpu_offsets(model::mamba2_layout(cfg.m1()));
  m2_off_ = mamba2_gpu_offsets(model::mamba2_layout(cfg.m2()));
  cfc_off_ = cfc_offsets(cfg.d_model, cfg.d_model);
  head_off_ = head_offsets(cfg.d_model, cfg.head_mid);
  xhead_off_ = head_offsets(cfg.features, cfg.head_mid);
}

void PerceptionGpu::resize(int batch, int seq_len) {
  if (batch == batch_ && seq_len == seq_len_) return;
  batch_ = batch;
  seq_len_ = seq_len;
  const size_t r = static_cast<size_t>(batch) * static_cast<size_t>(seq_len);
  const size_t f = static_cast<size_t>(cfg_.features), d = static_cast<size_t>(cfg_.d_model);
  const size_t nh = static_cast<size_t>(cfg_.horizons), b = static_cast<size_t>(batch);
  const size_t mid = static_cast<size_t>(cfg_.head_mid);
  gates_.resize(r * f);
  x_sel_.resize(r * f);
  m1_.resize(m1_dims_, batch, seq_len);
  m2_.resize(m2_dims_, batch, seq_len);
  for (DeviceBuffer<float>* p : {&v1_, &u2_, &h_, &d_s_, &d_h_, &d_u2_, &d_v1_, &d_m1_out_})
    p->resize(r * d);
  for (DeviceBuffer<float>* p : {&mean_a_, &rstd_a_, &mean_b_, &rstd_b_, &attn_}) p->resize(r);
  c_.resize(b * d);
  d_c_.resize(b * d);
  s_last_.resize(b * d);
  x_last_.resize(b * f);
  const CfcDims cd{batch, seq_len, cfg_.d_model, cfg_.d_model};
  cfc_buf_.resize(cfc_workspace_floats(cd));
  cfc_ = cfc_workspace_carve(cd, cfc_buf_.data());
  logits_.resize(r * nh);
  z1_.resize(nh * r * mid);
  z2_.resize(nh * r * mid);
  d_x_sel_.resize(r * f);
  const size_t xr = cfg_.snapshot_heads ? r : 0;
  xz1_.resize(std::max<size_t>(nh * xr * mid, 1));
  xz2_.resize(std::max<size_t>(nh * xr * mid, 1));
  xlogits_.resize(std::max<size_t>(xr * nh, 1));
  const size_t ple_width = f * static_cast<size_t>(cfg_.ple_bins);
  ple_enc_.resize(std::max<size_t>(r * ple_width, 1));
  d_ple_enc_.resize(std::max<size_t>(r * ple_width, 1));
  const HeadDims hd{static_cast<int>(r), cfg_.horizons, cfg_.d_model, cfg_.head_mid};
  const HeadDims xd{static_cast<int>(r), cfg_.horizons, cfg_.features, cfg_.head_mid};
  const int ri = static_cast<int>(r);
  const size_t need = std::max({heads_forward_scratch_floats(hd), heads_backward_scratch_floats(hd),
                                heads_forward_scratch_floats(xd), heads_backward_scratch_floats(xd),
                                varsel_backward_scratch(ri, cfg_.features),
                                layernorm_backward_scratch(ri, cfg_.d_model),
                                attn_pool_backward_scratch(batch, cfg_.d_model), size_t{1}});
  scratch_.resize(need);
}

// logits [rows, H] += x [rows, F] W_skip^T: the input skip path (model::PerceptionConfig).
void PerceptionGpu::input_skip_forward(const Context& ctx, const float* params, const float* x,
                                       int rows, float* logits) const {
  if (!cfg_.input_skip) return;
  gemm(ctx, false, true, rows, cfg_.horizons, cfg_.features, 1.0f, x, cfg_.features,
       params + layout_.skip_w, cfg_.features, 1.0f, logits, cfg_.horizons);
}

void PerceptionGpu::snapshot_heads_forward(const Context& ctx, const float* params, const float* x,
                                           int rows, float* logits) {
  if (!cfg_.snapshot_heads) return;
  const HeadDims xd{rows, cfg_.horizons, cfg_.features, cfg_.head_mid};
  heads_forward(ctx, xd, xhead_off_, params + layout_.xheads, x, xlogits_.data(), xz1_.data(),
                xz2_.data(), scratch_.data());
  add_inplace(ctx, xlogits_.data(), logits, static_cast<size_t>(rows) * cfg_.horizons);
}

void PerceptionGpu::ple_path_forward(const Context& ctx, const float* params, const float* x,
                                     int rows, float* logits) {
  if (cfg_.ple_bins <= 0) return;
  const int width = cfg_.features * cfg_.ple_bins;
  ple_encode(ctx, x, params + layout_.ple_edges, rows, cfg_.features, cfg_.ple_bins,
             ple_enc_.data());
  gemm(ctx, false, true, rows, cfg_.horizons, width, 1.0f, ple_enc_.data(), width,
       params + layout_.ple_w, width, 1.0f, logits, cfg_.horizons);
}

void PerceptionGpu::trunk_forward(const Context& ctx, const float* p, const float* x, float stride,
                                  const float* dt, bool for_backward) {
  const model::PerceptionLayout& l = layout_;
  const int r = batch_ * seq_len_, f = cfg_.features, d = cfg_.d_model;
  varsel_forward(ctx, x, p + l.varsel_w, p + l.varsel_b, x_sel_.data(), gates_.data(), r, f);
  mark("fwd varsel");
  mamba2_forward(ctx, m1_dims_, m1_off_, p + l.m1, x_sel_.data(), stride, &m1_, for_backward);
  mark("fwd mamba2 1");
  layernorm_forward(ctx, m1_.out.data(), p + l.norm_a_w, p + l.norm_a_b, v1_.data(), mean_a_.data(),
                    rstd_a_.data(), r, d);
  mark("fwd norm a");
  mamba2_forward(ctx, m2_dims_, m2_off_, p + l.m2, v1_.data(), stride, &m2_, for_backward);
  mark("fwd mamba2 2");
  // u2 = v1 + m2(v1), h = LayerNorm(u2): one launch.
  add_layernorm_forward(ctx, m2_.out.data(), v1_.data(), u2_.data(), p + l.norm_b_w, p + l.norm_b_b,
                        h_.data(), mean_b_.data(), rstd_b_.data(), r, d);
  mark("fwd residual+norm b");
  if (cfg_.causal) {
    zero(ctx, c_.data(), c_.size());  // s_{-1} = 0 (model/perception.h: the causal trunk)
  } else {
    attn_pool_forward(ctx, h_.data(), p + l.pool_q, c_.data(), attn_.data(), batch_, seq_len_, d);
  }
  mark("fwd attn pool");
  const CfcDims cd{batch_, seq_len_, d, d};
  cfc_forward(ctx, cd, cfc_off_, p + l.cfc, h_.data(), c_.data(), dt, stride, cfc_);
  mark("fwd cfc");
}

void PerceptionGpu::forward(const Context& ctx, const float* params, const float* x, float stride,
                            const float* dt) {
  trunk_forward(ctx, params, x, stride, dt, /*for_backward=*/true);
  const HeadDims hd{batch_ * seq_len_, cfg_.horizons, cfg_.d_model, cfg_.head_mid};
  heads_forward(ctx, hd, head_off_, params + layout_.heads, cfc_.out, logits_.data(), z1_.data(),
                z2_.data(), scratch_.data());
  input_skip_forward(ctx, params, x, batch_ * seq_len_, logits_.data());
  snapshot_heads_forward(ctx, params, x, batch_ * seq_len_, logits_.data());
  ple_path_forward(ctx, params, x, batch_ * seq_len_, logits_.data());
  mark("fwd heads");
}

void PerceptionGpu::forward_last(const Context& ctx, const float* params, const float* x,
                                 float stride, const float* dt) {
  trunk_forward(ctx, params, x, stride, dt, /*for_backward=*/false);
  // The last position's rows [B, width]; at B = 1 that row is already contiguous in place.
  auto last_rows = [&](const float* all, int width, DeviceBuffer<float>& gathered) {
    if (batch_ == 1) return all + static_cast<size_t>(seq_len_ - 1) * width;
    gather_last_positions(ctx, all, batch_, seq_len_, width, gathered.data());
    return static_cast<const float*>(gathered.data());
  };
  const float* s_last = last_rows(cfc_.out, cfg_.d_model, s_last_);
  // z1, z2 hold [H, B, mid]: a prefix of their [H, B K, mid] storage.
  const HeadDims hd{batch_, cfg_.horizons, cfg_.d_model, cfg_.head_mid};
  heads_forward(ctx, hd, head_off_, params + layout_.heads, s_last, logits_.data(), z1_.data(),
                z2_.data(), scratch_.data());
  if (cfg_.input_skip || cfg_.snapshot_heads || cfg_.ple_bins > 0) {
    const float* x_last = last_rows(x, cfg_.features, x_last_);
    input_skip_forward(ctx, params, x_last, batch_, logits_.data());
    snapshot_heads_forward(ctx, params, x_last, batch_, logits_.data());
    ple_path_forward(ctx, params, x_last, batch_, logits_.data());
  }
}

void PerceptionGpu::backward(const Context& ctx, const float* p, const float* x, float stride,
                             const float* dt, const float* d_logits, const float* lambda,
                             float* g, float* d_x) {
  const model::PerceptionLayout& l = layout_;
  const int r = batch_ * seq_len_, f = cfg_.features, d = cfg_.d_model;
  const size_t rd = static_cast<size_t>(r) * d;
  zero(ctx, g, l.total);
  if (d_x != nullptr) zero(ctx, d_x, static_cast<size_t>(r) * f);
  for (DeviceBuffer<float>* q : {&d_s_, &d_h_, &d_u2_, &d_v1_, &d_m1_out_}) zero(ctx, q->data(), rd);
  zero(ctx, d_c_.data(), d_c_.size());
  zero(ctx, d_x_sel_.data(), d_x_sel_.size());
  mark("bwd zero");

  // Heads: own parameter gradients unscaled, lambda_j * dL/ds into the trunk.
  const HeadDims hd{r, cfg_.horizons, d, cfg_.head_mid};
  heads_backward(ctx, hd, head_off_, p + l.heads, cfc_.out, z1_.data(), z2_.data(), d_logits,
                 lambda, d_s_.data(), g + l.heads, scratch_.data());
  if (cfg_.input_skip) {
    // dW_skip = d_logits^T x (split-row deterministic reduction); d_x += d_logits W_skip.
    gemm_tn_rows(ctx, cfg_.horizons, f, r, d_logits, cfg_.horizons, 0, x, f, 0, 0.0f,
                 g + l.skip_w, f, 0);
    if (d_x != nullptr) {
      gemm(ctx, false, false, r, f, cfg_.horizons, 1.0f, d_logits, cfg_.horizons, p + l.skip_w,
           f, 1.0f, d_x, f);
    }
  }
  if (cfg_.snapshot_heads) {
    // Not the trunk: lambda does not scale what the snapshot heads send into d_x.
    const HeadDims xd{r, cfg_.horizons, f, cfg_.head_mid};
    heads_backward(ctx, xd, xhead_off_, p + l.xheads, x, xz1_.data(), xz2_.data(), d_logits,
                   nullptr, d_x, g + l.xheads, scratch_.data());
  }
  if (cfg_.ple_bins > 0) {
    // dW_ple = d_logits^T enc; d_x += (d_logits W_ple) enc'(x). The edges get no gradient.
    const int width = f * cfg_.ple_bins;
    gemm_tn_rows(ctx, cfg_.horizons, width, r, d_logits, cfg_.horizons, 0, ple_enc_.data(), width,
                 0, 0.0f, g + l.ple_w, width, 0);
    if (d_x != nullptr) {
      gemm(ctx, false, false, r, width, cfg_.horizons, 1.0f, d_logits, cfg_.horizons, p + l.ple_w,
           width, 0.0f, d_ple_enc_.data(), width);
      ple_backward(ctx, x, p + l.ple_edges, d_ple_enc_.data(), r, f, cfg_.ple_bins, d_x);
    }
  }
  mark("bwd heads");
  const CfcDims cd{batch_, seq_len_, d, d};
  cfc_backward(ctx, cd, cfc_off_, p + l.cfc, h_.data(), dt, stride, d_s_.data(), cfc_, g + l.cfc,
               d_h_.data(), d_c_.data());
  mark("bwd cfc");
  if (!cfg_.causal) {
    attn_pool_backward(ctx, h_.data(), p + l.pool_q, attn_.data(), d_c_.data(), d_h_.data(),
                       g + l.pool_q, batch_, seq_len_, d, scratch_.data());
  }
  mark("bwd attn pool");
  layernorm_backward(ctx, u2_.data(), p + l.norm_b_w, mean_b_.data(), rstd_b_.data(), d_h_.data(),
                     d_u2_.data(), g + l.norm_b_w, g + l.norm_b_b, r, d, scratch_.data());
  // Residual: v1 gets d_u2 directly and again through m2.
  add_inplace(ctx, d_u2_.data(), d_v1_.data(), rd);
  mark("bwd norm b+residual");
  mamba2_backward(ctx, m2_dims_, m2_off_, p + l.m2, v1_.data(), stride, d_u2_.data(), &m2_,
                  g + l.m2, d_v1_.data());
  mark("bwd mamba2 2");
  layernorm_backward(ctx, m1_.out.data(), p + l.norm_a_w, mean_a_.data(), rstd_a_.data(),
                     d_v1_.data(), d_m1_out_.data(), g + l.norm_a_w, g + l.norm_a_b, r, d,
                     scratch_.data());
  mark("bwd norm a");
  mamba2_backward(ctx, m1_dims_, m1_off_, p + l.m1, x_sel_.data(), stride, d_m1_out_.data(), &m1_,
                  g + l.m1, d_x_sel_.data());
  mark("bwd mamba2 1");
  varsel_backward(ctx, x, p + l.varsel_w, gates_.data(), d_x_sel_.data(), d_x, g + l.varsel_w,
                  g + l.varsel_b, r, f, scratch_.data());
  mark("bwd varsel");
}

}  // namespace fxt::gpu
