#include "model/perception.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/random.h"
#include "model/ple.h"

namespace fxt::model {
namespace {

// Decorrelated per-block seeds from one model seed: output block + 1 of splitmix64(seed).
std::uint64_t block_seed(std::uint64_t seed, std::uint64_t block) {
  std::uint64_t state = seed + 0x9E3779B97F4A7C15ull * block;
  return splitmix64(&state);
}

template <typename T>
TensorView<const T> cview(const T* p, Shape s) {
  return {p, s};
}
template <typename T>
TensorView<T> mview(T* p, Shape s) {
  return {p, s};
}
template <typename T>
TensorView<T> mview(std::vector<T>& v, Shape s) {
  return {v.data(), s};
}
template <typename T>
TensorView<const T> cview(const std::vector<T>& v, Shape s) {
  return {v.data(), s};
}

template <typename T>
void zero(std::vector<T>& v) {
  std::fill(v.begin(), v.end(), T(0));
}

}  // namespace

Status PerceptionConfig::validate() const {
  if (features <= 0 || d_model <= 0 || d_state <= 0 || head_dim <= 0 || expand <= 0 ||
      d_conv <= 0 || head_mid <= 0 || horizons <= 0) {
    return UsageError(
        "perception: all sizes must be positive (features {}, d_model {}, d_state {}, head_dim "
        "{}, expand {}, d_conv {}, head_mid {}, horizons {})",
        features, d_model, d_state, head_dim, expand, d_conv, head_mid, horizons);
  }
  if (ple_bins != 0 && (ple_bins < 2 || ple_bins > 64)) {
    return UsageError("perception: ple_bins must be 0 (off) or 2..64, got {}", ple_bins);
  }
  if (Status s = mamba2_validate(m1()); !s.ok()) return s;
  if (Status s = mamba2_validate(m2()); !s.ok()) return s;
  return cfc_validate(cfc());
}

Mamba2Config PerceptionConfig::m1() const {
  Mamba2Config c;
  c.in_dim = features;
  c.d_model = d_model;
  c.expand = expand;
  c.head_dim = head_dim;
  c.d_state = d_state;
  c.d_conv = d_conv;
  return c;
}

Mamba2Config PerceptionConfig::m2() const {
  Mamba2Config c = m1();
  c.in_dim = d_model;
  return c;
}

CfcConfig PerceptionConfig::cfc() const {
  return CfcConfig{d_model, d_model};
}

PerceptionLayout perception_layout(const PerceptionConfig& cfg) {
  PerceptionLayout l{};
  const auto f = static_cast<std::size_t>(cfg.features);
  const auto d = static_cast<std::size_t>(cfg.d_model);
  std::size_t off = 0;
  auto take = [&](std::size_t n) {
    const std::size_t o = off;
    off += n;
    return o;
  };
  l.varsel_w = take(f * f);
  l.varsel_b = take(f);
  l.m1 = take(mamba2_layout(cfg.m1()).total);
  l.norm_a_w = take(d);
  l.norm_a_b = take(d);
  l.m2 = take(mamba2_layout(cfg.m2()).total);
  l.norm_b_w = take(d);
  l.norm_b_b = take(d);
  l.pool_q = take(d);
  l.cfc = take(cfc_layout(cfg.cfc()).total);
  l.head = head_layout(cfg.d_model, cfg.head_mid);
  l.heads = take(static_cast<std::size_t>(cfg.horizons) * static_cast<std::size_t>(l.head.size));
  l.skip_w = take(cfg.input_skip ? static_cast<std::size_t>(cfg.horizons) * f : 0);
  l.xhead = head_layout(cfg.features, cfg.head_mid);
  l.xheads = take(cfg.snapshot_heads ? static_cast<std::size_t>(cfg.horizons) *
                                           static_cast<std::size_t>(l.xhead.size)
                                     : 0);
  const auto bins = static_cast<std::size_t>(cfg.ple_bins);
  l.ple_edges = take(f * (bins > 0 ? bins + 1 : 0));
  l.ple_w = take(static_cast<std::size_t>(cfg.horizons) * f * bins);
  l.total = off;
  return l;
}

std::vector<ModelParamSpec> perception_param_specs(const PerceptionConfig& cfg) {
  const PerceptionLayout l = perception_layout(cfg);
  const int f = cfg.features, d = cfg.d_model, mid = cfg.head_mid;
  std::vector<ModelParamSpec> out;
  auto add = [&](std::string name, std::size_t offset, std::vector<int> shape, bool decay,
                 std::string_view group) {
    std::size_t size = 1;
    for (int s : shape) size *= static_cast<std::size_t>(s);
    ModelParamSpec spec;
    spec.name = std::move(name);
    spec.offset = offset;
    spec.size = size;
    spec.shape = std::move(shape);
    spec.weight_decay = decay;
    spec.group = std::string(group);
    out.push_back(std::move(spec));
  };
  // A block's own specs, shifted to the block's offset.
  auto add_block = [&](const std::vector<ParamSpec>& specs, std::size_t base,
                       std::string_view group) {
    for (const ParamSpec& s : specs) add(s.name, base + s.offset, s.shape, s.weight_decay, group);
  };
  add("varsel.weight", l.varsel_w, {f, f}, true, kGroupMamba);
  add("varsel.bias", l.varsel_b, {f}, false, kGroupMamba);
  add_block(mamba2_param_specs(cfg.m1(), "m1"), l.m1, kGroupMamba);
  add("norm_a.weight", l.norm_a_w, {d}, false, kGroupMamba);
  add("norm_a.bias", l.norm_a_b, {d}, false, kGroupMamba);
  add_block(mamba2_param_specs(cfg.m2(), "m2"), l.m2, kGroupMamba);
  add("norm_b.weight", l.norm_b_w, {d}, false, kGroupMamba);
  add("norm_b.bias", l.norm_b_b, {d}, false, kGroupMamba);
  add("pool.q", l.pool_q, {d}, false, kGroupCfc);
  add_block(cfc_param_specs(cfg.cfc(), "cfc"), l.cfc, kGroupCfc);
  // Heads: PyTorch nn.Linear layouts; the three 1-output projections are [1, n] matrices.
  auto add_heads = [&](std::size_t heads, const HeadLayout& hl, std::string_view prefix) {
    const int in = static_cast<int>(hl.d);
    for (int j = 0; j < cfg.horizons; ++j) {
      const std::size_t base = heads + static_cast<std::size_t>(j * hl.size);
      const std::string p = fmt::format("{}{}.", prefix, j);
      auto at = [&](int64_t o) { return base + static_cast<std::size_t>(o); };
      add(p + "w1", at(hl.w1), {mid, in}, true, kGroupHeads);
      add(p + "b1", at(hl.b1), {mid}, false, kGroupHeads);
      add(p + "w2", at(hl.w2), {mid, mid}, true, kGroupHeads);
      add(p + "b2", at(hl.b2), {mid}, false, kGroupHeads);
      add(p + "w_g", at(hl.wg), {1, mid}, true, kGroupHeads);
      add(p + "b_g", at(hl.bg), {1}, false, kGroupHeads);
      add(p + "w_m", at(hl.wm), {1, mid}, true, kGroupHeads);
      add(p + "b_m", at(hl.bm), {1}, false, kGroupHeads);
      add(p + "w_s", at(hl.ws), {1, in}, true, kGroupHeads);
      add(p + "b_s", at(hl.bs), {1}, false, kGroupHeads);
    }
  };
  add_heads(l.heads, l.head, "head");
  // The skip path is the logistic's coefficients: its L2 penalty was chosen when it was fit,
  // so no decay pulls it further.
  if (cfg.input_skip) add("skip.weight", l.skip_w, {cfg.horizons, f}, false, kGroupHeads);
  if (cfg.snapshot_heads) add_heads(l.xheads, l.xhead, "xhead");
  if (cfg.ple_bins > 0) {
    // The edges are constants (zero gradient, so AdamW leaves them as set); the path's weights
    // are trained from zero and decay as the heads' do.
    add("ple.edges", l.ple_edges, {f, cfg.ple_bins + 1}, false, kGroupHeads);
    add("ple.weight", l.ple_w, {cfg.horizons, f * cfg.ple_bins}, true, kGroupHeads);
  }
  return out;
}

template <typename T>
void perception_init(const PerceptionConfig& cfg, T* params, std::uint64_t seed) {
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t f = cfg.features, d = cfg.d_model;
  varsel_init<T>(mview(params + l.varsel_w, {f, f}), mview(params + l.varsel_b, {f}),
                 block_seed(seed, 0));
  mamba2_init(cfg.m1(), params + l.m1, block_seed(seed, 1));
  mamba2_init(cfg.m2(), params + l.m2, block_seed(seed, 2));
  for (std::size_t i = 0; i < static_cast<std::size_t>(d); ++i) {
    params[l.norm_a_w + i] = T(1);
    params[l.norm_a_b + i] = T(0);
    params[l.norm_b_w + i] = T(1);
    params[l.norm_b_b + i] = T(0);
    params[l.pool_q + i] = T(0);
  }
  cfc_init(cfg.cfc(), params + l.cfc, block_seed(seed, 3));
  head_init<T>(l.head, mview(params + l.heads, {cfg.horizons, l.head.size}), block_seed(seed, 4));
  if (cfg.input_skip) {
    for (int j = 0; j < cfg.horizons; ++j) {
      head_silence(l.head, params + l.heads + static_cast<std::size_t>(j * l.head.size));
    }
    std::fill(params + l.skip_w, params + l.skip_w + static_cast<std::size_t>(cfg.horizons * f),
              T(0));
  }
  if (cfg.snapshot_heads) {
    const HeadLayout& xl = l.xhead;
    head_init<T>(xl, mview(params + l.xheads, {cfg.horizons, xl.size}), block_seed(seed, 5));
    for (int j = 0; j < cfg.horizons; ++j) {
      head_silence(xl, params + l.xheads + static_cast<std::size_t>(j * xl.size));
    }
  }
  if (cfg.ple_bins > 0) {
    ple_default_edges(cfg.features, cfg.ple_bins, params + l.ple_edges);
    std::fill(params + l.ple_w, params + l.total, T(0));
  }
}

template <typename T>
void PerceptionWorkspace<T>::resize(const PerceptionConfig& cfg, int batch_size, int seq_len_k) {
  if (cfg == sized_for && batch == batch_size && seq_len == seq_len_k && !logits.empty()) return;
  sized_for = cfg;
  batch = batch_size;
  seq_len = seq_len_k;
  const auto r = static_cast<std::size_t>(batch_size) * static_cast<std::size_t>(seq_len_k);
  const auto f = static_cast<std::size_t>(cfg.features);
  const auto d = static_cast<std::size_t>(cfg.d_model);
  const auto nh = static_cast<std::size_t>(cfg.horizons);
  const auto b = static_cast<std::size_t>(batch_size);
  gates.assign(r * f, T(0));
  x_sel.assign(r * f, T(0));
  m1.resize(cfg.m1(), batch_size, seq_len_k);
  v1.assign(r * d, T(0));
  mean_a.assign(r, T(0));
  rstd_a.assign(r, T(0));
  m2.resize(cfg.m2(), batch_size, seq_len_k);
  u2.assign(r * d, T(0));
  h.assign(r * d, T(0));
  mean_b.assign(r, T(0));
  rstd_b.assign(r, T(0));
  c.assign(b * d, T(0));
  attn.assign(r, T(0));
  cfc.resize(cfg.cfc(), batch_size, seq_len_k);
  logits.assign(r * nh, T(0));
  s_last.assign(b * d, T(0));
  z1.assign(nh * r * static_cast<std::size_t>(cfg.head_mid), T(0));
  z2.assign(z1.size(), T(0));
  d_s.assign(r * d, T(0));
  d_h.assign(r * d, T(0));
  d_c.assign(b * d, T(0));
  d_u2.assign(r * d, T(0));
  d_v1.assign(r * d, T(0));
  d_m1_out.assign(r * d, T(0));
  d_x_sel.assign(r * f, T(0));
  ones.assign(nh, T(1));
  const std::size_t xr = cfg.snapshot_heads ? r : 0;
  xz1.assign(nh * xr * static_cast<std::size_t>(cfg.head_mid), T(0));
  xz2.assign(xz1.size(), T(0));
  xlogits.assign(xr * nh, T(0));
  const bool x_path = cfg.input_skip || cfg.snapshot_heads || cfg.ple_bins > 0;
  x_last.assign(x_path ? b * f : 0, T(0));
  ple_enc.assign(r * f * static_cast<std::size_t>(cfg.ple_bins), T(0));
  d_ple_enc.assign(ple_enc.size(), T(0));
}

namespace {

// Everything up to the CfC output ws->cfc.out [B, K, D].
template <typename T>
void trunk_forward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                   T stride, const T* dt, PerceptionWorkspace<T>* ws) {
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t b = ws->batch, k = ws->seq_len, r = b * k;
  const int64_t f = cfg.features, d = cfg.d_model;
  const T* p = params;

  varsel_forward<T>(ctx, cview(x, {r, f}), cview(p + l.varsel_w, {f, f}),
                    cview(p + l.varsel_b, {f}), mview(ws->x_sel, {r, f}), mview(ws->gates, {r, f}));
  mamba2_forward(cfg.m1(), ctx, p + l.m1, ws->x_sel.data(), stride, &ws->m1);
  layernorm_forward<T>(ctx, cview(ws->m1.out, {r, d}), cview(p + l.norm_a_w, {d}),
                       cview(p + l.norm_a_b, {d}), mview(ws->v1, {r, d}), mview(ws->mean_a, {r}),
                       mview(ws->rstd_a, {r}));
  mamba2_forward(cfg.m2(), ctx, p + l.m2, ws->v1.data(), stride, &ws->m2);
  add_forward<T>(cview(ws->v1, {r, d}), cview(ws->m2.out, {r, d}), mview(ws->u2, {r, d}));
  layernorm_forward<T>(ctx, cview(ws->u2, {r, d}), cview(p + l.norm_b_w, {d}),
                       cview(p + l.norm_b_b, {d}), mview(ws->h, {r, d}), mview(ws->mean_b, {r}),
                       mview(ws->rstd_b, {r}));
  if (cfg.causal) {
    zero(ws->c);  // s_{-1} = 0: no position sees a later one
  } else {
    attn_pool_forward<T>(ctx, cview(ws->h, {b, k, d}), cview(p + l.pool_q, {d}),
                         mview(ws->c, {b, d}), mview(ws->attn, {b, k}));
  }
  cfc_forward(cfg.cfc(), ctx, p + l.cfc, ws->h.data(), ws->c.data(), dt, stride, &ws->cfc);
}

// A linear path to the logits (the input skip on x, the PLE path on its encoding):
// logits[r, j] += sum_f x[r, f] W[j, f] over rows r < rows. Threaded over the fixed row chunks;
// each row's sum runs in the same order whatever the thread count.
template <typename T>
void add_linear_logits(CpuContext& ctx, const T* x, const T* w, int64_t rows, int64_t f, int64_t nh,
                       T* logits) {
  const int nc = num_row_chunks(rows);
  ctx.parallel_for(nc, [&](int c) {
    for (int64_t r = chunk_begin(rows, nc, c); r < chunk_begin(rows, nc, c + 1); ++r) {
      const T* xr = x + r * f;
      for (int64_t j = 0; j < nh; ++j) {
        const T* wj = w + j * f;
        T acc = T(0);
        for (int64_t i = 0; i < f; ++i) acc += xr[i] * wj[i];
        logits[r * nh + j] += acc;
      }
    }
  });
}

// dW[j, f] += sum_r dlogits[r, j] x[r, f] (rows in order: deterministic); d_x += dlogits W.
// Threaded over fixed slices of the columns f: every element still sums its rows (dW) and its
// horizons (d_x) in the same order as on one thread.
template <typename T>
void linear_logits_backward(CpuContext& ctx, const T* x, const T* w, const T* d_logits,
                            int64_t rows, int64_t f, int64_t nh, T* dw, T* d_x) {
  constexpr int64_t kColumns = 32;  // columns per slice
  const int slices = static_cast<int>((f + kColumns - 1) / kColumns);
  ctx.parallel_for(slices, [&](int s) {
    const int64_t i0 = s * kColumns, i1 = std::min(f, i0 + kColumns);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * f;
      for (int64_t j = 0; j < nh; ++j) {
        const T dl = d_logits[r * nh + j];
        T* dwj = dw + j * f;
        for (int64_t i = i0; i < i1; ++i) dwj[i] += dl * xr[i];
        if (d_x != nullptr) {
          const T* wj = w + j * f;
          for (int64_t i = i0; i < i1; ++i) d_x[r * f + i] += dl * wj[i];
        }
      }
    }
  });
}

