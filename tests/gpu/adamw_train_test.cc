// The GPU AdamW (gpu/adamw.h) against fxt::AdamW and fxt::LrSchedule over 30 steps: warm-up,
// cosine and the floor of the schedule, clipping active and inactive, non-finite gradients
// skipped, group multipliers, decay flags, elements outside every spec, two buffers; state
// moved between the GPU optimizer and CPU-optimizer checkpoints in both directions;
// determinism.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/adamw.h"
#include "gpu_test_util.h"
#include "model/mamba2.h"  // ParamSpec
#include "train/checkpoint.h"
#include "train/optimizer.h"

namespace fxt::gpu {
namespace {

using model::ParamSpec;
using testing::expect_close;
using testing::random_vector;
using testing::to_device;
using testing::to_host;

ParamSpec spec(const std::string& name, size_t offset, std::vector<int> shape, bool decay) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return ParamSpec{name, offset, n, std::move(shape), decay};
}

// Buffer 0: four tensors in three groups with a gap of 7 uncovered elements and 5 trailing ones;
// buffer 1: kendall's log sigma (no decay, default group).
struct Layout {
  std::vector<ParamSpec> specs0 = {
      spec("m.in_proj.weight", 0, {24, 40}, true), spec("m.dt_bias", 960, {24}, false),
      spec("cfc.w", 991, {16, 32}, true), spec("heads.b", 1503, {4}, false)};
  std::vector<std::string> groups0 = {"mamba", "mamba", "cfc", "heads"};
  size_t n0 = 1512;  // 1503 + 4 + 5 trailing uncovered
  std::vector<ParamSpec> specs1 = {spec("loss.log_sigma", 0, {4}, false)};
  size_t n1 = 4;
};

fxt::AdamWConfig cpu_config() {
  fxt::AdamWConfig c;
  c.weight_decay = 0.05;
  c.max_grad_norm = 1.0;
  c.group_lr_multipliers = {{"mamba", 1.0}, {"cfc", 0.5}, {"heads", 3.0}};
  return c;
}
AdamWConfig gpu_config(const fxt::AdamWConfig& c) {
  AdamWConfig g;
  g.beta1 = c.beta1;
  g.beta2 = c.beta2;
  g.eps = c.eps;
  g.weight_decay = c.weight_decay;
  g.max_grad_norm = c.max_grad_norm;
  return g;
}
fxt::LrSchedule cpu_schedule() {
  return {1e-2, 5, 25, 0.1};
}  // 30 steps reach the floor
LrSchedule gpu_schedule(const fxt::LrSchedule& s) {
  return {s.peak_lr, s.warmup_steps, s.total_steps, s.min_lr_ratio};
}

std::vector<AdamSegment> segments(const std::vector<ParamSpec>& specs,
                                  const std::vector<std::string>& groups,
                                  const fxt::AdamWConfig& c) {
  std::vector<double> mult;
  for (size_t i = 0; i < specs.size(); ++i) {
    mult.push_back(c.multiplier(groups.empty() ? std::string() : groups[i]));
  }
  return segments_from_specs(specs, mult);
}

// Gradients of step s: clipped (scale 0.1, norm ~ 4) on every third step, unclipped otherwise
// (scale 0.005); step 12 holds a NaN, step 21 an inf (both skipped).
std::vector<float> grads_for(size_t n, int s, uint64_t salt) {
  const float scale = s % 3 == 0 ? 0.1f : 0.005f;
  std::vector<float> g =
      random_vector(n, 7000 + 31 * static_cast<uint64_t>(s) + salt, -scale, scale);
  if (s == 12 && n > 100) g[100] = std::numeric_limits<float>::quiet_NaN();
  if (s == 21 && n > 3) g[3] = std::numeric_limits<float>::infinity();
  return g;
}

// Overwrites dst in place (the CPU optimizer holds spans of it, so it must not reallocate).
void refill(std::vector<float>& dst, const std::vector<float>& src) {
  ASSERT_EQ(dst.size(), src.size());
  std::copy(src.begin(), src.end(), dst.begin());
}

// The trainer's mapping of the GPU state onto the CPU optimizer's checkpoint entries.
void save_gpu_state(const AdamWHostState& s, const std::vector<std::vector<ParamSpec>>& specs,
                    Checkpoint* ck) {
  ck->optimizer["step"] = s.step;
  for (size_t b = 0; b < specs.size(); ++b) {
    for (const ParamSpec& p : specs[b]) {
      const std::vector<int64_t> shape(p.shape.begin(), p.shape.end());
      ck->set_f32(Checkpoint::adam_m_name(p.name), shape,
                  std::span<const float>(s.m[b].data() + p.offset, p.size));
      ck->set_f32(Checkpoint::adam_v_name(p.name), shape,
                  std::span<const float>(s.v[b].data() + p.offset, p.size));
    }
  }
}
AdamWHostState load_gpu_state(const Checkpoint& ck,
                              const std::vector<std::vector<ParamSpec>>& specs,
                              const std::vector<size_t>& sizes, int64_t schedule_step) {
  AdamWHostState s;
  s.step = ck.optimizer.at("step").get<int64_t>();
  s.schedule_step = schedule_step;
  for (size_t b = 0; b < specs.size(); ++b) {
    s.m.emplace_back(sizes[b], 0.0f);
    s.v.emplace_back(sizes[b], 0.0f);
    for (const ParamSpec& p : specs[b]) {
      const std::vector<int64_t> shape(p.shape.begin(), p.shape.end());
      EXPECT_TRUE(ck.read_f32_into(Checkpoint::adam_m_name(p.name), shape,
                                   std::span<float>(s.m[b].data() + p.offset, p.size))
                      .ok());
      EXPECT_TRUE(ck.read_f32_into(Checkpoint::adam_v_name(p.name), shape,
                                   std::span<float>(s.v[b].data() + p.offset, p.size))
                      .ok());
    }
  }
  return s;
}

// CPU and GPU optimizers over the same parameters.
struct Pair {
  Layout lay;
  fxt::AdamWConfig ccfg = cpu_config();
  fxt::LrSchedule sched = cpu_schedule();
  std::vector<float> p0, g0, p1, g1;  // CPU buffers
  DeviceBuffer<float> dp0, dg0, dp1, dg1;
  fxt::AdamW cpu{ccfg};
  AdamW gpu;
  int64_t step = 0;  // the trainer's step (lr index), also counting skipped steps

