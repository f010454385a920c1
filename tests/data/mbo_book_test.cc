#include "data/mbo_book.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_util.h"

namespace fxt {
namespace {

using dbn::kFBadTsRecv;
using dbn::kFLast;
using dbn::kFMaybeBadBook;
using dbn::kFSnapshot;

constexpr int64_t kTick = 250'000'000;  // ES: 0.25 in 1e-9 units
int64_t px(int ticks) {
  return 4'000'000'000'000 + ticks * kTick;
}

dbn::MboMsg msg(char action, char side, uint64_t id, int64_t price, uint32_t size,
                uint8_t flags = kFLast, uint64_t ts_recv = 0) {
  dbn::MboMsg m{};
  dbn::init_header(&m, dbn::kRTypeMbo, 1, 42, ts_recv == 0 ? 0 : ts_recv - 100);
  m.order_id = id;
  m.price = price;
  m.size = size;
  m.flags = flags;
  m.action = action;
  m.side = side;
  m.ts_recv = ts_recv;
  return m;
}

TEST(MboBook, FifoQueuePositionAfterAddsAndPartialCancels) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 5));
  book.apply(msg('A', 'B', 2, px(0), 3));
  book.apply(msg('A', 'B', 3, px(0), 7));

  auto q = book.queue_position(3);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->side, 1);
  EXPECT_EQ(q->px, px(0));
  EXPECT_EQ(q->size, 7u);
  EXPECT_EQ(q->size_ahead, 8u);
  EXPECT_EQ(q->orders_ahead, 2u);
  EXPECT_EQ(q->level_size, 15u);
  EXPECT_EQ(q->level_orders, 3u);
  EXPECT_EQ(book.queue_position(1)->orders_ahead, 0u);
  EXPECT_FALSE(book.queue_position(99).has_value());

  // A partial cancel keeps the order's place; the level aggregates.
  book.apply(msg('C', 'B', 1, px(0), 2));
  EXPECT_EQ(book.queue_position(1)->orders_ahead, 0u);
  EXPECT_EQ(book.queue_position(1)->size, 3u);
  EXPECT_EQ(book.queue_position(3)->size_ahead, 6u);
  EXPECT_EQ(sink.last().bid_px[0], px(0));
  EXPECT_EQ(sink.last().bid_sz[0], 13.0);
  EXPECT_EQ(sink.last().bid_ct[0], 3u);

  // Cancelling the rest removes it.
  book.apply(msg('C', 'B', 1, px(0), 3));
  EXPECT_FALSE(book.queue_position(1).has_value());
  EXPECT_EQ(book.queue_position(3)->size_ahead, 3u);
  EXPECT_EQ(book.queue_position(3)->orders_ahead, 1u);
  EXPECT_EQ(sink.last().bid_sz[0], 10.0);
  EXPECT_EQ(sink.last().bid_ct[0], 2u);

  std::vector<RestingOrder> level;
  EXPECT_EQ(book.level_orders(1, px(0), &level), 2u);
  EXPECT_EQ(level[0].order_id, 2u);
  EXPECT_EQ(level[1].order_id, 3u);
  EXPECT_EQ(level[1].size, 7u);
  EXPECT_EQ(book.level_orders(-1, px(0), &level), 0u);
  EXPECT_EQ(book.stats().snapshots, 5u);
  EXPECT_EQ(book.stats().orders_resting, 2u);
}

