// CPU reference implementation of model/ops.h. Forward and backward of each op side by side.
#include "model/ops.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "core/random.h"
#include "model/eigen_maps.h"

#include <unsupported/Eigen/SpecialFunctions>

namespace fxt::model {
namespace {

// Rows of a view whose last dimension is `last` (all leading dims flattened).
template <typename V>
int64_t rows_of(const V& v, int64_t last) {
  assert(v.rank() >= 1 && v.dim(v.rank() - 1) == last);
  return v.numel() / last;
}

// fn(r0, r1) over the fixed row chunks of R rows, in parallel.
template <typename Fn>
void for_row_chunks(CpuContext& ctx, int64_t rows, Fn&& fn) {
  const int nc = num_row_chunks(rows);
  ctx.parallel_for(nc, [&](int c) {
    const int64_t r0 = chunk_begin(rows, nc, c);
    const int64_t r1 = chunk_begin(rows, nc, c + 1);
    if (r1 > r0) fn(r0, r1);
  });
}

// y[R, n] = x[R, k] w[n, k]^T (+ b[n]).
template <typename T>
void gemm_xwt(CpuContext& ctx, const T* x, const T* w, const T* b, T* y, int64_t rows, int64_t k,
              int64_t n) {
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    ConstMapMat<T> X(x + r0 * k, r1 - r0, k);
    ConstMapMat<T> W(w, n, k);
    MapMat<T> Y(y + r0 * n, r1 - r0, n);
    Y.noalias() = X * W.transpose();
    if (b != nullptr) Y.rowwise() += ConstRowVec<T>(b, n);
  });
}

// dx[R, k] (+)= dy[R, n] w[n, k].
template <typename T>
void gemm_dyw(CpuContext& ctx, const T* dy, const T* w, T* dx, int64_t rows, int64_t n, int64_t k,
              bool accumulate) {
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    ConstMapMat<T> DY(dy + r0 * n, r1 - r0, n);
    ConstMapMat<T> W(w, n, k);
    MapMat<T> DX(dx + r0 * k, r1 - r0, k);
    if (accumulate) {
      DX.noalias() += DY * W;
    } else {
      DX.noalias() = DY * W;
    }
  });
}

// Scratch elements gemm_atb_acc / colsum_acc need for R rows and an [m, n] result.
int64_t reduce_scratch(int64_t rows, int64_t m, int64_t n) {
  const int nc = num_row_chunks(rows);
  return nc > 1 ? nc * m * n : 0;
}

// out[m, n] += a[R, m]^T b[R, n]: per-chunk partials, summed in chunk order.
template <typename T>
void gemm_atb_acc(CpuContext& ctx, const T* a, const T* b, T* out, int64_t rows, int64_t m,
                  int64_t n, T* partial) {
  const int nc = num_row_chunks(rows);
  MapMat<T> O(out, m, n);
  if (nc == 1) {
    O.noalias() += ConstMapMat<T>(a, rows, m).transpose() * ConstMapMat<T>(b, rows, n);
    return;
  }
  ctx.parallel_for(nc, [&](int c) {
    const int64_t r0 = chunk_begin(rows, nc, c);
    const int64_t r1 = chunk_begin(rows, nc, c + 1);
    MapMat<T> P(partial + c * m * n, m, n);
    P.noalias() =
        ConstMapMat<T>(a + r0 * m, r1 - r0, m).transpose() * ConstMapMat<T>(b + r0 * n, r1 - r0, n);
  });
  for (int c = 0; c < nc; ++c) O += MapMat<T>(partial + c * m * n, m, n);
}

// out[n] += sum_r a[R, n], per-chunk partials summed in chunk order.
template <typename T>
void colsum_acc(CpuContext& ctx, const T* a, T* out, int64_t rows, int64_t n, T* partial) {
  const int nc = num_row_chunks(rows);
  auto sum_rows = [&](int64_t r0, int64_t r1, T* dst) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < n; ++j) dst[j] += a[r * n + j];
    }
  };
  if (nc == 1) {
    sum_rows(0, rows, out);
    return;
  }
  ctx.parallel_for(nc, [&](int c) {
    T* p = partial + c * n;
    for (int64_t j = 0; j < n; ++j) p[j] = T(0);
    sum_rows(chunk_begin(rows, nc, c), chunk_begin(rows, nc, c + 1), p);
  });
  for (int c = 0; c < nc; ++c) {
    for (int64_t j = 0; j < n; ++j) out[j] += partial[c * n + j];
  }
}

