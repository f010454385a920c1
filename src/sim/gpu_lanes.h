// Sweep lanes as GPU lanes (DESIGN §7.5, docs/SWEEP.md "GPU lanes"): the bridge between the
// lanes of sim/lanes.h and the vectorised exchange of sim/lane_engine.h. Builds the market
// stream once from a LaneMarket, turns each Lane into a LaneConfig (refusing, with one line,
// what the GPU lanes do not have yet), runs the lanes in batches sized to memory on the CUDA
// device — or on host threads through the very same code — and turns each lane's rows back
// into a BacktestResult and the LaneOutcome that sim/lanes.h's CPU path gives.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/lane_runner.h"
#include "sim/lanes.h"

namespace fxt::sim {

// The stream of the market's stores in the replay engine's order. l3 = false: no order events
// (L2 queues everywhere). l3 = true: the order events of every store that has them (MBO), annotated
// for L3 FIFO queues (sim/lane_l3.h), and those stores' sessions marked L3; *status (may be
// null) gets the first event the lanes cannot follow exactly.
LaneStreamData build_lane_stream(const LaneMarket& market, bool l3 = false,
                                 Status* status = nullptr);

// The lane as a GPU lane (mm, twap, ac, signal), or why it cannot be one (a twap/ac window beyond int64 slice arithmetic, the strategy's own errors). A recorded latency file is attached by run_gpu_lanes (one copy per file). A twap/ac
// lane's schedule is appended to *holdings (the stream's LaneStreamData::holdings) and its
// offset set; holdings = nullptr: the lane is only checked.
Result<LaneConfig> gpu_lane_config(const LaneMarket& market, const Lane& lane,
                                   std::vector<double>* holdings = nullptr);

struct GpuLaneOptions {
  bool on_device = true;      // false: the lanes' code on host threads (tests, no GPU)
  int threads = 1;            // host threads (on_device = false)
  size_t batch = 0;           // lanes per batch; 0: as many as fit in memory_budget
  size_t memory_budget = 0;   // bytes for lane state and rows; 0: 60% of free device memory,
                              // at most 8 GiB (the rows come back to the host) (host: 1 GiB)
  bool capture = true;        // keep fills, equity and orders (needed for stats); false: counters
  uint32_t row_capacity = 0;  // fills and orders kept per lane (0: 16384); more: CPU rerun
  Progress* progress = nullptr;  // advanced by lane-events
};

struct GpuLaneReport {
  size_t batches = 0;
  size_t batch_lanes = 0;         // lanes per batch
  size_t bytes_per_lane = 0;      // device memory per lane (state + row capacity)
  size_t stream_bytes = 0;        // the uploaded market
  size_t cpu_fallback_lanes = 0;  // lanes that overflowed the fixed state, rerun on the CPU
  double kernel_seconds = 0;      // wall time of the batches (upload excluded)
};

// Checks every lane first ("lane <i>: --device cuda: ..."), then runs them. Outcomes (and the
// sink's results) equal those of run_lanes for the same lanes. max_events > 0 (benchmarks)
// replays only the stream's first max_events rows, and then no lane is rerun on the CPU.
Result<std::vector<LaneOutcome>> run_gpu_lanes(const LaneMarket& market,
                                               const std::vector<Lane>& lanes,
                                               const GpuLaneOptions& options,
                                               GpuLaneReport* report = nullptr,
                                               const LaneSink& sink = {}, uint64_t max_events = 0);

// True when this build has the CUDA lanes and a device is present.
bool gpu_lanes_available();

}  // namespace fxt::sim
