// CUDA runtime basics: error checks, the stream/cuBLAS context, row-major GEMM wrappers and the
// deterministic column sum used for bias gradients.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <cuda_bf16.h>

#include "gpu/runtime.h"

namespace fxt::gpu {

bool cuda_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return false;
  }
  return count > 0;
}

void cuda_fail(const char* what, const char* error, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, error);
  std::fflush(stderr);
  std::abort();
}

namespace {
// The out-of-memory failure as one line: where, and how much of the device was free.
[[noreturn]] void out_of_device_memory(const char* what, const char* file, int line) {
  cudaGetLastError();  // clear the (non-sticky) allocation error
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
  std::string_view where(file);
  if (const size_t src = where.rfind("src/"); src != std::string_view::npos) where.remove_prefix(src);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "out of GPU memory (%s at %.*s:%d; %zu of %zu MiB free): another process may "
                "share the GPU, or lower --batch, --seq or --d-model",
                what, static_cast<int>(where.size()), where.data(), line, free_bytes >> 20,
                total_bytes >> 20);
  throw DeviceOutOfMemory(buf);
}
}  // namespace

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation) out_of_device_memory(what, file, line);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
  cuda_fail(what, buf, file, line);
}

void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) out_of_device_memory(what, file, line);
  cuda_fail(what, cublasGetStatusString(s), file, line);
}

namespace {
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper
// Split-row partials: 8 M floats (32 MB) hold 64 chunks of a 548 x 128 weight gradient
// (Mamba2's in_proj at d_model 128); larger products get fewer, longer chunks.
constexpr size_t kReduceScratchFloats = size_t{8} << 20;
}  // namespace

Context::Context(int device) : device_(device) {
  FXT_CUDA_CHECK(cudaSetDevice(device));
  FXT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  FXT_CUBLAS_CHECK(cublasCreate(&blas_));
  FXT_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  FXT_CUDA_CHECK(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
  FXT_CUBLAS_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  FXT_CUBLAS_CHECK(cublasSetPointerMode(blas_, CUBLAS_POINTER_MODE_HOST));
  FXT_CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void**>(&reduce_scratch_), kReduceScratchFloats * sizeof(float)));
  reduce_scratch_floats_ = kReduceScratchFloats;
}

Context::~Context() {
  if (bf16_) cudaFree(bf16_);
  for (void* p : bf16_retired_) cudaFree(p);
  if (reduce_scratch_) cudaFree(reduce_scratch_);
  if (blas_) cublasDestroy(blas_);
  if (blas_workspace_) cudaFree(blas_workspace_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Context::grow_bf16(size_t n) const {
  void* p = nullptr;
  FXT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(__nv_bfloat16)));
  if (bf16_) bf16_retired_.push_back(bf16_);  // a captured graph may still read it
  bf16_ = p;
  bf16_n_ = n;
}

void* Context::bf16_workspace(size_t n) const {
  if (n <= bf16_n_) return bf16_;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  FXT_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
  if (status != cudaStreamCaptureStatusNone) {
    bf16_needed_in_capture_ = std::max(bf16_needed_in_capture_, n);
    return nullptr;
  }
  grow_bf16(std::max(n, 2 * bf16_n_));
  return bf16_;
}

bool Context::grow_bf16_after_capture() const {
  const size_t need = bf16_needed_in_capture_;
  bf16_needed_in_capture_ = 0;
  if (need <= bf16_n_) return false;
  grow_bf16(need);
  return true;
}

std::string Context::device_name() const {
  cudaDeviceProp p{};
  FXT_CUDA_CHECK(cudaGetDeviceProperties(&p, device_));
  return p.name;
}

Graph::~Graph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void Graph::reset() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

void Graph::begin_capture(const Context& ctx) {
  reset();
  FXT_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
}

bool Graph::end_capture(const Context& ctx, int attempt) {
  FXT_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph_));
  if (ctx.grow_bf16_after_capture()) {
    // Products were left out of this capture for want of BF16 workspace; it has grown now.
    if (attempt > 0) {
      cuda_fail("Graph::capture",
                "a second capture needed more BF16 workspace than the first (the captured work "
                "must enqueue the same products each time)",
                __FILE__, __LINE__);
    }
    reset();
    return false;
  }
  FXT_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  return true;
}

