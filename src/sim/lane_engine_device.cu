// The GPU lanes (sim/lane_engine.h) on the CUDA device: the stream uploaded once, each batch's
// lanes advanced through it chunk by chunk (a progress callback between chunks; the state
// stays in device memory in between, so chunking does not change results).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "gpu/runtime.h"
#include "sim/lane_runner.h"

namespace fxt::sim {
namespace {

constexpr unsigned kLanesPerBlock = 64;
constexpr uint64_t kWindowRows = 96;  // stream rows staged per step: ~43 KB of shared memory

// Launch-shape overrides for measuring (docs/SWEEP.md "Launch shape"): FXT_LANES_PER_BLOCK
// (threads per block) and FXT_LANE_WINDOW_ROWS (0: no staging, every read through L1/L2).
uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  return end != nullptr && *end == 0 ? x : fallback;
}

// Launch: 1-D grid of kLanesPerBlock-thread blocks, one thread per lane. The block walks the
// rows [begin, until) in windows of kWindowRows: its threads stage the window (the rows, their
// book rows and their mm estimates) in shared memory together, then each advances its own lane to
// the window's end (lanes read the same rows: one copy serves the block). LaneSim::advance is
// inlined at its one call site, so the lane's scalars (cursors, times, counts) stay in
// registers and its arrays (orders, message queues) in local memory (per-thread interleaved,
// so a warp's accesses coalesce); the state goes back to global memory at the end of the
// launch.
__global__ void advance_lanes_kernel(LaneStream stream, const LaneConfig* configs,
                                     LaneState* states, LaneFillRow* fills, LaneEquityRow* equity,
                                     LaneOrderRow* orders, uint32_t fill_cap, uint32_t equity_cap,
                                     uint32_t order_cap, size_t n_lanes, uint64_t begin,
                                     uint64_t until, uint64_t window_rows) {
  extern __shared__ uint64_t window[];  // lane_window_bytes(kWindowRows), 8-byte aligned
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool active = i < n_lanes;
  LaneState st;
  LaneConfig config;
  LaneCapture cap;
  if (active) {
    st = states[i];
    config = configs[i];
    if (fills != nullptr) {
      cap.fills = fills + i * fill_cap;
      cap.equity = equity + i * equity_cap;
      cap.orders = orders + i * order_cap;
      cap.fill_cap = fill_cap;
      cap.equity_cap = equity_cap;
      cap.order_cap = order_cap;
    }
  }
  // Windows in turn (without staging, one: the whole range). The last launch (until ==
  // stream.n) runs each lane past the last row to its end.
  // The mm table the block stages: its first lane's (a block's lanes normally share one tick;
  // a lane of another tick reads its table from global memory).
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x;
  const uint32_t mm_table =
      configs[first].strategy == kLaneStrategyMm ? configs[first].mm_table : UINT32_MAX;
  LaneStream view = stream;
  uint64_t w = begin;
  do {
    const uint64_t w_end = window_rows == 0 || until - w <= window_rows ? until : w + window_rows;
    if (window_rows > 0) {
      __syncthreads();  // every lane is done with the previous window
      lane_stage_window(stream, w, w_end, window, threadIdx.x, blockDim.x, &view, mm_table);
      __syncthreads();
    }
    if (active && !st.finished) LaneSim(view, config, &st, cap).advance(w_end);
    w = w_end;
  } while (w < until);
  if (!active) return;
  states[i] = st;
}

template <typename T>
T* upload_block(const std::vector<T>& v, void** slot) {
  void* p = nullptr;
  const size_t bytes = (v.empty() ? 1 : v.size()) * sizeof(T);
  FXT_CUDA_CHECK(cudaMalloc(&p, bytes));
  if (!v.empty())
    FXT_CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  *slot = p;
  return static_cast<T*>(p);
}

}  // namespace