  explicit Pair(const Context& ctx) : gpu(gpu_config(ccfg), gpu_schedule(sched)) {
    p0 = random_vector(lay.n0, 1, -1.0f, 1.0f);
    p1 = random_vector(lay.n1, 2, -0.3f, 0.3f);
    g0.assign(lay.n0, 0.0f);
    g1.assign(lay.n1, 0.0f);
    dp0 = to_device(p0);
    dp1 = to_device(p1);
    dg0 = to_device(g0);
    dg1 = to_device(g1);
    FXT_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(cpu.add_params(p0, g0, lay.specs0, lay.groups0).ok());
    EXPECT_TRUE(cpu.add_params(p1, g1, lay.specs1).ok());
    EXPECT_EQ(0, gpu.add_buffer(ctx, dp0.data(), dg0.data(), lay.n0,
                                segments(lay.specs0, lay.groups0, ccfg)));
    // Buffer 1 through the per-element registration.
    EXPECT_EQ(1, gpu.add_buffer(ctx, dp1.data(), dg1.data(), lay.n1,
                                std::vector<uint8_t>(lay.n1, 0), std::vector<double>(lay.n1, 1.0)));
  }

  // One step on both, with the gradients of step `s`; compares everything.
  void step_and_compare(const Context& ctx, int s) {
    SCOPED_TRACE("step " + std::to_string(s));
    refill(g0, grads_for(lay.n0, s, 0));
    refill(g1, grads_for(lay.n1, s, 1));
    FXT_CUDA_CHECK(
        cudaMemcpy(dg0.data(), g0.data(), g0.size() * sizeof(float), cudaMemcpyHostToDevice));
    FXT_CUDA_CHECK(
        cudaMemcpy(dg1.data(), g1.data(), g1.size() * sizeof(float), cudaMemcpyHostToDevice));
    FXT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> p0_before = p0;
    const std::vector<float> g0_before = g0;
    gpu.step(ctx);
    const fxt::StepStats ref = cpu.step(sched.lr_at(step));
    ++step;
    ctx.sync();

    const AdamWStats st = gpu.download_stats(ctx);
    EXPECT_EQ(st.applied != 0, ref.applied);
    if (ref.applied) {
      EXPECT_NEAR(st.grad_norm, ref.grad_norm, 1e-12 * ref.grad_norm);
      EXPECT_NEAR(st.clip_scale, ref.clip_scale, 1e-12);
    } else {
      EXPECT_FALSE(std::isfinite(st.grad_norm));
    }
    EXPECT_NEAR(st.lr, ref.lr, 1e-15);
    const std::vector<float> gp0 = to_host(dp0.data(), lay.n0), gp1 = to_host(dp1.data(), lay.n1);
    expect_close(gp0, p0, 1e-6, "params 0");
    expect_close(gp1, p1, 1e-6, "params 1");
    if (ref.applied) {
      expect_close(to_host(dg0.data(), lay.n0), g0, 1e-6, "clipped grads 0", 1e-6);
    }
    const AdamWHostState gs = gpu.download_state(ctx);
    EXPECT_EQ(gs.step, cpu.step_count());
    EXPECT_EQ(gs.schedule_step, step);
    for (int b = 0; b < 2; ++b) {
      const auto m = cpu.first_moment(b), v = cpu.second_moment(b);
      expect_close(gs.m[static_cast<size_t>(b)], {m.begin(), m.end()}, 1e-6, "m", 1e-6);
      expect_close(gs.v[static_cast<size_t>(b)], {v.begin(), v.end()}, 1e-6, "v", 1e-10);
    }
    // Elements outside every spec are neither read nor written.
    for (size_t i : {size_t{984}, size_t{990}, size_t{1507}, size_t{1511}}) {
      EXPECT_EQ(gp0[i], p0_before[i]);
      EXPECT_EQ(gs.m[0][i], 0.0f);
    }
    if (ref.clip_scale != 1.0) {
      EXPECT_EQ(to_host(dg0.data(), lay.n0)[984], g0_before[984]);  // not clipped either
    }
  }
};

TEST(GpuAdamW, MatchesCpuOverThirtySteps) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  Pair pr(ctx);
  int clipped = 0, unclipped = 0, skipped = 0;
  for (int s = 0; s < 30; ++s) {
    pr.step_and_compare(ctx, s);
    const AdamWStats st = pr.gpu.download_stats(ctx);
    if (!st.applied) {
      ++skipped;
    } else if (st.clip_scale < 1.0) {
      ++clipped;
    } else {
      ++unclipped;
    }
  }
  EXPECT_EQ(skipped, 2);
  EXPECT_GE(clipped, 8);
  EXPECT_GE(unclipped, 15);
  EXPECT_EQ(pr.cpu.step_count(), 28);
}