// Deterministic generator for initialisation: core/random.h's splitmix64 stream (portable,
// unlike std distributions) with uniform and normal draws on top.
class InitRng {
 public:
  explicit InitRng(uint64_t seed) : stream_(seed) {}
  uint64_t next() { return stream_.next(); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                           // Box-Muller
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586477 * u2);
  }

 private:
  SplitMix64 stream_;
};

template <typename T>
void xavier_uniform(InitRng& rng, T* w, int64_t fan_out, int64_t fan_in) {
  const double bound = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (int64_t i = 0; i < fan_out * fan_in; ++i) {
    w[i] = static_cast<T>((2.0 * rng.uniform() - 1.0) * bound);
  }
}

}  // namespace

// ---- (a) linear ---------------------------------------------------------------------------------

template <typename T>
void linear_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y) {
  const int64_t n_out = w.dim(0), n_in = w.dim(1);
  const int64_t rows = rows_of(x, n_in);
  assert(rows_of(y, n_out) == rows);
  assert(b.empty() || b.numel() == n_out);
  gemm_xwt(ctx, x.data(), w.data(), b.data(), y.data(), rows, n_in, n_out);
}

template <typename T>
void linear_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> dy, Out<T> dx, Out<T> dw, Out<T> db) {
  const int64_t n_out = w.dim(0), n_in = w.dim(1);
  const int64_t rows = rows_of(x, n_in);
  assert(rows_of(dy, n_out) == rows);
  if (!dx.empty()) gemm_dyw(ctx, dy.data(), w.data(), dx.data(), rows, n_out, n_in, true);
  if (!dw.empty()) {
    T* partial = ctx.scratch<T>(static_cast<size_t>(reduce_scratch(rows, n_out, n_in)));
    gemm_atb_acc(ctx, dy.data(), x.data(), dw.data(), rows, n_out, n_in, partial);
  }
  if (!db.empty()) {
    T* partial = ctx.scratch<T>(static_cast<size_t>(reduce_scratch(rows, 1, n_out)));
    colsum_acc(ctx, dy.data(), db.data(), rows, n_out, partial);
  }
}

// ---- (b) variable selection ---------------------------------------------------------------------

template <typename T>
void varsel_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y, Out<T> gates) {
  const int64_t f = w.dim(0);
  const int64_t rows = rows_of(x, f);
  assert(w.dim(1) == f && b.numel() == f && y.numel() == x.numel() && gates.numel() == x.numel());
  gemm_xwt(ctx, x.data(), w.data(), b.data(), gates.data(), rows, f, f);  // logits
  const T scale = static_cast<T>(f);
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* g = gates.data() + r * f;
      const T* xr = x.data() + r * f;
      T* yr = y.data() + r * f;
      T mx = g[0];
      for (int64_t i = 1; i < f; ++i) mx = std::max(mx, g[i]);
      T sum = 0;
      for (int64_t i = 0; i < f; ++i) sum += (g[i] = std::exp(g[i] - mx));
      const T inv = T(1) / sum;
      for (int64_t i = 0; i < f; ++i) {
        g[i] *= inv;
        yr[i] = scale * g[i] * xr[i];
      }
    }
  });
}

