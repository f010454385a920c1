// CUDA runtime basics shared by every GPU op of the perception model (DESIGN §5.1).
//
// Conventions of the GPU layer (src/gpu/*):
// - float32 only; every pointer an op takes is DEVICE memory unless its name says host.
// - Ops enqueue work on ctx.stream and return: no allocation, no host synchronisation, no
//   host branch on device data. That is what lets the whole training step be captured once as
//   a CUDA Graph and replayed (gpu/train_step.h).
// - Semantics mirror the CPU reference ops of src/model/ exactly (same argument order, same
//   "backward ADDS into every gradient" rule), so each GPU op is tested against its CPU op on
//   the same inputs (tests/gpu/).
// - Deterministic: no floating-point atomics in anything that feeds a gradient or the loss.
//   Reductions over rows use a fixed partition and a fixed order (per-block partials, then a
//   tree or ordered sum); cuBLAS GEMMs are deterministic for a fixed handle, shape and stream.
//   The same inputs give the same bytes on the same GPU.
// - Work is spread over the batch: a block per sequence, per (sequence, head) or per tile of
//   rows; never one block looping over the batch.
//
// Thread safety: a Context belongs to one thread; DeviceBuffer is a move-only owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/device_info.h"
#include "core/precision.h"

namespace fxt::gpu {

// True when a CUDA device can be used by this process (driver present, at least one GPU).
bool cuda_available();

// Aborts the process with "file:line: what: CUDA error name (message)". Every CUDA or cuBLAS
// call goes through these checks: a failure on the device is a bug, never a user error to
// recover from — except an exhausted device (cudaErrorMemoryAllocation,
// CUBLAS_STATUS_ALLOC_FAILED), which throws DeviceOutOfMemory (core/device_info.h) with the
// free and total memory, so the command ends with one line and exit 1 instead of a crash.
[[noreturn]] void cuda_fail(const char* what, const char* error, const char* file, int line);
void check_cuda(cudaError_t e, const char* what, const char* file, int line);
void check_cublas(cublasStatus_t s, const char* what, const char* file, int line);
#define FXT_CUDA_CHECK(expr) ::fxt::gpu::check_cuda((expr), #expr, __FILE__, __LINE__)
#define FXT_CUBLAS_CHECK(expr) ::fxt::gpu::check_cublas((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: catches launch-configuration errors (no synchronisation).
#define FXT_CUDA_LAUNCH_CHECK() FXT_CUDA_CHECK(cudaGetLastError())

// Owner of n elements of device memory (cudaMalloc). Resizing reallocates and leaves the
// contents undefined; it never happens inside a captured step (buffers are sized first).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = o.p_, n_ = o.n_;
      o.p_ = nullptr, o.n_ = 0;
    }
    return *this;
  }

  void resize(size_t n) {  // no-op when the size is unchanged
    if (n == n_) return;
    release();
    if (n > 0) FXT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)));
    n_ = n;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

  // Synchronous copies of the first n (default all) elements; for setup, tests and reporting.
  // These run on the legacy default stream, which does not order against the non-blocking
  // Context streams, and a pageable host-to-device cudaMemcpy (or a cudaMemset) may return
  // before the data lands: so each waits for the whole device (after the copy, or before it
  // for download) and is complete against every stream when it returns.
  void upload(const T* host, size_t n) {
    if (n) {
      FXT_CUDA_CHECK(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice));
      FXT_CUDA_CHECK(cudaDeviceSynchronize());
    }
  }
  void upload(const std::vector<T>& host) {
    resize(host.size());
    upload(host.data(), host.size());
  }
  std::vector<T> download() const {
    std::vector<T> out(n_);
    if (n_) {
      FXT_CUDA_CHECK(cudaDeviceSynchronize());
      FXT_CUDA_CHECK(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return out;
  }
  void zero() {
    if (n_) {
      FXT_CUDA_CHECK(cudaMemset(p_, 0, n_ * sizeof(T)));
      FXT_CUDA_CHECK(cudaDeviceSynchronize());
    }
  }

 private:
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Host memory that is pinned and mapped into the device address space: the device writes a
// few scalars (loss, grad norm) that the host reads without a copy or a stream sync, only when
// it reports (after an event or a stream sync of its own choosing).
template <typename T>
class MappedHost {
 public:
  explicit MappedHost(size_t n) : n_(n) {
    FXT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_), n * sizeof(T), cudaHostAllocMapped));
    FXT_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_), h_, 0));
  }
  ~MappedHost() { cudaFreeHost(h_); }
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;
  T* host() { return h_; }
  T* device() { return d_; }
  size_t size() const { return n_; }

 private:
  T* h_ = nullptr;
  T* d_ = nullptr;
  size_t n_ = 0;
};

