#include "rl/q_network.h"

#include <cassert>
#include <cmath>
#include <string>

#include "model/ops.h"
#include "rl/dueling_head.h"

namespace fxt::rl {

namespace {
void add_linear(std::vector<model::ParamSpec>* specs, size_t* offset, const std::string& name,
                int out, int in) {
  const size_t w = static_cast<size_t>(out) * static_cast<size_t>(in);
  specs->push_back({name + ".weight", *offset, w, {out, in}, true});
  *offset += w;
  specs->push_back({name + ".bias", *offset, static_cast<size_t>(out), {out}, false});
  *offset += static_cast<size_t>(out);
}
}  // namespace

template <typename T>
QNetwork<T>::QNetwork(QNetworkConfig cfg) : cfg_(std::move(cfg)) {
  assert(cfg_.obs_dim >= 1 && cfg_.num_actions >= 1 && cfg_.num_outputs >= 1);
  assert(cfg_.iqn_embedding == 0 || (!cfg_.hidden.empty() && cfg_.num_outputs == 1));
  int in = cfg_.obs_dim;
  for (size_t l = 0; l < cfg_.hidden.size(); ++l) {
    add_linear(&specs_, &num_params_, "torso." + std::to_string(l), cfg_.hidden[l], in);
    in = cfg_.hidden[l];
  }
  if (cfg_.iqn_embedding > 0) add_linear(&specs_, &num_params_, "iqn.embed", in, cfg_.iqn_embedding);
  const int head = cfg_.num_actions * cfg_.num_outputs;
  if (cfg_.dueling) {
    add_linear(&specs_, &num_params_, "head.value", cfg_.num_outputs, in);
    add_linear(&specs_, &num_params_, "head.adv", head, in);
  } else {
    add_linear(&specs_, &num_params_, "head.out", head, in);
  }
}

template <typename T>
void QNetwork<T>::init(std::span<T> params, uint64_t seed) const {
  assert(params.size() == num_params_);
  Rng rng(seed);
  for (size_t i = 0; i < specs_.size(); i += 2) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(specs_[i].shape[1]));
    for (size_t s = i; s < i + 2; ++s)
      for (size_t e = 0; e < specs_[s].size; ++e)
        params[specs_[s].offset + e] = static_cast<T>(rng.uniform_real(-bound, bound));
  }
}

namespace {
template <typename T>
model::TensorView<const T> cview(std::span<const T> buf, const model::ParamSpec& s) {
  if (s.shape.size() == 2)
    return {buf.data() + s.offset, model::Shape{s.shape[0], s.shape[1]}};
  return {buf.data() + s.offset, model::Shape{s.shape[0]}};
}
template <typename T>
model::TensorView<T> view(std::span<T> buf, const model::ParamSpec& s) {
  if (s.shape.size() == 2) return {buf.data() + s.offset, model::Shape{s.shape[0], s.shape[1]}};
  return {buf.data() + s.offset, model::Shape{s.shape[0]}};
}
template <typename T>
model::TensorView<T> mat(std::vector<T>& v, int rows, int cols) {
  return {v.data(), model::Shape{rows, cols}};
}
template <typename T>
model::TensorView<const T> cmat(const T* p, int rows, int cols) {
  return {p, model::Shape{rows, cols}};
}
}  // namespace

template <typename T>
void QNetwork<T>::torso_forward(model::CpuContext& ctx, std::span<const T> params,
                                std::span<const T> obs, int batch, Workspace* ws) const {
  const size_t layers = cfg_.hidden.size();
  assert(obs.size() == static_cast<size_t>(batch) * static_cast<size_t>(cfg_.obs_dim));
  ws->batch = batch;
  ws->acts.resize(layers + 1);
  ws->acts[0].assign(obs.begin(), obs.end());
  int in = cfg_.obs_dim;
  for (size_t l = 0; l < layers; ++l) {
    const int h = cfg_.hidden[l];
    auto& y = ws->acts[l + 1];
    y.resize(static_cast<size_t>(batch) * static_cast<size_t>(h));
    model::linear_forward<T>(ctx, cmat(ws->acts[l].data(), batch, in),
                             cview(params, spec(2 * l)), cview(params, spec(2 * l + 1)),
                             mat(y, batch, h));
    for (T& v : y) v = v > T(0) ? v : T(0);
    in = h;
  }
}