TEST(MboBook, PartialCancelsAggregateAcrossLevels) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 4));
  book.apply(msg('A', 'B', 2, px(-1), 6));
  book.apply(msg('A', 'B', 3, px(0), 1));
  book.apply(msg('A', 'A', 4, px(2), 9));
  book.apply(msg('A', 'A', 5, px(1), 2));
  book.apply(msg('A', 'A', 6, px(1), 3));
  book.apply(msg('C', 'A', 6, px(1), 1));
  book.apply(msg('C', 'B', 2, px(-1), 5));

  const Snapshot& s = sink.last();
  EXPECT_EQ(s.bid_px[0], px(0));
  EXPECT_EQ(s.bid_sz[0], 5.0);
  EXPECT_EQ(s.bid_ct[0], 2u);
  EXPECT_EQ(s.bid_px[1], px(-1));
  EXPECT_EQ(s.bid_sz[1], 1.0);
  EXPECT_EQ(s.bid_ct[1], 1u);
  EXPECT_EQ(s.bid_px[2], kEmptyPx);
  EXPECT_EQ(s.bid_sz[2], 0.0);
  EXPECT_EQ(s.ask_px[0], px(1));
  EXPECT_EQ(s.ask_sz[0], 4.0);
  EXPECT_EQ(s.ask_ct[0], 2u);
  EXPECT_EQ(s.ask_px[1], px(2));
  EXPECT_EQ(s.ask_sz[1], 9.0);
  EXPECT_EQ(s.ask_px[2], kEmptyPx);
  EXPECT_EQ(s.flags, 0);

  // Emptying the best level promotes the next one.
  book.apply(msg('C', 'A', 5, px(1), 2));
  book.apply(msg('C', 'A', 6, px(1), 2));
  EXPECT_EQ(sink.last().ask_px[0], px(2));
  EXPECT_EQ(sink.last().ask_px[1], kEmptyPx);
  EXPECT_EQ(book.level_count(-1), 1u);
  EXPECT_EQ(book.best_ask_px(), px(2));
  EXPECT_EQ(book.best_bid_px(), px(0));
  EXPECT_EQ(book.stats().cancels, 4u);
  EXPECT_EQ(book.stats().max_ask_levels, 2u);
  EXPECT_EQ(book.stats().max_bid_levels, 2u);
}

TEST(MboBook, ModifyKeepsPriorityOnlyOnSizeDecrease) {
  MboBook book(nullptr);
  for (uint64_t id = 1; id <= 3; ++id) book.apply(msg('A', 'A', id, px(1), 10));

  // Size decrease: same place.
  book.apply(msg('M', 'A', 1, px(1), 4));
  EXPECT_EQ(book.queue_position(1)->orders_ahead, 0u);
  EXPECT_EQ(book.queue_position(1)->size, 4u);
  EXPECT_EQ(book.queue_position(3)->size_ahead, 14u);

  // Size increase: to the back.
  book.apply(msg('M', 'A', 1, px(1), 5));
  EXPECT_EQ(book.queue_position(1)->orders_ahead, 2u);
  EXPECT_EQ(book.queue_position(1)->size_ahead, 20u);
  EXPECT_EQ(book.queue_position(2)->orders_ahead, 0u);

  // Same size, same price: nothing moves.
  book.apply(msg('M', 'A', 2, px(1), 10));
  EXPECT_EQ(book.queue_position(2)->orders_ahead, 0u);

  // Price change: to the back of the new level, even with a smaller size.
  book.apply(msg('A', 'A', 4, px(2), 1));
  book.apply(msg('M', 'A', 2, px(2), 3));
  auto q = book.queue_position(2);
  EXPECT_EQ(q->px, px(2));
  EXPECT_EQ(q->orders_ahead, 1u);
  EXPECT_EQ(q->size_ahead, 1u);
  EXPECT_EQ(q->level_size, 4u);
  EXPECT_EQ(book.queue_position(3)->orders_ahead, 0u);
  EXPECT_EQ(book.queue_position(3)->level_size, 15u);

  // A price change that empties a level removes it.
  book.apply(msg('M', 'A', 4, px(3), 1));
  book.apply(msg('M', 'A', 2, px(3), 3));
  EXPECT_EQ(book.level_count(-1), 2u);
  Snapshot s;
  book.fill_levels(&s);
  EXPECT_EQ(s.ask_px[0], px(1));
  EXPECT_EQ(s.ask_sz[0], 15.0);
  EXPECT_EQ(s.ask_px[1], px(3));
  EXPECT_EQ(s.ask_sz[1], 4.0);
  EXPECT_EQ(s.ask_ct[1], 2u);
  EXPECT_EQ(book.stats().modifies, 6u);
  EXPECT_EQ(book.stats().unknown_order_ids, 0u);
}