// The snapshot heads on rows x [rows, F]: logits [rows, H] += their logits (activations saved
// in ws->xz1, ws->xz2 as a prefix of their storage).
template <typename T>
void snapshot_heads_forward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params,
                            const T* x, int64_t rows, PerceptionWorkspace<T>* ws, T* logits) {
  const PerceptionLayout l = perception_layout(cfg);
  const HeadLayout& xl = l.xhead;
  const int64_t nh = cfg.horizons, mid = xl.mid;
  head_forward<T>(ctx, xl, cview(x, {rows, xl.d}), cview(params + l.xheads, {nh, xl.size}),
                  mview(ws->xlogits.data(), {rows, nh}), mview(ws->xz1.data(), {nh, rows, mid}),
                  mview(ws->xz2.data(), {nh, rows, mid}));
  for (int64_t i = 0; i < rows * nh; ++i) logits[i] += ws->xlogits[i];
}

// The PLE path on rows x [rows, F]: ws->ple_enc [rows, F K] = enc(x), ws->logits += enc W_ple^T.
// Both per row, threaded over the fixed row chunks.
template <typename T>
void ple_path_forward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                      int64_t rows, PerceptionWorkspace<T>* ws) {
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t width = static_cast<int64_t>(cfg.features) * cfg.ple_bins;
  const int nc = num_row_chunks(rows);
  ctx.parallel_for(nc, [&](int c) {
    const int64_t r0 = chunk_begin(rows, nc, c), r1 = chunk_begin(rows, nc, c + 1);
    ple_encode(x + r0 * cfg.features, params + l.ple_edges, r1 - r0, cfg.features, cfg.ple_bins,
               ws->ple_enc.data() + r0 * width);
  });
  add_linear_logits(ctx, ws->ple_enc.data(), params + l.ple_w, rows, width, cfg.horizons,
                    ws->logits.data());
}

}  // namespace

