// Tensors and the CPU execution context of the model layer (DESIGN §3, §5).
//
// A Tensor<T> owns contiguous row-major storage of up to four dimensions; a TensorView<T> is
// the non-owning (pointer, shape, device) triple every op takes. Ops never allocate their
// outputs: the caller plans memory once and passes views (llm.c style). The scalar type is a
// template parameter everywhere: float for training, double for gradient checks.
//
// The device tag lets a CUDA backend hand out views over its own device memory with the same
// shape API; Tensor<T> itself allocates host memory only (Device::kCpu). Element access through
// a view is valid only for host memory, which is asserted.
//
// CpuContext carries the thread count and a reusable scratch buffer for the CPU reference ops.
// Work is split into chunks that depend only on the problem size (never on the thread count or
// on scheduling), each chunk owning distinct rows; per-chunk partial sums are reduced in chunk
// order. Results are therefore bit-identical for any thread count and any run.
//
// Thread safety: views and tensors are plain values; a CpuContext belongs to one caller.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace fxt::model {

enum class Device { kCpu, kCuda };
const char* device_name(Device d);  // "cpu", "cuda"

// Dimensions of a row-major tensor, rank 0..4 (rank 0 is a scalar with one element).
class Shape {
 public:
  static constexpr int kMaxRank = 4;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    assert(dims.size() <= static_cast<size_t>(kMaxRank));
    for (int64_t d : dims) {
      assert(d >= 0);
      dims_[static_cast<size_t>(rank_++)] = d;
    }
  }

  int rank() const { return rank_; }
  int64_t operator[](int i) const {
    assert(i >= 0 && i < rank_);
    return dims_[static_cast<size_t>(i)];
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<size_t>(i)];
    return n;
  }
  // Elements between consecutive indices of dimension i.
  int64_t stride(int i) const {
    assert(i >= 0 && i < rank_);
    int64_t s = 1;
    for (int j = i + 1; j < rank_; ++j) s *= dims_[static_cast<size_t>(j)];
    return s;
  }
  // The shape without its first dimension (the shape of one row).
  Shape drop_first() const {
    assert(rank_ >= 1);
    Shape s;
    for (int i = 1; i < rank_; ++i) s.dims_[static_cast<size_t>(s.rank_++)] = (*this)[i];
    return s;
  }
  Shape with_first(int64_t n) const {
    assert(rank_ >= 1);
    Shape s = *this;
    s.dims_[0] = n;
    return s;
  }
  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i) {
      if (dims_[static_cast<size_t>(i)] != o.dims_[static_cast<size_t>(i)]) return false;
    }
    return true;
  }
  std::string to_string() const;  // "[2, 3, 4]"

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Non-owning view: (data, shape, device). T may be const-qualified for read-only inputs.
// An empty view (data() == nullptr) stands for an absent optional tensor such as a bias.
template <typename T>
class TensorView {
 public:
  using value_type = std::remove_const_t<T>;

  TensorView() = default;
  TensorView(T* data, Shape shape, Device device = Device::kCpu)
      : data_(data), shape_(shape), device_(device) {}
  // TensorView<T> -> TensorView<const T>.
  template <typename U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
      TensorView(const TensorView<U>& o)  // NOLINT: implicit by design
      : data_(o.data()), shape_(o.shape()), device_(o.device()) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  bool empty() const { return data_ == nullptr; }

  // Flat element access (host memory only).
  T& operator[](int64_t i) const {
    assert(device_ == Device::kCpu && i >= 0 && i < numel());
    return data_[i];
  }
  // Multi-index access; the number of indices must equal the rank.
  template <typename... I>
  T& at(I... idx) const {
    static_assert(sizeof...(I) >= 1 && sizeof...(I) <= Shape::kMaxRank);
    assert(static_cast<int>(sizeof...(I)) == rank());
    const std::array<int64_t, sizeof...(I)> ix{static_cast<int64_t>(idx)...};
    int64_t off = 0;
    for (int k = 0; k < static_cast<int>(sizeof...(I)); ++k) {
      assert(ix[static_cast<size_t>(k)] >= 0 && ix[static_cast<size_t>(k)] < dim(k));
      off = off * dim(k) + ix[static_cast<size_t>(k)];
    }
    return (*this)[off];
  }
  // Row i along the first dimension: a view of rank() - 1.
  TensorView row(int64_t i) const {
    assert(rank() >= 1 && i >= 0 && i < dim(0));
    return {data_ + i * shape_.stride(0), shape_.drop_first(), device_};
  }
  // Rows [begin, end) along the first dimension, same rank.
  TensorView rows(int64_t begin, int64_t end) const {
    assert(rank() >= 1 && 0 <= begin && begin <= end && end <= dim(0));
    return {data_ + begin * shape_.stride(0), shape_.with_first(end - begin), device_};
  }
  // Same storage under another shape with the same number of elements.
  TensorView reshape(Shape s) const {
    assert(s.numel() == numel());
    return {data_, s, device_};
  }
  std::span<T> span() const {
    assert(device_ == Device::kCpu);
    return {data_, static_cast<size_t>(numel())};
  }