TEST(MboBook, ModifyOfUnknownIdIsAnAddAndCounted) {
  MboBook book(nullptr);
  book.apply(msg('A', 'B', 1, px(0), 2));
  book.apply(msg('M', 'B', 7, px(0), 5));
  EXPECT_EQ(book.stats().modify_unknown_ids, 1u);
  EXPECT_EQ(book.stats().unknown_order_ids, 1u);
  auto q = book.queue_position(7);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->orders_ahead, 1u);
  EXPECT_EQ(q->level_size, 7u);
  // A modify to size zero removes the order.
  book.apply(msg('M', 'B', 7, px(0), 0));
  EXPECT_FALSE(book.queue_position(7).has_value());
  EXPECT_EQ(book.stats().removing_modifies, 1u);
}

TEST(MboBook, UnknownCancelsAndOversizeCancelsAreCounted) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 2));
  book.apply(msg('C', 'B', 99, px(0), 1));
  EXPECT_EQ(book.stats().cancel_unknown_ids, 1u);
  EXPECT_EQ(book.stats().unknown_order_ids, 1u);
  EXPECT_EQ(sink.last().bid_sz[0], 2.0);
  book.apply(msg('C', 'B', 1, px(0), 5));
  EXPECT_EQ(book.stats().oversize_cancels, 1u);
  EXPECT_EQ(book.orders_resting(), 0u);
  EXPECT_FALSE(sink.last().has_bid());
  // The id is gone: cancelling it again is unknown.
  book.apply(msg('C', 'B', 1, px(0), 1));
  EXPECT_EQ(book.stats().unknown_order_ids, 2u);
  EXPECT_EQ(sink.snapshots.size(), 4u);
}

TEST(MboBook, AddWithoutSideIsIgnoredAndDuplicateAddReplaces) {
  MboBook book(nullptr);
  book.apply(msg('A', 'N', 1, px(0), 2));
  EXPECT_EQ(book.stats().ignored_adds, 1u);
  EXPECT_EQ(book.orders_resting(), 0u);
  book.apply(msg('A', 'B', 2, px(0), 2));
  book.apply(msg('A', 'B', 3, px(0), 2));
  book.apply(msg('A', 'B', 2, px(-1), 4));
  EXPECT_EQ(book.stats().duplicate_add_ids, 1u);
  EXPECT_EQ(book.orders_resting(), 2u);
  EXPECT_EQ(book.queue_position(2)->px, px(-1));
  EXPECT_EQ(book.queue_position(3)->orders_ahead, 0u);
}

TEST(MboBook, ClearEmptiesTheBook) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 2));
  book.apply(msg('A', 'A', 2, px(1), 2));
  book.apply(msg('R', 'N', 0, kEmptyPx, 0));
  EXPECT_EQ(book.orders_resting(), 0u);
  EXPECT_FALSE(sink.last().has_bid());
  EXPECT_FALSE(sink.last().has_ask());
  EXPECT_EQ(book.stats().clears, 1u);
  // The book works after a clear, and old ids are unknown.
  book.apply(msg('C', 'B', 1, px(0), 2));
  EXPECT_EQ(book.stats().cancel_unknown_ids, 1u);
  book.apply(msg('A', 'B', 1, px(-2), 3));
  EXPECT_EQ(sink.last().bid_px[0], px(-2));
  EXPECT_EQ(sink.last().bid_sz[0], 3.0);
}

