// CUDA device discovery: empty without CUDA or a GPU (the CPU backend is used then),
// complete and sane with one. Skips cleanly on machines without a GPU.
#include <gtest/gtest.h>

#include "core/device_info.h"

namespace fxt {
namespace {

TEST(DeviceInfo, ListsNothingWithoutCuda) {
  if (cuda_compiled()) GTEST_SKIP() << "CUDA backend compiled in";
  EXPECT_TRUE(list_cuda_devices().empty());
}

TEST(DeviceInfo, DescribesEveryGpu) {
  if (!cuda_compiled()) GTEST_SKIP() << "CUDA backend not compiled in";
  auto devices = list_cuda_devices();
  if (devices.empty()) GTEST_SKIP() << "no GPU on this machine";
  for (size_t i = 0; i < devices.size(); ++i) {
    const CudaDevice& d = devices[i];
    EXPECT_EQ(d.index, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.major, 7);  // CUDA 13 supports Turing (sm_75) and newer
    EXPECT_GT(d.memory_bytes, uint64_t{1} << 30);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GT(d.clock_khz, 0);
    std::printf("gpu %d: %s sm_%d%d %.1f GiB %d SMs %d MHz\n", d.index, d.name.c_str(), d.major,
                d.minor, static_cast<double>(d.memory_bytes) / (1 << 30), d.multiprocessors,
                d.clock_khz / 1000);
  }
}

}  // namespace
}  // namespace fxt