template <typename T>
void varsel_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> gates, In<T> dy, Out<T> dx, Out<T> dw,
                     Out<T> db) {
  const int64_t f = w.dim(0);
  const int64_t rows = rows_of(x, f);
  assert(gates.numel() == x.numel() && dy.numel() == x.numel());
  // Scratch: dl [R, F] (gradient of the logits), then reduction partials.
  const int64_t n_partial = std::max(reduce_scratch(rows, f, f), reduce_scratch(rows, 1, f));
  T* dl = ctx.scratch<T>(static_cast<size_t>(rows * f + n_partial));
  T* partial = dl + rows * f;
  const T scale = static_cast<T>(f);
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* g = gates.data() + r * f;
      const T* xr = x.data() + r * f;
      const T* dyr = dy.data() + r * f;
      T* dlr = dl + r * f;
      // dL/dg_i = F dy_i x_i; softmax backward: dl_i = g_i (dg_i - sum_j g_j dg_j).
      T dot = 0;
      for (int64_t i = 0; i < f; ++i) dot += g[i] * scale * dyr[i] * xr[i];
      for (int64_t i = 0; i < f; ++i) dlr[i] = g[i] * (scale * dyr[i] * xr[i] - dot);
      if (!dx.empty()) {
        T* dxr = dx.data() + r * f;
        for (int64_t i = 0; i < f; ++i) dxr[i] += scale * g[i] * dyr[i];  // through x directly
      }
    }
  });
  // Through the logits l = W x + b.
  if (!dx.empty()) gemm_dyw(ctx, static_cast<const T*>(dl), w.data(), dx.data(), rows, f, f, true);
  if (!dw.empty())
    gemm_atb_acc(ctx, static_cast<const T*>(dl), x.data(), dw.data(), rows, f, f, partial);
  if (!db.empty()) colsum_acc(ctx, static_cast<const T*>(dl), db.data(), rows, f, partial);
}

template <typename T>
void varsel_init(Out<T> w, Out<T> b, uint64_t seed) {
  const int64_t f = w.dim(0);
  InitRng rng(seed);
  const double sd = 1.0 / std::sqrt(static_cast<double>(f));  // variance 1/F
  for (int64_t i = 0; i < w.numel(); ++i) w[i] = static_cast<T>(sd * rng.normal());
  for (int64_t i = 0; i < b.numel(); ++i) b[i] = T(0);
}

// ---- (c) LayerNorm ------------------------------------------------------------------------------

template <typename T>
void layernorm_forward(CpuContext& ctx, In<T> x, In<T> w, In<T> b, Out<T> y, Out<T> mean,
                       Out<T> rstd) {
  const int64_t c = w.numel();
  const int64_t rows = rows_of(x, c);
  assert(b.numel() == c && y.numel() == x.numel() && mean.numel() == rows && rstd.numel() == rows);
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x.data() + r * c;
      T* yr = y.data() + r * c;
      T m = 0;
      for (int64_t i = 0; i < c; ++i) m += xr[i];
      m /= static_cast<T>(c);
      T v = 0;
      for (int64_t i = 0; i < c; ++i) v += (xr[i] - m) * (xr[i] - m);
      v /= static_cast<T>(c);
      const T rs = T(1) / std::sqrt(v + static_cast<T>(kNormEps));
      for (int64_t i = 0; i < c; ++i) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
      mean[r] = m;
      rstd[r] = rs;
    }
  });
}

template <typename T>
void layernorm_backward(CpuContext& ctx, In<T> x, In<T> w, In<T> mean, In<T> rstd, In<T> dy,
                        Out<T> dx, Out<T> dw, Out<T> db) {
  const int64_t c = w.numel();
  const int64_t rows = rows_of(x, c);
  const int nc = num_row_chunks(rows);
  // Per-chunk partials of [dw | db].
  T* partial = ctx.scratch<T>(static_cast<size_t>(nc * 2 * c));
  ctx.parallel_for(nc, [&](int chunk) {
    T* pw = partial + chunk * 2 * c;
    T* pb = pw + c;
    for (int64_t i = 0; i < 2 * c; ++i) pw[i] = T(0);
    for (int64_t r = chunk_begin(rows, nc, chunk); r < chunk_begin(rows, nc, chunk + 1); ++r) {
      const T* xr = x.data() + r * c;
      const T* dyr = dy.data() + r * c;
      const T m = mean[r], rs = rstd[r];
      // dxhat = dy w;  dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)).
      T m1 = 0, m2 = 0;
      for (int64_t i = 0; i < c; ++i) {
        const T xhat = (xr[i] - m) * rs;
        const T dxhat = dyr[i] * w[i];
        m1 += dxhat;
        m2 += dxhat * xhat;
        pw[i] += dyr[i] * xhat;
        pb[i] += dyr[i];
      }
      m1 /= static_cast<T>(c);
      m2 /= static_cast<T>(c);
      if (!dx.empty()) {
        T* dxr = dx.data() + r * c;
        for (int64_t i = 0; i < c; ++i) {
          const T xhat = (xr[i] - m) * rs;
          dxr[i] += rs * (dyr[i] * w[i] - m1 - xhat * m2);
        }
      }
    }
  });
  for (int chunk = 0; chunk < nc; ++chunk) {
    const T* pw = partial + chunk * 2 * c;
    for (int64_t i = 0; i < c; ++i) {
      if (!dw.empty()) dw[i] += pw[i];
      if (!db.empty()) db[i] += pw[c + i];
    }
  }
}