TEST(MboBook, TradeAndFillDoNotChangeTheBookAndComeBeforeTheirSnapshot) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'A', 1, px(1), 5, kFLast, 1000));
  ASSERT_EQ(sink.order, "ES");
  // One CME event: trade (aggressor buy), fill of the resting ask, its cancel.
  book.apply(msg('T', 'B', 0, px(1), 2, 0, 2000));
  book.apply(msg('F', 'A', 1, px(1), 2, 0, 2000));
  EXPECT_EQ(sink.snapshots.size(), 1u);  // no F_LAST yet
  EXPECT_EQ(book.queue_position(1)->size, 5u);
  book.apply(msg('C', 'A', 1, px(1), 2, kFLast, 2001));
  EXPECT_EQ(sink.order, "ESETEES");

  ASSERT_EQ(sink.trades.size(), 1u);
  EXPECT_EQ(sink.trades[0].side, 1);
  EXPECT_EQ(sink.trades[0].px, px(1));
  EXPECT_EQ(sink.trades[0].sz, 2.0);
  EXPECT_EQ(sink.trades[0].ts_ns, 2000);
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_EQ(sink.events[1].action, 'T');
  EXPECT_EQ(sink.events[2].action, 'F');
  EXPECT_EQ(sink.events[2].side, -1);
  EXPECT_EQ(sink.events[2].order_id, 1u);
  EXPECT_EQ(sink.events[3].action, 'C');
  EXPECT_EQ(sink.events[3].flags, kFLast);
  EXPECT_EQ(sink.events[3].sz, 2.0);
  EXPECT_EQ(sink.events[3].ts_ns, 2001);
  EXPECT_EQ(sink.last().ask_sz[0], 3.0);
  EXPECT_EQ(sink.last().ts_ns, 2001);
  EXPECT_EQ(sink.last().ts_alt_ns, 1901);

  // A sell aggressor, and an unknown-side trade.
  book.apply(msg('T', 'A', 0, px(0), 1, kFLast, 3000));
  book.apply(msg('T', 'N', 0, px(0), 1, kFLast, 3001));
  EXPECT_EQ(sink.trades[1].side, -1);
  EXPECT_EQ(sink.trades[2].side, 0);
  EXPECT_EQ(book.stats().trades, 3u);
  EXPECT_EQ(book.stats().fills, 1u);
  EXPECT_EQ(sink.last().ask_sz[0], 3.0);
}

TEST(MboBook, SnapshotRunWithoutLastEmitsAtItsEnd) {
  test::RecordingSink sink;
  MboBook book(&sink);
  const uint8_t run = kFSnapshot | kFBadTsRecv;
  book.apply(msg('A', 'B', 1, px(0), 1, run, 10));
  book.apply(msg('A', 'B', 2, px(-1), 2, run, 10));
  book.apply(msg('A', 'A', 3, px(1), 3, run, 11));
  EXPECT_TRUE(sink.snapshots.empty());
  // The first live record closes the run: one snapshot of the run, then its own.
  book.apply(msg('A', 'A', 4, px(2), 4, kFLast, 20));
  ASSERT_EQ(sink.snapshots.size(), 2u);
  EXPECT_EQ(sink.order, "EEESES");
  const Snapshot& s0 = sink.snapshots[0];
  EXPECT_EQ(s0.flags, kFlagSnapshotRun | kFlagBadTimestamp);
  EXPECT_EQ(s0.ts_ns, 11);
  EXPECT_EQ(s0.bid_px[1], px(-1));
  EXPECT_EQ(s0.ask_px[1], kEmptyPx);
  EXPECT_EQ(sink.snapshots[1].flags, 0);
  EXPECT_EQ(sink.snapshots[1].ask_px[1], px(2));
  EXPECT_EQ(book.stats().snapshot_run_snapshots, 1u);
  EXPECT_EQ(book.stats().bad_ts_snapshots, 1u);
}

TEST(MboBook, SnapshotRunEndingWithLastOrAtFinish) {
  // A run whose last record sets F_LAST emits once, there.
  test::RecordingSink a;
  MboBook with_last(&a);
  with_last.apply(msg('R', 'N', 0, kEmptyPx, 0, kFSnapshot));
  with_last.apply(msg('A', 'B', 1, px(0), 1, kFSnapshot));
  with_last.apply(msg('A', 'B', 2, px(0), 1, kFSnapshot | kFLast));
  with_last.apply(msg('A', 'B', 3, px(0), 1, kFLast));
  ASSERT_EQ(a.snapshots.size(), 2u);
  EXPECT_EQ(a.snapshots[0].flags, kFlagSnapshotRun);
  EXPECT_EQ(a.snapshots[0].bid_ct[0], 2u);
  EXPECT_EQ(a.snapshots[1].flags, 0);

  // A file that is only a run emits at finish(), which is idempotent.
  test::RecordingSink b;
  MboBook only_run(&b);
  only_run.apply(msg('A', 'B', 1, px(0), 1, kFSnapshot));
  only_run.apply(msg('A', 'A', 2, px(1), 1, kFSnapshot));
  EXPECT_TRUE(b.snapshots.empty());
  only_run.finish();
  only_run.finish();
  ASSERT_EQ(b.snapshots.size(), 1u);
  EXPECT_EQ(b.snapshots[0].flags, kFlagSnapshotRun);
  EXPECT_EQ(only_run.stats().unterminated_events, 0u);
}

