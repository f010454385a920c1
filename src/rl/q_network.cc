#include "rl/q_network.h"

#include <cassert>
#include <cmath>
#include <string>

#include "model/ops.h"

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
  int in = cfg_.obs_dim;
  for (size_t l = 0; l < cfg_.hidden.size(); ++l) {
    add_linear(&specs_, &num_params_, "torso." + std::to_string(l), cfg_.hidden[l], in);
    in = cfg_.hidden[l];
  }
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
void QNetwork<T>::forward(model::CpuContext& ctx, std::span<const T> params,
                          std::span<const T> obs, int batch, std::span<T> out,
                          Workspace* ws) const {
  const int A = cfg_.num_actions, K = cfg_.num_outputs;
  const size_t layers = cfg_.hidden.size();
  assert(obs.size() == static_cast<size_t>(batch) * static_cast<size_t>(cfg_.obs_dim));
  assert(out.size() == static_cast<size_t>(batch) * static_cast<size_t>(A * K));
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
  const size_t head = 2 * layers;
  const T* x = ws->acts[layers].data();
  if (!cfg_.dueling) {
    model::linear_forward<T>(ctx, cmat(x, batch, in), cview(params, spec(head)),
                             cview(params, spec(head + 1)),
                             model::TensorView<T>(out.data(), model::Shape{batch, A * K}));
    return;
  }
  ws->value.resize(static_cast<size_t>(batch) * static_cast<size_t>(K));
  ws->adv.resize(static_cast<size_t>(batch) * static_cast<size_t>(A * K));
  model::linear_forward<T>(ctx, cmat(x, batch, in), cview(params, spec(head)),
                           cview(params, spec(head + 1)), mat(ws->value, batch, K));
  model::linear_forward<T>(ctx, cmat(x, batch, in), cview(params, spec(head + 2)),
                           cview(params, spec(head + 3)), mat(ws->adv, batch, A * K));
  for (int b = 0; b < batch; ++b) {
    const T* v = ws->value.data() + static_cast<size_t>(b) * K;
    const T* a = ws->adv.data() + static_cast<size_t>(b) * A * K;
    T* o = out.data() + static_cast<size_t>(b) * A * K;
    for (int k = 0; k < K; ++k) {
      T mean = 0;
      for (int j = 0; j < A; ++j) mean += a[j * K + k];
      mean /= static_cast<T>(A);
      for (int j = 0; j < A; ++j) o[j * K + k] = v[k] + a[j * K + k] - mean;
    }
  }
}

template <typename T>
void QNetwork<T>::backward(model::CpuContext& ctx, std::span<const T> params,
                           std::span<const T> d_out, std::span<T> grads, Workspace* ws) const {
  const int A = cfg_.num_actions, K = cfg_.num_outputs, batch = ws->batch;
  const size_t layers = cfg_.hidden.size();
  assert(grads.size() == num_params_);
  const int in_head = layers > 0 ? cfg_.hidden.back() : cfg_.obs_dim;
  const size_t head = 2 * layers;
  const T* x = ws->acts[layers].data();
  ws->d_act.assign(static_cast<size_t>(batch) * static_cast<size_t>(in_head), T(0));
  auto d_x = mat(ws->d_act, batch, in_head);
  if (!cfg_.dueling) {
    model::linear_backward<T>(ctx, cmat(x, batch, in_head), cview(params, spec(head)),
                              cmat(d_out.data(), batch, A * K), d_x, view(grads, spec(head)),
                              view(grads, spec(head + 1)));
  } else {
    // out = V + A − mean(A): dV = Σ_a dout, dA[a] = dout[a] − mean_a' dout[a'].
    ws->d_value.assign(static_cast<size_t>(batch) * static_cast<size_t>(K), T(0));
    ws->d_adv.resize(static_cast<size_t>(batch) * static_cast<size_t>(A * K));
    for (int b = 0; b < batch; ++b) {
      const T* g = d_out.data() + static_cast<size_t>(b) * A * K;
      T* dv = ws->d_value.data() + static_cast<size_t>(b) * K;
      T* da = ws->d_adv.data() + static_cast<size_t>(b) * A * K;
      for (int k = 0; k < K; ++k) {
        T sum = 0;
        for (int j = 0; j < A; ++j) sum += g[j * K + k];
        dv[k] = sum;
        for (int j = 0; j < A; ++j) da[j * K + k] = g[j * K + k] - sum / static_cast<T>(A);
      }
    }
    model::linear_backward<T>(ctx, cmat(x, batch, in_head), cview(params, spec(head)),
                              cmat(ws->d_value.data(), batch, K), d_x, view(grads, spec(head)),
                              view(grads, spec(head + 1)));
    model::linear_backward<T>(ctx, cmat(x, batch, in_head), cview(params, spec(head + 2)),
                              cmat(ws->d_adv.data(), batch, A * K), d_x,
                              view(grads, spec(head + 2)), view(grads, spec(head + 3)));
  }
  for (size_t l = layers; l-- > 0;) {
    const int h = cfg_.hidden[l];
    const int in = l > 0 ? cfg_.hidden[l - 1] : cfg_.obs_dim;
    const auto& y = ws->acts[l + 1];
    for (size_t e = 0; e < ws->d_act.size(); ++e)
      if (!(y[e] > T(0))) ws->d_act[e] = T(0);  // ReLU
    model::TensorView<T> d_in;  // the input's gradient is not needed
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

template class QNetwork<float>;
template class QNetwork<double>;

}  // namespace fxt::rl