DeviceLaneStream::DeviceLaneStream(const LaneStreamData& d) {
  view_.items = upload_block(d.items, &blocks_[0]);
  view_.n = d.items.size();
  view_.bid_px = upload_block(d.bid_px, &blocks_[1]);
  view_.ask_px = upload_block(d.ask_px, &blocks_[2]);
  view_.bid_sz = upload_block(d.bid_sz, &blocks_[3]);
  view_.ask_sz = upload_block(d.ask_sz, &blocks_[4]);
  view_.flags = upload_block(d.flags, &blocks_[5]);
  view_.session_start = upload_block(d.session_start, &blocks_[6]);
  view_.session_end = upload_block(d.session_end, &blocks_[7]);
  view_.latency_ts = upload_block(d.latency_ts, &blocks_[8]);
  view_.latency_entry = upload_block(d.latency_entry, &blocks_[9]);
  view_.latency_response = upload_block(d.latency_response, &blocks_[10]);
  view_.holdings = upload_block(d.holdings, &blocks_[11]);
  view_.l3_levels = upload_block(d.l3_levels, &blocks_[12]);
  view_.n_l3_levels = d.l3_levels.size();
  view_.l3_rows = upload_block(d.l3_rows, &blocks_[13]);
  view_.l3_sizes = upload_block(d.l3_sizes, &blocks_[14]);
  view_.mm_rows = upload_block(d.mm_rows, &blocks_[15]);
  view_.mm_ticks = upload_block(d.mm_ticks, &blocks_[16]);
  view_.n_mm_tables = static_cast<uint32_t>(d.mm_ticks.size());
  view_.mm_stride = d.mm_stride;
  view_.n_sessions = static_cast<uint32_t>(d.session_start.size());
}

DeviceLaneStream::~DeviceLaneStream() {
  for (void* p : blocks_)
    if (p != nullptr) cudaFree(p);
}

size_t lane_device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  FXT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

void run_lane_batch_device(const DeviceLaneStream& stream, LaneBatch* b,
                           const LaneChunkCallback& on_chunk) {
  const size_t n = b->configs.size();
  b->states.assign(n, LaneState());
  if (n == 0) return;
  gpu::DeviceBuffer<LaneConfig> configs;
  configs.upload(b->configs);
  gpu::DeviceBuffer<LaneState> states;
  states.upload(b->states);
  const bool capture = b->fill_cap > 0;
  gpu::DeviceBuffer<LaneFillRow> fills(capture ? n * b->fill_cap : 0);
  gpu::DeviceBuffer<LaneEquityRow> equity(capture ? n * b->equity_cap : 0);
  gpu::DeviceBuffer<LaneOrderRow> orders(capture ? n * b->order_cap : 0);
  const uint64_t total = stream.view().n;
  const uint64_t chunk = lane_chunk_events(total);
  const unsigned lanes_per_block =
      static_cast<unsigned>(std::max<uint64_t>(1, env_or("FXT_LANES_PER_BLOCK", kLanesPerBlock)));
  const uint64_t window_rows = env_or("FXT_LANE_WINDOW_ROWS", kWindowRows);
  const unsigned blocks = static_cast<unsigned>((n + lanes_per_block - 1) / lanes_per_block);
  const size_t shared = window_rows == 0 ? 0 : lane_window_bytes(window_rows);
  if (shared > 48 * 1024)
    FXT_CUDA_CHECK(cudaFuncSetAttribute(advance_lanes_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(shared)));
  // Without staging, the shared-memory carveout goes to L1 (lane state and stream reads).
  FXT_CUDA_CHECK(cudaFuncSetAttribute(advance_lanes_kernel,
                                      cudaFuncAttributePreferredSharedMemoryCarveout,
                                      window_rows == 0 ? 0 : -1));
  uint64_t until = 0;
  do {  // the last launch (until == total) runs every lane to its end
    const uint64_t next = total - until <= chunk ? total : until + chunk;
    advance_lanes_kernel<<<blocks, lanes_per_block, shared>>>(
        stream.view(), configs.data(), states.data(), capture ? fills.data() : nullptr,
        capture ? equity.data() : nullptr, capture ? orders.data() : nullptr, b->fill_cap,
        b->equity_cap, b->order_cap, n, until, next, window_rows);
    FXT_CUDA_LAUNCH_CHECK();
    FXT_CUDA_CHECK(cudaDeviceSynchronize());
    if (on_chunk) on_chunk((next - until) * n);
    until = next;
  } while (until < total);
  b->states = states.download();
  if (capture) {
    b->fills = fills.download();
    b->equity = equity.download();
    b->orders = orders.download();
  }
}

}  // namespace fxt::sim