// ---- (d) gated RMSNorm --------------------------------------------------------------------------

template <typename T>
void rmsnorm_gated_forward(CpuContext& ctx, In<T> y, In<T> z, In<T> w, Out<T> out, Out<T> rstd) {
  const int64_t c = w.numel();
  const int64_t rows = rows_of(y, c);
  assert(z.numel() == y.numel() && out.numel() == y.numel() && rstd.numel() == rows);
  for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* yr = y.data() + r * c;
      const T* zr = z.data() + r * c;
      T* o = out.data() + r * c;
      T ss = 0;
      for (int64_t i = 0; i < c; ++i) {
        o[i] = yr[i] * silu(zr[i]);  // u, scaled below
        ss += o[i] * o[i];
      }
      const T rs = T(1) / std::sqrt(ss / static_cast<T>(c) + static_cast<T>(kNormEps));
      for (int64_t i = 0; i < c; ++i) o[i] *= rs * w[i];
      rstd[r] = rs;
    }
  });
}

template <typename T>
void rmsnorm_gated_backward(CpuContext& ctx, In<T> y, In<T> z, In<T> w, In<T> rstd, In<T> dout,
                            Out<T> dy, Out<T> dz, Out<T> dw) {
  const int64_t c = w.numel();
  const int64_t rows = rows_of(y, c);
  const int nc = num_row_chunks(rows);
  T* partial = ctx.scratch<T>(static_cast<size_t>(nc * c));
  ctx.parallel_for(nc, [&](int chunk) {
    T* pw = partial + chunk * c;
    for (int64_t i = 0; i < c; ++i) pw[i] = T(0);
    for (int64_t r = chunk_begin(rows, nc, chunk); r < chunk_begin(rows, nc, chunk + 1); ++r) {
      const T* yr = y.data() + r * c;
      const T* zr = z.data() + r * c;
      const T* dor = dout.data() + r * c;
      const T rs = rstd[r];
      // du_i = rstd (dout_i w_i) - rstd^3 u_i / C * sum_j (dout_j w_j) u_j.
      T dot = 0;
      for (int64_t i = 0; i < c; ++i) {
        const T u = yr[i] * silu(zr[i]);
        dot += dor[i] * w[i] * u;
        pw[i] += dor[i] * u * rs;
      }
      const T k = rs * rs * rs * dot / static_cast<T>(c);
      for (int64_t i = 0; i < c; ++i) {
        const T sz = silu(zr[i]);
        const T du = rs * dor[i] * w[i] - k * yr[i] * sz;
        if (!dy.empty()) dy[r * c + i] += du * sz;
        if (!dz.empty()) dz[r * c + i] += du * yr[i] * silu_grad(zr[i]);
      }
    }
  });
  if (dw.empty()) return;
  for (int chunk = 0; chunk < nc; ++chunk) {
    for (int64_t i = 0; i < c; ++i) dw[i] += partial[chunk * c + i];
  }
}

// ---- (e) elementwise activations ----------------------------------------------------------------

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kSilu:
      return "silu";
    case Activation::kSoftplus:
      return "softplus";
    case Activation::kGelu:
      return "gelu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
  }
  return "?";
}