TEST(MboBook, FinishInsideAnEventFlagsMaybeBadBook) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 1, kFLast));
  book.apply(msg('A', 'B', 2, px(0), 1, 0));
  book.finish();
  ASSERT_EQ(sink.snapshots.size(), 2u);
  EXPECT_EQ(sink.last().flags, kFlagMaybeBadBook);
  EXPECT_EQ(sink.last().bid_ct[0], 2u);
  EXPECT_EQ(book.stats().unterminated_events, 1u);
}

TEST(MboBook, SourceFlagsCarryIntoTheSnapshot) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 1, kFMaybeBadBook));
  book.apply(msg('A', 'B', 2, px(0), 1, kFLast));
  book.apply(msg('A', 'B', 3, px(0), 1, kFLast));
  ASSERT_EQ(sink.snapshots.size(), 2u);
  EXPECT_EQ(sink.snapshots[0].flags, kFlagMaybeBadBook);
  EXPECT_EQ(sink.snapshots[1].flags, 0);
  EXPECT_EQ(book.stats().maybe_bad_book_snapshots, 1u);
}

TEST(MboBook, CrossedAndLockedBooksAreKeptAndFlagged) {
  test::RecordingSink sink;
  MboBook book(&sink);
  book.apply(msg('A', 'B', 1, px(0), 1));
  book.apply(msg('A', 'A', 2, px(0), 1));  // locked
  EXPECT_EQ(sink.last().flags, kFlagLocked);
  book.apply(msg('A', 'A', 3, px(-2), 4));  // crossed: pre-open, kept as is
  EXPECT_EQ(sink.last().flags, kFlagCrossed);
  EXPECT_EQ(sink.last().ask_px[0], px(-2));
  EXPECT_EQ(sink.last().bid_px[0], px(0));
  EXPECT_EQ(book.orders_resting(), 3u);
  book.apply(msg('C', 'A', 3, px(-2), 4));
  book.apply(msg('C', 'A', 2, px(0), 1));
  EXPECT_EQ(sink.last().flags, 0);
  EXPECT_EQ(book.stats().locked_snapshots, 2u);
  EXPECT_EQ(book.stats().crossed_snapshots, 1u);
}

TEST(MboBook, TopTenTruncatesDeeperBooks) {
  test::RecordingSink sink;
  MboBook book(&sink);
  uint64_t id = 1;
  // Added in scrambled order so inserts land mid-vector.
  for (int i : {7, 0, 14, 3, 11, 1, 9, 5, 13, 2, 8, 12, 4, 10, 6}) {
    book.apply(msg('A', 'B', id++, px(-i), static_cast<uint32_t>(i + 1)));
  }
  for (int i : {11, 2, 5, 0, 9, 7, 1, 10, 3, 6, 8, 4}) {
    book.apply(msg('A', 'A', id++, px(1 + i), 100));
  }
  const Snapshot& s = sink.last();
  for (int i = 0; i < kBookLevels; ++i) {
    EXPECT_EQ(s.bid_px[i], px(-i));
    EXPECT_EQ(s.bid_sz[i], i + 1.0);
    EXPECT_EQ(s.ask_px[i], px(1 + i));
    EXPECT_EQ(s.ask_ct[i], 1u);
  }
  EXPECT_EQ(book.stats().max_bid_levels, 15u);
  EXPECT_EQ(book.stats().max_ask_levels, 12u);
  EXPECT_EQ(book.level_count(1), 15u);
}

// ---- randomised check against a plain reference book --------------------------------

// Orders in a std::map with a priority stamp; FIFO order = ascending stamp.
struct RefOrder {
  int8_t side;
  int64_t px;
  uint32_t size;
  uint64_t stamp;
};

