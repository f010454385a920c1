// Features on real and synthetic data: `fxt features` end to end, the ES MBO store (no
// NaN/Inf after standardisation, plausible raw ranges) and single-thread throughput.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/store.h"
#include "features/features.h"
#include "features/labels.h"
#include "test_util.h"

namespace fxt {
namespace {
using test::run_fxt;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}
int count_fields(const std::string& line) {
  int n = 1;
  for (char c : line) n += c == ',';
  return n;
}

std::string synth_store(const std::string& dir, int events) {
  auto s = run_fxt("-q synth --out " + dir + "/m.dbn.zst --events " + std::to_string(events) +
                   " --seed 5");
  EXPECT_EQ(s.exit_code, 0) << s.output;
  auto in = run_fxt("-q ingest " + dir + "/m.dbn.zst --out " + dir + "/store");
  EXPECT_EQ(in.exit_code, 0) << in.output;
  return dir + "/store";
}

TEST(FeaturesCli, SynthStoreToCsv) {
  std::string dir = test::scratch_dir();
  std::string store = synth_store(dir, 5000);
  auto r = run_fxt("-q features --store " + store + " --out " + dir + "/f.csv");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto lines = read_lines(dir + "/f.csv");
  ASSERT_EQ(lines.size(), 5001u);
  EXPECT_EQ(lines[0].rfind("ts_ns,ret_bps,spread_ticks,imb_l1,", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",dt60ms_sin,y_h30,mask_h30,y_h100,"), std::string::npos);
  EXPECT_EQ(count_fields(lines[0]), 1 + 40 + 2 * 5);
  EXPECT_EQ(count_fields(lines[1234]), 1 + 40 + 2 * 5);
  // The last row's labels are all masked (past the end).
  EXPECT_EQ(lines.back().substr(lines.back().size() - 20), ",0,0,0,0,0,0,0,0,0,0");

  auto s = run_fxt("-q features --store " + store + " --out " + dir +
                   "/s.csv --standardised --stride 4 --horizons 10,20 --min-move-ticks 1");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto std_lines = read_lines(dir + "/s.csv");
  ASSERT_EQ(std_lines.size(), 5001u);
  EXPECT_EQ(count_fields(std_lines[0]), 1 + 40 + 2 * 2);
  for (size_t i = 1; i < std_lines.size(); i += 97) {
    // Standardised rows have no empty (undefined) fields and stay within +-10.
    EXPECT_EQ(std_lines[i].find(",,"), std::string::npos) << i;
    size_t pos = std_lines[i].find(',');
    for (int k = 0; k < 40; ++k) {
      size_t next = std_lines[i].find(',', pos + 1);
      double v = std::stod(std_lines[i].substr(pos + 1, next - pos - 1));
      EXPECT_LE(std::fabs(v), 10.0);
      pos = next;
    }
  }
}

TEST(FeaturesCli, BadInputExitsTwo) {
  std::string dir = test::scratch_dir();
  auto missing = run_fxt("features --store " + dir + "/nope --out " + dir + "/f.csv");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  std::string store = synth_store(dir, 500);
  for (const char* bad : {"--horizons 1,x", "--horizons 0", "--horizons 1,2,3,4,5,6,7,8,9",
                          "--stride 0", "--min-move-ticks -1"}) {
    auto r = run_fxt("features --store " + store + " --out " + dir + "/f.csv " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::ifstream(dir + "/f.csv").good());  // nothing written on failure
}

void check_plausible(const StoreReader& r, int stride) {
  std::vector<float> x;
  FeatureConfig c;
  c.stride = stride;
  ASSERT_TRUE(compute_features(r, c, &x).ok());
  const uint64_t n = r.size();
  for (uint64_t t = 0; t < n; ++t) {
    const float* row = x.data() + t * kFeatureDim;
    for (int k = 0; k < kFeatureDim; ++k) ASSERT_FALSE(std::isinf(row[k])) << t << " " << k;
    const bool clean = (r.flags[t] & (kFlagCrossed | kFlagLocked)) == 0;
    for (int k : {2, 3, 4, 5}) {
      if (!std::isnan(row[k])) {
        ASSERT_LE(std::fabs(row[k]), 1.0f) << t << " " << k;
      }
    }
    if (clean && !std::isnan(row[1])) {  // at least one tick
      ASSERT_GE(row[1], 1.0f) << t;
    }
    if (!std::isnan(row[0])) {  // < 5 %
      ASSERT_LT(std::fabs(row[0]), 500.0f) << t;
    }
    ASSERT_GE(row[14], -6.0f);
    ASSERT_LT(row[14], 8.0f);
    for (int k = 26; k <= 39; ++k) {
      if (k >= 28 && k <= 31) continue;
      ASSERT_LE(std::fabs(row[k]), 1.0f + 1e-6f) << k;
    }
    if (!std::isnan(row[18])) {
      ASSERT_GE(row[18], 0.0f);
    }
  }
  FeatureStats st = measure_feature_stats(x.data(), 0, n);
  standardise(st, x.data(), n);
  for (float v : x) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= 10.0f);
}

TEST(FeaturesReal, EsMboStore) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  std::string store = test::scratch_dir() + "/es";
  auto in =
      run_fxt("-q ingest " + test::shared_file(nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst") + " " +
              test::shared_file(nt + "definition-glbx-es-fut.dbn.zst") + " --out " + store);
  ASSERT_EQ(in.exit_code, 0) << in.output;
  // A single source gives the store directly at --out or one level below it.
  auto r = StoreReader::open(store);
  if (!r.ok()) r = StoreReader::open(store + "/esh4-glbx-mdp3-20231225.mbo");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->size(), 47023u);
  check_plausible(*r, 1);
  check_plausible(*r, 10);
  Labels l;
  ASSERT_TRUE(compute_labels(*r, LabelConfig{}, &l).ok());
  uint64_t valid = 0;
  for (uint8_t m : l.mask) valid += m;
  EXPECT_GT(valid, 0u);
}

// The per-row pass runs on FeatureConfig::threads threads over row ranges: the same bytes for
// any thread count, at stride 1 and 4,.
TEST(FeaturesPerf, ThreadsGiveTheSameBytes) {
  std::string dir = test::scratch_dir();
  auto r = StoreReader::open(synth_store(dir, 300000));
  ASSERT_TRUE(r.ok());
  for (int stride : {1, 4}) {
    std::vector<float> one, many;
    FeatureConfig c;
    c.stride = stride;
    ASSERT_TRUE(compute_features(*r, c, &one).ok());
    for (int threads : {2, 3, 8}) {
      c.threads = threads;
      ASSERT_TRUE(compute_features(*r, c, &many).ok());
      ASSERT_EQ(one.size(), many.size());
      EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
          << "stride " << stride << ", " << threads << " threads";
    }
  }
}

TEST(FeaturesPerf, Throughput) {
  std::string dir = test::scratch_dir();
  auto r = StoreReader::open(synth_store(dir, 300000));
  ASSERT_TRUE(r.ok());
  std::vector<float> x;
  ASSERT_TRUE(compute_features(*r, {}, &x).ok());  // warm the page cache
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(compute_features(*r, {}, &x).ok());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ features ] %llu snapshots in %.3f s: %.2f M snapshots/s\n",
              static_cast<unsigned long long>(r->size()), s,
              static_cast<double>(r->size()) / s / 1e6);
  check_plausible(*r, 1);
}

}  // namespace
}  // namespace fxt