 private:
  T* data_ = nullptr;
  Shape shape_;
  Device device_ = Device::kCpu;
};

// Owning, zero-initialised, host-memory tensor. Converts implicitly to views.
template <typename T>
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, Device device = Device::kCpu)
      : shape_(shape), storage_(static_cast<size_t>(shape.numel()), T(0)) {
    // Device memory is owned by the CUDA backend's arena, which hands out views.
    assert(device == Device::kCpu && "Tensor<T> owns host memory only");
    (void)device;
  }

  T* data() { return storage_.data(); }
  const T* data() const { return storage_.data(); }
  const Shape& shape() const { return shape_; }
  Device device() const { return Device::kCpu; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }

  TensorView<T> view() { return {storage_.data(), shape_, Device::kCpu}; }
  TensorView<const T> view() const { return {storage_.data(), shape_, Device::kCpu}; }
  operator TensorView<T>() { return view(); }              // NOLINT: implicit by design
  operator TensorView<const T>() const { return view(); }  // NOLINT
  T& operator[](int64_t i) { return view()[i]; }
  const T& operator[](int64_t i) const { return view()[i]; }
  template <typename... I>
  T& at(I... idx) {
    return view().at(idx...);
  }
  template <typename... I>
  const T& at(I... idx) const {
    return view().at(idx...);
  }
  std::span<T> span() { return storage_; }
  std::span<const T> span() const { return storage_; }
  void fill(T v) { std::fill(storage_.begin(), storage_.end(), v); }

 private:
  Shape shape_;
  std::vector<T> storage_;
};

// Execution context of the CPU reference backend: thread count and scratch memory. The worker
// threads of parallel_for are started on its first multi-threaded call and kept until the
// context is destroyed (a training step makes ~100 such calls; starting a thread per call cost
// more than some of the work it ran). A copy has the thread count, not the workers or scratch.
class CpuContext {
 public:
  explicit CpuContext(int num_threads = 1);
  ~CpuContext();
  CpuContext(const CpuContext& other);
  CpuContext& operator=(const CpuContext& other);
  CpuContext(CpuContext&&) noexcept;
  CpuContext& operator=(CpuContext&&) noexcept;

  int num_threads() const { return num_threads_; }
  void set_num_threads(int n) { num_threads_ = n < 1 ? 1 : n; }

  // Runs fn(chunk) for chunk in [0, num_chunks) on up to num_threads() threads; thread t takes
  // chunks t, t + T, ... Returns when all are done. fn must write only chunk-owned memory. A call
  // from inside fn runs its chunks on the calling thread.
  void parallel_for(int num_chunks, const std::function<void(int)>& fn) const;

  // A buffer of at least n elements of T, valid until the next scratch() call. It grows on
  // first use and is reused afterwards, so a steady-state training step does not allocate.
  template <typename T>
  T* scratch(size_t n) {
    const size_t words = (n * sizeof(T) + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (scratch_.size() < words) scratch_.resize(words);
    return reinterpret_cast<T*>(scratch_.data());
  }

 private:
  class Workers;  // tensor.cc
  int num_threads_;
  mutable std::unique_ptr<Workers> workers_;
  std::vector<std::max_align_t> scratch_;
};

// The fixed work split of `rows` rows: the number of chunks depends only on `rows`, chunk c
// covers [chunk_begin(rows, n, c), chunk_begin(rows, n, c + 1)).
inline constexpr int64_t kRowsPerChunk = 64;
inline constexpr int kMaxChunks = 16;
inline int num_row_chunks(int64_t rows) {
  const int64_t n = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  return static_cast<int>(n < 1 ? 1 : (n > kMaxChunks ? kMaxChunks : n));
}
inline int64_t chunk_begin(int64_t rows, int num_chunks, int c) {
  return rows * c / num_chunks;
}

}  // namespace fxt::model
