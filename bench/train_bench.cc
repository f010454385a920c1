// The CPU training step of the perception model (DESIGN §11): forward, masked BCE with
// kendall-closed weighting and the λ controller, backward, gradient clipping and AdamW, at
// B = 32, K = 64; and forward-only latency at B = 1. Arg: CPU threads. The PyTorch peer
// (bench/peer/bench_peer.py) is run beside it by scripts/bench_train.sh.
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "model/loss.h"
#include "model/perception.h"
#include "train/optimizer.h"

namespace fxt {
namespace {
using model::In;
using model::Out;
using model::Shape;

struct Batch {
  std::vector<float> x, y, m, dlogits;
};

Batch random_batch(const model::PerceptionConfig& cfg, int b, int k) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::bernoulli_distribution coin(0.5);
  const size_t rows = static_cast<size_t>(b) * static_cast<size_t>(k);
  Batch batch;
  batch.x.resize(rows * static_cast<size_t>(cfg.features));
  for (float& v : batch.x) v = normal(rng);
  batch.y.resize(rows * static_cast<size_t>(cfg.horizons));
  batch.m.resize(batch.y.size());
  for (size_t i = 0; i < batch.y.size(); ++i) {
    batch.y[i] = coin(rng) ? 1.f : 0.f;
    batch.m[i] = coin(rng) || coin(rng) ? 1.f : 0.f;  // ~75 % of labels valid
  }
  batch.dlogits.resize(batch.y.size());
  return batch;
}

void BM_TrainStep(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int b = static_cast<int>(state.range(1)), k = 64;
  model::PerceptionConfig cfg;
  const auto specs_ext = model::perception_param_specs(cfg);
  const size_t n = static_cast<size_t>(model::perception_layout(cfg).total);
  std::vector<float> params(n), grads(n);
  model::perception_init<float>(cfg, params.data(), 1);
  std::vector<model::ParamSpec> specs;
  std::vector<std::string> groups;
  for (const auto& s : specs_ext) {
    specs.push_back(s);
    groups.push_back(s.group);
  }
  AdamW opt;
  if (!opt.add_params(params, grads, specs, groups).ok()) state.SkipWithError("add_params");
  model::CpuContext ctx(threads);
  model::PerceptionWorkspace<float> ws;
  ws.resize(cfg, b, k);
  Batch batch = random_batch(cfg, b, k);
  model::LossConfig lcfg;
  model::ControllerState ctrl(cfg.horizons);
  const Shape rh{static_cast<int64_t>(b) * k, cfg.horizons};
  std::vector<float> lambda(static_cast<size_t>(cfg.horizons));
  for (auto _ : state) {
    model::perception_forward<float>(cfg, ctx, params.data(), batch.x.data(), 1.f, nullptr, &ws);
    std::fill(batch.dlogits.begin(), batch.dlogits.end(), 0.f);
    auto out =
        model::loss_step<float>(lcfg, ctrl, In<float>(ws.logits.data(), rh),
                                In<float>(batch.y.data(), rh), In<float>(batch.m.data(), rh),
                                In<float>(), Out<float>(batch.dlogits.data(), rh), Out<float>());
    for (size_t h = 0; h < lambda.size(); ++h) lambda[h] = static_cast<float>(out.lambda[h]);
    model::perception_backward<float>(cfg, ctx, params.data(), batch.x.data(), 1.f, nullptr,
                                      batch.dlogits.data(), lambda.data(), &ws, grads.data(),
                                      nullptr);
    StepStats s = opt.step(1e-3);
    benchmark::DoNotOptimize(s.grad_norm);
  }
  state.counters["sequences/s"] =
      benchmark::Counter(static_cast<double>(b) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["threads"] = threads;
}
BENCHMARK(BM_TrainStep)
    ->ArgNames({"threads", "B"})
    ->Args({1, 32})
    ->Args({2, 32})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0);

void BM_ForwardB1(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  model::PerceptionConfig cfg;
  std::vector<float> params(static_cast<size_t>(model::perception_layout(cfg).total));
  model::perception_init<float>(cfg, params.data(), 1);
  model::CpuContext ctx(threads);
  model::PerceptionWorkspace<float> ws;
  ws.resize(cfg, 1, 64);
  Batch batch = random_batch(cfg, 1, 64);
  for (auto _ : state) {
    model::perception_forward<float>(cfg, ctx, params.data(), batch.x.data(), 1.f, nullptr, &ws);
    float last = ws.logits.back();
    benchmark::DoNotOptimize(last);
  }
}
BENCHMARK(BM_ForwardB1)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fxt

BENCHMARK_MAIN();