template <typename T>
void perception_forward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                        T stride, const T* dt, PerceptionWorkspace<T>* ws) {
  trunk_forward(cfg, ctx, params, x, stride, dt, ws);
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t r = static_cast<int64_t>(ws->batch) * ws->seq_len;
  const int64_t d = cfg.d_model, nh = cfg.horizons, mid = l.head.mid;
  head_forward<T>(ctx, l.head, cview(ws->cfc.out, {r, d}),
                  cview(params + l.heads, {nh, l.head.size}), mview(ws->logits, {r, nh}),
                  mview(ws->z1, {nh, r, mid}), mview(ws->z2, {nh, r, mid}));
  if (cfg.input_skip) {
    add_linear_logits(ctx, x, params + l.skip_w, r, cfg.features, nh, ws->logits.data());
  }
  if (cfg.snapshot_heads) snapshot_heads_forward(cfg, ctx, params, x, r, ws, ws->logits.data());
  if (cfg.ple_bins > 0) ple_path_forward(cfg, ctx, params, x, r, ws);
}

template <typename T>
void perception_forward_last(const PerceptionConfig& cfg, CpuContext& ctx, const T* params,
                             const T* x, T stride, const T* dt, PerceptionWorkspace<T>* ws) {
  trunk_forward(cfg, ctx, params, x, stride, dt, ws);
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t b = ws->batch, k = ws->seq_len;
  const int64_t d = cfg.d_model, nh = cfg.horizons, mid = l.head.mid;
  for (int64_t i = 0; i < b; ++i) {
    const T* last = ws->cfc.out.data() + ((i * k) + (k - 1)) * d;
    std::copy(last, last + d, ws->s_last.data() + i * d);
  }
  // z1, z2 hold [H, B, mid]: a prefix of their [H, B*K, mid] storage.
  head_forward<T>(ctx, l.head, cview(ws->s_last, {b, d}),
                  cview(params + l.heads, {nh, l.head.size}), mview(ws->logits.data(), {b, nh}),
                  mview(ws->z1.data(), {nh, b, mid}), mview(ws->z2.data(), {nh, b, mid}));
  if (cfg.input_skip || cfg.snapshot_heads || cfg.ple_bins > 0) {
    // The per-position paths read each sequence's last features: gathered once.
    const int64_t f = cfg.features;
    for (int64_t i = 0; i < b; ++i) {
      const T* last = x + ((i * k) + (k - 1)) * f;
      std::copy(last, last + f, ws->x_last.data() + i * f);
    }
    if (cfg.input_skip) {
      add_linear_logits(ctx, ws->x_last.data(), params + l.skip_w, b, f, nh, ws->logits.data());
    }
    if (cfg.snapshot_heads) {
      snapshot_heads_forward(cfg, ctx, params, ws->x_last.data(), b, ws, ws->logits.data());
    }
    if (cfg.ple_bins > 0) ple_path_forward(cfg, ctx, params, ws->x_last.data(), b, ws);
  }
}

