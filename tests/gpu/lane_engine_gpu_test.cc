// The GPU lanes on the CUDA device (sim/lane_engine_device.cu) against the CPU replay engine:
// many mm, twap, ac and signal lanes of different parameters, queue models, latencies and fees over a
// random two-session market with a signal, over random MBO sessions and the real ES MBO store (L3
// FIFO queues and L2 estimates), lane batches,
// and the sweep table of `fxt backtest --sweep` (sweep.csv identical on cuda and cpu). Every
// fill, order, equity row, fee and stats figure must be identical. Skips without a GPU.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../sim/lane_test_util.h"
#include "core/text.h"
#include "gpu_test_util.h"
#include "sim/sweep.h"

namespace fxt::sim {
namespace {

using test::kLaneMs;
using test::random_market;
using test::write_store;

// Quantities and money to 1e-9 relative, integers exactly (test::near_equal says why).
constexpr double kRel = 1e-9;

GpuLaneOptions device_lanes() {
  GpuLaneOptions o;
  o.on_device = true;
  return o;
}

LaneMarket two_sessions_with_signal() {
  const std::string dir = fxt::test::scratch_dir();
  const std::string a = write_store(random_market(2000, 21), "a", "TEST", dir);
  const std::string b = write_store(random_market(2000, 22, 3'600'000 * kLaneMs), "b", "TEST", dir);
  auto m = open_lane_market({a, b}, {}, 0);
  EXPECT_TRUE(m.ok()) << m.status().message();
  LaneMarket market = std::move(m).value();
  auto signal = std::make_shared<SignalSeries>();
  signal->horizon = 10;
  for (const StoreReader& r : market.stores) {
    std::vector<float> p(r.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 999.0f;
    signal->per_store.push_back(std::move(p));
  }
  market.inputs.signal = signal;
  return market;
}

TEST(LaneEngineGpu, EveryDeviceLaneEqualsTheCpuEngine) {
  FXT_SKIP_WITHOUT_GPU();
  const LaneMarket market = two_sessions_with_signal();
  std::vector<Lane> lanes = test::mm_lanes(96);
  const std::string curve = fxt::test::scratch_dir() + "/latency.csv";
  std::ofstream(curve) << "ts_ns,entry_ns,response_ns\n0,100000,2000000\n"
                       << 7'200'000 * kLaneMs << ",5000000,300000\n";
  for (size_t i = 0; i < lanes.size(); i += 5) lanes[i].sim.latency.file = curve;  // recorded
  const GpuLaneReport report =
      test::expect_gpu_lanes_equal_cpu(market, lanes, device_lanes(), true, kRel);
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
}

TEST(LaneEngineGpu, ExecutionAndSignalLanesOnTheDeviceEqualTheCpuEngine) {
  // twap/ac lanes (market and IOC children walking levels, the liquidity memory, lots) and
  // signal lanes (market and passive entry, Kelly, holding times) next to mm lanes in one batch.
  FXT_SKIP_WITHOUT_GPU();
  const LaneMarket market = two_sessions_with_signal();
  std::vector<Lane> lanes = test::exec_lanes(32);
  for (const Lane& l : test::signal_lanes(32)) lanes.push_back(l);
  for (const Lane& l : test::mm_lanes(16)) lanes.push_back(l);
  const GpuLaneReport report =
      test::expect_gpu_lanes_equal_cpu(market, lanes, device_lanes(), true, kRel);
  EXPECT_EQ(report.cpu_fallback_lanes, 0u);
}

TEST(LaneEngineGpu, BatchesOnTheDeviceDoNotChangeResults) {
  FXT_SKIP_WITHOUT_GPU();
  const LaneMarket market = two_sessions_with_signal();
  const std::vector<Lane> lanes = test::mm_lanes(40);
  auto whole = run_gpu_lanes(market, lanes, device_lanes());
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  GpuLaneOptions o = device_lanes();
  o.batch = 7;
  GpuLaneReport report;
  auto batched = run_gpu_lanes(market, lanes, o, &report);
  ASSERT_TRUE(batched.ok()) << batched.status().message();
  EXPECT_EQ(report.batches, 6u);
  GpuLaneOptions host = o;
  host.on_device = false;
  host.threads = 4;
  auto on_host = run_gpu_lanes(market, lanes, host);
  ASSERT_TRUE(on_host.ok()) << on_host.status().message();
  for (size_t i = 0; i < lanes.size(); ++i) {
    // Batches on the device: the same bits; the device against host threads: kRel.
    test::expect_identical((*whole)[i], (*batched)[i], "batched lane " + std::to_string(i));
    test::expect_identical((*whole)[i], (*on_host)[i], "host lane " + std::to_string(i), kRel);
  }
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LaneEngineGpu, SweepTableIsTheSameOnCudaAndCpu) {
  FXT_SKIP_WITHOUT_GPU();
  const std::string dir = fxt::test::scratch_dir();
  const std::string store = write_store(random_market(3000, 31), "store", "TEST", dir);
  const std::string grid = dir + "/grid.toml";
  std::ofstream(grid) << "strategy = \"mm\"\n[fixed]\nwarmup = 20\n"
                         "latency = \"feed=500us,entry=1ms,response=1ms\"\n"
                         "fees = \"maker=-0.2bps,taker=0.5bps\"\n[grid]\n"
                         "gamma = [0.001, 0.05, 0.3]\nrequote_ticks = [1, 2]\n"
                         "queue = [\"risk-averse\", \"power:2\", \"log\"]\n"
                         "[[lane]]\nmodel = \"glft\"\ngamma = 0.01\n";
  std::string csv[2];
  nlohmann::json json[2];
  const char* devices[2] = {"cpu", "cuda"};
  for (int k = 0; k < 2; ++k) {
    SweepSpec spec;
    spec.grid_path = grid;
    spec.stores = {store};
    spec.strategy = "mm";
    spec.device = devices[k];
    spec.threads = 2;
    spec.out_dir = dir + "/" + devices[k];
    auto out = run_sweep(spec, "");
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(out->lanes, 19u);
    csv[k] = read_all(spec.out_dir + "/sweep.csv");
    json[k] = nlohmann::json::parse(read_all(spec.out_dir + "/sweep.json"));
  }
  // sweep.csv cell by cell: text cells equal, numbers within kRel.
  std::vector<std::string> rows[2];
  for (int k = 0; k < 2; ++k) rows[k] = split_fields(csv[k], '\n');
  ASSERT_EQ(rows[0].size(), rows[1].size());
  for (size_t r = 0; r < rows[0].size(); ++r) {
    const std::vector<std::string> a = split_fields(rows[0][r], ','),
                                   b = split_fields(rows[1][r], ',');
    ASSERT_EQ(a.size(), b.size()) << "row " << r;
    for (size_t c = 0; c < a.size(); ++c) {
      char* end_a = nullptr;
      char* end_b = nullptr;
      const double x = std::strtod(a[c].c_str(), &end_a), y = std::strtod(b[c].c_str(), &end_b);
      if (r > 0 && !a[c].empty() && *end_a == '\0' && *end_b == '\0')
        EXPECT_TRUE(test::near_equal(x, y, kRel)) << "row " << r << " col " << c;
      else
        EXPECT_EQ(a[c], b[c]) << "row " << r << " col " << c;
    }
  }
  test::expect_json_near(json[0]["results"], json[1]["results"], kRel, "results");
  EXPECT_EQ(json[1]["gpu"]["cpu_fallback_lanes"], 0);
}

TEST(LaneEngineGpu, RealEsMboStoreL2LanesEqualTheCpuEngine) {
  FXT_SKIP_WITHOUT_GPU();
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = fxt::test::scratch_dir();
  const auto ingest = fxt::test::run_fxt(
      "-q ingest " + fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  auto m = open_lane_market({dir + "/es"}, {}, 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<Lane> lanes = test::mm_lanes(48);
  for (Lane& l : lanes) {
    l.sim.use_l3 = false;
    l.sim.instrument = m->instrument;
    l.sim.instrument.multiplier = 50;
  }
  test::expect_gpu_lanes_equal_cpu(*m, lanes, device_lanes(), true, kRel);
}

TEST(LaneEngineGpu, L3LanesOnTheDeviceEqualTheCpuEngine) {
  // L3 FIFO queues (order events in the stream) over random MBO sessions and an L2 session
  // between them: mm, signal and twap/ac lanes next to L2-estimate lanes (two streams), staged
  // in windows of the kernel's shared memory across sessions.
  FXT_SKIP_WITHOUT_GPU();
  const std::string dir = fxt::test::scratch_dir();
  auto m = open_lane_market({test::random_mbo_store(8000, 41, 0, "a", dir),
                             write_store(random_market(1000, 42, 3'600'000 * kLaneMs), "b",
                                         "TEST", dir),
                             test::random_mbo_store(8000, 43, 7'200'000 * kLaneMs, "c", dir)},
                            {}, 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  LaneMarket market = std::move(m).value();
  auto signal = std::make_shared<SignalSeries>();
  signal->horizon = 10;
  for (const StoreReader& r : market.stores) {
    std::vector<float> p(r.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 999.0f;
    signal->per_store.push_back(std::move(p));
  }
  market.inputs.signal = signal;
  std::vector<Lane> lanes = test::mm_lanes(48);
  for (const Lane& l : test::signal_lanes(16)) lanes.push_back(l);
  for (const Lane& l : test::exec_lanes(16)) lanes.push_back(l);
  for (size_t i = 0; i < lanes.size(); i += 4) lanes[i].sim.use_l3 = false;  // L2 estimates
  // A few signal lanes (40 ms entry latency against events ~1 ms apart) run out of order
  // slots and rerun on the CPU, L3 or not; every other lane stays on the device.
  const GpuLaneReport report =
      test::expect_gpu_lanes_equal_cpu(market, lanes, device_lanes(), true, kRel);
  EXPECT_LE(report.cpu_fallback_lanes, 5u);
}

TEST(LaneEngineGpu, RealEsMboStoreL3LanesEqualTheCpuEngine) {
  FXT_SKIP_WITHOUT_GPU();
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string dir = fxt::test::scratch_dir();
  const auto ingest = fxt::test::run_fxt(
      "-q ingest " + fxt::test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
      fxt::test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + dir + "/es");
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  auto m = open_lane_market({dir + "/es"}, {}, 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<Lane> lanes = test::mm_lanes(48);
  for (Lane& l : lanes) {
    l.sim.instrument = m->instrument;
    l.sim.instrument.multiplier = 50;
  }
  test::expect_gpu_lanes_equal_cpu(*m, lanes, device_lanes(), true, kRel);
}

}  // namespace
}  // namespace fxt::sim
