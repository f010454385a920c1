// CfC recurrence, CPU reference: forward and backward side by side.
#include "model/cfc.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/random.h"
#include "model/eigen_maps.h"
#include "model/ops.h"

namespace fxt::model {

Status cfc_validate(const CfcConfig& cfg) {
  if (cfg.in_dim <= 0 || cfg.hidden <= 0) {
    return UsageError("cfc: sizes must be positive (in_dim {}, hidden {})", cfg.in_dim, cfg.hidden);
  }
  return Status::Ok();
}

CfcLayout cfc_layout(const CfcConfig& cfg) {
  const auto d = static_cast<std::size_t>(cfg.hidden);
  CfcLayout l{};
  std::size_t at = 0;
  l.w_in = at, at += d * cfg.in_dim;
  l.w_rec = at, at += d * d;
  l.bias = at, at += d;
  l.tau_raw = at, at += d;
  l.total = at;
  return l;
}

std::vector<ParamSpec> cfc_param_specs(const CfcConfig& cfg, const std::string& prefix) {
  const CfcLayout l = cfc_layout(cfg);
  const auto d = static_cast<std::size_t>(cfg.hidden);
  return {
      {prefix + ".w_in", l.w_in, d * cfg.in_dim, {cfg.hidden, cfg.in_dim}, true},
      {prefix + ".w_rec", l.w_rec, d * d, {cfg.hidden, cfg.hidden}, true},
      {prefix + ".bias", l.bias, d, {cfg.hidden}, false},
      {prefix + ".tau_raw", l.tau_raw, d, {cfg.hidden}, false},
  };
}

template <typename T>
void cfc_init(const CfcConfig& cfg, T* params, std::uint64_t seed) {
  const CfcLayout l = cfc_layout(cfg);
  Rng rng(seed);
  const auto d = static_cast<std::size_t>(cfg.hidden);
  const auto n_in = static_cast<std::size_t>(cfg.in_dim);
  // Xavier-uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
  const double a_in = std::sqrt(6.0 / double(cfg.in_dim + cfg.hidden));
  for (std::size_t i = 0; i < d * n_in; ++i) params[l.w_in + i] = T(rng.uniform_real(-a_in, a_in));
  const double a_rec = std::sqrt(6.0 / double(2 * cfg.hidden));
  for (std::size_t i = 0; i < d * d; ++i) params[l.w_rec + i] = T(rng.uniform_real(-a_rec, a_rec));
  // softplus(tau_raw) + 0.1 = 1  <=>  tau_raw = log(exp(0.9) - 1).
  const double tau_raw = std::log(std::expm1(1.0 - kCfcTauMin));
  for (std::size_t i = 0; i < d; ++i) {
    params[l.bias + i] = T(0);
    params[l.tau_raw + i] = T(tau_raw);
  }
}

template <typename T>
void CfcWorkspace<T>::resize(const CfcConfig& cfg, int batch_size, int seq_len_k) {
  batch = batch_size;
  seq_len = seq_len_k;
  const auto d = static_cast<std::size_t>(cfg.hidden);
  const auto n = static_cast<std::size_t>(batch_size) * seq_len_k * d;
  tau.assign(d, T(0));
  pre.assign(n, T(0));
  act.assign(n, T(0));
  decay.assign(n, T(0));
  s_prev.assign(n, T(0));
  out.assign(n, T(0));
  decay_c.assign(d, T(0));
  d_pre.assign(n, T(0));
  d_carry.assign(static_cast<std::size_t>(batch_size) * d, T(0));
  chunks = num_seq_chunks(batch_size, kCfcSeqsPerChunk);
  d_tau.assign(static_cast<std::size_t>(chunks) * d, T(0));
  grad_partial.assign(static_cast<std::size_t>(chunks) * cfc_layout(cfg).tau_raw, T(0));
}

template <typename T>
void cfc_forward(const CfcConfig& cfg, CpuContext& ctx, const T* params, const T* h, const T* c,
                 const T* dt, T dt_const, CfcWorkspace<T>* ws) {
  assert(ws->tau.size() == static_cast<std::size_t>(cfg.hidden) &&
         ws->pre.size() == static_cast<std::size_t>(ws->batch) * ws->seq_len * cfg.hidden &&
         ws->chunks == num_seq_chunks(ws->batch, kCfcSeqsPerChunk) &&
         "workspace not resized for this config");
  const CfcLayout l = cfc_layout(cfg);
  const int bsz = ws->batch, seq = ws->seq_len, d = cfg.hidden, nc = ws->chunks;
  const Eigen::Index row_stride = static_cast<Eigen::Index>(seq) * d;

  for (int i = 0; i < d; ++i) {
    ws->tau[i] = softplus(params[l.tau_raw + i]) + T(kCfcTauMin);
    ws->decay_c[i] = std::exp(-dt_const / ws->tau[i]);
  }

  ctx.parallel_for(nc, [&](int chunk) {
    const int b0 = static_cast<int>(chunk_begin(bsz, nc, chunk));
    const int b1 = static_cast<int>(chunk_begin(bsz, nc, chunk + 1));
    if (b1 <= b0) return;
    const int nb = b1 - b0, rows = nb * seq;
    const std::size_t c0 = static_cast<std::size_t>(b0) * seq;  // first row of the chunk

    // W_in h_k + b for every (b, k) of the chunk at once.
    MapMat<T> pre_all(ws->pre.data() + c0 * d, rows, d);
    pre_all.noalias() = ConstMapMat<T>(h + c0 * cfg.in_dim, rows, cfg.in_dim) *
                        ConstMapMat<T>(params + l.w_in, d, cfg.in_dim).transpose();
    pre_all.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(params + l.bias, d);

    ConstMapMat<T> w_rec(params + l.w_rec, d, d);
    for (int k = 0; k < seq; ++k) {
      const std::size_t at = (c0 + k) * d;  // (b0, k) in [B, K, D]
      for (int b = b0; b < b1; ++b) {
        const T* src = k == 0 ? c + static_cast<std::size_t>(b) * d
                              : ws->out.data() + (static_cast<std::size_t>(b) * seq + k - 1) * d;
        std::copy(src, src + d, ws->s_prev.data() + (static_cast<std::size_t>(b) * seq + k) * d);
      }
      // pre_k [nb, D] += s_{k-1} [nb, D] W_rec^T.
      MapStrided<T>(ws->pre.data() + at, nb, d, Eigen::OuterStride<>(row_stride)).noalias() +=
          ConstMapStrided<T>(ws->s_prev.data() + at, nb, d, Eigen::OuterStride<>(row_stride)) *
          w_rec.transpose();
      for (int b = b0; b < b1; ++b) {
        const std::size_t r = static_cast<std::size_t>(b) * seq + k;
        const T* pre = ws->pre.data() + r * d;
        const T* sp = ws->s_prev.data() + r * d;
        T* dec = ws->decay.data() + r * d;
        T* act = ws->act.data() + r * d;
        T* out = ws->out.data() + r * d;
        if (dt != nullptr) {
          const T dt_k = dt[r];
          for (int i = 0; i < d; ++i) dec[i] = std::exp(-dt_k / ws->tau[i]);
        } else {
          std::copy(ws->decay_c.begin(), ws->decay_c.end(), dec);
        }
        tanh_n(pre, act, d);
        for (int i = 0; i < d; ++i) out[i] = dec[i] * sp[i] + (T(1) - dec[i]) * act[i];
      }
    }
  });
}

// Backward: with g_k = d_s_k + (carry from k+1) the total dL/ds_k,
//   d pre_k = g (1 - e) (1 - tanh^2);   d e = g (s_{k-1} - tanh);   de/dtau = e dt / tau^2
//   dL/ds_{k-1} = g e + W_rec^T d pre_k;   dW_rec += d pre_k s_{k-1}^T;  db += d pre_k
// and after the loop the input projection and tau_raw (dtau/dtau_raw = sigmoid(tau_raw)).
template <typename T>
void cfc_backward(const CfcConfig& cfg, CpuContext& ctx, const T* params, const T* h, const T* dt,
                  T dt_const, const T* d_s, CfcWorkspace<T>* ws, T* grads, T* d_h, T* d_c) {
  assert(ws->tau.size() == static_cast<std::size_t>(cfg.hidden) &&
         ws->pre.size() == static_cast<std::size_t>(ws->batch) * ws->seq_len * cfg.hidden &&
         ws->chunks == num_seq_chunks(ws->batch, kCfcSeqsPerChunk) &&
         "workspace not resized for this config");
  const CfcLayout l = cfc_layout(cfg);
  const int bsz = ws->batch, seq = ws->seq_len, d = cfg.hidden, nc = ws->chunks;
  const Eigen::Index row_stride = static_cast<Eigen::Index>(seq) * d;

  ctx.parallel_for(nc, [&](int chunk) {
    const int b0 = static_cast<int>(chunk_begin(bsz, nc, chunk));
    const int b1 = static_cast<int>(chunk_begin(bsz, nc, chunk + 1));
    T* d_tau = ws->d_tau.data() + static_cast<std::size_t>(chunk) * d;
    std::fill(d_tau, d_tau + d, T(0));
    T* part = ws->grad_partial.data() + static_cast<std::size_t>(chunk) * l.tau_raw;
    if (b1 <= b0) {  // never with chunks <= B; keeps the partial sums well defined
      std::fill(part, part + l.tau_raw, T(0));
      return;
    }
    const int nb = b1 - b0, crows = nb * seq;
    const std::size_t c0 = static_cast<std::size_t>(b0) * seq;
    T* carry_p = ws->d_carry.data() + static_cast<std::size_t>(b0) * d;
    std::fill(carry_p, carry_p + static_cast<std::size_t>(nb) * d, T(0));
    MapMat<T> carry(carry_p, nb, d);
    ConstMapMat<T> w_rec(params + l.w_rec, d, d);
    for (int k = seq - 1; k >= 0; --k) {
      for (int b = b0; b < b1; ++b) {
        const std::size_t r = static_cast<std::size_t>(b) * seq + k;
        const T dt_k = dt != nullptr ? dt[r] : dt_const;
        T* cb = ws->d_carry.data() + static_cast<std::size_t>(b) * d;
        const T* ds = d_s + r * d;
        const T* dec = ws->decay.data() + r * d;
        const T* act = ws->act.data() + r * d;
        const T* sp = ws->s_prev.data() + r * d;
        T* dp = ws->d_pre.data() + r * d;
        for (int i = 0; i < d; ++i) {
          const T g = ds[i] + cb[i];
          const T e = dec[i], t = act[i], tau = ws->tau[i];
          dp[i] = g * (T(1) - e) * (T(1) - t * t);
          d_tau[i] += g * (sp[i] - t) * e * dt_k / (tau * tau);
          cb[i] = g * e;
        }
      }
      carry.noalias() += ConstMapStrided<T>(ws->d_pre.data() + (c0 + k) * d, nb, d,
                                            Eigen::OuterStride<>(row_stride)) *
                         w_rec;
    }
    if (d_c != nullptr) MapMat<T>(d_c + static_cast<std::size_t>(b0) * d, nb, d) += carry;
    // Chunk partials of W_rec, W_in and bias (layout offsets), and dL/dh of the chunk.
    ConstMapMat<T> dp(ws->d_pre.data() + c0 * d, crows, d);
    MapMat<T>(part + l.w_rec, d, d).noalias() =
        dp.transpose() * ConstMapMat<T>(ws->s_prev.data() + c0 * d, crows, d);
    MapMat<T>(part + l.w_in, d, cfg.in_dim).noalias() =
        dp.transpose() * ConstMapMat<T>(h + c0 * cfg.in_dim, crows, cfg.in_dim);
    T* gb = part + l.bias;
    std::fill(gb, gb + d, T(0));
    for (int r = 0; r < crows; ++r) {
      const T* row = ws->d_pre.data() + (c0 + r) * d;
      for (int i = 0; i < d; ++i) gb[i] += row[i];
    }
    if (d_h != nullptr) {
      MapMat<T>(d_h + c0 * cfg.in_dim, crows, cfg.in_dim).noalias() +=
          dp * ConstMapMat<T>(params + l.w_in, d, cfg.in_dim);
    }
  });

  // Chunk partials summed in chunk order (threaded over fixed element slices).
  const std::size_t np = l.tau_raw;
  const int slices = static_cast<int>(std::min<std::size_t>((np + 8191) / 8192, 64));
  ctx.parallel_for(slices, [&](int s) {
    const std::size_t i0 = np * s / slices, i1 = np * (s + 1) / slices;
    for (int chunk = 0; chunk < nc; ++chunk) {
      const T* p = ws->grad_partial.data() + static_cast<std::size_t>(chunk) * np;
      for (std::size_t i = i0; i < i1; ++i) grads[i] += p[i];
    }
  });

  // tau_raw: per-chunk partials summed in chunk order.
  for (int i = 0; i < d; ++i) {
    T acc = T(0);
    for (int chunk = 0; chunk < nc; ++chunk)
      acc += ws->d_tau[static_cast<std::size_t>(chunk) * d + i];
    grads[l.tau_raw + i] += acc * sigmoid(params[l.tau_raw + i]);
  }
}

#define FXT_CFC_INSTANTIATE(T)                                                                  \
  template void cfc_init<T>(const CfcConfig&, T*, std::uint64_t);                               \
  template struct CfcWorkspace<T>;                                                              \
  template void cfc_forward<T>(const CfcConfig&, CpuContext&, const T*, const T*, const T*,     \
                               const T*, T, CfcWorkspace<T>*);                                  \
  template void cfc_backward<T>(const CfcConfig&, CpuContext&, const T*, const T*, const T*, T, \
                                const T*, CfcWorkspace<T>*, T*, T*, T*);
FXT_CFC_INSTANTIATE(float)
FXT_CFC_INSTANTIATE(double)
#undef FXT_CFC_INSTANTIATE

}  // namespace fxt::model