template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
void silu_n(const T* x, T* y, int64_t n) {
  ConstArrayMap<T> xs(x, n);
  ArrayMap<T>(y, n) = xs * xs.logistic();
}
template <typename T>
void gelu_n(const T* x, T* y, int64_t n) {
  ConstArrayMap<T> xs(x, n);
  ArrayMap<T>(y, n) = T(0.5) * xs * (T(1) + (xs * T(0.70710678118654752440)).erf());
}
template <typename T>
void tanh_n(const T* x, T* y, int64_t n) {
  ArrayMap<T>(y, n) = ConstArrayMap<T>(x, n).tanh();
}
template <typename T>
void sigmoid_n(const T* x, T* y, int64_t n) {
  ArrayMap<T>(y, n) = ConstArrayMap<T>(x, n).logistic();
}

template <typename T>
void activation_forward(Activation a, In<T> x, Out<T> y) {
  assert(x.numel() == y.numel());
  const int64_t n = x.numel();
  const T* xs = x.data();
  T* ys = y.data();
  switch (a) {
    case Activation::kSilu:
      silu_n(xs, ys, n);
      break;
    case Activation::kSoftplus:
      for (int64_t i = 0; i < n; ++i) ys[i] = softplus(xs[i]);
      break;
    case Activation::kGelu:
      gelu_n(xs, ys, n);
      break;
    case Activation::kSigmoid:
      sigmoid_n(xs, ys, n);
      break;
    case Activation::kTanh:
      tanh_n(xs, ys, n);
      break;
  }
}

template <typename T>
void activation_backward(Activation a, In<T> x, In<T> dy, Out<T> dx) {
  assert(x.numel() == dy.numel() && x.numel() == dx.numel());
  const int64_t n = x.numel();
  const T* xs = x.data();
  const T* g = dy.data();
  T* d = dx.data();
  switch (a) {
    case Activation::kSilu:
      for (int64_t i = 0; i < n; ++i) d[i] += g[i] * silu_grad(xs[i]);
      break;
    case Activation::kSoftplus:
      for (int64_t i = 0; i < n; ++i) d[i] += g[i] * softplus_grad(xs[i]);
      break;
    case Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) d[i] += g[i] * gelu_grad(xs[i]);
      break;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) {
        const T s = sigmoid(xs[i]);
        d[i] += g[i] * s * (T(1) - s);
      }
      break;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) {
        const T t = std::tanh(xs[i]);
        d[i] += g[i] * (T(1) - t * t);
      }
      break;
  }
}

// ---- (f) residual add ---------------------------------------------------------------------------

template <typename T>
void add_forward(In<T> a, In<T> b, Out<T> out) {
  assert(a.numel() == b.numel() && a.numel() == out.numel());
  for (int64_t i = 0; i < a.numel(); ++i) out.data()[i] = a.data()[i] + b.data()[i];
}

template <typename T>
void add_backward(In<T> dout, Out<T> da, Out<T> db) {
  for (int64_t i = 0; i < dout.numel(); ++i) {
    if (!da.empty()) da.data()[i] += dout.data()[i];
    if (!db.empty()) db.data()[i] += dout.data()[i];
  }
}

// ---- (g) attention pool -------------------------------------------------------------------------

template <typename T>
void attn_pool_forward(CpuContext& ctx, In<T> h, In<T> q, Out<T> c, Out<T> attn) {
  assert(h.rank() == 3);
  const int64_t nb = h.dim(0), nk = h.dim(1), d = h.dim(2);
  assert(q.numel() == d && c.numel() == nb * d && attn.numel() == nb * nk);
  const T inv_sqrt_d = T(1) / std::sqrt(static_cast<T>(d));
  for_row_chunks(ctx, nb, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* hb = h.data() + b * nk * d;
      T* a = attn.data() + b * nk;
      T* cb = c.data() + b * d;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < nk; ++k) {
        T s = 0;
        for (int64_t i = 0; i < d; ++i) s += q[i] * hb[k * d + i];
        a[k] = s * inv_sqrt_d;
        mx = std::max(mx, a[k]);
      }
      T sum = 0;
      for (int64_t k = 0; k < nk; ++k) sum += (a[k] = std::exp(a[k] - mx));
      for (int64_t k = 0; k < nk; ++k) a[k] /= sum;
      for (int64_t i = 0; i < d; ++i) cb[i] = T(0);
      for (int64_t k = 0; k < nk; ++k) {
        for (int64_t i = 0; i < d; ++i) cb[i] += a[k] * hb[k * d + i];
      }
    }
  });
}

