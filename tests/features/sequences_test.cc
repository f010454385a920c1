// Labels (DESIGN §2.5) and sequences/splits (§2.6): masks, purge gaps, store boundaries
// (checked exhaustively on small stores) and seeded sampling.
#include "features/sequences.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/store.h"
#include "features/labels.h"
#include "test_util.h"

namespace fxt {
namespace {

constexpr int64_t kTick = 250'000'000;
constexpr int64_t kB = 5'000'000'000'000;

// One snapshot per entry: mid offset in half ticks via bid/ask offsets in ticks;
// 'x' = crossed, 'e' = empty ask side, else a normal 1-tick book at bid offset `bid`.
struct Row {
  int bid;
  char kind = 'n';
  int64_t gap_ns = 1000;  // timestamp step from the previous row
};

std::string make_store(const std::vector<Row>& rows) {
  std::string dir = test::scratch_dir() + "/store";
  StoreInfo info;
  info.source_format = "test";
  info.tick_px = kTick;
  info.has_trades = true;
  auto w = StoreWriter::create(dir, info);
  EXPECT_TRUE(w.ok());
  int64_t ts = 1'000'000'000;
  for (const Row& r : rows) {
    Snapshot s;
    s.ts_ns = ts += r.gap_ns;
    s.bid_px[0] = kB + r.bid * kTick;
    s.bid_sz[0] = 5;
    if (r.kind != 'e') {
      s.ask_px[0] = kB + (r.kind == 'x' ? r.bid - 1 : r.bid + 1) * kTick;
      s.ask_sz[0] = 5;
    }
    s.mark_crossed_or_locked();
    w->on_snapshot(s);
  }
  EXPECT_TRUE(w->finish().ok());
  return dir;
}

StoreReader open_store(const std::string& dir) {
  auto r = StoreReader::open(dir);
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

TEST(Labels, MasksAndDirections) {
  // mids (bid offsets): 0 1 1 x 3 e 0 2
  auto r = open_store(make_store({{0}, {1}, {1}, {2, 'x'}, {3}, {3, 'e'}, {0}, {2}}));
  LabelConfig c;
  c.horizons = {1, 2};
  Labels l;
  ASSERT_TRUE(compute_labels(r, c, &l).ok());
  ASSERT_EQ(l.horizons, 2);
  // h = 1: 0->1 up; 1->2 equal (masked); 2->3 crossed; 3->4 crossed; 4->5 empty; 5->6
  // empty; 6->7 up; 7 past the end.
  const std::vector<int> y1 = {1, 0, 0, 0, 0, 0, 1, 0}, m1 = {1, 0, 0, 0, 0, 0, 1, 0};
  // h = 2: 0->2 up; 1->3 crossed; 2->4 up; 3->5 x; 4->6 down; 5->7 empty; 6, 7 past end.
  const std::vector<int> y2 = {1, 0, 1, 0, 0, 0, 0, 0}, m2 = {1, 0, 1, 0, 1, 0, 0, 0};
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(l.y[t * 2], y1[t]) << t;
    EXPECT_EQ(l.mask[t * 2], m1[t]) << t;
    EXPECT_EQ(l.y[t * 2 + 1], y2[t]) << t;
    EXPECT_EQ(l.mask[t * 2 + 1], m2[t]) << t;
  }
  // min move 2 ticks: only |move| >= 2 ticks survive (0->2 at h=2 is 1 tick; 2->4 is 2;
  // 4->6 is 3).
  c.min_move_ticks = 2;
  ASSERT_TRUE(compute_labels(r, c, &l).ok());
  const std::vector<int> mm2 = {0, 0, 1, 0, 1, 0, 0, 0};
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(l.mask[t * 2 + 1], mm2[t]) << t;
    EXPECT_EQ(l.mask[t * 2], t == 6 ? 1 : 0) << t;  // 6->7 moves 2 ticks
  }
}

TEST(Labels, ParseHorizons) {
  auto h = parse_horizons("30,100,300");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, (std::vector<int>{30, 100, 300}));
  EXPECT_FALSE(parse_horizons("").ok());
  EXPECT_FALSE(parse_horizons("1,2,").ok());
  EXPECT_FALSE(parse_horizons("1,x").ok());
  EXPECT_FALSE(parse_horizons("0").ok());
  EXPECT_FALSE(parse_horizons("1,2,3,4,5,6,7,8,9").ok());
  EXPECT_TRUE(parse_horizons("1,2,3,4,5,6,7,8").ok());
}

TEST(Rng, SeededAndUniform) {
  Rng a(42), b(42), c(43);
  bool differ = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differ |= x != c.next();
  }
  EXPECT_TRUE(differ);
  std::vector<int> hist(7, 0);
  for (int i = 0; i < 70000; ++i) ++hist[Rng(0).uniform(1) + a.uniform(7)];
  for (int v : hist) EXPECT_NEAR(v, 10000, 500);
}