void Graph::launch(const Context& ctx) const {
  FXT_CUDA_CHECK(cudaGraphLaunch(exec_, ctx.stream()));
}

size_t Graph::node_count() const {
  size_t n = 0;
  if (graph_) FXT_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  return n;
}

EventTimer::EventTimer() {
  FXT_CUDA_CHECK(cudaEventCreate(&begin_));
  FXT_CUDA_CHECK(cudaEventCreate(&end_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(begin_);
  cudaEventDestroy(end_);
}

void EventTimer::start(const Context& ctx) {
  FXT_CUDA_CHECK(cudaEventRecord(begin_, ctx.stream()));
}

float EventTimer::stop_ms(const Context& ctx) {
  FXT_CUDA_CHECK(cudaEventRecord(end_, ctx.stream()));
  FXT_CUDA_CHECK(cudaEventSynchronize(end_));
  float ms = 0.0f;
  FXT_CUDA_CHECK(cudaEventElapsedTime(&ms, begin_, end_));
  return ms;
}

PhaseTimer::~PhaseTimer() { release(); }

void PhaseTimer::release() {
  for (auto& m : marks_) cudaEventDestroy(m.second);
  marks_.clear();
}

void PhaseTimer::begin() {
  release();
  mark("");
}

void PhaseTimer::mark(const char* phase) {
  cudaEvent_t e;
  FXT_CUDA_CHECK(cudaEventCreate(&e));
  FXT_CUDA_CHECK(cudaEventRecord(e, ctx_.stream()));
  marks_.emplace_back(phase, e);
}

void PhaseTimer::end(double weight) {
  ctx_.sync();
  for (size_t j = 1; j < marks_.size(); ++j) {
    float ms = 0.0f;
    FXT_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[j - 1].second, marks_[j].second));
    if (totals_.size() < j) totals_.emplace_back(marks_[j].first, 0.0);
    totals_[j - 1].second += static_cast<double>(ms) * weight;
  }
  release();
}

