// Piecewise-linear encoding (model/ple.h): hand-computed encodings and derivatives, degenerate
// and padded intervals, and the edges taken from a sample.
#include "model/ple.h"

#include <vector>

#include <gtest/gtest.h>

namespace fxt::model {
namespace {

// Feature 0: edges -1, 0, 2 (two intervals); feature 1: edges 0, 0, 1 (a degenerate first).
const std::vector<double> kEdges = {-1.0, 0.0, 2.0, 0.0, 0.0, 1.0};

TEST(Ple, EncodesByHand) {
  const std::vector<double> x = {-2.0,  0.5,   // below feature 0's range; inside feature 1's
                                 0.5,   3.0,   // inside the second interval; above the range
                                 -0.25, 0.0};  // inside the first interval; on the knot
  std::vector<double> enc(12, -7.0);
  ple_encode(x.data(), kEdges.data(), 3, 2, 2, enc.data());
  const std::vector<double> want = {0.0,  0.0,  0.0, 0.5,   // row 0
                                    1.0,  0.25, 0.0, 1.0,   // row 1
                                    0.75, 0.0,  0.0, 0.0};  // row 2
  EXPECT_EQ(enc, want);
}

TEST(Ple, DerivativeByHand) {
  const std::vector<double> x = {-2.0, 0.5, 0.5, 3.0, -0.25, 0.0};
  const std::vector<double> d_enc = {1.0, 2.0, 3.0, 4.0,   // row 0
                                     1.0, 2.0, 3.0, 4.0,   // row 1
                                     1.0, 2.0, 3.0, 4.0};  // row 2
  std::vector<double> dx(6, 10.0);                         // accumulates
  ple_backward(x.data(), kEdges.data(), d_enc.data(), 3, 2, 2, dx.data());
  // Row 0: feature 0 below its edges (flat); feature 1 in (0, 1): 4 / 1.
  // Row 1: feature 0 in (0, 2): 2 / 2; feature 1 above (flat).
  // Row 2: feature 0 in (-1, 0): 1 / 1; feature 1 on its knot 0 (flat).
  const std::vector<double> want = {10.0, 14.0, 11.0, 10.0, 11.0, 10.0};
  EXPECT_EQ(dx, want);
}

TEST(Ple, EdgesFromSample) {
  std::vector<float> edges(5, -1.0f);
  // Ranks round(t 5 / 4) = 0, 1, 3, 4, 5 of the sorted sample 0 0 0 1 1 2: 0 0 1 1 2, repeats
  // dropped, padded with the last.
  std::vector<float> v = {2.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f};
  ple_edges_from_sample(v, 4, edges.data());
  EXPECT_EQ(edges, (std::vector<float>{0.0f, 1.0f, 2.0f, 2.0f, 2.0f}));
  // Eleven distinct values, 4 bins: the sample's 0, 25, 50, 75, 100 % points.
  std::vector<float> u;
  for (int i = 10; i >= 0; --i) u.push_back(static_cast<float>(i) * 0.5f);
  ple_edges_from_sample(u, 4, edges.data());
  EXPECT_EQ(edges, (std::vector<float>{0.0f, 1.5f, 2.5f, 4.0f, 5.0f}));  // ranks 0, 3, 5, 8, 10
  std::vector<float> c(7, 3.0f);  // constant: one edge repeated, so every component is 0
  ple_edges_from_sample(c, 4, edges.data());
  EXPECT_EQ(edges, std::vector<float>(5, 3.0f));
  std::vector<float> enc(4, 1.0f);
  const float x = 3.0f;
  ple_encode(&x, edges.data(), 1, 1, 4, enc.data());
  EXPECT_EQ(enc, std::vector<float>(4, 0.0f));
  std::vector<float> none;
  ple_edges_from_sample(none, 4, edges.data());
  EXPECT_EQ(edges, std::vector<float>(5, 0.0f));
}

TEST(Ple, DefaultEdgesSpanThreeStandardDeviations) {
  std::vector<double> e(2 * 5);
  ple_default_edges(2, 4, e.data());
  EXPECT_EQ(e, (std::vector<double>{-3.0, -1.5, 0.0, 1.5, 3.0, -3.0, -1.5, 0.0, 1.5, 3.0}));
}

}  // namespace
}  // namespace fxt::model