// Exhaustive: every anchor of every split stays inside one store and one split range,
// its positions are clean, the purge gaps hold, and every qualifying anchor is listed.
TEST(Sequences, SplitsRespectGapsAndStoreBoundaries) {
  std::vector<std::string> dirs;
  const int sizes[3] = {50, 37, 61};
  for (int s = 0; s < 3; ++s) {
    std::vector<Row> rows;
    for (int i = 0; i < sizes[s]; ++i)
      rows.push_back({(i * 7 + s) % 5, (i % 13 == 4 + s) ? 'x' : 'n'});
    dirs.push_back(make_store(rows));
  }
  for (int stride : {1, 3}) {
    DatasetConfig c;
    c.sequence.window = 4;
    c.sequence.stride = stride;
    c.labels.horizons = {2, 5};
    c.split.train = 0.5;
    c.split.validation = 0.25;
    auto ds = Dataset::open(dirs, c);
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    EXPECT_EQ(ds->total_snapshots(), 148u);
    EXPECT_EQ(ds->purge_gap(), 5u * stride);
    const GlobalRange tr = ds->range(Split::kTrain), va = ds->range(Split::kValidation),
                      te = ds->range(Split::kTest);
    EXPECT_EQ(tr.begin, 0u);
    EXPECT_GE(va.begin, tr.end + ds->purge_gap());
    EXPECT_GE(te.begin, va.end + ds->purge_gap());
    EXPECT_EQ(te.end, 148u);
    for (Split sp : {Split::kTrain, Split::kValidation, Split::kTest}) {
      const GlobalRange g = ds->range(sp);
      std::set<std::pair<uint32_t, uint64_t>> listed;
      for (const Anchor& a : ds->anchors(sp)) listed.insert({a.store, a.start});
      std::set<std::pair<uint32_t, uint64_t>> want;
      for (uint32_t s = 0; s < 3; ++s) {
        const auto& st = ds->store(s);
        for (uint64_t a = 0; a < st.reader.size(); ++a) {
          bool ok = true;
          for (int k = 0; k < 4; ++k) {
            uint64_t t = a + static_cast<uint64_t>(k * stride);
            if (t >= st.reader.size() || st.offset + t < g.begin || st.offset + t >= g.end ||
                (st.reader.flags[t] & (kFlagCrossed | kFlagLocked))) {
              ok = false;
              break;
            }
          }
          if (ok) want.insert({s, a});
        }
      }
      EXPECT_EQ(listed, want) << split_name(sp) << " stride " << stride;
      EXPECT_FALSE(want.empty());
      // Labels of listed windows never reach past their store.
      for (const Anchor& a : ds->anchors(sp)) {
        const auto& st = ds->store(a.store);
        for (int k = 0; k < 4; ++k) {
          uint64_t t = a.start + static_cast<uint64_t>(k * stride);
          for (int h = 0; h < 2; ++h) {
            if (st.labels.mask[t * 2 + h]) {
              EXPECT_LT(t + static_cast<uint64_t>(c.labels.horizons[h]), st.reader.size());
            }
          }
        }
      }
      // Evaluation anchors do not overlap.
      auto ev = ds->evaluation_anchors(sp);
      for (size_t i = 1; i < ev.size(); ++i) {
        if (ev[i].store == ev[i - 1].store) {
          EXPECT_GE(ev[i].start, ev[i - 1].start + 4u * stride);
        }
      }
    }
    // Seeded sampling is reproducible and only draws training anchors.
    Rng r1(7), r2(7);
    auto s1 = ds->sample_train(r1, 200), s2 = ds->sample_train(r2, 200);
    EXPECT_EQ(s1, s2);
    std::set<std::pair<uint32_t, uint64_t>> train;
    for (const Anchor& a : ds->anchors(Split::kTrain)) train.insert({a.store, a.start});
    for (const Anchor& a : s1) EXPECT_TRUE(train.count({a.store, a.start}));
    // gather copies the strided positions.
    const Anchor a = ds->anchors(Split::kTrain).back();
    std::vector<float> x(4 * kFeatureDim), y(4 * 2), m(4 * 2);
    ds->gather(a, x.data(), y.data(), m.data());
    const auto& st = ds->store(a.store);
    for (int k = 0; k < 4; ++k) {
      const uint64_t t = a.start + static_cast<uint64_t>(k * stride);
      EXPECT_EQ(x[k * kFeatureDim + 1], st.features[t * kFeatureDim + 1]);
      EXPECT_EQ(m[k * 2 + 1], st.labels.mask[t * 2 + 1]);
    }
  }
}

TEST(Sequences, StandardisedDatasetIsFinite) {
  std::vector<Row> rows;
  for (int i = 0; i < 300; ++i) rows.push_back({(i * 3) % 7, i % 50 == 9 ? 'e' : 'n'});
  DatasetConfig c;
  c.labels.horizons = {3};
  c.sequence.window = 8;
  auto ds = Dataset::open({make_store(rows)}, c);
  ASSERT_TRUE(ds.ok());
  FeatureStats st = ds->measure_train_stats();
  ds->standardise_features(st);
  for (float v : ds->store(0).features) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LE(std::fabs(v), 10.0f);
  }
}