namespace {
// The cuBLAS compute type of a precision. FP32 and TF32 read FP32 operands; TF32 lets cuBLAS run
// tensor-core kernels that read them rounded to TF32. bf16 hands cuBLAS BF16 operands
// (converted below) with CUBLAS_COMPUTE_32F: BF16 tensor-core products, FP32 accumulation.
cublasComputeType_t compute_type(Precision p) {
  return p == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// ---- BF16 operands (Precision::kBf16) ----------------------------------------------------------
// One operand as a product reads it: `batch` row-major matrices of rows x cols at row stride ld,
// matrix q at element offset q * stride (stride 0: one matrix shared by every product).
struct Operand {
  const float* p;
  int rows, cols, ld;
  long long stride;
  int batch;
  long long matrices() const { return stride == 0 ? 1 : batch; }
  size_t packed() const {
    return static_cast<size_t>(matrices()) * static_cast<size_t>(rows) * static_cast<size_t>(cols);
  }
};

// dst[(q * rows + r) * cols + c] = bf16_rn(src[q * stride + r * ld + c]): exactly the elements
// the product reads, packed (row stride cols, matrix stride rows * cols). Launch: block (32, 8),
// threads along a row's columns (coalesced), grid-stride over columns (x) and over the
// matrices' rows (y, capped at 65,535 blocks). Elementwise, so deterministic.
__global__ void to_bf16_kernel(const float* __restrict__ src, int rows, int cols, int ld,
                               long long stride, long long total_rows,
                               __nv_bfloat16* __restrict__ dst) {
  for (long long row = blockIdx.y * static_cast<long long>(blockDim.y) + threadIdx.y;
       row < total_rows; row += static_cast<long long>(gridDim.y) * blockDim.y) {
    const long long q = row / rows, r = row - q * rows;
    const float* s = src + q * stride + r * ld;
    __nv_bfloat16* d = dst + row * cols;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
      d[c] = __float2bfloat16_rn(s[c]);
  }
}

void to_bf16(const Context& ctx, const Operand& o, __nv_bfloat16* dst) {
  const long long total_rows = o.matrices() * o.rows;
  if (total_rows == 0 || o.cols == 0) return;
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>(std::min((o.cols + 31) / 32, 64)),
                  static_cast<unsigned>(std::min<long long>((total_rows + 7) / 8, 65535)));
  to_bf16_kernel<<<grid, block, 0, ctx.stream()>>>(o.p, o.rows, o.cols, o.ld, o.stride, total_rows,
                                                   dst);
  FXT_CUDA_LAUNCH_CHECK();
}

// Every cuBLAS product. Row-major C = A B is column-major C^T = B^T A^T: swap the operands and
// the m/n roles. `batched`: cublasGemmStridedBatchedEx over `batch` products, else one
// cublasGemmEx (batch 1, strides unused). In bf16 the operands are first converted into the
// context's workspace (A packed at its start, B after it at a 256-byte boundary) and cuBLAS reads
// them there: CUDA_R_16BF A and B, CUDA_R_32F C and scale, CUBLAS_COMPUTE_32F.
void cublas_product(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k,
                    float alpha, const float* a, int lda, long long stride_a, const float* b,
                    int ldb, long long stride_b, float beta, float* c, int ldc, long long stride_c,
                    int batch, bool batched) {
  const void* pa = a;
  const void* pb = b;
  cudaDataType_t type = CUDA_R_32F;
  if (ctx.precision() == Precision::kBf16 && k > 0) {  // k = 0 reads no operand: C = beta C
    const Operand oa{a, trans_a ? k : m, trans_a ? m : k, lda, batched ? stride_a : 0, batch};
    const Operand ob{b, trans_b ? n : k, trans_b ? k : n, ldb, batched ? stride_b : 0, batch};
    const size_t off_b = (oa.packed() + 127) / 128 * 128;
    auto* ws = static_cast<__nv_bfloat16*>(ctx.bf16_workspace(off_b + ob.packed()));
    if (ws == nullptr) return;  // a sizing capture: discarded and taken again (Graph::capture)
    to_bf16(ctx, oa, ws);
    to_bf16(ctx, ob, ws + off_b);
    pa = ws, pb = ws + off_b;
    lda = std::max(1, oa.cols), ldb = std::max(1, ob.cols);
    stride_a = oa.stride == 0 ? 0 : static_cast<long long>(oa.rows) * oa.cols;
    stride_b = ob.stride == 0 ? 0 : static_cast<long long>(ob.rows) * ob.cols;
    type = CUDA_R_16BF;
  }
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batched) {
    FXT_CUBLAS_CHECK(
        cublasGemmStridedBatchedEx(ctx.blas(), op_b, op_a, n, m, k, &alpha, pb, type, ldb, stride_b,
                                   pa, type, lda, stride_a, &beta, c, CUDA_R_32F, ldc, stride_c,
                                   batch, compute_type(ctx.precision()), CUBLAS_GEMM_DEFAULT));
  } else {
    FXT_CUBLAS_CHECK(cublasGemmEx(ctx.blas(), op_b, op_a, n, m, k, &alpha, pb, type, ldb, pa, type,
                                  lda, &beta, c, CUDA_R_32F, ldc, compute_type(ctx.precision()),
                                  CUBLAS_GEMM_DEFAULT));
  }
}

void cublas_gemm_batched(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k,
                         float alpha, const float* a, int lda, long long stride_a, const float* b,
                         int ldb, long long stride_b, float beta, float* c, int ldc,
                         long long stride_c, int batch) {
  cublas_product(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                 ldc, stride_c, batch, /*batched=*/true);
}

void cublas_gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cublas_product(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1,
                 /*batched=*/false);
}