// The stream and cuBLAS handle all GPU ops of one model run on.
class Context {
 public:
  // device: CUDA device index. Creates a non-blocking stream and a cuBLAS handle bound to it
  // with a preallocated workspace (so GEMMs inside a captured graph allocate nothing), pointer
  // mode host, FP32 products unless set_precision says otherwise.
  explicit Context(int device = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  int device() const { return device_; }
  // The arithmetic of every gemm / gemm_batched on this context (core/precision.h); set it
  // before capturing a graph, which keeps the products' kernels it was captured with.
  void set_precision(Precision p) { precision_ = p; }
  Precision precision() const { return precision_; }
  void sync() const { FXT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  std::string device_name() const;
  // Device scratch owned by the context for the split-row reductions of gemm_tn_rows and
  // column_sum (partials per chunk of rows). Ops on one stream run in order, so one op's
  // partials are consumed before the next op writes the scratch again.
  float* reduce_scratch() const { return reduce_scratch_; }
  size_t reduce_scratch_floats() const { return reduce_scratch_floats_; }
  // The BF16 operand workspace of the bf16 products (Precision::kBf16: each cuBLAS product's A
  // and B converted to BF16 here, then multiplied). Returns room for n BF16 values (2 bytes
  // each), or nullptr while the stream is being captured and the workspace holds fewer: the
  // product is then left out and the shortfall noted, and Graph::capture grows the workspace
  // and captures again, so no capture allocates. Outside a capture it grows on demand (to at
  // least twice its size). A buffer it outgrows stays allocated until the context is destroyed:
  // graphs captured earlier still read from it. Products on the one stream run in order, so
  // one product's operands are read before the next product converts its own.
  void* bf16_workspace(size_t n) const;
  size_t bf16_workspace_size() const { return bf16_n_; }  // BF16 values it holds now
  // After a capture: true when some product of it found the workspace too small; the workspace
  // has then grown to the capture's largest need (the capture must be taken again).
  bool grow_bf16_after_capture() const;

 private:
  void grow_bf16(size_t n) const;
  int device_ = 0;
  float* reduce_scratch_ = nullptr;
  size_t reduce_scratch_floats_ = 0;
  // The BF16 workspace (mutable: ops take a const Context; a cache of scratch memory).
  mutable void* bf16_ = nullptr;
  mutable size_t bf16_n_ = 0;
  mutable size_t bf16_needed_in_capture_ = 0;  // largest unmet need of the running capture
  mutable std::vector<void*> bf16_retired_;    // outgrown buffers, freed with the context
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  Precision precision_ = Precision::kFp32;
};

// A CUDA Graph captured from the work one callable enqueues on a context's stream, then
// replayed. Capture records kernels, cuBLAS calls and async copies without running them; the
// callable must therefore neither allocate nor synchronise nor read device results on the
// host. Replays see the device memory as it is at replay time (device step counters etc.).
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // The body runs a second time when its first capture found the context's BF16 workspace too
  // small (the first bf16 capture on a context without a warm-up run): that capture is
  // discarded, the workspace grown to what it needed, and the body captured again. So a body
  // must enqueue the same work each time it runs (every body here does).
  template <typename F>
  void capture(const Context& ctx, F&& body) {
    for (int attempt = 0;; ++attempt) {
      begin_capture(ctx);
      body();
      if (end_capture(ctx, attempt)) return;
    }
  }
  void launch(const Context& ctx) const;  // asynchronous; ordered on ctx's stream
  void reset();                           // back to empty (capture again before launching)
  bool ready() const { return exec_ != nullptr; }
  size_t node_count() const;  // kernels, GEMM kernels and copies in the graph

 private:
  void begin_capture(const Context& ctx);
  // Ends the capture and instantiates it; false (nothing instantiated) when it must be taken
  // again because the BF16 workspace grew.
  bool end_capture(const Context& ctx, int attempt);
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Times work on a stream with CUDA events: start() records, stop() records and waits, and
// returns the elapsed milliseconds between the two.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(const Context& ctx);
  float stop_ms(const Context& ctx);

 private:
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
};

// Per-phase times of enqueued, uncaptured work (profiling only): begin() records a start
// event, mark(name) an event ending phase `name`; end(weight) waits for the stream and adds
// each phase's milliseconds times `weight` into totals(), matched by position (names from the
// first pass). One mechanism for the training step's phase profile and the bench's B = 1
// layer profile (both mark through PerceptionGpu::set_marker).
class PhaseTimer {
 public:
  explicit PhaseTimer(const Context& ctx) : ctx_(ctx) {}
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  void begin();
  void mark(const char* phase);
  void end(double weight);
  const std::vector<std::pair<std::string, double>>& totals() const { return totals_; }