void ref_levels(const std::map<uint64_t, RefOrder>& ref, Snapshot* s) {
  std::map<int64_t, std::pair<double, uint32_t>> bids, asks;
  for (const auto& [id, o] : ref) {
    auto& l = (o.side > 0 ? bids : asks)[o.px];
    l.first += o.size;
    ++l.second;
  }
  s->clear_levels();
  int i = 0;
  for (auto it = bids.rbegin(); it != bids.rend() && i < kBookLevels; ++it, ++i) {
    s->bid_px[i] = it->first;
    s->bid_sz[i] = it->second.first;
    s->bid_ct[i] = it->second.second;
  }
  i = 0;
  for (auto it = asks.begin(); it != asks.end() && i < kBookLevels; ++it, ++i) {
    s->ask_px[i] = it->first;
    s->ask_sz[i] = it->second.first;
    s->ask_ct[i] = it->second.second;
  }
}

TEST(MboBook, MatchesAReferenceBookOnRandomEvents) {
  std::mt19937_64 rng(7);
  MboBook book(nullptr);
  std::map<uint64_t, RefOrder> ref;
  std::vector<uint64_t> ids;  // every id ever added (some gone)
  uint64_t next_id = 1, stamp = 0;
  for (int step = 0; step < 200'000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (step % 50'000 == 49'999) {
      book.apply(msg('R', 'N', 0, kEmptyPx, 0));
      ref.clear();
    } else if (op < 4 || ids.empty()) {
      int8_t side = rng() % 2 ? 1 : -1;
      int64_t p = px(side > 0 ? -static_cast<int>(rng() % 30) : 1 + static_cast<int>(rng() % 30));
      uint32_t sz = 1 + static_cast<uint32_t>(rng() % 20);
      book.apply(msg('A', side > 0 ? 'B' : 'A', next_id, p, sz));
      ref[next_id] = RefOrder{side, p, sz, ++stamp};
      ids.push_back(next_id++);
    } else {
      uint64_t id = ids[rng() % ids.size()];
      auto it = ref.find(id);
      uint32_t sz = 1 + static_cast<uint32_t>(rng() % 20);
      if (op < 8) {
        book.apply(msg('C', 'B', id, 0, sz));
        if (it != ref.end()) {
          if (sz >= it->second.size) {
            ref.erase(it);
          } else {
            it->second.size -= sz;
          }
        }
      } else if (it != ref.end()) {
        RefOrder& o = it->second;
        int64_t p = op == 8 ? o.px : o.px + (static_cast<int>(rng() % 3) - 1) * kTick;
        book.apply(msg('M', o.side > 0 ? 'B' : 'A', id, p, sz));
        if (p != o.px || sz > o.size) o.stamp = ++stamp;
        o.px = p;
        o.size = sz;
      }
    }
    if (step % 97 == 0) {
      Snapshot got, want;
      book.fill_levels(&got);
      ref_levels(ref, &want);
      for (int i = 0; i < kBookLevels; ++i) {
        ASSERT_EQ(got.bid_px[i], want.bid_px[i]) << "step " << step << " level " << i;
        ASSERT_EQ(got.bid_sz[i], want.bid_sz[i]) << "step " << step << " level " << i;
        ASSERT_EQ(got.bid_ct[i], want.bid_ct[i]) << "step " << step << " level " << i;
        ASSERT_EQ(got.ask_px[i], want.ask_px[i]) << "step " << step << " level " << i;
        ASSERT_EQ(got.ask_sz[i], want.ask_sz[i]) << "step " << step << " level " << i;
        ASSERT_EQ(got.ask_ct[i], want.ask_ct[i]) << "step " << step << " level " << i;
      }
      ASSERT_EQ(book.orders_resting(), ref.size());
      // Queue position of a random resting order.
      if (!ref.empty()) {
        auto it = ref.lower_bound(ids[rng() % ids.size()]);
        if (it == ref.end()) it = ref.begin();
        uint64_t ahead = 0;
        uint32_t n_ahead = 0;
        for (const auto& [id, o] : ref) {
          if (o.side == it->second.side && o.px == it->second.px && o.stamp < it->second.stamp) {
            ahead += o.size;
            ++n_ahead;
          }
        }
        auto q = book.queue_position(it->first);
        ASSERT_TRUE(q.has_value());
        ASSERT_EQ(q->size_ahead, ahead) << "step " << step;
        ASSERT_EQ(q->orders_ahead, n_ahead) << "step " << step;
      }
    }
  }
  EXPECT_GT(book.stats().max_orders_resting, 1000u);
}

// ---- real files ---------------------------------------------------------------------