TEST(Sequences, BadConfig) {
  std::string dir = make_store({{0}, {1}});
  DatasetConfig c;
  c.split.train = 0.9;
  c.split.validation = 0.2;
  EXPECT_FALSE(Dataset::open({dir}, c).ok());
  c = DatasetConfig{};
  c.sequence.stride = 0;
  EXPECT_FALSE(Dataset::open({dir}, c).ok());
  c = DatasetConfig{};
  c.labels.horizons = {};
  EXPECT_FALSE(Dataset::open({dir}, c).ok());
}

TEST(Sequences, InferenceWindowsArePaddedAtTheStart) {
  uint64_t pos[4];
  EXPECT_EQ(window_positions(10, 4, 3, pos), 4);
  EXPECT_EQ(std::vector<uint64_t>(pos, pos + 4), (std::vector<uint64_t>{1, 4, 7, 10}));
  EXPECT_EQ(window_positions(4, 4, 3, pos), 2);
  EXPECT_EQ(std::vector<uint64_t>(pos, pos + 4), (std::vector<uint64_t>{1, 1, 1, 4}));
  EXPECT_EQ(window_positions(0, 4, 1, pos), 1);
  EXPECT_EQ(std::vector<uint64_t>(pos, pos + 4), (std::vector<uint64_t>{0, 0, 0, 0}));
}

// --cfc-time real: the CfC's time step is the elapsed time into each position.
TEST(Sequences, ElapsedTimeOfAWindow) {
  // Gaps into rows 0..7: 1000 (from the epoch base), 1000, 0, 3000, 500, 2000, -200, 4000.
  const std::vector<int64_t> gaps = {1000, 1000, 0, 3000, 500, 2000, -200, 4000};
  std::vector<Row> rows;
  for (int64_t g : gaps) rows.push_back({0, 'n', g});
  StoreReader store = open_store(make_store(rows));
  float dt[4];
  // Stride 2, positions 1, 3, 5, 7: dt0 = ts1 - ts(-1) -> 0 (no snapshot S before it), then
  // ts3 - ts1 = 0 + 3000, ts5 - ts3 = 500 + 2000, ts7 - ts5 = -200 + 4000; unit 500 ns.
  const uint64_t idx[4] = {1, 3, 5, 7};
  window_elapsed(store, idx, 4, 2, 500.0, dt);
  EXPECT_FLOAT_EQ(dt[0], 0.0f);
  EXPECT_FLOAT_EQ(dt[1], 6.0f);
  EXPECT_FLOAT_EQ(dt[2], 5.0f);
  EXPECT_FLOAT_EQ(dt[3], 7.6f);
  // Stride 1, positions 5..7: dt0 = ts5 - ts4 = 2000; ts6 - ts5 = -200 counts as 0.
  const uint64_t idx2[3] = {5, 6, 7};
  window_elapsed(store, idx2, 3, 1, 1000.0, dt);
  EXPECT_FLOAT_EQ(dt[0], 2.0f);
  EXPECT_FLOAT_EQ(dt[1], 0.0f);
  EXPECT_FLOAT_EQ(dt[2], 4.0f);
  // A padded inference window repeats its first snapshot: those steps are 0.
  uint64_t pos[4];
  window_positions(2, 4, 1, pos);  // {0, 0, 1, 2}
  window_elapsed(store, pos, 4, 1, 1000.0, dt);
  EXPECT_FLOAT_EQ(dt[0], 0.0f);
  EXPECT_FLOAT_EQ(dt[1], 0.0f);
  EXPECT_FLOAT_EQ(dt[2], 1.0f);
  EXPECT_FLOAT_EQ(dt[3], 0.0f);
}

TEST(Sequences, MedianTrainingGapIgnoresZeroGaps) {
  // Gaps cycle 1000, 2000, 2000, 0, 3000: the positive ones have median 2000 whatever the
  // training range cuts; a store whose clock never advances has none (0).
  std::vector<Row> rows;
  const int64_t cycle[5] = {1000, 2000, 2000, 0, 3000};
  for (int i = 0; i < 400; ++i) rows.push_back({i % 3, 'n', cycle[i % 5]});
  DatasetConfig c;
  c.sequence.window = 4;
  c.labels.horizons = {2};
  auto ds = Dataset::open({make_store(rows)}, c);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_DOUBLE_EQ(ds->median_train_gap_ns(), 2000.0);

  std::vector<Row> frozen(400, Row{0, 'n', 0});
  auto still = Dataset::open({make_store(frozen)}, c);
  ASSERT_TRUE(still.ok());
  EXPECT_DOUBLE_EQ(still->median_train_gap_ns(), 0.0);
}

}  // namespace
}  // namespace fxt
