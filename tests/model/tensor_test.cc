// Shapes, views, owning tensors and the CPU context's deterministic work split.
#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "model/tensor.h"

namespace fxt::model {
namespace {

TEST(Shape, RankNumelStrides) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.stride(0), 12);
  EXPECT_EQ(s.stride(1), 4);
  EXPECT_EQ(s.stride(2), 1);
  EXPECT_EQ(s.drop_first(), (Shape{3, 4}));
  EXPECT_EQ(s.with_first(5), (Shape{5, 3, 4}));
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(Shape().numel(), 1);  // a scalar
  EXPECT_FALSE(s == (Shape{2, 12}));
  EXPECT_EQ((Shape{1, 2, 3, 4}).numel(), 24);
}

TEST(Tensor, ZeroInitialisedRowMajor) {
  Tensor<float> t({2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.device(), Device::kCpu);
  for (float v : t.span()) EXPECT_EQ(v, 0.f);
  t.at(1, 2) = 5.f;
  EXPECT_EQ(t[5], 5.f);
  t.fill(2.f);
  EXPECT_EQ(t.at(0, 1), 2.f);
}

TEST(TensorView, RowsReshapeAndConstConversion) {
  Tensor<double> t({3, 2, 2});
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<double>(i);
  TensorView<double> v = t;
  const TensorView<double> r1 = v.row(1);
  EXPECT_EQ(r1.shape(), (Shape{2, 2}));
  EXPECT_EQ(r1.at(1, 0), 6.0);
  const TensorView<double> mid = v.rows(1, 3);
  EXPECT_EQ(mid.dim(0), 2);
  EXPECT_EQ(mid[0], 4.0);
  const TensorView<double> flat = v.reshape({6, 2});
  EXPECT_EQ(flat.at(5, 1), 11.0);
  TensorView<const double> c = v;  // read-only view of the same memory
  EXPECT_EQ(c.data(), t.data());
  EXPECT_EQ(c.span().size(), 12u);
  const Tensor<double>& ct = t;
  TensorView<const double> c2 = ct;
  EXPECT_EQ(c2.at(2, 1, 1), 11.0);
  EXPECT_TRUE(TensorView<float>().empty());
  // A device view carries its tag; the CUDA backend owns such memory.
  TensorView<float> dev(reinterpret_cast<float*>(16), {4}, Device::kCuda);
  EXPECT_EQ(dev.device(), Device::kCuda);
  EXPECT_STREQ(device_name(dev.device()), "cuda");
}

TEST(CpuContext, ParallelForRunsEveryChunkOnce) {
  for (int threads : {1, 2, 3, 8}) {
    CpuContext ctx(threads);
    std::vector<std::atomic<int>> hits(13);
    ctx.parallel_for(13, [&](int c) { hits[static_cast<size_t>(c)]++; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(CpuContext, ChunksDependOnlyOnRows) {
  EXPECT_EQ(num_row_chunks(0), 1);
  EXPECT_EQ(num_row_chunks(64), 1);
  EXPECT_EQ(num_row_chunks(65), 2);
  EXPECT_EQ(num_row_chunks(1 << 20), kMaxChunks);
  // Chunks tile [0, rows) without gaps.
  const int64_t rows = 1000;
  const int nc = num_row_chunks(rows);
  EXPECT_EQ(chunk_begin(rows, nc, 0), 0);
  EXPECT_EQ(chunk_begin(rows, nc, nc), rows);
  for (int c = 0; c < nc; ++c) EXPECT_LT(chunk_begin(rows, nc, c), chunk_begin(rows, nc, c + 1));
}

TEST(CpuContext, ScratchIsReused) {
  CpuContext ctx;
  double* a = ctx.scratch<double>(100);
  double* b = ctx.scratch<double>(50);  // smaller: same buffer, no allocation
  EXPECT_EQ(a, b);
  float* c = ctx.scratch<float>(10);
  EXPECT_EQ(static_cast<void*>(c), static_cast<void*>(a));
}

}  // namespace
}  // namespace fxt::model