 private:
  void release();
  const Context& ctx_;
  std::vector<std::pair<const char*, cudaEvent_t>> marks_;  // [0] = the start event
  std::vector<std::pair<std::string, double>> totals_;
};

// ---- dense products (row-major views over cuBLAS's column-major GEMM) ---------------------------
// C[m, n] = alpha * op(A) op(B) + beta * C, all row-major; op(A) is [m, k] (A is [k, m] when
// trans_a), op(B) is [k, n] (B is [n, k] when trans_b). lda/ldb/ldc are row strides.
// Products of at most kSmallGemmRows output rows (one window at B = 1, a head at the last
// position, a few RL lanes) run on the project's own tiled kernel instead of cuBLAS: one node,
// no split-K, an FP32 sum in increasing k in every precision mode (docs/GPU.md "Small
// products"). gemm_tn_rows always uses cuBLAS. Every cuBLAS product follows ctx.precision():
// FP32 or TF32 compute on FP32 operands, or (bf16) A and B converted to BF16 (round to nearest
// even) into ctx.bf16_workspace() and multiplied with FP32 accumulation into the FP32 C.
constexpr int kSmallGemmRows = 64;
void gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
// The same for `batch` independent products at element strides stride_a/b/c (0 = shared).
void gemm_batched(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, long long stride_a, const float* b, int ldb,
                  long long stride_b, float beta, float* c, int ldc, long long stride_c, int batch);

// C[m, n] = beta C + A^T B summed over k rows; A is [k, m] (row stride lda), B is [k, n] (ldb):
// the weight-gradient shape (k = B*K rows, outputs of a few hundred to a few ten thousand
// elements). A single GEMM of that shape runs on a handful of output tiles that each loop over
// all k rows; this splits k into chunks of ~k/64 rows (split_rows), computes one partial product
// per chunk with strided-batched GEMMs into ctx.reduce_scratch(), then adds the chunks in order.
// Deterministic: the chunking is a function of the shape only. `batch` independent problems
// at element strides sa, sb, sc (sb = 0: B shared); beta is 0 (C overwritten, not read) or 1.
void gemm_tn_rows(const Context& ctx, int m, int n, int k, const float* a, int lda, long long sa,
                  const float* b, int ldb, long long sb, float beta, float* c, int ldc,
                  long long sc, int batch = 1);

// c[p * sc + i * ldc + j] = (accumulate ? c[...] : 0) + sum_{ch < chunks} part[((ch * batch + p) * m
// + i) * n + j], chunks added in index order: the second stage of a split-row reduction whose
// first stage wrote per-chunk partials (e.g. into ctx.reduce_scratch()).
void add_chunk_partials(const Context& ctx, const float* part, int chunks, int batch, int m, int n,
                        bool accumulate, float* c, int ldc, long long sc);

// ---- linear layer: y = x W^T (+ b), as model::linear_forward ----------------------------------
// x [rows, in], w [out, in], b [out] or nullptr, y [rows, out] (overwritten).
void linear_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                    int rows, int in, int out);
// dx += dy W;  dw += dy^T x;  db += sum_r dy. Any of dx, dw, db may be nullptr (skipped).
void linear_backward(const Context& ctx, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, int rows, int in, int out);

// Grid-stride kernels over n elements index in uint32_t when this holds (64-bit division and
// modulo are long instruction sequences on the GPU), else in uint64_t: below 2^31 the stride
// added to an index cannot wrap a uint32_t.
inline bool fits_index32(size_t n) { return n < (size_t{1} << 31); }

// Blocks of `threads` for a grid-stride kernel over n elements: ceil(n / threads), at least 1,
// at most max_blocks (the kernel's stride loop covers the rest).
inline int grid_stride_blocks(size_t n, int threads, int max_blocks = 4096) {
  const size_t g = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  return static_cast<int>(g < 1 ? 1 : (g > static_cast<size_t>(max_blocks) ? max_blocks : g));
}

// ---- small deterministic helpers ----------------------------------------------------------------
// out[c] = (accumulate ? out[c] : 0) + sum_{r < rows} x[r * ld + c] for c < cols, summed in a
// fixed order: rows split into chunks (split_rows) summed by separate blocks (a fixed partition
// of a chunk's rows per thread, then an ordered tree in shared memory), then the chunks' partials
// added in order.
void column_sum(const Context& ctx, const float* x, int rows, int cols, int ld, float* out,
                bool accumulate);
void fill(const Context& ctx, float* p, float value, size_t n);
// y[r, c] = b[c] for every row (the bias term of a linear layer).
void broadcast_rows(const Context& ctx, const float* b, float* y, int rows, int cols);
// y[i] += x[i]
void add_inplace(const Context& ctx, const float* x, float* y, size_t n);
// Asynchronous device-to-device copy on the context's stream.
void copy(const Context& ctx, const float* src, float* dst, size_t n);

}  // namespace fxt::gpu