template <typename T>
void attn_pool_backward(CpuContext& ctx, In<T> h, In<T> q, In<T> attn, In<T> dc, Out<T> dh,
                        Out<T> dq) {
  const int64_t nb = h.dim(0), nk = h.dim(1), d = h.dim(2);
  const T inv_sqrt_d = T(1) / std::sqrt(static_cast<T>(d));
  const int nc = num_row_chunks(nb);
  // Per-chunk partials of dq, then ds_k scratch [nk] per chunk.
  T* partial = ctx.scratch<T>(static_cast<size_t>(nc * (d + nk)));
  ctx.parallel_for(nc, [&](int chunk) {
    T* pq = partial + chunk * (d + nk);
    T* ds = pq + d;
    for (int64_t i = 0; i < d; ++i) pq[i] = T(0);
    for (int64_t b = chunk_begin(nb, nc, chunk); b < chunk_begin(nb, nc, chunk + 1); ++b) {
      const T* hb = h.data() + b * nk * d;
      const T* a = attn.data() + b * nk;
      const T* dcb = dc.data() + b * d;
      // da_k = dc . h_k;  ds_k = a_k (da_k - sum_j a_j da_j)  (ds: gradient of the score).
      T dot = 0;
      for (int64_t k = 0; k < nk; ++k) {
        T da = 0;
        for (int64_t i = 0; i < d; ++i) da += dcb[i] * hb[k * d + i];
        ds[k] = da;
        dot += a[k] * da;
      }
      for (int64_t k = 0; k < nk; ++k) {
        ds[k] = a[k] * (ds[k] - dot) * inv_sqrt_d;
        for (int64_t i = 0; i < d; ++i) {
          if (!dh.empty()) dh[(b * nk + k) * d + i] += a[k] * dcb[i] + ds[k] * q[i];
          pq[i] += ds[k] * hb[k * d + i];
        }
      }
    }
  });
  if (dq.empty()) return;
  for (int chunk = 0; chunk < nc; ++chunk) {
    for (int64_t i = 0; i < d; ++i) dq[i] += partial[chunk * (d + nk) + i];
  }
}

// ---- (h) gated residual heads -------------------------------------------------------------------

HeadLayout head_layout(int64_t d, int64_t mid) {
  HeadLayout l;
  l.d = d;
  l.mid = mid;
  int64_t off = 0;
  auto take = [&](int64_t n) {
    const int64_t o = off;
    off += n;
    return o;
  };
  l.w1 = take(mid * d);
  l.b1 = take(mid);
  l.w2 = take(mid * mid);
  l.b2 = take(mid);
  l.wg = take(mid);
  l.bg = take(1);
  l.wm = take(mid);
  l.bm = take(1);
  l.ws = take(d);
  l.bs = take(1);
  l.size = off;
  return l;
}

template <typename T>
void head_forward(CpuContext& ctx, const HeadLayout& l, In<T> s, In<T> params, Out<T> logits,
                  Out<T> z1, Out<T> z2) {
  const int64_t d = l.d, m = l.mid, nh = params.numel() / l.size;
  const int64_t rows = rows_of(s, d);
  assert(params.numel() == nh * l.size && logits.numel() == rows * nh);
  assert(z1.numel() == nh * rows * m && z2.numel() == nh * rows * m);
  T* a1 = ctx.scratch<T>(static_cast<size_t>(rows * m));
  for (int64_t h = 0; h < nh; ++h) {
    const T* p = params.data() + h * l.size;
    T* z1h = z1.data() + h * rows * m;
    T* z2h = z2.data() + h * rows * m;
    gemm_xwt(ctx, s.data(), p + l.w1, p + l.b1, z1h, rows, d, m);
    gelu_n(static_cast<const T*>(z1h), a1, rows * m);
    gemm_xwt(ctx, static_cast<const T*>(a1), p + l.w2, p + l.b2, z2h, rows, m, m);
    for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* z2r = z2h + r * m;
        const T* sr = s.data() + r * d;
        T g = p[l.bg], mm = p[l.bm], skip = p[l.bs];
        for (int64_t j = 0; j < m; ++j) {
          g += p[l.wg + j] * z2r[j];
          mm += p[l.wm + j] * z2r[j];
        }
        for (int64_t j = 0; j < d; ++j) skip += p[l.ws + j] * sr[j];
        logits[r * nh + h] = skip + sigmoid(g) * mm;
      }
    });
  }
}

