// CUDA runtime basics: error checks, the stream/cuBLAS context, row-major GEMM wrappers and the
// deterministic column sum used for bias gradients.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
  cuda_fail(what, buf, file, line);
}

void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
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
  if (reduce_scratch_) cudaFree(reduce_scratch_);
  if (blas_) cublasDestroy(blas_);
  if (blas_workspace_) cudaFree(blas_workspace_);
  if (stream_) cudaStreamDestroy(stream_);
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

void Graph::end_capture(const Context& ctx) {
  FXT_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph_));
  FXT_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
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
// The cuBLAS compute type of a precision: FP32 inputs and outputs in every mode; TF32 lets cuBLAS
// run tensor-core kernels that read the inputs rounded to TF32 and accumulate in FP32.
cublasComputeType_t compute_type(Precision p) {
  return p == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
}  // namespace

// Row-major C = A B is column-major C^T = B^T A^T: swap the operands and the m/n roles.
void gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  FXT_CUBLAS_CHECK(cublasGemmEx(ctx.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
                                ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F, ldc,
                                compute_type(ctx.precision()), CUBLAS_GEMM_DEFAULT));
}

void gemm_batched(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, long long stride_a, const float* b, int ldb,
                  long long stride_b, float beta, float* c, int ldc, long long stride_c,
                  int batch) {
  FXT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      ctx.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
      &alpha, b, CUDA_R_32F, ldb, stride_b, a, CUDA_R_32F, lda, stride_a, &beta, c, CUDA_R_32F, ldc,
      stride_c, batch, compute_type(ctx.precision()), CUBLAS_GEMM_DEFAULT));
}

void linear_forward(const Context& ctx, const float* x, const float* w, const float* b, float* y,
                    int rows, int in, int out) {
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
    gemm_batched(ctx, true, false, m, n, k, 1.0f, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
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
    gemm_batched(ctx, true, false, mb, n, kc, 1.0f, a, lda, static_cast<long long>(kc) * lda, b,
                 ldb, static_cast<long long>(kc) * ldb, 0.0f, part, n, chunk_stride, full);
    if (tail)
      gemm(ctx, true, false, mb, n, tail, 1.0f, a + static_cast<long long>(full) * kc * lda, lda,
           b + static_cast<long long>(full) * kc * ldb, ldb, 0.0f, part + full * chunk_stride, n);
  } else {
    for (int p = 0; p < batch; ++p) {
      const float* ap = a + p * sa;
      const float* bp = b + p * sb;
      float* pp = part + p * mn;
      gemm_batched(ctx, true, false, m, n, kc, 1.0f, ap, lda, static_cast<long long>(kc) * lda, bp,
                   ldb, static_cast<long long>(kc) * ldb, 0.0f, pp, n, chunk_stride, full);
      if (tail)
        gemm(ctx, true, false, m, n, tail, 1.0f, ap + static_cast<long long>(full) * kc * lda, lda,
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
