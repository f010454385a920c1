// GPU scoring (gpu/window_scorer.h): the device's window rule equals window_positions for every
// end near and away from a store's start (host, runs without a GPU), and the scorer's logits
// equal the CPU's perception_forward_last on host-gathered windows — early (left-padded)
// windows, several passes with a short last one, and the elapsed-time CfC input.
#include <algorithm>
#include <cmath>
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

void check_against_cpu(const Case& c) {
  model::PerceptionConfig pc;
  pc.features = kF;
  pc.horizons = kH;
  const uint64_t rows = 600;
  Rng rng(11);
  std::vector<float> features(rows * kF);
  for (float& v : features) v = static_cast<float>(rng.uniform_real(-2.0, 2.0));
  // Timestamps with irregular gaps (some zero), in units of 1 (unit_ns = 1).
  std::vector<int64_t> ts(rows);
  for (uint64_t t = 1; t < rows; ++t) ts[t] = ts[t - 1] + static_cast<int64_t>(rng.next() % 4);
  std::vector<float> elapsed(rows);
  elapsed_per_row(ts.data(), rows, c.stride, 1.0, elapsed.data());

  std::vector<float> params(model::perception_layout(pc).total);
  model::perception_init<float>(pc, params.data(), 3);
  // Ends: the first snapshots (padded windows), a run in the middle, the last one.
  std::vector<uint64_t> ends;
  for (uint64_t e = 0; e < 20; ++e) ends.push_back(e);
  for (uint64_t e = 300; e < 311; ++e) ends.push_back(e);
  ends.push_back(rows - 1);

  ScoringShape shape;
  shape.window = c.window;
  shape.stride = c.stride;
  shape.batch = c.batch;
  shape.elapsed = c.elapsed;
  WindowScorer scorer(pc, shape);
  scorer.set_params(params);
  scorer.upload_rows(features.data(), elapsed.data(), rows);
  std::vector<float> gpu(ends.size() * kH);
  scorer.score(ends.data(), ends.size(), gpu.data());

  // The CPU: windows gathered on the host as the trainer's score_inference does; Δt per
  // position as window_elapsed gives it (the previous position's row, or t - S at k = 0).
  const size_t k = static_cast<size_t>(c.window), n = ends.size();
  std::vector<float> x(n * k * kF), dt(n * k);
  std::vector<uint64_t> idx(k);
  for (size_t b = 0; b < n; ++b) {
    window_positions(ends[b], c.window, c.stride, idx.data());
    for (size_t p = 0; p < k; ++p) {
      std::copy_n(features.data() + idx[p] * kF, kF, x.data() + (b * k + p) * kF);
      const uint64_t t = idx[p], s = static_cast<uint64_t>(c.stride);
      const uint64_t prev = p > 0 ? idx[p - 1] : (t >= s ? t - s : t);
      dt[b * k + p] = static_cast<float>(std::max<int64_t>(ts[t] - ts[prev], 0));
    }
  }
  model::CpuContext ctx(1);
  model::PerceptionWorkspace<float> ws;
  ws.resize(pc, static_cast<int>(n), c.window);
  model::perception_forward_last<float>(pc, ctx, params.data(), x.data(),
                                        static_cast<float>(c.stride),
                                        c.elapsed ? dt.data() : nullptr, &ws);
  const std::vector<float> cpu(ws.logits.begin(), ws.logits.begin() + static_cast<long>(n * kH));
  testing::expect_close(gpu, cpu, 1e-5, "scored logits");
  // Scoring again gives the same bytes (graph replay, no state kept between passes).
  std::vector<float> again(gpu.size());
  scorer.score(ends.data(), ends.size(), again.data());
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

}  // namespace
}  // namespace fxt::gpu