// GPU state -> CPU checkpoint -> fresh CPU optimizer, and CPU checkpoint -> fresh GPU optimizer:
// both continue exactly as the original pair.
TEST(GpuAdamW, StateMovesBetweenCpuAndGpu) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  Pair pr(ctx);
  for (int s = 0; s < 14; ++s) pr.step_and_compare(ctx, s);  // incl. the skipped step 12
  const std::vector<std::vector<ParamSpec>> specs = {pr.lay.specs0, pr.lay.specs1};
  const std::vector<size_t> sizes = {pr.lay.n0, pr.lay.n1};

  // Download / upload round trip of the raw state.
  const AdamWHostState st = pr.gpu.download_state(ctx);
  EXPECT_EQ(st.step, 13);
  EXPECT_EQ(st.schedule_step, 14);
  pr.gpu.upload_state(ctx, st);
  const AdamWHostState again = pr.gpu.download_state(ctx);
  EXPECT_EQ(again.step, st.step);
  EXPECT_EQ(again.schedule_step, st.schedule_step);
  for (size_t b = 0; b < 2; ++b) {
    EXPECT_EQ(0, std::memcmp(again.m[b].data(), st.m[b].data(), st.m[b].size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(again.v[b].data(), st.v[b].data(), st.v[b].size() * sizeof(float)));
  }

  // The same vectors as the CPU optimizer's export_state (the trainer's CPU <-> GPU bridge).
  int64_t cpu_step = -1;
  std::vector<std::vector<float>> cpu_m, cpu_v;
  pr.cpu.export_state(&cpu_step, &cpu_m, &cpu_v);
  EXPECT_EQ(cpu_step, st.step);
  ASSERT_EQ(cpu_m.size(), 2u);
  for (size_t b = 0; b < 2; ++b) {
    expect_close(st.m[b], cpu_m[b], 1e-6, "exported m", 1e-6);
    expect_close(st.v[b], cpu_v[b], 1e-6, "exported v", 1e-10);
  }

  // GPU -> checkpoint -> a fresh CPU optimizer (on copies of the current parameters).
  Checkpoint from_gpu;
  save_gpu_state(st, specs, &from_gpu);
  std::vector<float> q0 = to_host(pr.dp0.data(), pr.lay.n0), q1 = to_host(pr.dp1.data(), pr.lay.n1);
  std::vector<float> h0(pr.lay.n0), h1(pr.lay.n1);
  fxt::AdamW cpu2(pr.ccfg);
  ASSERT_TRUE(cpu2.add_params(q0, h0, pr.lay.specs0, pr.lay.groups0).ok());
  ASSERT_TRUE(cpu2.add_params(q1, h1, pr.lay.specs1).ok());
  ASSERT_TRUE(cpu2.load_state(from_gpu).ok());
  EXPECT_EQ(cpu2.step_count(), 13);

  // CPU checkpoint -> a fresh GPU optimizer (on device copies of the CPU parameters).
  Checkpoint from_cpu;
  pr.cpu.save_state(&from_cpu);
  DeviceBuffer<float> ep0 = to_device(pr.p0), ep1 = to_device(pr.p1);
  DeviceBuffer<float> eg0(pr.lay.n0), eg1(pr.lay.n1);
  FXT_CUDA_CHECK(cudaDeviceSynchronize());
  AdamW gpu2(gpu_config(pr.ccfg), gpu_schedule(pr.sched));
  gpu2.add_buffer(ctx, ep0.data(), eg0.data(), pr.lay.n0,
                  segments(pr.lay.specs0, pr.lay.groups0, pr.ccfg));
  gpu2.add_buffer(ctx, ep1.data(), eg1.data(), pr.lay.n1, segments(pr.lay.specs1, {}, pr.ccfg));
  gpu2.upload_state(ctx, load_gpu_state(from_cpu, specs, sizes, pr.step));

  for (int s = 14; s < 20; ++s) {
    const int64_t lr_step = pr.step;
    pr.step_and_compare(ctx, s);
    // The same gradients into the two restored optimizers.
    refill(h0, grads_for(pr.lay.n0, s, 0));
    refill(h1, grads_for(pr.lay.n1, s, 1));
    cpu2.step(pr.sched.lr_at(lr_step));
    FXT_CUDA_CHECK(
        cudaMemcpy(eg0.data(), h0.data(), h0.size() * sizeof(float), cudaMemcpyHostToDevice));
    FXT_CUDA_CHECK(
        cudaMemcpy(eg1.data(), h1.data(), h1.size() * sizeof(float), cudaMemcpyHostToDevice));
    FXT_CUDA_CHECK(cudaDeviceSynchronize());
    gpu2.step(ctx);
    ctx.sync();
    expect_close(q0, pr.p0, 1e-6, "restored CPU params 0");
    expect_close(q1, pr.p1, 1e-6, "restored CPU params 1");
    expect_close(to_host(ep0.data(), pr.lay.n0), pr.p0, 1e-6, "restored GPU params 0");
    expect_close(to_host(ep1.data(), pr.lay.n1), pr.p1, 1e-6, "restored GPU params 1");
  }
  EXPECT_EQ(gpu2.download_state(ctx).step, pr.cpu.step_count());
}