template <typename T>
void head_backward(CpuContext& ctx, const HeadLayout& l, In<T> s, In<T> params, In<T> z1, In<T> z2,
                   In<T> dlogits, In<T> trunk_scale, Out<T> ds, Out<T> dparams) {
  const int64_t d = l.d, m = l.mid, nh = params.numel() / l.size;
  const int64_t rows = rows_of(s, d);
  assert(dlogits.numel() == rows * nh && dparams.numel() == params.numel());
  assert(trunk_scale.empty() || trunk_scale.numel() == nh);
  const int64_t wide = std::max(d, m);
  const int64_t n_partial = std::max(reduce_scratch(rows, m, wide), reduce_scratch(rows, 1, wide));
  // Scratch: a1, dz2, dz1 [R, m]; dsh [R, d]; dg, dm, dskip [R]; partials.
  T* a1 = ctx.scratch<T>(static_cast<size_t>(3 * rows * m + rows * d + 3 * rows + n_partial));
  T* dz2 = a1 + rows * m;
  T* dz1 = dz2 + rows * m;
  T* dsh = dz1 + rows * m;
  T* dg = dsh + rows * d;
  T* dm = dg + rows;
  T* dskip = dm + rows;
  T* partial = dskip + rows;
  const T* sd = s.data();
  for (int64_t h = 0; h < nh; ++h) {
    const T* p = params.data() + h * l.size;
    T* dp = dparams.data() + h * l.size;
    const T* z1h = z1.data() + h * rows * m;
    const T* z2h = z2.data() + h * rows * m;
    // logit = skip + sigmoid(g) m: back to g, m, skip and on to z2.
    gelu_n(z1h, a1, rows * m);
    for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* z2r = z2h + r * m;
        T g = p[l.bg], mm = p[l.bm];
        for (int64_t j = 0; j < m; ++j) {
          g += p[l.wg + j] * z2r[j];
          mm += p[l.wm + j] * z2r[j];
        }
        const T sg = sigmoid(g);
        const T dl = dlogits[r * nh + h];
        dskip[r] = dl;
        dm[r] = dl * sg;
        dg[r] = dl * sg * (T(1) - sg) * mm;
        for (int64_t j = 0; j < m; ++j) dz2[r * m + j] = dg[r] * p[l.wg + j] + dm[r] * p[l.wm + j];
      }
    });
    gemm_atb_acc(ctx, static_cast<const T*>(dg), z2h, dp + l.wg, rows, 1, m, partial);
    colsum_acc(ctx, static_cast<const T*>(dg), dp + l.bg, rows, 1, partial);
    gemm_atb_acc(ctx, static_cast<const T*>(dm), z2h, dp + l.wm, rows, 1, m, partial);
    colsum_acc(ctx, static_cast<const T*>(dm), dp + l.bm, rows, 1, partial);
    gemm_atb_acc(ctx, static_cast<const T*>(dskip), sd, dp + l.ws, rows, 1, d, partial);
    colsum_acc(ctx, static_cast<const T*>(dskip), dp + l.bs, rows, 1, partial);
    // z2 = W2 a1 + b2.
    gemm_atb_acc(ctx, static_cast<const T*>(dz2), static_cast<const T*>(a1), dp + l.w2, rows, m, m,
                 partial);
    colsum_acc(ctx, static_cast<const T*>(dz2), dp + l.b2, rows, m, partial);
    gemm_dyw(ctx, static_cast<const T*>(dz2), p + l.w2, dz1, rows, m, m, false);  // da1
    // a1 = GELU(z1).
    for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * m; i < r1 * m; ++i) dz1[i] *= gelu_grad(z1h[i]);
    });
    // z1 = W1 s + b1.
    gemm_atb_acc(ctx, static_cast<const T*>(dz1), sd, dp + l.w1, rows, m, d, partial);
    colsum_acc(ctx, static_cast<const T*>(dz1), dp + l.b1, rows, m, partial);
    if (ds.empty()) continue;
    // Into the trunk, scaled by lambda_h: ds += lambda_h (dz1 W1 + dskip w_s).
    gemm_dyw(ctx, static_cast<const T*>(dz1), p + l.w1, dsh, rows, m, d, false);
    const T lambda = trunk_scale.empty() ? T(1) : trunk_scale[h];
    for_row_chunks(ctx, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = 0; j < d; ++j) {
          ds[r * d + j] += lambda * (dsh[r * d + j] + dskip[r] * p[l.ws + j]);
        }
      }
    });
  }
}