template <typename T>
void QNetwork<T>::head_forward(model::CpuContext& ctx, std::span<const T> params, const T* x,
                               int rows, int in, T* out, Workspace* ws) const {
  const int A = cfg_.num_actions, K = cfg_.num_outputs;
  const size_t head = head_spec();
  if (!cfg_.dueling) {
    model::linear_forward<T>(ctx, cmat(x, rows, in), cview(params, spec(head)),
                             cview(params, spec(head + 1)),
                             model::TensorView<T>(out, model::Shape{rows, A * K}));
    return;
  }
  ws->value.resize(static_cast<size_t>(rows) * static_cast<size_t>(K));
  ws->adv.resize(static_cast<size_t>(rows) * static_cast<size_t>(A * K));
  model::linear_forward<T>(ctx, cmat(x, rows, in), cview(params, spec(head)),
                           cview(params, spec(head + 1)), mat(ws->value, rows, K));
  model::linear_forward<T>(ctx, cmat(x, rows, in), cview(params, spec(head + 2)),
                           cview(params, spec(head + 3)), mat(ws->adv, rows, A * K));
  for (int b = 0; b < rows; ++b) {
    const T* v = ws->value.data() + static_cast<size_t>(b) * K;
    const T* a = ws->adv.data() + static_cast<size_t>(b) * A * K;
    T* o = out + static_cast<size_t>(b) * A * K;
    for (int k = 0; k < K; ++k) dueling_combine(v, a, A, K, k, o);
  }
}

template <typename T>
void QNetwork<T>::forward(model::CpuContext& ctx, std::span<const T> params,
                          std::span<const T> obs, int batch, std::span<T> out,
                          Workspace* ws) const {
  assert(cfg_.iqn_embedding == 0);
  assert(out.size() == static_cast<size_t>(batch) *
                           static_cast<size_t>(cfg_.num_actions * cfg_.num_outputs));
  torso_forward(ctx, params, obs, batch, ws);
  const int in = cfg_.hidden.empty() ? cfg_.obs_dim : cfg_.hidden.back();
  head_forward(ctx, params, ws->acts.back().data(), batch, in, out.data(), ws);
}

template <typename T>
void QNetwork<T>::head_backward(model::CpuContext& ctx, std::span<const T> params, const T* x,
                                int rows, int in, const T* d_out, std::span<T> grads, T* d_x,
                                Workspace* ws) const {
  const int A = cfg_.num_actions, K = cfg_.num_outputs;
  const size_t head = head_spec();
  const model::TensorView<T> dx(d_x, model::Shape{rows, in});
  if (!cfg_.dueling) {
    model::linear_backward<T>(ctx, cmat(x, rows, in), cview(params, spec(head)),
                              cmat(d_out, rows, A * K), dx, view(grads, spec(head)),
                              view(grads, spec(head + 1)));
    return;
  }
  // out = V + A − mean(A): dV = Σ_a dout, dA[a] = dout[a] − mean_a' dout[a'] (dueling_head.h).
  ws->d_value.assign(static_cast<size_t>(rows) * static_cast<size_t>(K), T(0));
  ws->d_adv.resize(static_cast<size_t>(rows) * static_cast<size_t>(A * K));
  for (int b = 0; b < rows; ++b) {
    const T* g = d_out + static_cast<size_t>(b) * A * K;
    T* dv = ws->d_value.data() + static_cast<size_t>(b) * K;
    T* da = ws->d_adv.data() + static_cast<size_t>(b) * A * K;
    for (int k = 0; k < K; ++k) dueling_combine_backward(g, A, K, k, dv, da);
  }
  model::linear_backward<T>(ctx, cmat(x, rows, in), cview(params, spec(head)),
                            cmat(ws->d_value.data(), rows, K), dx, view(grads, spec(head)),
                            view(grads, spec(head + 1)));
  model::linear_backward<T>(ctx, cmat(x, rows, in), cview(params, spec(head + 2)),
                            cmat(ws->d_adv.data(), rows, A * K), dx, view(grads, spec(head + 2)),
                            view(grads, spec(head + 3)));
}

template <typename T>
void QNetwork<T>::torso_backward(model::CpuContext& ctx, std::span<const T> params,
                                 std::span<T> grads, Workspace* ws) const {
  const int batch = ws->batch;
  for (size_t l = cfg_.hidden.size(); l-- > 0;) {
    const int h = cfg_.hidden[l];
    const int in = l > 0 ? cfg_.hidden[l - 1] : cfg_.obs_dim;
    const auto& y = ws->acts[l + 1];
    for (size_t e = 0; e < ws->d_act.size(); ++e)
      if (!(y[e] > T(0))) ws->d_act[e] = T(0);  // ReLU
    model::TensorView<T> d_in;  // the observation's gradient is not needed
    if (l > 0) {
      ws->d_next.assign(static_cast<size_t>(batch) * static_cast<size_t>(in), T(0));
      d_in = mat(ws->d_next, batch, in);
    }
    model::linear_backward<T>(ctx, cmat(ws->acts[l].data(), batch, in), cview(params, spec(2 * l)),
                              cmat(ws->d_act.data(), batch, h), d_in, view(grads, spec(2 * l)),
                              view(grads, spec(2 * l + 1)));
    if (l > 0) ws->d_act.swap(ws->d_next);
  }
}

