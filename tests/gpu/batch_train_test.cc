// Device-side batch assembly (gpu/batch.h) against the CPU path of the trainer: the anchors of
// a step equal Dataset::sample_train(Rng(seed_for_step(seed, step))), and the gathered windows
// equal Dataset::gather / gather_elapsed byte for byte, on a real Dataset of two small synthetic
// stores (built with `fxt synth` + `fxt ingest`), also through a captured CUDA Graph replayed
// with a changing device step counter.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/random.h"
#include "features/features.h"
#include "features/sequences.h"
#include "gpu/batch.h"
#include "gpu/gpu_test_util.h"
#include "test_util.h"

namespace fxt::gpu {
namespace {

namespace fs = std::filesystem;

// trainer.cc's seed_for_step (internal there), restated: the sampler seed of global step s.
uint64_t cpu_seed_for_step(uint64_t seed, int64_t step) {
  uint64_t state = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(step);
  return splitmix64(&state);
}

// Everything the device keeps for a dataset, built as the trainer would (see gpu/batch.h).
struct DeviceDataset {
  DeviceBuffer<float> features, elapsed;
  DeviceBuffer<uint8_t> labels, masks;
  DeviceBuffer<uint64_t> pool;  // anchors(kTrain) as global rows
  uint64_t pool_size = 0;
  WindowShape shape;
};

uint64_t row_of(const Dataset& ds, const Anchor& a) {
  return ds.store(a.store).offset + a.start;
}

void upload_dataset(const Dataset& ds, double unit_ns, DeviceDataset* d) {
  const int nh = ds.store(0).labels.horizons;
  std::vector<float> feat, el;
  std::vector<uint8_t> lab, msk;
  for (size_t s = 0; s < ds.store_count(); ++s) {
    const Dataset::Store& st = ds.store(s);
    ASSERT_EQ(st.offset * kFeatureDim, feat.size());  // offsets are the cumulative sizes
    const uint64_t n = st.reader.size();
    feat.insert(feat.end(), st.features.begin(), st.features.end());
    lab.insert(lab.end(), st.labels.y.begin(), st.labels.y.end());
    msk.insert(msk.end(), st.labels.mask.begin(), st.labels.mask.end());
    const size_t o = el.size();
    el.resize(o + n);
    elapsed_per_row(st.reader.ts_ns.data, n, ds.config().sequence.stride, unit_ns, el.data() + o);
  }
  d->features.upload(feat);
  d->elapsed.upload(el);
  d->labels.upload(lab);
  d->masks.upload(msk);
  std::vector<uint64_t> pool;
  for (const Anchor& a : ds.anchors(Split::kTrain)) pool.push_back(row_of(ds, a));
  d->pool.upload(pool);
  d->pool_size = pool.size();
  d->shape.window = ds.config().sequence.window;
  d->shape.stride = ds.config().sequence.stride;
  d->shape.features = kFeatureDim;
  d->shape.horizons = nh;
}

class GpuBatchTrain : public ::testing::Test {
 protected:
  // Two small synthetic stores (different seeds), one dataset over both, standardised.
  // Built without a GPU too: the host-side representation is checked everywhere.
  static void SetUpTestSuite() {
    dir_ = new std::string(fs::temp_directory_path() /
                           ("fxt-gpu-batch-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    std::vector<std::string> stores;
    for (int i = 0; i < 2; ++i) {
      const std::string dbn = *dir_ + "/m" + std::to_string(i) + ".dbn.zst";
      const std::string store = *dir_ + "/store" + std::to_string(i);
      const auto s = test::run_fxt("synth -q --events " + std::to_string(8000 + 3000 * i) +
                                   " --seed " + std::to_string(3 + i) + " --out " + dbn);
      ASSERT_EQ(s.exit_code, 0) << s.output;
      const auto g = test::run_fxt("ingest -q " + dbn + " --out " + store);
      ASSERT_EQ(g.exit_code, 0) << g.output;
      stores.push_back(store);
    }
    DatasetConfig c;
    c.sequence.window = 16;
    c.sequence.stride = 3;
    c.labels.horizons = {10, 30};
    auto ds = Dataset::open(stores, c);
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    ds_ = new Dataset(std::move(ds).value());
    ds_->standardise_features(ds_->measure_train_stats());
    unit_ns_ = ds_->median_train_gap_ns();
    if (unit_ns_ <= 0) unit_ns_ = 1.0;
  }
  static void TearDownTestSuite() {
    delete ds_;
    ds_ = nullptr;
    if (dir_) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(ds_, nullptr);
    ASSERT_GE(ds_->store_count(), 2u);
    ASSERT_GT(ds_->anchors(Split::kTrain).size(), 10u);
  }

  // The trainer's CPU batch of one step: x [B, K, 40], y and m [B, K, H], dt [B, K].
  struct HostBatch {
    std::vector<float> x, y, m, dt;
  };
  static HostBatch cpu_batch(const std::vector<Anchor>& anchors) {
    const int k = ds_->config().sequence.window;
    const int nh = ds_->store(0).labels.horizons;
    const size_t b = anchors.size();
    HostBatch h;
    h.x.resize(b * k * kFeatureDim);
    h.y.resize(b * k * nh);
    h.m.resize(b * k * nh);
    h.dt.resize(b * k);
    for (size_t j = 0; j < b; ++j) {
      const size_t o = j * static_cast<size_t>(k);
      ds_->gather(anchors[j], h.x.data() + o * kFeatureDim, h.y.data() + o * nh,
                  h.m.data() + o * nh);
      ds_->gather_elapsed(anchors[j], unit_ns_, h.dt.data() + o);
    }
    return h;
  }

  static bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }

  static std::string* dir_;
  static Dataset* ds_;
  static double unit_ns_;
};
std::string* GpuBatchTrain::dir_ = nullptr;
Dataset* GpuBatchTrain::ds_ = nullptr;
double GpuBatchTrain::unit_ns_ = 1.0;

TEST(GpuBatchSeed, StepSeedIsTrainerSeedForStep) {
  for (uint64_t seed : {0ULL, 7ULL, 123456789ULL, 0xFFFFFFFFFFFFFFFFULL}) {
    for (int64_t step : {0LL, 1LL, 2LL, 999LL, 1LL << 40}) {
      EXPECT_EQ(step_seed(seed, step), cpu_seed_for_step(seed, step)) << seed << " " << step;
    }
  }
}

// The restated generator equals fxt::Rng draw for draw, also for bounds near 2^64 where the
// rejection step discards about half of the raw outputs (host only).
TEST(GpuBatchSeed, SamplerRngIsRng) {
  for (uint64_t seed : {0ULL, 1ULL, 0x0123456789ABCDEFULL}) {
    for (uint64_t bound :
         {1ULL, 2ULL, 7ULL, 1000003ULL, (1ULL << 63) + 12345ULL, 0xFFFFFFFFFFFFFFF0ULL}) {
      Rng want(seed);
      SamplerRng got(seed);
      for (int i = 0; i < 1000; ++i) ASSERT_EQ(got.uniform(bound), want.uniform(bound)) << i;
      ASSERT_EQ(got.next(), want.next());
    }
  }
}

// Device sampler == CPU sampler over a hand-made pool of any size (pool entries are arbitrary
// row numbers, so the drawn indices are checked exactly).
TEST(GpuBatchSeed, SampleAnchorsMatchesRngOnAnyPool) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  for (uint64_t pool_size : {1ULL, 2ULL, 3ULL, 1000ULL, 65537ULL, 1000003ULL}) {
    std::vector<uint64_t> pool(pool_size);
    for (uint64_t i = 0; i < pool_size; ++i) pool[i] = i * 7919 + (i % 13);
    DeviceBuffer<uint64_t> dpool;
    dpool.upload(pool);
    for (uint64_t seed : {1ULL, 42ULL, 0xDEADBEEFCAFEULL}) {
      for (int64_t step : {0LL, 1LL, 17LL, 100000LL}) {
        for (int batch : {1, 5, 32, 256}) {
          Rng rng(cpu_seed_for_step(seed, step));
          std::vector<uint64_t> want(batch);
          for (int i = 0; i < batch; ++i) want[i] = pool[rng.uniform(pool_size)];
          DeviceBuffer<int64_t> dstep;
          dstep.upload(std::vector<int64_t>{step});
          DeviceBuffer<uint64_t> out(batch);
          sample_anchors(ctx, dpool.data(), pool_size, seed, dstep.data(), batch, out.data());
          ctx.sync();
          EXPECT_EQ(out.download(), want)
              << "pool " << pool_size << " seed " << seed << " step " << step << " batch " << batch;
        }
      }
    }
  }
}

// The device draws equal Rng's also where rejections happen (bounds near 2^64 reject about half
// of the raw outputs), so the kernel's parallel modulo falls back to the sequential stream.
TEST(GpuBatchSeed, SamplePoolIndicesMatchesRngWithRejections) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  for (uint64_t bound : {7ULL, (1ULL << 63) + 12345ULL, 0xFFFFFFFFFFFFFFF0ULL}) {
    for (int64_t step : {0LL, 3LL}) {
      for (int batch : {1, 32, 300}) {
        Rng rng(cpu_seed_for_step(9, step));
        std::vector<uint64_t> want(batch);
        for (int i = 0; i < batch; ++i) want[i] = rng.uniform(bound);
        DeviceBuffer<int64_t> dstep;
        dstep.upload(std::vector<int64_t>{step});
        DeviceBuffer<uint64_t> out(batch);
        sample_pool_indices(ctx, bound, 9, dstep.data(), batch, out.data());
        ctx.sync();
        EXPECT_EQ(out.download(), want)
            << "bound " << bound << " step " << step << " batch " << batch;
      }
    }
  }
}

// The representation of gpu/batch.h, checked on the host (no GPU needed): for every training
// anchor, indexing the concatenated arrays at row + k S reproduces Dataset::gather, and
// elapsed_per_row reproduces Dataset::gather_elapsed.
TEST_F(GpuBatchTrain, ConcatenatedRowsReproduceDatasetGather) {
  const int k = ds_->config().sequence.window, s = ds_->config().sequence.stride;
  const int nh = ds_->store(0).labels.horizons;
  std::vector<float> feat, el;
  std::vector<uint8_t> lab, msk;
  for (size_t i = 0; i < ds_->store_count(); ++i) {
    const Dataset::Store& st = ds_->store(i);
    ASSERT_EQ(st.offset * kFeatureDim, feat.size());
    feat.insert(feat.end(), st.features.begin(), st.features.end());
    lab.insert(lab.end(), st.labels.y.begin(), st.labels.y.end());
    msk.insert(msk.end(), st.labels.mask.begin(), st.labels.mask.end());
    const size_t o = el.size();
    el.resize(o + st.reader.size());
    elapsed_per_row(st.reader.ts_ns.data, st.reader.size(), s, unit_ns_, el.data() + o);
  }
  size_t checked = 0;
  bool positive_dt = false;
  for (int sp = 0; sp < 3; ++sp) {
    for (const Anchor& a : ds_->anchors(static_cast<Split>(sp))) {
      const HostBatch want = cpu_batch({a});
      const uint64_t row = row_of(*ds_, a);
      std::vector<float> x(want.x.size()), y(want.y.size()), m(want.m.size()), dt(want.dt.size());
      for (int p = 0; p < k; ++p) {
        const uint64_t r = row + static_cast<uint64_t>(p) * s;
        for (int j = 0; j < kFeatureDim; ++j) x[p * kFeatureDim + j] = feat[r * kFeatureDim + j];
        for (int h = 0; h < nh; ++h) {
          y[p * nh + h] = lab[r * nh + h];
          m[p * nh + h] = msk[r * nh + h];
        }
        dt[p] = el[r];
        positive_dt |= dt[p] > 0.0f;
      }
      ASSERT_TRUE(same_bytes(x, want.x)) << "x, anchor " << a.store << ":" << a.start;
      ASSERT_TRUE(same_bytes(y, want.y)) << "y, anchor " << a.store << ":" << a.start;
      ASSERT_TRUE(same_bytes(m, want.m)) << "m, anchor " << a.store << ":" << a.start;
      ASSERT_TRUE(same_bytes(dt, want.dt)) << "dt, anchor " << a.store << ":" << a.start;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
  EXPECT_TRUE(positive_dt);
}

// The sampler of gpu/batch.h on the host (SamplerRng over the pool of global rows) draws the
// trainer's anchors (no GPU needed).
TEST_F(GpuBatchTrain, HostSamplerMatchesDatasetSampler) {
  std::vector<uint64_t> pool;
  for (const Anchor& a : ds_->anchors(Split::kTrain)) pool.push_back(row_of(*ds_, a));
  for (int64_t step : {0LL, 1LL, 77LL}) {
    Rng rng(cpu_seed_for_step(5, step));
    SamplerRng srng(step_seed(5, step));
    for (const Anchor& a : ds_->sample_train(rng, 64)) {
      ASSERT_EQ(pool[srng.uniform(pool.size())], row_of(*ds_, a)) << "step " << step;
    }
  }
}

TEST_F(GpuBatchTrain, SampleAnchorsMatchesDatasetSampler) {
  FXT_SKIP_WITHOUT_GPU();
  DeviceDataset d;
  upload_dataset(*ds_, unit_ns_, &d);
  Context ctx;
  for (uint64_t seed : {7ULL, 2024ULL}) {
    for (int64_t step : {0LL, 1LL, 2LL, 3LL, 500LL}) {
      for (int batch : {1, 8, 32}) {
        Rng rng(cpu_seed_for_step(seed, step));
        std::vector<uint64_t> want;
        for (const Anchor& a : ds_->sample_train(rng, static_cast<size_t>(batch)))
          want.push_back(row_of(*ds_, a));
        DeviceBuffer<int64_t> dstep;
        dstep.upload(std::vector<int64_t>{step});
        DeviceBuffer<uint64_t> out(batch);
        sample_anchors(ctx, d.pool.data(), d.pool_size, seed, dstep.data(), batch, out.data());
        ctx.sync();
        EXPECT_EQ(out.download(), want) << "seed " << seed << " step " << step;
      }
    }
  }
}

// Windows of chosen anchors: the first, middle and last anchors of every split and the anchors
// on both sides of each store boundary, so both store offsets, windows near a store's start
// (dt = 0 for positions within the first S snapshots) and the last rows are covered.
TEST_F(GpuBatchTrain, GatherEqualsDatasetGather) {
  FXT_SKIP_WITHOUT_GPU();
  DeviceDataset d;
  upload_dataset(*ds_, unit_ns_, &d);
  std::vector<Anchor> anchors;
  for (int sp = 0; sp < 3; ++sp) {
    const auto& all = ds_->anchors(static_cast<Split>(sp));
    if (all.empty()) continue;
    anchors.push_back(all.front());
    anchors.push_back(all.back());
    anchors.push_back(all[all.size() / 2]);
    for (size_t i = 1; i < all.size(); ++i) {
      if (all[i].store != all[i - 1].store) {  // around a store boundary
        anchors.push_back(all[i - 1]);
        anchors.push_back(all[i]);
      }
    }
  }
  bool has_second = false;
  for (const Anchor& a : anchors) has_second |= a.store == 1;
  EXPECT_TRUE(has_second) << "the anchors should cover the second store";

  const HostBatch want = cpu_batch(anchors);
  std::vector<uint64_t> rows;
  for (const Anchor& a : anchors) rows.push_back(row_of(*ds_, a));
  DeviceBuffer<uint64_t> drows;
  drows.upload(rows);
  const int b = static_cast<int>(anchors.size());
  Context ctx;
  DeviceBuffer<float> x(want.x.size()), y(want.y.size()), m(want.m.size()), dt(want.dt.size());
  gather_windows(ctx, drows.data(), b, d.shape, d.features.data(), d.labels.data(), d.masks.data(),
                 d.elapsed.data(), x.data(), y.data(), m.data(), dt.data());
  ctx.sync();
  EXPECT_TRUE(same_bytes(x.download(), want.x)) << "x";
  EXPECT_TRUE(same_bytes(y.download(), want.y)) << "y";
  EXPECT_TRUE(same_bytes(m.download(), want.m)) << "m";
  EXPECT_TRUE(same_bytes(dt.download(), want.dt)) << "dt";

  // Without dt (stride time mode) nothing is written there and x, y, m are the same.
  fill(ctx, x.data(), -1.0f, x.size());
  DeviceBuffer<float> dt2(want.dt.size());
  fill(ctx, dt2.data(), -7.0f, dt2.size());
  gather_windows(ctx, drows.data(), b, d.shape, d.features.data(), d.labels.data(), d.masks.data(),
                 nullptr, x.data(), y.data(), m.data(), nullptr);
  ctx.sync();
  EXPECT_TRUE(same_bytes(x.download(), want.x)) << "x without dt";
  for (float v : dt2.download()) ASSERT_EQ(v, -7.0f);
}

// The whole device batch of a step (sample + gather) captured once as a CUDA Graph and replayed
// while the device step counter advances: each replay equals the trainer's CPU batch of that
// step.
TEST_F(GpuBatchTrain, CapturedStepReplaysWithDeviceStepCounter) {
  FXT_SKIP_WITHOUT_GPU();
  DeviceDataset d;
  upload_dataset(*ds_, unit_ns_, &d);
  const uint64_t seed = 11;
  const int batch = 32;
  const size_t pos = static_cast<size_t>(batch) * d.shape.window;
  Context ctx;
  DeviceBuffer<int64_t> step(1);
  DeviceBuffer<uint64_t> anchors(batch);
  DeviceBuffer<float> x(pos * kFeatureDim), y(pos * d.shape.horizons), m(pos * d.shape.horizons),
      dt(pos);
  step.upload(std::vector<int64_t>{0});

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FXT_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeGlobal));
  sample_anchors(ctx, d.pool.data(), d.pool_size, seed, step.data(), batch, anchors.data());
  gather_windows(ctx, anchors.data(), batch, d.shape, d.features.data(), d.labels.data(),
                 d.masks.data(), d.elapsed.data(), x.data(), y.data(), m.data(), dt.data());
  FXT_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
  FXT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (int64_t s : {0LL, 1LL, 2LL, 41LL}) {
    step.upload(std::vector<int64_t>{s});
    FXT_CUDA_CHECK(cudaGraphLaunch(exec, ctx.stream()));
    ctx.sync();
    Rng rng(cpu_seed_for_step(seed, s));
    const std::vector<Anchor> a = ds_->sample_train(rng, batch);
    const HostBatch want = cpu_batch(a);
    std::vector<uint64_t> want_rows;
    for (const Anchor& an : a) want_rows.push_back(row_of(*ds_, an));
    EXPECT_EQ(anchors.download(), want_rows) << "step " << s;
    EXPECT_TRUE(same_bytes(x.download(), want.x)) << "x, step " << s;
    EXPECT_TRUE(same_bytes(y.download(), want.y)) << "y, step " << s;
    EXPECT_TRUE(same_bytes(m.download(), want.m)) << "m, step " << s;
    EXPECT_TRUE(same_bytes(dt.download(), want.dt)) << "dt, step " << s;
  }
  FXT_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FXT_CUDA_CHECK(cudaGraphDestroy(graph));
}

}  // namespace
}  // namespace fxt::gpu