// ---- small products (m <= kSmallGemmRows) ------------------------------------------------------
// At one window (B = 1: 64 rows, or 1 row at the last position) cuBLAS picks SIMT kernels with
// split-K reductions that run 5-13 us and two graph nodes each on an idle GPU; a product that
// small is latency, not arithmetic. This kernel gives each block a 16 x 16 output tile and
// stages A and B through shared memory in k-chunks of 64, every thread issuing its loads for
// a chunk before the one barrier, so a 64 x 548 x 128 product is ~140 blocks of two chunks.
// Each output is one FP32 sum in increasing k (deterministic, FP32 in every precision mode).
// Launch: grid (ceil(n/16), ceil(m/16), batch), block 256 = 16 x 16 threads.
constexpr int kSmallTile = 16, kSmallChunk = 64, kSmallThreads = kSmallTile * kSmallTile;

// Element e (< kSmallTile * kSmallChunk) of an operand's tile for the chunk at k0, as an
// (outer index o, chunk index kk) pair: A's outer index is its row i, B's its column j. Stored
// k-contiguous (A [m, k], B^T [n, k]) or outer-contiguous (A^T [k, m], B [k, n]); e walks the
// contiguous dimension fastest so that consecutive threads read consecutive addresses.
template <bool KContiguous>
__device__ __forceinline__ float small_tile_element(const float* __restrict__ p, int ld, int e,
                                                    int o0, int o_end, int k0, int k, int& o,
                                                    int& kk) {
  if (KContiguous) {
    o = e / kSmallChunk, kk = e % kSmallChunk;
  } else {
    kk = e / kSmallTile, o = e % kSmallTile;
  }
  const int og = o0 + o, kg = k0 + kk;
  if (og >= o_end || kg >= k) return 0.0f;
  return KContiguous ? p[static_cast<long long>(og) * ld + kg]
                     : p[static_cast<long long>(kg) * ld + og];
}

template <bool TransA, bool TransB>
__global__ void small_gemm_kernel(int m, int n, int k, float alpha, const float* __restrict__ a,
                                  int lda, long long sa, const float* __restrict__ b, int ldb,
                                  long long sb, float beta, float* __restrict__ c, int ldc,
                                  long long sc, const float* __restrict__ bias) {
  __shared__ float as[kSmallTile][kSmallChunk + 1];  // as[row][kk]
  __shared__ float bs[kSmallChunk][kSmallTile + 1];  // bs[kk][col]
  const int tid = threadIdx.x, tx = tid % kSmallTile, ty = tid / kSmallTile;
  const int i0 = blockIdx.y * kSmallTile, j0 = blockIdx.x * kSmallTile;
  a += blockIdx.z * sa;
  b += blockIdx.z * sb;
  c += blockIdx.z * sc;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kSmallChunk) {
    // 1,024 elements of each tile per chunk, 4 per thread.
#pragma unroll
    for (int r = 0; r < kSmallTile * kSmallChunk / kSmallThreads; ++r) {
      const int e = tid + r * kSmallThreads;
      int row, col, kk;
      const float v = small_tile_element<!TransA>(a, lda, e, i0, m, k0, k, row, kk);
      as[row][kk] = v;
      const float w = small_tile_element<TransB>(b, ldb, e, j0, n, k0, k, col, kk);
      bs[kk][col] = w;
    }
    __syncthreads();
    const int kn = min(kSmallChunk, k - k0);
    for (int kk = 0; kk < kn; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  const int i = i0 + ty, j = j0 + tx;
  if (i < m && j < n) {
    float* out = c + static_cast<long long>(i) * ldc + j;
    const float v = bias != nullptr ? alpha * acc + bias[j] : alpha * acc;
    *out = beta == 0.0f ? v : v + beta * *out;
  }
}

void small_gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                const float* a, int lda, long long sa, const float* b, int ldb, long long sb,
                float beta, float* c, int ldc, long long sc, int batch,
                const float* bias = nullptr) {
  const dim3 grid((n + kSmallTile - 1) / kSmallTile, (m + kSmallTile - 1) / kSmallTile, batch);
  auto launch = [&](auto kernel) {
    kernel<<<grid, kSmallThreads, 0, ctx.stream()>>>(m, n, k, alpha, a, lda, sa, b, ldb, sb, beta,
                                                     c, ldc, sc, bias);
  };
  if (trans_a)
    trans_b ? launch(small_gemm_kernel<true, true>) : launch(small_gemm_kernel<true, false>);
  else
    trans_b ? launch(small_gemm_kernel<false, true>) : launch(small_gemm_kernel<false, false>);
  FXT_CUDA_LAUNCH_CHECK();
}