// Reverse order of the forward; every op accumulates, so the scratch gradients are zeroed first.
template <typename T>
void perception_backward(const PerceptionConfig& cfg, CpuContext& ctx, const T* params, const T* x,
                         T stride, const T* dt, const T* d_logits, const T* lambda,
                         PerceptionWorkspace<T>* ws, T* grads, T* d_x) {
  const PerceptionLayout l = perception_layout(cfg);
  const int64_t b = ws->batch, k = ws->seq_len, r = b * k;
  const int64_t f = cfg.features, d = cfg.d_model, nh = cfg.horizons, mid = l.head.mid;
  const T* p = params;
  T* g = grads;

  std::fill(grads, grads + l.total, T(0));
  if (d_x != nullptr) std::fill(d_x, d_x + r * f, T(0));
  zero(ws->d_s);
  zero(ws->d_h);
  zero(ws->d_c);
  zero(ws->d_u2);
  zero(ws->d_v1);
  zero(ws->d_m1_out);
  zero(ws->d_x_sel);

  // Heads: own parameter gradients unscaled, lambda_j * dL/ds into the trunk.
  head_backward<T>(ctx, l.head, cview(ws->cfc.out, {r, d}), cview(p + l.heads, {nh, l.head.size}),
                   cview(ws->z1, {nh, r, mid}), cview(ws->z2, {nh, r, mid}),
                   cview(d_logits, {r, nh}),
                   cview(lambda != nullptr ? lambda : ws->ones.data(), {nh}),
                   mview(ws->d_s, {r, d}), mview(g + l.heads, {nh, l.head.size}));
  if (cfg.input_skip) {
    linear_logits_backward(ctx, x, p + l.skip_w, d_logits, r, f, nh, g + l.skip_w, d_x);
  }
  if (cfg.snapshot_heads) {
    // Not the trunk: the snapshot heads send dL/dx unscaled (lambda only scales the trunk).
    const HeadLayout& xl = l.xhead;
    head_backward<T>(
        ctx, xl, cview(x, {r, f}), cview(p + l.xheads, {nh, xl.size}), cview(ws->xz1, {nh, r, mid}),
        cview(ws->xz2, {nh, r, mid}), cview(d_logits, {r, nh}), cview(ws->ones, {nh}),
        d_x != nullptr ? mview(d_x, {r, f}) : TensorView<T>(), mview(g + l.xheads, {nh, xl.size}));
  }
  if (cfg.ple_bins > 0) {
    // dW_ple = d_logits^T enc; d_x += (d_logits W_ple) enc'(x). The edges get no gradient.
    const int64_t width = f * cfg.ple_bins;
    T* d_enc = nullptr;
    if (d_x != nullptr) {
      zero(ws->d_ple_enc);
      d_enc = ws->d_ple_enc.data();
    }
    linear_logits_backward(ctx, ws->ple_enc.data(), p + l.ple_w, d_logits, r, width, nh,
                           g + l.ple_w, d_enc);
    if (d_x != nullptr) ple_backward(x, p + l.ple_edges, d_enc, r, cfg.features, cfg.ple_bins, d_x);
  }
  // CfC: dL/dh from the inputs W_in h_k, dL/dc from s_{-1}.
  cfc_backward(cfg.cfc(), ctx, p + l.cfc, ws->h.data(), dt, stride, ws->d_s.data(), &ws->cfc,
               g + l.cfc, ws->d_h.data(), ws->d_c.data());
  // Pool: h's second consumer (none in the causal trunk, whose s_{-1} is the constant 0).
  if (!cfg.causal) {
    attn_pool_backward<T>(ctx, cview(ws->h, {b, k, d}), cview(p + l.pool_q, {d}),
                          cview(ws->attn, {b, k}), cview(ws->d_c, {b, d}),
                          mview(ws->d_h, {b, k, d}), mview(g + l.pool_q, {d}));
  }
  layernorm_backward<T>(ctx, cview(ws->u2, {r, d}), cview(p + l.norm_b_w, {d}),
                        cview(ws->mean_b, {r}), cview(ws->rstd_b, {r}), cview(ws->d_h, {r, d}),
                        mview(ws->d_u2, {r, d}), mview(g + l.norm_b_w, {d}),
                        mview(g + l.norm_b_b, {d}));
  // Residual: v1 gets d_u2 directly and again through m2.
  add_backward<T>(cview(ws->d_u2, {r, d}), mview(ws->d_v1, {r, d}), TensorView<T>());
  mamba2_backward(cfg.m2(), ctx, p + l.m2, ws->v1.data(), stride, ws->d_u2.data(), &ws->m2,
                  g + l.m2, ws->d_v1.data());
  layernorm_backward<T>(ctx, cview(ws->m1.out, {r, d}), cview(p + l.norm_a_w, {d}),
                        cview(ws->mean_a, {r}), cview(ws->rstd_a, {r}), cview(ws->d_v1, {r, d}),
                        mview(ws->d_m1_out, {r, d}), mview(g + l.norm_a_w, {d}),
                        mview(g + l.norm_a_b, {d}));
  mamba2_backward(cfg.m1(), ctx, p + l.m1, ws->x_sel.data(), stride, ws->d_m1_out.data(), &ws->m1,
                  g + l.m1, ws->d_x_sel.data());
  varsel_backward<T>(ctx, cview(x, {r, f}), cview(p + l.varsel_w, {f, f}), cview(ws->gates, {r, f}),
                     cview(ws->d_x_sel, {r, f}),
                     d_x != nullptr ? mview(d_x, {r, f}) : TensorView<T>(),
                     mview(g + l.varsel_w, {f, f}), mview(g + l.varsel_b, {f}));
}

#define FXT_INSTANTIATE_PERCEPTION(T)                                                              \
  template void perception_init<T>(const PerceptionConfig&, T*, std::uint64_t);                    \
  template struct PerceptionWorkspace<T>;                                                          \
  template void perception_forward<T>(const PerceptionConfig&, CpuContext&, const T*, const T*, T, \
                                      const T*, PerceptionWorkspace<T>*);                          \
  template void perception_forward_last<T>(const PerceptionConfig&, CpuContext&, const T*,         \
                                           const T*, T, const T*, PerceptionWorkspace<T>*);        \
  template void perception_backward<T>(const PerceptionConfig&, CpuContext&, const T*, const T*,   \
                                       T, const T*, const T*, const T*, PerceptionWorkspace<T>*,   \
                                       T*, T*);

FXT_INSTANTIATE_PERCEPTION(float)
FXT_INSTANTIATE_PERCEPTION(double)
#undef FXT_INSTANTIATE_PERCEPTION

}  // namespace fxt::model
