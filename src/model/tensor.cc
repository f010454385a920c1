#include "model/tensor.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
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

// Persistent workers 1..n of parallel_for (the caller is thread 0). A call publishes the job and
// bumps the generation; each worker runs its chunks of it and counts itself done. Waiting spins
// briefly before sleeping, since the next call usually follows within microseconds.
class CpuContext::Workers {
 public:
  explicit Workers(int n) {
    for (int t = 1; t <= n; ++t) threads_.emplace_back([this, t] { loop(t); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
      gen_.fetch_add(1);
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()); }

  // fn's chunks on `threads` threads (the caller and workers 1..threads-1).
  void run(int threads, int num_chunks, const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lk(m_);
      fn_ = &fn;
      chunks_ = num_chunks;
      active_ = threads;
      pending_.store(size());
      gen_.fetch_add(1);
    }
    work_.notify_all();
    run_chunks(0, threads, num_chunks, fn);
    for (int i = 0; i < kSpins && pending_.load(std::memory_order_acquire) != 0; ++i) pause();
    if (pending_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lk(m_);
      done_.wait(lk, [&] { return pending_.load() == 0; });
    }
  }

 private:
  static constexpr int kSpins = 1000;  // pause instructions, some microseconds
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  static void run_chunks(int t, int threads, int num_chunks, const std::function<void(int)>& fn) {
    if (t >= threads) return;
    inside_ = true;
    for (int c = t; c < num_chunks; c += threads) fn(c);
    inside_ = false;
  }
  void loop(int t) {
    uint64_t seen = 0;
    for (;;) {
      for (int i = 0; i < kSpins && gen_.load(std::memory_order_acquire) == seen; ++i) pause();
      if (gen_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(m_);
        work_.wait(lk, [&] { return gen_.load() != seen; });
      }
      const std::function<void(int)>* fn = nullptr;
      int chunks = 0, threads = 0;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (stop_) return;
        seen = gen_.load();
        fn = fn_;
        chunks = chunks_;
        threads = active_;
      }
      run_chunks(t, threads, chunks, *fn);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(m_);
        done_.notify_one();
      }
    }
  }

 public:
  static thread_local bool inside_;  // running chunks: a nested call stays on this thread

 private:
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable work_, done_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> pending_{0};
  const std::function<void(int)>* fn_ = nullptr;
  int chunks_ = 0, active_ = 0;
  bool stop_ = false;
};

thread_local bool CpuContext::Workers::inside_ = false;

CpuContext::CpuContext(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {}
CpuContext::CpuContext(const CpuContext& other) : num_threads_(other.num_threads_) {}
CpuContext::~CpuContext() = default;
CpuContext::CpuContext(CpuContext&&) noexcept = default;
CpuContext& CpuContext::operator=(CpuContext&&) noexcept = default;
CpuContext& CpuContext::operator=(const CpuContext& other) {
  if (this != &other) {
    num_threads_ = other.num_threads_;
    workers_.reset();
    scratch_.clear();
  }
  return *this;
}

void CpuContext::parallel_for(int num_chunks, const std::function<void(int)>& fn) const {
  const int threads = num_chunks < num_threads_ ? num_chunks : num_threads_;
  if (threads <= 1 || Workers::inside_) {
    for (int c = 0; c < num_chunks; ++c) fn(c);
    return;
  }
  // Static round-robin assignment: which thread runs a chunk never changes what it computes.
  if (workers_ == nullptr || workers_->size() < num_threads_ - 1) {
    workers_ = std::make_unique<Workers>(num_threads_ - 1);
  }
  workers_->run(threads, num_chunks, fn);
}

}  // namespace fxt::model