// An external learning rate replaces the schedule (a second optimizer sharing the first's lr).
TEST(GpuAdamW, ExternalLearningRate) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  Pair pr(ctx);
  pr.step_and_compare(ctx, 1);  // lr_at(0) = peak / 5
  std::vector<float> p = random_vector(64, 5), g = random_vector(64, 6, -0.01f, 0.01f);
  DeviceBuffer<float> dp = to_device(p), dg = to_device(g);
  FXT_CUDA_CHECK(cudaDeviceSynchronize());
  AdamW second(AdamWConfig{}, LrSchedule{5.0, 0, 0, 1.0});  // its own schedule would give 5.0
  second.add_buffer(ctx, dp.data(), dg.data(), 64, std::vector<uint8_t>(64, 1),
                    std::vector<double>(64, 1.0));
  second.step(ctx, pr.gpu.lr());
  const AdamWStats st = second.download_stats(ctx);
  EXPECT_DOUBLE_EQ(st.lr, pr.sched.lr_at(0));
  fxt::AdamW cpu(fxt::AdamWConfig{});
  ASSERT_TRUE(cpu.add_params(p, g, {spec("x", 0, {64}, true)}).ok());
  cpu.step(pr.sched.lr_at(0));
  expect_close(to_host(dp.data(), 64), p, 1e-6, "params");
}

// Two GPU runs of the same steps give identical bytes.
TEST(GpuAdamW, Deterministic) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  auto run = [&] {
    Pair pr(ctx);
    for (int s = 0; s < 10; ++s) {
      refill(pr.g0, grads_for(pr.lay.n0, s, 0));
      refill(pr.g1, grads_for(pr.lay.n1, s, 1));
      FXT_CUDA_CHECK(cudaMemcpy(pr.dg0.data(), pr.g0.data(), pr.g0.size() * sizeof(float),
                                cudaMemcpyHostToDevice));
      FXT_CUDA_CHECK(cudaMemcpy(pr.dg1.data(), pr.g1.data(), pr.g1.size() * sizeof(float),
                                cudaMemcpyHostToDevice));
      FXT_CUDA_CHECK(cudaDeviceSynchronize());
      pr.gpu.step(ctx);
      ctx.sync();
    }
    return std::make_pair(to_host(pr.dp0.data(), pr.lay.n0), pr.gpu.download_state(ctx));
  };
  const auto a = run(), b = run();
  EXPECT_EQ(0, std::memcmp(a.first.data(), b.first.data(), a.first.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(a.second.v[0].data(), b.second.v[0].data(),
                           a.second.v[0].size() * sizeof(float)));
}

}  // namespace
}  // namespace fxt::gpu
