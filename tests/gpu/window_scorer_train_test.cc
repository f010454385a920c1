// GPU scoring (gpu/window_scorer.h): the device's window rule equals window_positions for every
// end near and away from a store's start (host, runs without a GPU); the device gather equals
// the host-gathered windows byte for byte; and the scorer's logits meet the GPU parity criterion
// (docs/GPU.md: normwise against the CPU's perception_forward_last run in double, elementwise
// bounded by the CPU float path's own error) — early (left-padded) windows, several passes with a
// short last one, and the elapsed-time CfC input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "features/sequences.h"
#include "gpu/batch.h"
#include "gpu/gpu_test_util.h"
#include "gpu/window_scorer.h"
#include "model/perception.h"

namespace fxt::gpu {
namespace {

constexpr int kF = 40, kH = 5;

TEST(ScoringRow, EqualsWindowPositions) {
  for (int window : {1, 5, 64}) {
    for (int stride : {1, 3}) {
      std::vector<uint64_t> idx(static_cast<size_t>(window));
      for (uint64_t end = 0; end < 400; ++end) {
        window_positions(end, window, stride, idx.data());
        for (int k = 0; k < window; ++k) {
          ASSERT_EQ(scoring_row(end, k, window, stride), idx[static_cast<size_t>(k)])
              << "end " << end << " k " << k << " window " << window << " stride " << stride;
        }
      }
    }
  }
  // A hand-computed early window: end 4, K 4, S 3 -> positions 1, 4 exist; padded with row 1.
  EXPECT_EQ(scoring_row(4, 0, 4, 3), 1u);
  EXPECT_EQ(scoring_row(4, 1, 4, 3), 1u);
  EXPECT_EQ(scoring_row(4, 2, 4, 3), 1u);
  EXPECT_EQ(scoring_row(4, 3, 4, 3), 4u);
}

struct Case {
  int window, stride, batch;
  bool elapsed;
};

// A store of 600 rows (features uniform in [-2, 2], timestamps with irregular gaps, some zero),
// the ends scored (the first 20 snapshots: padded windows; a run in the middle; the last), and
// the host-gathered windows with Δt per position as window_elapsed gives it (the previous
// position's row, or t - S at k = 0; unit_ns = 1).
struct Store {
  static constexpr uint64_t kRows = 600;
  std::vector<float> features, elapsed, x, dt;
  std::vector<int64_t> ts;
  std::vector<uint64_t> ends;
};

Store make_store(const Case& c) {
  Store st;
  Rng rng(11);
  st.features.resize(Store::kRows * kF);
  for (float& v : st.features) v = static_cast<float>(rng.uniform_real(-2.0, 2.0));
  st.ts.assign(Store::kRows, 0);
  for (uint64_t t = 1; t < Store::kRows; ++t)
    st.ts[t] = st.ts[t - 1] + static_cast<int64_t>(rng.next() % 4);
  st.elapsed.resize(Store::kRows);
  elapsed_per_row(st.ts.data(), Store::kRows, c.stride, 1.0, st.elapsed.data());
  for (uint64_t e = 0; e < 20; ++e) st.ends.push_back(e);
  for (uint64_t e = 300; e < 311; ++e) st.ends.push_back(e);
  st.ends.push_back(Store::kRows - 1);
  const size_t k = static_cast<size_t>(c.window), n = st.ends.size();
  st.x.resize(n * k * kF);
  st.dt.resize(n * k);
  std::vector<uint64_t> idx(k);
  for (size_t b = 0; b < n; ++b) {
    window_positions(st.ends[b], c.window, c.stride, idx.data());
    for (size_t p = 0; p < k; ++p) {
      std::copy_n(st.features.data() + idx[p] * kF, kF, st.x.data() + (b * k + p) * kF);
      const uint64_t t = idx[p], s = static_cast<uint64_t>(c.stride);
      const uint64_t prev = p > 0 ? idx[p - 1] : (t >= s ? t - s : t);
      st.dt[b * k + p] = static_cast<float>(std::max<int64_t>(st.ts[t] - st.ts[prev], 0));
    }
  }
  return st;
}

// The CPU model in precision T on the host-gathered windows: logits [n, H] at the last position.
template <typename T>
std::vector<T> cpu_last(const model::PerceptionConfig& pc, const std::vector<float>& params_f,
                        const Case& c, const Store& st) {
  const auto cast = [](const std::vector<float>& v) { return std::vector<T>(v.begin(), v.end()); };
  const std::vector<T> params = cast(params_f), x = cast(st.x), dt = cast(st.dt);
  const int n = static_cast<int>(st.ends.size());
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<T> ws;
  ws.resize(pc, n, c.window);
  model::perception_forward_last<T>(pc, ctx, params.data(), x.data(), static_cast<T>(c.stride),
                                    c.elapsed ? dt.data() : nullptr, &ws);
  return std::vector<T>(ws.logits.begin(), ws.logits.begin() + static_cast<long>(n * kH));
}

void check_against_cpu(const Case& c) {
  model::PerceptionConfig pc;
  pc.features = kF;
  pc.horizons = kH;
  const Store st = make_store(c);
  std::vector<float> params(model::perception_layout(pc).total);
  model::perception_init<float>(pc, params.data(), 3);

  // The device gather alone: byte for byte the host-gathered windows (and Δt).
  {
    Context ctx;
    const int n = static_cast<int>(st.ends.size());
    DeviceBuffer<uint64_t> ends;
    ends.upload(st.ends);
    auto rows = testing::to_device(st.features), elapsed = testing::to_device(st.elapsed);
    DeviceBuffer<float> x(st.x.size()), dt(st.dt.size());
    gather_scoring_windows(ctx, ends.data(), n, c.window, c.stride, kF, rows.data(),
                           elapsed.data(), x.data(), dt.data());
    ctx.sync();
    EXPECT_EQ(x.download(), st.x);
    EXPECT_EQ(dt.download(), st.dt);
  }

  ScoringShape shape;
  shape.window = c.window;
  shape.stride = c.stride;
  shape.batch = c.batch;
  shape.elapsed = c.elapsed;
  WindowScorer scorer(pc, shape);
  scorer.set_params(params);
  scorer.upload_rows(st.features.data(), st.elapsed.data(), Store::kRows);
  std::vector<float> gpu(st.ends.size() * kH);
  scorer.score(st.ends.data(), st.ends.size(), gpu.data());

  // The parity criterion of gpu_perception_test's last-position logits: tol 1e-5, floor 1e-3.
  const testing::ParityErrors e = testing::expect_parity(
      gpu, cpu_last<float>(pc, params, c, st), cpu_last<double>(pc, params, c, st), 1e-5,
      "scored logits", 1e-3);
  std::printf("[window-scorer K%d S%d batch %d%s] gpu-cpu(f64) %.3e (bound %.3e)  gpu-cpu(f32) "
              "%.3e  cpu(f32)-cpu(f64) %.3e  norm: gpu-cpu(f64) %.3e cpu(f32)-cpu(f64) %.3e\n",
              c.window, c.stride, c.batch, c.elapsed ? " dt" : "", e.vs_f64, e.f32_bound,
              e.vs_f32, e.f32_vs_f64, e.norm_vs_f64, e.norm_f32_vs_f64);
  // Scoring again gives the same bytes (graph replay, no state kept between passes).
  std::vector<float> again(gpu.size());
  scorer.score(st.ends.data(), st.ends.size(), again.data());
  EXPECT_EQ(gpu, again);
}

TEST(WindowScorerGpu, MatchesCpuForwardLast) {
  FXT_SKIP_WITHOUT_GPU();
  check_against_cpu({16, 1, 7, false});  // 32 ends: 5 passes, the last one short
}

TEST(WindowScorerGpu, StrideAndElapsedTime) {
  FXT_SKIP_WITHOUT_GPU();
  check_against_cpu({12, 3, 64, true});  // one short pass; early windows padded at stride 3
}

TEST(WindowScorerGpu, ModelSizeWindowInOnePass) {
  FXT_SKIP_WITHOUT_GPU();
  check_against_cpu({64, 1, 32, false});
}

// Scoring in bf16 (the scorer's warm-up forward sizes the context's BF16 workspace before its
// capture): the logits within 4 e normwise of the CPU model in double (e = 2^-8, the bound of
// PerceptionGpu.ReducedPrecisionWithinItsRoundingScale), above FP32 level (BF16 products in
// effect), and the same bytes when scored again.
TEST(WindowScorerGpu, Bf16WithinItsRoundingScale) {
  FXT_SKIP_WITHOUT_GPU();
  const Case c{64, 1, 32, false};
  model::PerceptionConfig pc;
  pc.features = kF;
  pc.horizons = kH;
  const Store st = make_store(c);
  std::vector<float> params(model::perception_layout(pc).total);
  model::perception_init<float>(pc, params.data(), 3);
  ScoringShape shape;
  shape.window = c.window;
  shape.stride = c.stride;
  shape.batch = c.batch;
  shape.elapsed = c.elapsed;
  WindowScorer scorer(pc, shape);
  scorer.set_precision(Precision::kBf16);
  scorer.set_params(params);
  scorer.upload_rows(st.features.data(), st.elapsed.data(), Store::kRows);
  std::vector<float> gpu(st.ends.size() * kH), again(gpu.size());
  scorer.score(st.ends.data(), st.ends.size(), gpu.data());
  scorer.score(st.ends.data(), st.ends.size(), again.data());
  const std::vector<double> ref = cpu_last<double>(pc, params, c, st);
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (gpu[i] - ref[i]) * (gpu[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  const double err = std::sqrt(num / den), e = precision_input_error(Precision::kBf16);
  std::printf("[window-scorer bf16] normwise logits %.3e (%.2f e)\n", err, err / e);
  EXPECT_LE(err, 4 * e);
  EXPECT_GT(err, 1e-5);
  EXPECT_EQ(gpu, again);
}

}  // namespace
}  // namespace fxt::gpu