// Checks the invariants of every snapshot and counts what the store would keep.
class CheckingSink : public BookSink {
 public:
  void on_snapshot(const Snapshot& s) override {
    ++snapshots;
    check_side(s.bid_px, s.bid_sz, s.bid_ct, /*descending=*/true);
    check_side(s.ask_px, s.ask_sz, s.ask_ct, /*descending=*/false);
    if (s.ts_ns < last_ts) ++ts_regressions;
    if (s.flags & kFlagCrossed) {
      if (first_crossed_ts == 0) first_crossed_ts = s.ts_ns;
      last_crossed_ts = s.ts_ns;
    }
    last_ts = s.ts_ns;
    pending_events = 0;
  }
  void on_trade(const Trade& t) override {
    ++trades;
    EXPECT_GT(t.sz, 0.0);
  }
  void on_order_event(const OrderEvent&) override {
    ++events;
    ++pending_events;
  }
  void check_side(const int64_t* p, const double* sz, const uint32_t* ct, bool descending) {
    for (int i = 0; i < kBookLevels; ++i) {
      if (p[i] == kEmptyPx) {
        EXPECT_EQ(sz[i], 0.0);
        EXPECT_EQ(ct[i], 0u);
        for (int j = i + 1; j < kBookLevels; ++j) ASSERT_EQ(p[j], kEmptyPx);
        break;
      }
      ASSERT_GT(sz[i], 0.0) << "snapshot " << snapshots << " level " << i;
      ASSERT_GE(ct[i], 1u) << "snapshot " << snapshots << " level " << i;
      ASSERT_GE(sz[i], static_cast<double>(ct[i]));  // every order has size >= 1
      if (i > 0) {
        if (descending) {
          ASSERT_LT(p[i], p[i - 1]) << "snapshot " << snapshots;
        } else {
          ASSERT_GT(p[i], p[i - 1]) << "snapshot " << snapshots;
        }
      }
    }
  }
  uint64_t snapshots = 0, trades = 0, events = 0, pending_events = 0;
  uint64_t ts_regressions = 0;
  int64_t last_ts = 0;
  int64_t first_crossed_ts = 0, last_crossed_ts = 0;
};

struct FileExpectation {
  const char* path;
  uint64_t events, snapshots, trades, crossed, locked, unknown_ids, orders_resting;
};

void check_file(const FileExpectation& want, CheckingSink* out = nullptr) {
  std::string path = test::shared_file(want.path);
  CheckingSink local;
  CheckingSink& sink = out != nullptr ? *out : local;
  MboStats st;
  Status status = replay_mbo_file(path, &sink, &st);
  ASSERT_TRUE(status.ok()) << status.message();
  fmt::print(
      "{}\n  events {} snapshots {} (run {}) adds {} cancels {} modifies {} clears {} trades {} "
      "fills {}\n  crossed {} locked {} unknown ids {} (cancel {}, modify {}) oversize cancels "
      "{} duplicate adds {} ignored adds {} unterminated {}\n  resting at end {} (max {}) "
      "max levels bid {} ask {} maybe-bad {} bad-ts {} other records {}\n  crossed from {} to {} "
      "(ts_recv ns)\n",
      want.path, st.events, st.snapshots, st.snapshot_run_snapshots, st.adds, st.cancels,
      st.modifies, st.clears, st.trades, st.fills, st.crossed_snapshots, st.locked_snapshots,
      st.unknown_order_ids, st.cancel_unknown_ids, st.modify_unknown_ids, st.oversize_cancels,
      st.duplicate_add_ids, st.ignored_adds, st.unterminated_events, st.orders_resting,
      st.max_orders_resting, st.max_bid_levels, st.max_ask_levels, st.maybe_bad_book_snapshots,
      st.bad_ts_snapshots, st.other_records, sink.first_crossed_ts, sink.last_crossed_ts);
  EXPECT_EQ(st.events, want.events);
  EXPECT_EQ(sink.events, want.events);
  EXPECT_EQ(st.snapshots, want.snapshots);
  EXPECT_EQ(sink.snapshots, want.snapshots);
  EXPECT_EQ(sink.pending_events, 0u);  // every event belongs to a snapshot
  EXPECT_EQ(st.trades, want.trades);
  EXPECT_EQ(sink.trades, want.trades);
  EXPECT_EQ(st.crossed_snapshots, want.crossed);
  EXPECT_EQ(st.locked_snapshots, want.locked);
  EXPECT_EQ(st.unknown_order_ids, want.unknown_ids);
  EXPECT_EQ(st.orders_resting, want.orders_resting);
  EXPECT_EQ(st.unterminated_events, 0u);
  EXPECT_EQ(st.snapshot_run_snapshots, 1u);
  EXPECT_EQ(sink.ts_regressions, 0u);
}