template <typename T>
void head_init(const HeadLayout& l, Out<T> params, uint64_t seed) {
  const int64_t nh = params.numel() / l.size;
  assert(params.numel() == nh * l.size);
  InitRng rng(seed);
  for (int64_t i = 0; i < params.numel(); ++i) params[i] = T(0);  // biases stay zero
  for (int64_t h = 0; h < nh; ++h) {
    T* p = params.data() + h * l.size;
    xavier_uniform(rng, p + l.w1, l.mid, l.d);
    xavier_uniform(rng, p + l.w2, l.mid, l.mid);
    xavier_uniform(rng, p + l.wg, 1, l.mid);
    xavier_uniform(rng, p + l.wm, 1, l.mid);
    xavier_uniform(rng, p + l.ws, 1, l.d);
  }
}

// ---- explicit instantiations --------------------------------------------------------------------

#define FXT_INSTANTIATE_OPS(T)                                                                    \
  template void linear_forward<T>(CpuContext&, In<T>, In<T>, In<T>, Out<T>);                      \
  template void linear_backward<T>(CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>, Out<T>);     \
  template void varsel_forward<T>(CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>);              \
  template void varsel_backward<T>(CpuContext&, In<T>, In<T>, In<T>, In<T>, Out<T>, Out<T>,       \
                                   Out<T>);                                                       \
  template void varsel_init<T>(Out<T>, Out<T>, uint64_t);                                         \
  template void layernorm_forward<T>(CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>, Out<T>);   \
  template void layernorm_backward<T>(CpuContext&, In<T>, In<T>, In<T>, In<T>, In<T>, Out<T>,     \
                                      Out<T>, Out<T>);                                            \
  template void rmsnorm_gated_forward<T>(CpuContext&, In<T>, In<T>, In<T>, Out<T>, Out<T>);       \
  template void rmsnorm_gated_backward<T>(CpuContext&, In<T>, In<T>, In<T>, In<T>, In<T>, Out<T>, \
                                          Out<T>, Out<T>);                                        \
  template void activation_forward<T>(Activation, In<T>, Out<T>);                                 \
  template void activation_backward<T>(Activation, In<T>, In<T>, Out<T>);                         \
  template void silu_n<T>(const T*, T*, int64_t);                                                 \
  template void gelu_n<T>(const T*, T*, int64_t);                                                 \
  template void tanh_n<T>(const T*, T*, int64_t);                                                 \
  template void sigmoid_n<T>(const T*, T*, int64_t);                                              \
  template void add_forward<T>(In<T>, In<T>, Out<T>);                                             \
  template void add_backward<T>(In<T>, Out<T>, Out<T>);                                           \
  template void attn_pool_forward<T>(CpuContext&, In<T>, In<T>, Out<T>, Out<T>);                  \
  template void attn_pool_backward<T>(CpuContext&, In<T>, In<T>, In<T>, In<T>, Out<T>, Out<T>);   \
  template void head_forward<T>(CpuContext&, const HeadLayout&, In<T>, In<T>, Out<T>, Out<T>,     \
                                Out<T>);                                                          \
  template void head_backward<T>(CpuContext&, const HeadLayout&, In<T>, In<T>, In<T>, In<T>,      \
                                 In<T>, In<T>, Out<T>, Out<T>);                                   \
  template void head_init<T>(const HeadLayout&, Out<T>, uint64_t);

FXT_INSTANTIATE_OPS(float)
FXT_INSTANTIATE_OPS(double)
#undef FXT_INSTANTIATE_OPS

}  // namespace fxt::model
