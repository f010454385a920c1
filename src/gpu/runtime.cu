// CUDA runtime basics: error checks, the stream/cuBLAS context, row-major GEMM wrappers and the
// deterministic column sum used for bias gradients.
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
}

Context::Context(int device) : device_(device) {
  FXT_CUDA_CHECK(cudaSetDevice(device));
  FXT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  FXT_CUBLAS_CHECK(cublasCreate(&blas_));
  FXT_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  FXT_CUDA_CHECK(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
  FXT_CUBLAS_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  FXT_CUBLAS_CHECK(cublasSetPointerMode(blas_, CUBLAS_POINTER_MODE_HOST));
  set_tf32(false);
}

Context::~Context() {
  if (blas_) cublasDestroy(blas_);
  if (blas_workspace_) cudaFree(blas_workspace_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Context::set_tf32(bool on) {
  tf32_ = on;
  FXT_CUBLAS_CHECK(cublasSetMathMode(blas_, on ? CUBLAS_TF32_TENSOR_OP_MATH
                                               : CUBLAS_DEFAULT_MATH));
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

// Row-major C = A B is column-major C^T = B^T A^T: swap the operands and the m/n roles.
void gemm(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  FXT_CUBLAS_CHECK(cublasSgemm(ctx.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                               trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                               lda, &beta, c, ldc));
}

void gemm_batched(const Context& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, long long stride_a, const float* b, int ldb,
                  long long stride_b, float beta, float* c, int ldc, long long stride_c,
                  int batch) {
  FXT_CUBLAS_CHECK(cublasSgemmStridedBatched(
      ctx.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
      k, &alpha, b, ldb, stride_b, a, lda, stride_a, &beta, c, ldc, stride_c, batch));
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
  if (dw) gemm(ctx, true, false, out, in, rows, 1.0f, dy, out, x, in, 1.0f, dw, in);
  if (db) column_sum(ctx, dy, rows, out, out, db, /*accumulate=*/true);
}

namespace {

__global__ void broadcast_rows_kernel(const float* b, float* y, int rows, int cols) {
  const long long n = static_cast<long long>(rows) * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    y[i] = b[i % cols];
  }
}

// Launch: one block of 32 x 16 threads per 32 columns. Thread (tx, ty) sums rows ty, ty + 16,
// ... of column c in order; the 16 partials are then combined by a fixed shared-memory tree.
constexpr int kColTile = 32, kRowLanes = 16;
__global__ void column_sum_kernel(const float* x, int rows, int cols, int ld, float* out,
                                  bool accumulate) {
  __shared__ float part[kRowLanes][kColTile + 1];
  const int c = blockIdx.x * kColTile + threadIdx.x;
  float s = 0.0f;
  if (c < cols) {
    for (int r = threadIdx.y; r < rows; r += kRowLanes) s += x[static_cast<long long>(r) * ld + c];
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

int grid_for(size_t n, int threads) {
  const size_t g = (n + threads - 1) / threads;
  return static_cast<int>(g < 1 ? 1 : (g > 4096 ? 4096 : g));
}

}  // namespace

void broadcast_rows(const Context& ctx, const float* b, float* y, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  broadcast_rows_kernel<<<grid_for(n, 256), 256, 0, ctx.stream()>>>(b, y, rows, cols);
  FXT_CUDA_LAUNCH_CHECK();
}

void column_sum(const Context& ctx, const float* x, int rows, int cols, int ld, float* out,
                bool accumulate) {
  const dim3 block(kColTile, kRowLanes);
  const dim3 grid((cols + kColTile - 1) / kColTile);
  column_sum_kernel<<<grid, block, 0, ctx.stream()>>>(x, rows, cols, ld, out, accumulate);
  FXT_CUDA_LAUNCH_CHECK();
}

void fill(const Context& ctx, float* p, float value, size_t n) {
  if (!n) return;
  fill_kernel<<<grid_for(n, 256), 256, 0, ctx.stream()>>>(p, value, n);
  FXT_CUDA_LAUNCH_CHECK();
}

void add_inplace(const Context& ctx, const float* x, float* y, size_t n) {
  if (!n) return;
  add_kernel<<<grid_for(n, 256), 256, 0, ctx.stream()>>>(x, y, n);
  FXT_CUDA_LAUNCH_CHECK();
}

void copy(const Context& ctx, const float* src, float* dst, size_t n) {
  if (n)
    FXT_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()));
}

}  // namespace fxt::gpu