template <typename T>
void QNetwork<T>::backward(model::CpuContext& ctx, std::span<const T> params,
                           std::span<const T> d_out, std::span<T> grads, Workspace* ws) const {
  assert(grads.size() == num_params_);
  const int in = cfg_.hidden.empty() ? cfg_.obs_dim : cfg_.hidden.back();
  ws->d_act.assign(static_cast<size_t>(ws->batch) * static_cast<size_t>(in), T(0));
  head_backward(ctx, params, ws->acts.back().data(), ws->batch, in, d_out.data(), grads,
                ws->d_act.data(), ws);
  torso_backward(ctx, params, grads, ws);
}

template <typename T>
void QNetwork<T>::forward_iqn(model::CpuContext& ctx, std::span<const T> params,
                              std::span<const T> obs, int batch, std::span<const T> taus,
                              int num_taus, std::span<T> out, Workspace* ws) const {
  const int E = cfg_.iqn_embedding, H = cfg_.hidden.back(), N = num_taus;
  assert(E > 0 && taus.size() == static_cast<size_t>(batch) * static_cast<size_t>(N));
  assert(out.size() == taus.size() * static_cast<size_t>(cfg_.num_actions));
  torso_forward(ctx, params, obs, batch, ws);
  ws->num_taus = N;
  const size_t rows = taus.size(), e = static_cast<size_t>(E), h = static_cast<size_t>(H);
  const int r = static_cast<int>(rows);
  ws->cos_feat.resize(rows * e);
  for (size_t i = 0; i < rows; ++i)
    for (size_t k = 0; k < e; ++k)
      ws->cos_feat[i * e + k] =
          std::cos(static_cast<T>(3.14159265358979323846) * static_cast<T>(k) * taus[i]);
  ws->emb.resize(rows * h);
  const size_t embed = 2 * cfg_.hidden.size();
  model::linear_forward<T>(ctx, cmat(ws->cos_feat.data(), r, E), cview(params, spec(embed)),
                           cview(params, spec(embed + 1)), mat(ws->emb, r, H));
  for (T& v : ws->emb) v = v > T(0) ? v : T(0);
  ws->mixed.resize(rows * h);
  const T* psi = ws->acts.back().data();
  for (size_t i = 0; i < rows; ++i) {
    const T* p = psi + (i / static_cast<size_t>(N)) * h;
    for (size_t k = 0; k < h; ++k) ws->mixed[i * h + k] = p[k] * ws->emb[i * h + k];
  }
  head_forward(ctx, params, ws->mixed.data(), r, H, out.data(), ws);
}

template <typename T>
void QNetwork<T>::backward_iqn(model::CpuContext& ctx, std::span<const T> params,
                               std::span<const T> d_out, std::span<T> grads, Workspace* ws) const {
  const int E = cfg_.iqn_embedding, H = cfg_.hidden.back(), N = ws->num_taus;
  const size_t rows = static_cast<size_t>(ws->batch) * static_cast<size_t>(N);
  const size_t h = static_cast<size_t>(H);
  const int r = static_cast<int>(rows);
  ws->d_mixed.assign(rows * h, T(0));
  head_backward(ctx, params, ws->mixed.data(), r, H, d_out.data(), grads, ws->d_mixed.data(), ws);
  // mixed = ψ ⊙ φ: dψ[b] = Σ_n d_mixed ⊙ φ, dφ = d_mixed ⊙ ψ (then φ's ReLU, in place).
  const T* psi = ws->acts.back().data();
  ws->d_act.assign(static_cast<size_t>(ws->batch) * h, T(0));
  for (size_t i = 0; i < rows; ++i) {
    const size_t b = i / static_cast<size_t>(N);
    for (size_t k = 0; k < h; ++k) {
      const T g = ws->d_mixed[i * h + k];
      ws->d_act[b * h + k] += g * ws->emb[i * h + k];
      ws->d_mixed[i * h + k] = ws->emb[i * h + k] > T(0) ? g * psi[b * h + k] : T(0);
    }
  }
  const size_t embed = 2 * cfg_.hidden.size();
  model::linear_backward<T>(ctx, cmat(ws->cos_feat.data(), r, E), cview(params, spec(embed)),
                            cmat(ws->d_mixed.data(), r, H), model::TensorView<T>(),
                            view(grads, spec(embed)), view(grads, spec(embed + 1)));
  torso_backward(ctx, params, grads, ws);
}

template class QNetwork<float>;
template class QNetwork<double>;

}  // namespace fxt::rl
