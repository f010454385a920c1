// Running GPU-style lanes (sim/lane_engine.h) in batches, on the host (threads) or on the
// CUDA device (sim/lane_engine_device.cu). The stream is built once (sim/gpu_lanes.h) and
// uploaded once per run; a batch is a set of lanes advanced together through the stream in
// chunks of events (a progress callback after each chunk). C++17-clean: included by .cu files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/lane_engine.h"

namespace fxt::sim {

// The market stream in host memory (LaneStream points into it).
struct LaneStreamData {
  std::vector<LaneItem> items;
  std::vector<int64_t> bid_px, ask_px;  // [row * kBookLevels + level]
  std::vector<double> bid_sz, ask_sz;
  std::vector<uint8_t> flags;
  std::vector<int64_t> session_start, session_end;
  std::vector<int64_t> latency_ts, latency_entry, latency_response;  // recorded curves
  std::vector<double> holdings;  // twap/ac schedules (LaneConfig::holdings_offset)
  // L3 sessions: the levels' size histories (LaneL3Level; empty without L3 sessions).
  std::vector<LaneL3Level> l3_levels;
  std::vector<uint64_t> l3_rows;
  std::vector<double> l3_sizes;
  // `mm` estimates: one table of mm_stride rows per tick in mm_ticks (add_lane_mm_table).
  std::vector<LaneMmRow> mm_rows;
  std::vector<int64_t> mm_ticks;
  uint64_t mm_stride = 0;

  LaneStream view() const {
    LaneStream s;
    s.items = items.data();
    s.n = items.size();
    s.bid_px = bid_px.data();
    s.ask_px = ask_px.data();
    s.bid_sz = bid_sz.data();
    s.ask_sz = ask_sz.data();
    s.flags = flags.data();
    s.session_start = session_start.data();
    s.session_end = session_end.data();
    s.n_sessions = static_cast<uint32_t>(session_start.size());
    s.latency_ts = latency_ts.data();
    s.latency_entry = latency_entry.data();
    s.latency_response = latency_response.data();
    s.holdings = holdings.data();
    s.l3_levels = l3_levels.data();
    s.n_l3_levels = l3_levels.size();
    s.l3_rows = l3_rows.data();
    s.l3_sizes = l3_sizes.data();
    s.mm_rows = mm_rows.data();
    s.mm_ticks = mm_ticks.data();
    s.n_mm_tables = static_cast<uint32_t>(mm_ticks.size());
    s.mm_stride = mm_stride;
    return s;
  }
  size_t bytes() const {
    return items.size() * sizeof(LaneItem) + flags.size() +
           (latency_ts.size() + latency_entry.size() + latency_response.size()) * sizeof(int64_t) +
           (bid_px.size() + ask_px.size()) * sizeof(int64_t) +
           (bid_sz.size() + ask_sz.size() + holdings.size()) * sizeof(double) +
           l3_levels.size() * sizeof(LaneL3Level) +
           l3_rows.size() * (sizeof(uint64_t) + sizeof(double)) +
           mm_rows.size() * sizeof(LaneMmRow) + mm_ticks.size() * sizeof(int64_t);
  }
};

// One batch of lanes and what they produce. Capacities 0: counters only (no rows kept).
struct LaneBatch {
  std::vector<LaneConfig> configs;
  uint32_t fill_cap = 0, equity_cap = 0, order_cap = 0;  // rows per lane
  // Outputs, lane-major: lane i's rows start at i * cap.
  std::vector<LaneState> states;
  std::vector<LaneFillRow> fills;
  std::vector<LaneEquityRow> equity;
  std::vector<LaneOrderRow> orders;

  // Device (or host) memory one lane needs: its state and its row capacity.
  size_t bytes_per_lane() const {
    return sizeof(LaneState) + sizeof(LaneConfig) + fill_cap * sizeof(LaneFillRow) +
           equity_cap * sizeof(LaneEquityRow) + order_cap * sizeof(LaneOrderRow);
  }
};

// Called as lanes advance, with the lane-events done since the last call (the device: after
// each chunk, chunk events × lanes; the host: each finished lane's events). May be called
// from several host threads at once.
using LaneChunkCallback = std::function<void(uint64_t lane_events)>;

// The `mm` estimates of every row for `tick` (mm_observe / mm_on_trade over the rows the
// strategy sees, in order), appended as a table (mm_stride = the rows now); returns its index,
// or the index of the table that tick already has.
uint32_t add_lane_mm_table(LaneStreamData* stream, int64_t tick);

// Events per chunk of a run (progress granularity): about 1/64 of the stream.
inline uint64_t lane_chunk_events(uint64_t n) {
  const uint64_t c = n / 64;
  return c < 4096 ? 4096 : c;
}

// Runs every lane of the batch to the end of the stream on `threads` host threads.
void run_lane_batch_host(const LaneStreamData& stream, LaneBatch* batch, int threads,
                         const LaneChunkCallback& on_chunk = {});

#if defined(FXT_HAVE_CUDA)
// The stream in device memory, uploaded once and reused by every batch.
class DeviceLaneStream {
 public:
  explicit DeviceLaneStream(const LaneStreamData& data);
  ~DeviceLaneStream();
  DeviceLaneStream(const DeviceLaneStream&) = delete;
  DeviceLaneStream& operator=(const DeviceLaneStream&) = delete;
  const LaneStream& view() const { return view_; }

 private:
  LaneStream view_;
  void* blocks_[17] = {};
};

// Free device memory now (bytes), for sizing batches.
size_t lane_device_free_bytes();

// Runs every lane of the batch to the end of the stream on the current CUDA device.
void run_lane_batch_device(const DeviceLaneStream& stream, LaneBatch* batch,
                           const LaneChunkCallback& on_chunk = {});
#endif

}  // namespace fxt::sim
