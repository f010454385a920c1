#include "model/tensor.h"

#include <thread>

#include <fmt/format.h>

namespace fxt::model {

const char* device_name(Device d) {
  switch (d) {
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
  }
  return "?";
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) s += ", ";
    s += fmt::format("{}", dims_[static_cast<size_t>(i)]);
  }
  return s + "]";
}

void CpuContext::parallel_for(int num_chunks, const std::function<void(int)>& fn) const {
  const int threads = num_chunks < num_threads_ ? num_chunks : num_threads_;
  if (threads <= 1) {
    for (int c = 0; c < num_chunks; ++c) fn(c);
    return;
  }
  // Static round-robin assignment: which thread runs a chunk never changes what it computes.
  auto worker = [&](int t) {
    for (int c = t; c < num_chunks; c += threads) fn(c);
  };
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
}  // jthreads join here

}  // namespace fxt::model
