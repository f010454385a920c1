// fxt bench train: the training-step benchmark of DESIGN §11 — step time, sequences/s and
// positions/s at each batch size (K = 64), device memory per sequence, forward latency at
// B = 1, the device and its clocks, as JSON. On the GPU the step is the captured CUDA Graph of
// the trainer (gpu/train_step.h) on a device-resident random dataset; the PyTorch peer
// (bench/peer) times the same model, loss, controllers and optimizer, so
// scripts/bench_train_gpu.sh prints the ratio in one run.
// fxt bench predict: scored snapshots per second (every snapshot scored with the window that
// ends at it, as `fxt eval` / `fxt predict` score) at each pass size, and the latency of one
// snapshot's probabilities (B = 1, heads at the last position). On the GPU through
// gpu::WindowScorer. docs/PERFORMANCE.md has the results and the protocol.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/device_info.h"
#include "core/file_util.h"
#include "core/random.h"
#include "core/text.h"
#include "features/sequences.h"
#include "model/loss.h"
#include "model/perception.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#if FXT_HAVE_CUDA
#include "gpu/train_step.h"
#include "gpu/window_scorer.h"
#endif

namespace fxt::cli {
namespace {

struct BenchArgs {
  std::string device = "auto", batches = "32,256", out;
  int window = 64, steps = 200, warmup = 20, fwd_steps = 200, profile = 20;
  Precision precision = Precision::kFp32;
  int64_t rows = 262'144;  // bench predict: snapshots of the random store, every one scored
};

// A random standardised dataset: features N(0,1)-like, labels fair coins, ~75 % valid masks.
struct RandomData {
  std::vector<float> features;
  std::vector<uint8_t> labels, masks;
  uint64_t rows = 0;
};
RandomData random_data(uint64_t rows, int f, int nh) {
  Rng rng(7);
  RandomData d;
  d.rows = rows;
  d.features.resize(rows * static_cast<uint64_t>(f));
  for (float& v : d.features) {
    // Irwin-Hall: the sum of 4 uniforms, centred and scaled to unit variance.
    double s = 0;
    for (int i = 0; i < 4; ++i) s += rng.unit();
    v = static_cast<float>((s - 2.0) * 1.7320508075688772);
  }
  d.labels.resize(rows * static_cast<uint64_t>(nh));
  d.masks.resize(d.labels.size());
  for (size_t i = 0; i < d.labels.size(); ++i) {
    d.labels[i] = static_cast<uint8_t>(rng.next() & 1);
    d.masks[i] = (rng.next() & 3) != 0 ? 1 : 0;
  }
  return d;
}

// One result row: the step time of batch b at window k and the rates it implies.
nlohmann::json step_row(int b, int k, double ms) {
  nlohmann::json r;
  r["B"] = b;
  r["K"] = k;
  r["step_ms"] = ms;
  r["sequences_per_s"] = b * 1e3 / ms;
  r["positions_per_s"] = static_cast<double>(b) * k * 1e3 / ms;
  return r;
}

nlohmann::json device_json(bool cuda) {
  nlohmann::json j;
  if (!cuda) {
    j["type"] = "cpu";
    return j;
  }
  const std::vector<CudaDevice> d = list_cuda_devices();
  if (d.empty()) return j;
  j["type"] = "cuda";
  j["name"] = d.front().name;
  j["sm"] = fmt::format("{}{}", d.front().major, d.front().minor);
  j["multiprocessors"] = d.front().multiprocessors;
  j["max_sm_clock_mhz"] = d.front().clock_khz / 1000;
  j["memory_gib"] = static_cast<double>(d.front().memory_bytes) / (1 << 30);
  return j;
}

#if FXT_HAVE_CUDA
size_t device_free_bytes() {
  size_t free = 0, total = 0;
  FXT_CUDA_CHECK(cudaDeviceSynchronize());
  FXT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

Status bench_gpu(const BenchArgs& a, const std::vector<int>& batches, nlohmann::json* out) {
  model::PerceptionConfig pc;  // DESIGN §3 defaults: F = 40, D = 128, H = 5
  const RandomData data = random_data(200'000, pc.features, pc.horizons);
  nlohmann::json rows = nlohmann::json::array();
  for (int b : batches) {
    gpu::TrainStepConfig cfg;
    cfg.model = pc;
    cfg.batch = b;
    cfg.window = a.window;
    cfg.schedule.warmup_steps = 500;
    cfg.schedule.total_steps = 20000;
    cfg.precision = a.precision;
    const size_t free_before = device_free_bytes();
    gpu::TrainStep step(cfg);
    // Everything the step allocates for this batch size (model activations and gradients,
    // batch buffers, optimizer state, the context's scratch and cuBLAS workspace), dataset
    // excluded (uploaded next).
    const size_t step_bytes = free_before - std::min(free_before, device_free_bytes());
    gpu::TrainData td;
    td.features = data.features.data();
    td.labels = data.labels.data();
    td.masks = data.masks.data();
    td.rows = data.rows;
    for (uint64_t r = 0; r + static_cast<uint64_t>(a.window) <= data.rows; ++r) td.pool.push_back(r);
    step.upload_data(td);
    gpu::TrainHostState st = step.download_state();
    model::perception_init<float>(pc, st.params.data(), 1);
    step.upload_state(st);

    step.run(a.warmup);
    step.take_sums();
    gpu::EventTimer timer;
    timer.start(step.context());
    step.run(a.steps);
    const double ms = static_cast<double>(timer.stop_ms(step.context())) / a.steps;
    const gpu::StepSums sums = step.take_sums();
    nlohmann::json r = step_row(b, a.window, ms);
    r["graph_nodes"] = step.graph_nodes();
    r["device_bytes"] = step_bytes;
    r["device_bytes_per_sequence"] = static_cast<double>(step_bytes) / b;
    if (!rows.empty() && rows.back()["B"].get<int>() != b) {
      // The marginal cost of one more sequence: the fixed part (parameters, optimizer state,
      // scratch) cancels between two batch sizes.
      const nlohmann::json& prev = rows.back();
      r["device_bytes_per_sequence_marginal"] =
          (static_cast<double>(step_bytes) - prev["device_bytes"].get<double>()) /
          (b - prev["B"].get<int>());
    }
    r["mean_loss"] = sums.loss / static_cast<double>(std::max<int64_t>(1, sums.steps));
    if (a.profile > 0) {
      nlohmann::json phases = nlohmann::json::object();
      for (const auto& [name, pms] : step.profile_phases(a.profile)) phases[name] = pms;
      r["uncaptured_phase_ms"] = phases;
    }
    fmt::print(
        "B={:<4} K={} step {:8.4f} ms  {:10.0f} seq/s  {:12.0f} pos/s  ({} graph nodes, {:.1f} MiB "
        "on the device, {:.0f} KiB per sequence)\n",
        b, a.window, ms, b * 1e3 / ms, static_cast<double>(b) * a.window * 1e3 / ms,
        step.graph_nodes(), static_cast<double>(step_bytes) / (1 << 20),
        static_cast<double>(step_bytes) / b / 1024);
    rows.push_back(r);
  }
  (*out)["results"] = rows;

  // B = 1 forward latency: the forward captured as a graph over a device-resident window
  // (what a live scorer replays), and end to end through InferenceGpu (host window in, host
  // logits out: upload, forward, download, synchronise).
  {
    gpu::Context ctx;
    ctx.set_precision(a.precision);
    gpu::PerceptionGpu m(pc);
    m.resize(1, a.window);
    std::vector<float> params(model::perception_layout(pc).total);
    model::perception_init<float>(pc, params.data(), 1);
    gpu::DeviceBuffer<float> dp, dx;
    dp.upload(params);
    std::vector<float> x(data.features.begin(),
                         data.features.begin() + static_cast<std::ptrdiff_t>(a.window * pc.features));
    dx.upload(x);
    gpu::Graph g;
    m.forward(ctx, dp.data(), dx.data(), 1.0f, nullptr);  // warm-up (cuBLAS heuristics)
    ctx.sync();
    g.capture(ctx, [&] { m.forward(ctx, dp.data(), dx.data(), 1.0f, nullptr); });
    for (int i = 0; i < 20; ++i) g.launch(ctx);
    ctx.sync();
    // Each replay timed on its own (the latency of one forward, not a pipelined throughput).
    std::vector<float> lat;
    gpu::EventTimer t;
    for (int i = 0; i < a.fwd_steps; ++i) {
      t.start(ctx);
      g.launch(ctx);
      lat.push_back(t.stop_ms(ctx));
    }
    std::sort(lat.begin(), lat.end());
    const double graph_ms = static_cast<double>(lat[lat.size() / 2]);
    // Where a B = 1 forward's time goes: uncaptured forwards with an event after each layer
    // (the training step's phase-profile mechanism), mean of 20.
    {
      constexpr int kLayerRuns = 20;
      gpu::PhaseTimer timer(ctx);
      m.set_marker([&timer](const char* layer) { timer.mark(layer); });
      for (int i = 0; i < kLayerRuns; ++i) {
        timer.begin();
        m.forward(ctx, dp.data(), dx.data(), 1.0f, nullptr);
        timer.end(1.0 / kLayerRuns);
      }
      m.set_marker(nullptr);
      nlohmann::json layers = nlohmann::json::object();
      for (const auto& [layer, ms] : timer.totals()) layers[layer] = ms;
      (*out)["fwd_b1_uncaptured_layer_ms"] = layers;
    }
    gpu::InferenceGpu inf(pc);
    inf.set_params(params);
    std::vector<float> logits;
    for (int i = 0; i < 20; ++i) inf.forward(x.data(), nullptr, 1, a.window, 1, false, &logits);
    std::vector<double> e2e;
    for (int i = 0; i < a.fwd_steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      inf.forward(x.data(), nullptr, 1, a.window, 1, false, &logits);
      e2e.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
    }
    std::sort(e2e.begin(), e2e.end());
    (*out)["fwd_b1_ms"] = graph_ms;
    (*out)["fwd_b1_graph_nodes"] = g.node_count();
    (*out)["fwd_b1_end_to_end_ms"] = e2e[e2e.size() / 2];
    fmt::print("B=1 forward: {:.4f} ms (graph replay, median), {:.4f} ms host to host\n", graph_ms,
               e2e[e2e.size() / 2]);
  }
  return Status::Ok();
}
#endif

// The CPU reference step (the same work as bench/train_bench.cc), for machines without a GPU.
Status bench_cpu(const BenchArgs& a, const std::vector<int>& batches, nlohmann::json* out) {
  using model::In;
  using model::Out;
  using model::Shape;
  model::PerceptionConfig pc;
  const size_t n = model::perception_layout(pc).total;
  nlohmann::json rows = nlohmann::json::array();
  for (int b : batches) {
    std::vector<float> params(n), grads(n);
    model::perception_init<float>(pc, params.data(), 1);
    std::vector<model::ParamSpec> specs;
    std::vector<std::string> groups;
    for (const auto& s : model::perception_param_specs(pc)) {
      specs.push_back(s);
      groups.push_back(s.group);
    }
    AdamW opt;
    FXT_RETURN_IF_ERROR(opt.add_params(params, grads, specs, groups));
    model::CpuContext ctx(1);
    model::PerceptionWorkspace<float> ws;
    ws.resize(pc, b, a.window);
    const RandomData d = random_data(static_cast<uint64_t>(b) * a.window, pc.features, pc.horizons);
    std::vector<float> y(d.labels.begin(), d.labels.end()), m(d.masks.begin(), d.masks.end());
    std::vector<float> dlogits(y.size()), lambda(static_cast<size_t>(pc.horizons));
    model::LossConfig lcfg;
    model::ControllerState ctrl(pc.horizons);
    const Shape rh{static_cast<int64_t>(b) * a.window, pc.horizons};
    auto one = [&] {
      model::perception_forward<float>(pc, ctx, params.data(), d.features.data(), 1.f, nullptr, &ws);
      std::fill(dlogits.begin(), dlogits.end(), 0.f);
      auto o = model::loss_step<float>(lcfg, ctrl, In<float>(ws.logits.data(), rh),
                                       In<float>(y.data(), rh), In<float>(m.data(), rh),
                                       In<float>(), Out<float>(dlogits.data(), rh), Out<float>());
      for (size_t h = 0; h < lambda.size(); ++h) lambda[h] = static_cast<float>(o.lambda[h]);
      model::perception_backward<float>(pc, ctx, params.data(), d.features.data(), 1.f, nullptr,
                                        dlogits.data(), lambda.data(), &ws, grads.data(), nullptr);
      opt.step(1e-3);
    };
    one();
    const int steps = std::max(1, std::min(a.steps, 20));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) one();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        steps;
    nlohmann::json r = step_row(b, a.window, ms);
    fmt::print("B={:<4} K={} step {:8.3f} ms (CPU, 1 thread)\n", b, a.window, ms);
    rows.push_back(r);
  }
  (*out)["results"] = rows;
  return Status::Ok();
}

#if FXT_HAVE_CUDA
// Scored snapshots/s through gpu::WindowScorer at each pass size: every snapshot of a random
// store of a.rows rows scored once (after one warm-up pass), host to host (end indices in,
// logits out); then one snapshot's latency (a pass of one window).
Status bench_predict_gpu(const BenchArgs& a, const std::vector<int>& batches, nlohmann::json* out) {
  model::PerceptionConfig pc;
  const auto n = static_cast<uint64_t>(a.rows);
  const RandomData data = random_data(n, pc.features, pc.horizons);
  std::vector<float> params(model::perception_layout(pc).total);
  model::perception_init<float>(pc, params.data(), 1);
  std::vector<uint64_t> ends(n);
  for (uint64_t t = 0; t < n; ++t) ends[t] = t;
  std::vector<float> logits(n * static_cast<uint64_t>(pc.horizons));
  nlohmann::json rows = nlohmann::json::array();
  auto make_scorer = [&](int batch) {
    gpu::ScoringShape shape;
    shape.window = a.window;
    shape.batch = batch;
    auto sc = std::make_unique<gpu::WindowScorer>(pc, shape);
    sc->set_precision(a.precision);
    sc->set_params(params);
    sc->upload_rows(data.features.data(), nullptr, n);
    return sc;
  };
  for (int b : batches) {
    const size_t free_before = device_free_bytes();
    auto sc = make_scorer(b);
    const size_t bytes = free_before - std::min(free_before, device_free_bytes());
    sc->score(ends.data(), std::min<size_t>(n, static_cast<size_t>(b)), logits.data());  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    sc->score(ends.data(), n, logits.data());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double passes = std::ceil(static_cast<double>(n) / b);
    nlohmann::json r;
    r["batch"] = b;
    r["K"] = a.window;
    r["snapshots"] = n;
    r["snapshots_per_s"] = static_cast<double>(n) / s;
    r["ms_per_pass"] = s * 1e3 / passes;
    r["graph_nodes"] = sc->graph_nodes();
    r["device_bytes"] = bytes;  // scorer buffers and the store's rows
    fmt::print("predict batch={:<6} K={} {:12.0f} snapshots/s  {:8.3f} ms per pass  ({} graph "
               "nodes, {:.1f} MiB)\n",
               b, a.window, static_cast<double>(n) / s, s * 1e3 / passes, sc->graph_nodes(),
               static_cast<double>(bytes) / (1 << 20));
    rows.push_back(r);
  }
  (*out)["results"] = rows;
  {
    auto sc = make_scorer(1);
    const uint64_t end = n - 1;
    std::vector<float> one(static_cast<size_t>(pc.horizons));
    for (int i = 0; i < 20; ++i) sc->score(&end, 1, one.data());
    // Host to host (the end index in, the graph, the logits out, the synchronisation): what a
    // live scorer waits for. The forward's device time alone is `fxt bench train`'s fwd_b1_ms.
    std::vector<double> host;
    for (int i = 0; i < a.fwd_steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      sc->score(&end, 1, one.data());
      host.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(host.begin(), host.end());
    (*out)["b1_host_ms"] = host[host.size() / 2];
    (*out)["b1_graph_nodes"] = sc->graph_nodes();
    fmt::print("B=1 scoring: {:.4f} ms host to host (median; {} graph nodes)\n",
               host[host.size() / 2], sc->graph_nodes());
  }
  return Status::Ok();
}
#endif

// The CPU reference of scoring (one thread): windows gathered on the host as score_inference
// gathers them, perception_forward_last in passes of a.batches' first size (at most 256).
Status bench_predict_cpu(const BenchArgs& a, const std::vector<int>& batches, nlohmann::json* out) {
  model::PerceptionConfig pc;
  const auto n = static_cast<uint64_t>(std::min<int64_t>(a.rows, 2048));
  const RandomData data = random_data(n, pc.features, pc.horizons);
  std::vector<float> params(model::perception_layout(pc).total);
  model::perception_init<float>(pc, params.data(), 1);
  const int b = std::min(batches.front(), 256);
  const size_t k = static_cast<size_t>(a.window), f = static_cast<size_t>(pc.features);
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<float> ws;
  std::vector<float> x(static_cast<size_t>(b) * k * f);
  std::vector<uint64_t> idx(k);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t e0 = 0; e0 < n; e0 += static_cast<uint64_t>(b)) {
    const int nb = static_cast<int>(std::min<uint64_t>(n - e0, static_cast<uint64_t>(b)));
    for (int w = 0; w < nb; ++w) {
      window_positions(e0 + static_cast<uint64_t>(w), a.window, 1, idx.data());
      for (size_t p = 0; p < k; ++p)
        std::copy_n(data.features.data() + idx[p] * f, f,
                    x.data() + (static_cast<size_t>(w) * k + p) * f);
    }
    ws.resize(pc, nb, a.window);
    model::perception_forward_last<float>(pc, ctx, params.data(), x.data(), 1.0f, nullptr, &ws);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json r;
  r["batch"] = b;
  r["K"] = a.window;
  r["snapshots"] = n;
  r["snapshots_per_s"] = static_cast<double>(n) / s;
  fmt::print("predict batch={:<4} K={} {:10.0f} snapshots/s (CPU, 1 thread)\n", b, a.window,
             static_cast<double>(n) / s);
  (*out)["results"] = nlohmann::json::array({r});
  return Status::Ok();
}

Result<std::vector<int>> parse_batches(const std::string& text) {
  return parse_int_list("--batch", text, 1, 1 << 24);
}

// Which backend a bench runs on, and the JSON fields every bench writes.
Result<bool> bench_on_cuda(const BenchArgs& a) {
  const bool have_gpu = cuda_compiled() && !list_cuda_devices().empty();
  const bool cuda = a.device == "cuda" || (a.device == "auto" && have_gpu);
  if (cuda && !have_gpu) return UsageError("--device cuda: no CUDA device is available");
  FXT_RETURN_IF_ERROR(check_precision(a.precision, cuda));
  return cuda;
}

nlohmann::json bench_header(const char* command, const BenchArgs& a, bool cuda) {
  nlohmann::json out;
  out["command"] = command;
  out["device"] = device_json(cuda);
  out["git_revision"] = FXT_GIT_REV;
  out["build_type"] = FXT_BUILD_TYPE;
  out["precision"] = precision_name(a.precision);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  out["date"] = buf;
  return out;
}

Status run_bench_train(const BenchArgs& a) {
  FXT_ASSIGN_OR_RETURN(const std::vector<int> batches, parse_batches(a.batches));
  if (a.window < 1 || a.steps < 1 || a.warmup < 0 || a.fwd_steps < 1) {
    return UsageError("--window, --steps and --fwd-steps must be >= 1, --warmup >= 0");
  }
  FXT_ASSIGN_OR_RETURN(const bool cuda, bench_on_cuda(a));
  nlohmann::json out = bench_header("fxt bench train", a, cuda);
  out["steps"] = a.steps;
  out["warmup"] = a.warmup;
  if (cuda) {
#if FXT_HAVE_CUDA
    FXT_RETURN_IF_ERROR(bench_gpu(a, batches, &out));
#endif
  } else {
    FXT_RETURN_IF_ERROR(bench_cpu(a, batches, &out));
  }
  if (!a.out.empty()) FXT_RETURN_IF_ERROR(write_file_atomic(a.out, out.dump(2) + "\n"));
  return Status::Ok();
}

Status run_bench_predict(const BenchArgs& a) {
  FXT_ASSIGN_OR_RETURN(const std::vector<int> batches, parse_batches(a.batches));
  if (a.window < 1 || a.fwd_steps < 1) return UsageError("--window and --fwd-steps must be >= 1");
  if (a.rows < a.window) return UsageError("--rows must be >= --window ({})", a.window);
  FXT_ASSIGN_OR_RETURN(const bool cuda, bench_on_cuda(a));
  nlohmann::json out = bench_header("fxt bench predict", a, cuda);
  out["rows"] = a.rows;
  if (cuda) {
#if FXT_HAVE_CUDA
    FXT_RETURN_IF_ERROR(bench_predict_gpu(a, batches, &out));
#endif
  } else {
    FXT_RETURN_IF_ERROR(bench_predict_cpu(a, batches, &out));
  }
  if (!a.out.empty()) FXT_RETURN_IF_ERROR(write_file_atomic(a.out, out.dump(2) + "\n"));
  return Status::Ok();
}

}  // namespace

void register_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks (DESIGN §11, docs/PERFORMANCE.md)");
  bench->require_subcommand(1);
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = add_command(*bench, "train",
                              "training step time at each batch size and B = 1 forward latency",
                              [a] { return run_bench_train(*a); });
  cmd->add_option("--device", a->device, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--batch", a->batches, "batch sizes, comma-separated")->capture_default_str();
  cmd->add_option("--window", a->window, "K positions per sequence")->capture_default_str()
      ->check(int_range(1, 1 << 20));
  cmd->add_option("--steps", a->steps, "timed steps per batch size")->capture_default_str()
      ->check(int_range(1, 1000000));
  cmd->add_option("--warmup", a->warmup, "untimed steps first")->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--fwd-steps", a->fwd_steps, "timed B = 1 forwards")->capture_default_str()
      ->check(int_range(0, 1000000));
  cmd->add_option("--profile", a->profile, "uncaptured steps timed per phase (0: none)")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
  add_precision_flag(cmd, &a->precision);
  cmd->add_option("--out", a->out, "JSON output file");

  auto p = std::make_shared<BenchArgs>();
  p->batches = "256,1024,4096,16384";
  CLI::App* pred = add_command(*bench, "predict",
                               "scored snapshots/s (every snapshot, window ending at it) and "
                               "one snapshot's latency",
                               [p] { return run_bench_predict(*p); });
  pred->add_option("--device", p->device, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  pred->add_option("--batch", p->batches, "windows per pass, comma-separated")
      ->capture_default_str();
  pred->add_option("--window", p->window, "K positions per window")->capture_default_str()
      ->check(int_range(1, 1 << 20));
  pred->add_option("--rows", p->rows, "snapshots of the random store, each scored once")
      ->capture_default_str()
      ->check(int_range(1, int64_t{1} << 31));
  pred->add_option("--fwd-steps", p->fwd_steps, "timed one-snapshot passes")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  add_precision_flag(pred, &p->precision);
  pred->add_option("--out", p->out, "JSON output file");
}

}  // namespace fxt::cli