// The small kernel takes products of at most kSmallGemmRows output rows (one window at B = 1,
// a last-position head, a few RL lanes); batch <= 65,535 is the grid's z limit.
// FXT_SMALL_GEMM=0 in the environment sends every product to cuBLAS (read once; for measuring
// the two paths in one process, like FXT_LANES_PER_BLOCK for the sweep lanes).
bool small_gemm_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FXT_SMALL_GEMM");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

bool use_small_gemm(int m, int n, int k, int batch) {
  return m <= kSmallGemmRows && n > 0 && k > 0 && batch <= 65535 && small_gemm_enabled();
}
}  // namespace

void gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (use_small_gemm(m, n, k, 1)) {
    small_gemm(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
    return;
  }
  cublas_gemm(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_batched(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, long long stride_a, const float* b, int ldb,
                  long long stride_b, float beta, float* c, int ldc, long long stride_c,
                  int batch) {
  if (m <= 0 || n <= 0 || batch <= 0) return;
  if (use_small_gemm(m, n, k, batch)) {
    small_gemm(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
               ldc, stride_c, batch);
    return;
  }
  cublas_gemm_batched(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b,
                      beta, c, ldc, stride_c, batch);
}

void linear_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                    int rows, int in, int out) {
  if (b && use_small_gemm(rows, out, in, 1)) {
    // y = x W^T + b in one launch (the bias added to each finished sum, as beta = 1 onto the
    // broadcast below would).
    small_gemm(ctx, false, true, rows, out, in, 1.0f, x, in, 0, w, in, 0, 0.0f, y, out, 0, 1, b);
    return;
  }
  if (b) {
    // y = broadcast(b), then y += x W^T: one GEMM with beta = 1.
    broadcast_rows(ctx, b, y, rows, out);
    gemm(ctx, false, true, rows, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
  } else {
    gemm(ctx, false, true, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  }
}

void linear_backward(const Context& ctx, const float* x, const float* w, const float* dy, float* dx,
                     float* dw, float* db, int rows, int in, int out) {
  if (dx) gemm(ctx, false, false, rows, in, out, 1.0f, dy, out, w, in, 1.0f, dx, in);
  if (dw) gemm_tn_rows(ctx, out, in, rows, dy, out, 0, x, in, 0, 1.0f, dw, in, 0);
  if (db) column_sum(ctx, dy, rows, out, out, db, /*accumulate=*/true);
}

namespace {

// I: the element index type (fits_index32).
template <typename I>
__global__ void broadcast_rows_kernel(const float* b, float* y, int rows, int cols) {
  const I n = static_cast<I>(rows) * cols;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    y[i] = b[i % static_cast<I>(cols)];
  }
}

// Launch: grid (ceil(cols / 32), chunks), a block of 32 x 16 threads per 32 columns of one chunk
// of rows [y * chunk_rows, min(rows, (y + 1) * chunk_rows)). Thread (tx, ty) sums the chunk's
// rows ty, ty + 16, ... of column c in order; the 16 partials are then combined by a fixed
// shared-memory tree into out[y * cols + c].
constexpr int kColTile = 32, kRowLanes = 16;
__global__ void column_sum_kernel(const float* x, int rows, int chunk_rows, int cols, int ld,
                                  float* out, bool accumulate) {
  __shared__ float part[kRowLanes][kColTile + 1];
  const int c = blockIdx.x * kColTile + threadIdx.x;
  const int begin = blockIdx.y * chunk_rows;
  const int end = min(rows, begin + chunk_rows);
  out += static_cast<long long>(blockIdx.y) * cols;
  float s = 0.0f;
  if (c < cols) {
    for (int r = begin + threadIdx.y; r < end; r += kRowLanes)
      s += x[static_cast<long long>(r) * ld + c];
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  for (int w = kRowLanes / 2; w > 0; w /= 2) {
    if (threadIdx.y < w) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + w][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < cols) out[c] = (accumulate ? out[c] : 0.0f) + part[0][threadIdx.x];
}

__global__ void fill_kernel(float* p, float v, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

__global__ void add_kernel(const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

// c[p * sc + i * ldc + j] = (beta ? c[...] : 0) + sum_{ch < chunks} part[(ch * batch + p) * m * n
// + i * n + j], chunks added in index order. Launch: grid-stride, a thread per output element.
__global__ void sum_chunks_kernel(const float* __restrict__ part, int chunks, int batch, int m,
                                  int n, bool accumulate, float* c, int ldc, long long sc) {
  // 32-bit index division (64-bit division is slow on the GPU): the outputs number < 2^31, as
  // chunks x outputs partials sit in device memory (add_chunk_partials checks).
  const uint32_t mn = static_cast<uint32_t>(m) * static_cast<uint32_t>(n);
  const uint32_t total = mn * static_cast<uint32_t>(batch);
  for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
    const uint32_t pq = e / mn, ijq = e - pq * mn;
    const long long p = pq, ij = ijq;
    const long long i = ijq / static_cast<uint32_t>(n), j = ij - i * n;
    float s = 0.0f;
    for (int ch = 0; ch < chunks; ++ch)
      s += part[(ch * static_cast<long long>(batch) + p) * mn + ij];
    float* out = c + p * sc + i * ldc + j;
    *out = accumulate ? *out + s : s;
  }
}

// How k rows are split for a split-row reduction whose partial for one chunk holds
// `chunk_floats` floats: chunks of ~k / kTargetChunks rows (at least kMinChunkRows, a multiple
// of 32), as many as the context's scratch holds. A function of the shape only, so the sums'
// order never changes between runs.
struct RowSplit {
  int chunks = 1;
  int chunk_rows = 0;
};
constexpr int kMinChunkRows = 128, kTargetChunks = 64;
constexpr int kColumnSumOnePass = 2048;
RowSplit split_rows(int k, size_t chunk_floats, size_t scratch_floats) {
  RowSplit s{1, k};
  if (k < 2 * kMinChunkRows || chunk_floats == 0) return s;
  const size_t cap = scratch_floats / chunk_floats;
  if (cap < 2) return s;
  int rows = (k + kTargetChunks - 1) / kTargetChunks;
  rows = std::max(kMinChunkRows, (rows + 31) / 32 * 32);
  int chunks = (k + rows - 1) / rows;
  if (static_cast<size_t>(chunks) > cap) {
    rows = static_cast<int>((k + cap - 1) / cap);
    rows = (rows + 31) / 32 * 32;
    chunks = (k + rows - 1) / rows;
  }
  if (chunks < 2) return s;
  s.chunks = chunks;
  s.chunk_rows = rows;
  return s;
}

}  // namespace

void add_chunk_partials(const Context& ctx, const float* part, int chunks, int batch, int m, int n,
                        bool accumulate, float* c, int ldc, long long sc) {
  const size_t total = static_cast<size_t>(batch) * m * n;
  if (total >= (size_t{1} << 31)) {
    cuda_fail("add_chunk_partials", "more than 2^31 outputs", __FILE__, __LINE__);
  }
  sum_chunks_kernel<<<grid_stride_blocks(total, 256), 256, 0, ctx.stream()>>>(
      part, chunks, batch, m, n, accumulate, c, ldc, sc);
  FXT_CUDA_LAUNCH_CHECK();
}

void gemm_tn_rows(const Context& ctx, int m, int n, int k, const float* a, int lda, long long sa,
                  const float* b, int ldb, long long sb, float beta, float* c, int ldc,
                  long long sc, int batch) {
  if (m <= 0 || n <= 0 || batch <= 0) return;
  const long long mn = static_cast<long long>(m) * n;
  const RowSplit s = split_rows(k, static_cast<size_t>(mn) * batch, ctx.reduce_scratch_floats());
  if (s.chunks <= 1) {
    cublas_gemm_batched(ctx, true, false, m, n, k, 1.0f, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                        batch);
    return;
  }
  float* part = ctx.reduce_scratch();  // [chunks][batch][m][n]
  const int kc = s.chunk_rows;
  const int full = k / kc, tail = k - full * kc;
  const long long chunk_stride = mn * batch;
  if (batch > 1 && sa == m && sb == 0 && lda >= batch * m) {
    // The problems' A columns are adjacent and B is shared: one product with batch*m rows of
    // output per chunk fills part[ch][p][i][j] directly.
    const int mb = batch * m;
    cublas_gemm_batched(ctx, true, false, mb, n, kc, 1.0f, a, lda, static_cast<long long>(kc) * lda,
                        b, ldb, static_cast<long long>(kc) * ldb, 0.0f, part, n, chunk_stride,
                        full);
    if (tail)
      cublas_gemm(ctx, true, false, mb, n, tail, 1.0f, a + static_cast<long long>(full) * kc * lda,
                  lda, b + static_cast<long long>(full) * kc * ldb, ldb, 0.0f,
                  part + full * chunk_stride, n);
  } else {
    for (int p = 0; p < batch; ++p) {
      const float* ap = a + p * sa;
      const float* bp = b + p * sb;
      float* pp = part + p * mn;
      cublas_gemm_batched(ctx, true, false, m, n, kc, 1.0f, ap, lda,
                          static_cast<long long>(kc) * lda, bp, ldb,
                          static_cast<long long>(kc) * ldb, 0.0f, pp, n, chunk_stride, full);
      if (tail)
        cublas_gemm(
            ctx, true, false, m, n, tail, 1.0f, ap + static_cast<long long>(full) * kc * lda, lda,
            bp + static_cast<long long>(full) * kc * ldb, ldb, 0.0f, pp + full * chunk_stride, n);
    }
  }
  add_chunk_partials(ctx, part, s.chunks, batch, m, n, beta != 0.0f, c, ldc, sc);
}

void broadcast_rows(const Context& ctx, const float* b, float* y, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (fits_index32(n)) {
    broadcast_rows_kernel<uint32_t>
        <<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(b, y, rows, cols);
  } else {
    broadcast_rows_kernel<uint64_t>
        <<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(b, y, rows, cols);
  }
  FXT_CUDA_LAUNCH_CHECK();
}

void column_sum(const Context& ctx, const float* x, int rows, int cols, int ld, float* out,
                bool accumulate) {
  if (cols <= 0) return;
  const dim3 block(kColTile, kRowLanes);
  // Up to kColumnSumOnePass rows (per-sequence partials at B <= 2048) one block column sums
  // them all: a second launch to add chunks would cost more than it saves.
  const RowSplit s = rows <= kColumnSumOnePass
                         ? RowSplit{1, rows}
                         : split_rows(rows, static_cast<size_t>(cols), ctx.reduce_scratch_floats());
  if (s.chunks <= 1) {
    const dim3 grid((cols + kColTile - 1) / kColTile);
    column_sum_kernel<<<grid, block, 0, ctx.stream()>>>(x, rows, rows, cols, ld, out, accumulate);
    FXT_CUDA_LAUNCH_CHECK();
    return;
  }
  // Chunk sums into the scratch [chunks][cols], then added in chunk order.
  const dim3 grid((cols + kColTile - 1) / kColTile, s.chunks);
  column_sum_kernel<<<grid, block, 0, ctx.stream()>>>(x, rows, s.chunk_rows, cols, ld,
                                                      ctx.reduce_scratch(), false);
  FXT_CUDA_LAUNCH_CHECK();
  add_chunk_partials(ctx, ctx.reduce_scratch(), s.chunks, 1, 1, cols, accumulate, out, cols, 0);
}

void fill(const Context& ctx, float* p, float value, size_t n) {
  if (!n) return;
  fill_kernel<<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(p, value, n);
  FXT_CUDA_LAUNCH_CHECK();
}

void add_inplace(const Context& ctx, const float* x, float* y, size_t n) {
  if (!n) return;
  add_kernel<<<grid_stride_blocks(n, 256), 256, 0, ctx.stream()>>>(x, y, n);
  FXT_CUDA_LAUNCH_CHECK();
}

void copy(const Context& ctx, const float* src, float* dst, size_t n) {
  if (n)
    FXT_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()));
}

}  // namespace fxt::gpu