constexpr const char* kEs1224 =
    "nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231224.mbo.dbn.zst";
constexpr const char* kEs1225 =
    "nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231225.mbo.dbn.zst";
constexpr const char* kEs0508 =
    "nautilus_trader/tests/test_data/databento/order_book_deltas_catalog/databento/"
    "orderbooks_mbo_2024-05-08T00-00-00_2024-05-08T00-00-02.dbn.zst";

// The whole file is one snapshot run whose last record sets F_LAST.
TEST(MboBookRealData, Es20231224) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  check_file({kEs1224, 8'725, 1, 0, 0, 0, 0, 8'725});
}

// A snapshot run of 8,725 adds that never sets F_LAST, then a day (CME pre-open crossed).
TEST(MboBookRealData, Es20231225) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  // Values checked against an independent Python replay of the same file.
  CheckingSink sink;
  check_file({kEs1225, 68'792, 47'023, 2'973, 891, 0, 0, 11'217}, &sink);
  // Crossed only in the pre-open, 22:39:55-23:00:00 UTC, never after the open.
  EXPECT_GE(sink.first_crossed_ts, 1'703'543'400'000'000'000);  // 22:30 UTC
  EXPECT_LE(sink.last_crossed_ts, 1'703'545'201'000'000'000);   // 23:00:01 UTC
}

// A clear, a snapshot run ending in F_LAST, then 2 s of live data.
TEST(MboBookRealData, Es20240508SnapshotPlusTwoSeconds) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  check_file({kEs0508, 13'796, 185, 5, 0, 0, 0, 13'598});
}

// Writes a small MBO file: two instruments, plus one trades record to be skipped.
std::string write_two_instrument_file() {
  std::string path = test::scratch_dir() + "/two.mbo.dbn.zst";
  dbn::Metadata md;
  md.dataset = "TEST";
  md.schema = dbn::Schema::kMixed;
  auto w = dbn::Writer::create(path, md);
  EXPECT_TRUE(w.ok()) << w.status().message();
  std::vector<dbn::MboMsg> msgs = {msg('A', 'B', 1, px(0), 2), msg('A', 'B', 2, px(0), 3),
                                   msg('A', 'A', 3, px(1), 4)};
  msgs[1].hd.instrument_id = 43;
  dbn::TradeMsg t{};
  dbn::init_header(&t, dbn::kRTypeMbp0, 1, 42, 0);
  for (const auto& m : msgs) EXPECT_TRUE(w->write(&m).ok());
  EXPECT_TRUE(w->write(&t).ok());
  EXPECT_TRUE(w->close().ok());
  return path;
}

TEST(MboBookFile, OneInstrumentPerBook) {
  std::string path = write_two_instrument_file();
  // By default a second instrument is an error naming the file.
  MboStats st;
  Status status = replay_mbo_file(path, nullptr, &st);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
  // Choosing one skips and counts the others; non-MBO records are counted too.
  test::RecordingSink sink;
  MboReplayOptions options;
  options.instrument_id = 42;
  status = replay_mbo_file(path, &sink, &st, options);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(st.events, 2u);
  EXPECT_EQ(st.other_instrument_records, 1u);
  EXPECT_EQ(st.other_records, 1u);
  ASSERT_EQ(sink.snapshots.size(), 2u);
  EXPECT_EQ(sink.last().bid_sz[0], 2.0);
  EXPECT_EQ(sink.last().ask_sz[0], 4.0);
}

TEST(MboBookRealData, MissingFileIsAnError) {
  MboStats st;
  Status status = replay_mbo_file("/nonexistent/x.mbo.dbn.zst", nullptr, &st);
  EXPECT_FALSE(status.ok());
}

}  // namespace
}  // namespace fxt
