// The GPU lanes' exchange (DESIGN §7.5, docs/SWEEP.md "GPU lanes"): one lane = one backtest of
// the `mm` strategy over the market stream, advanced by one thread. The stream (snapshots and
// trades of every store, in the replay engine's order, with its monotone exchange times) is
// uploaded once and shared by every lane; a lane owns its orders, L2 queue positions, latency
// queues, position, cash and fees.
//
// This is the replay engine of sim/engine.cc (Replay::run) and the exchange of sim/exchange.cc
// restated over fixed-size state for device code: market, limit, post-only, IOC and FOK orders
// (the level walk with the liquidity memory for marketable ones), cancels and modifies under
// the L2 queue models or exact L3 FIFO queues on MBO sessions (the order events in the stream,
// annotated once on the host: sim/lane_l3.h), constant or recorded latencies, fees. Every decision comes from the
// shared FXT_HD rules (sim/fill_rules.h: queues, fills, fees, account, latency ordering;
// sim/mm_rules.h, sim/exec_rules.h and sim/signal_rules.h: the `mm`, `twap`/`ac` and `signal`
// strategies themselves), so the CPU engine and the lanes cannot drift; tests/sim/lane_engine_test.cc checks each lane against
// the CPU engine (fills, orders, equity rows, stats) and tests/gpu/lane_engine_gpu_test.cc the
// device against the host.
//
// A lane whose fixed-size state overflows (more live orders, messages in flight or result
// rows than kLane* / the capture capacity) stops with `error` set; the caller reruns it on
// the CPU engine, so a result is never wrong. C++17-clean: included by .cu files.
#pragma once

#include <cstdint>
#include <cstring>

#include "sim/exec_rules.h"
#include "sim/fill_rules.h"
#include "sim/mm_rules.h"
#include "sim/signal_rules.h"

namespace fxt::sim {

// Numeric codes of sim/types.h's enums (checked by static_assert in sim/gpu_lanes.cc).
enum : uint8_t { kLaneMarket, kLaneLimit, kLanePostOnly, kLaneIoc, kLaneFok };  // OrderType
enum : uint8_t {
  kLanePending,
  kLaneOpen,
  kLaneFilled,
  kLaneCanceled,
  kLaneRejected,
  kLaneExpired
};  // OrderState
enum : uint8_t {
  kLaneAccepted,
  kLaneAckRejected,
  kLaneAckCanceled,
  kLaneModified,
  kLaneAckDone
};  // AckKind
// The strategy a lane runs.
enum : uint8_t { kLaneStrategyMm, kLaneStrategyExec, kLaneStrategySignal };
// Row kinds. Order events (L3 sessions only, sim/lane_l3.h) are exchange rows the strategy
// never sees: kLaneOrderEvent reduces the size ahead of the orders that track it,
// kLaneOrderClear (an MBO 'R') clears every L3 queue.
enum : uint8_t { kLaneSnapshot = 0, kLaneTrade = 1, kLaneOrderEvent = 2, kLaneOrderClear = 3 };
enum : uint8_t { kLaneSessionL2 = 1, kLaneSessionL3 = 2 };  // LaneItem::session_start
// LaneItem::book (snapshots): bit 0 (kLaneBookCrossed) the book is crossed or locked
// (kFlagCrossed | kFlagLocked); bits 1-3 the bid side's unchanged prefix, bits 4-6 the ask
// side's: code k in 1..6, the side's levels [0, k) (prices and sizes, bit for bit) are those of
// the previous snapshot row of the same store; kLaneSideSame (7): all kBookLevels levels are;
// 0: not even level 0, or no previous snapshot (7, 8 or 9 unchanged levels are coded 6).
enum : uint8_t { kLaneBookCrossed = 1 };
constexpr int kLaneBidPrefixShift = 1, kLaneAskPrefixShift = 4;
constexpr uint8_t kLanePrefixMask = 7, kLaneSideSame = 7, kLanePrefixMax = 6;
static_assert(kBookLevels > kLanePrefixMax, "code 7 must mean every level");
constexpr uint8_t kLaneBidSame = kLaneSideSame << kLaneBidPrefixShift;  // whole sides equal
constexpr uint8_t kLaneAskSame = kLaneSideSame << kLaneAskPrefixShift;
FXT_HD inline uint8_t lane_prefix_code(uint8_t book, int side) {
  return (book >> (side > 0 ? kLaneBidPrefixShift : kLaneAskPrefixShift)) & kLanePrefixMask;
}
// A side's code (host, when the stream is built): how many of its first levels (px, sz) are,
// bit for bit, those of the previous snapshot (px2, sz2).
inline uint8_t lane_side_prefix_code(const int64_t* px, const double* sz, const int64_t* px2,
                                     const double* sz2) {
  int k = 0;
  while (k < kBookLevels && px[k] == px2[k] && std::memcmp(&sz[k], &sz2[k], sizeof(double)) == 0)
    ++k;
  if (k == kBookLevels) return kLaneSideSame;
  return static_cast<uint8_t>(k < kLanePrefixMax ? k : kLanePrefixMax);
}
// True when level_size_at(p, ., side, px, .) of this snapshot's side `p` is, bit for bit, what
// it was at the previous snapshot of the store (value and `known`), from the row's code alone
// and at most one price: with levels [0, k) unchanged and px at or better than level k − 1,
// level_size_at's scan stops at or before level k − 1 (it stops at an empty level, at px, or
// past it), so it reads unchanged levels only. Exact for any side, ordered or not.
FXT_HD inline bool lane_level_unchanged(uint8_t book, int side, int64_t px, const int64_t* p) {
  const uint8_t k = lane_prefix_code(book, side);
  if (k == kLaneSideSame) return true;
  if (k == 0) return false;
  return side > 0 ? px >= p[k - 1] : px <= p[k - 1];
}
constexpr uint64_t kLaneNoSeq = UINT64_MAX;  // an order event no queue tracks

// One market row of the stream, in replay order. Order-event rows (sim/lane_l3.h) reuse the
// fields: px and side are the price and side of the level the event's order rested at before
// the event (side 0: no queue tracks it), sz the amount an order tracking it loses from its
// size ahead (L3Queue::on_event's arithmetic), snapshot the order's priority sequence (the
// stream row at which it got its place in the level; kLaneNoSeq: none).
struct LaneItem {
  int64_t t = 0;          // exchange time, monotone over the stream (max of row time, before)
  int64_t px = 0;         // trade price (1e-9)
  double sz = 0;          // trade size
  double mid = 0;         // the exchange's last two-sided mid after this row (currency/unit)
  double p = 0.5;         // snapshots: the signal at (store, snapshot) when one is given
  int64_t book_row = -1;  // global snapshot row the strategy sees with this row; -1: none
  uint64_t snapshot = 0;  // MarketEvent::snapshot (store-local); order events: see above
  // Snapshots: each side's first level with size > kQtyEps (kEmptyPx: none), i.e. the
  // exchange's best_available while it remembers no liquidity taken.
  int64_t best_bid = kEmptyPx, best_ask = kEmptyPx;
  uint32_t store = 0;
  uint8_t kind = kLaneSnapshot;
  int8_t side = 0;            // trade aggressor
  uint8_t session_start = 0;  // first row of its store: kLaneSessionL2 / kLaneSessionL3 begins
  uint8_t book = 0;           // snapshots: kLaneBookCrossed and the sides' unchanged prefixes
};

// The `mm` strategy's market estimates at one delivered row (sim/mm_rules.h mm_observe /
// mm_on_trade over the stream's rows up to and including it, for one tick): a function of the
// market and the tick alone, so computed once per stream and tick on the host and read by
// every `mm` lane of that tick (add_lane_mm_table). Snapshot rows only (others stay zero).
struct LaneMmRow {
  double sigma = 0;                // mm_sigma_estimate once the row is observed
  double arrival = 0;              // mm_arrival_estimate
  double mid_ticks = 0;            // mm_mid_ticks of the touch
  int64_t bid_px = 0, ask_px = 0;  // the touch (level 0)
  uint64_t seen = 0;  // snapshots_seen after the row; 0: the row does not count (one-sided)
};

// L3 sessions: one price level's history of total resting size (sim/lane_l3.h). Entries
// [begin, end) of LaneStream::l3_rows / l3_sizes: after stream row l3_rows[k] the level holds
// l3_sizes[k]. Sorted by (side, px).
struct LaneL3Level {
  int64_t px = 0;
  uint64_t begin = 0, end = 0;
  int8_t side = 0;
};

// The shared market, as pointers into host or device memory.
struct LaneStream {
  const LaneItem* items = nullptr;
  uint64_t n = 0;
  // Books, row-major [row * kBookLevels + level]; flags per row.
  const int64_t* bid_px = nullptr;
  const int64_t* ask_px = nullptr;
  const double* bid_sz = nullptr;
  const double* ask_sz = nullptr;
  const uint8_t* flags = nullptr;
  const int64_t* session_start = nullptr;  // per store: first and last snapshot time
  const int64_t* session_end = nullptr;
  uint32_t n_sessions = 0;
  // Recorded latency curves of every lane that has one, concatenated (LaneConfig says where).
  const int64_t* latency_ts = nullptr;
  const int64_t* latency_entry = nullptr;
  const int64_t* latency_response = nullptr;
  // Execution schedules (remaining holdings, slices + 1 each) of every twap/ac lane,
  // concatenated (LaneConfig::holdings_offset says where).
  const double* holdings = nullptr;
  // L3 sessions: every level's history of total resting size (LaneL3Level).
  const LaneL3Level* l3_levels = nullptr;
  uint64_t n_l3_levels = 0;
  const uint64_t* l3_rows = nullptr;
  const double* l3_sizes = nullptr;
  // `mm` estimates (LaneMmRow), one table of mm_stride rows per tick mm_ticks[k], concatenated.
  const LaneMmRow* mm_rows = nullptr;
  const int64_t* mm_ticks = nullptr;
  uint32_t n_mm_tables = 0;
  uint64_t mm_stride = 0;

  // A window of the stream staged in fast memory (the device: the block's shared memory):
  // items [w_begin, w_end) and book rows [w_row_begin, w_row_end). Reads outside it go to
  // the arrays above; an empty window (the default) sends every read there.
  const LaneItem* w_items = nullptr;
  uint64_t w_begin = 0, w_end = 0;
  const int64_t* w_bid_px = nullptr;
  const int64_t* w_ask_px = nullptr;
  const double* w_bid_sz = nullptr;
  const double* w_ask_sz = nullptr;
  const uint8_t* w_flags = nullptr;
  int64_t w_row_begin = 0, w_row_end = 0;
  const LaneMmRow* w_mm_rows = nullptr;  // rows [w_begin, w_end) of mm table w_mm_table
  uint32_t w_mm_table = UINT32_MAX;      // UINT32_MAX: none staged

  FXT_HD const LaneItem& item(uint64_t i) const {
    return i >= w_begin && i < w_end ? w_items[i - w_begin] : items[i];
  }
  FXT_HD bool in_window(int64_t row) const { return row >= w_row_begin && row < w_row_end; }
  // One book row's four columns (kBookLevels values each), located once.
  struct Book {
    const int64_t *bid_px, *ask_px;
    const double *bid_sz, *ask_sz;
    FXT_HD const int64_t* px(int side) const { return side > 0 ? bid_px : ask_px; }
    FXT_HD const double* sz(int side) const { return side > 0 ? bid_sz : ask_sz; }
  };
  FXT_HD Book book(int64_t row) const {
    Book b;
    if (in_window(row)) {
      const size_t k = static_cast<size_t>(row - w_row_begin) * kBookLevels;
      b.bid_px = w_bid_px + k;
      b.ask_px = w_ask_px + k;
      b.bid_sz = w_bid_sz + k;
      b.ask_sz = w_ask_sz + k;
    } else {
      const size_t k = static_cast<size_t>(row) * kBookLevels;
      b.bid_px = bid_px + k;
      b.ask_px = ask_px + k;
      b.bid_sz = bid_sz + k;
      b.ask_sz = ask_sz + k;
    }
    return b;
  }
  FXT_HD const LaneMmRow& mm_row(uint32_t table, uint64_t i) const {
    return table == w_mm_table && i >= w_begin && i < w_end ? w_mm_rows[i - w_begin]
                                                            : mm_rows[table * mm_stride + i];
  }
  // Row `row` of one side's prices / sizes (side +1 bids, -1 asks), kBookLevels values.
  FXT_HD const int64_t* px_row(int side, int64_t row) const {
    if (in_window(row)) {
      const size_t k = static_cast<size_t>(row - w_row_begin) * kBookLevels;
      return (side > 0 ? w_bid_px : w_ask_px) + k;
    }
    return (side > 0 ? bid_px : ask_px) + static_cast<size_t>(row) * kBookLevels;
  }
  FXT_HD const double* sz_row(int side, int64_t row) const {
    if (in_window(row)) {
      const size_t k = static_cast<size_t>(row - w_row_begin) * kBookLevels;
      return (side > 0 ? w_bid_sz : w_ask_sz) + k;
    }
    return (side > 0 ? bid_sz : ask_sz) + static_cast<size_t>(row) * kBookLevels;
  }
  FXT_HD uint8_t flags_of(int64_t row) const {
    return in_window(row) ? w_flags[row - w_row_begin] : flags[row];
  }
  // L3: the total size resting at (side, px) once the stream rows before `row` are applied
  // (Exchange::start_queue's sum over MboBook::level_orders; exact: integer sizes).
  FXT_HD double l3_level_size(int side, int64_t px, uint64_t row) const {
    uint64_t lo = 0, hi = n_l3_levels;
    while (lo < hi) {  // first level not below (side, px)
      const uint64_t mid = lo + (hi - lo) / 2;
      const LaneL3Level& l = l3_levels[mid];
      if (l.side < side || (l.side == side && l.px < px))
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == n_l3_levels || l3_levels[lo].side != side || l3_levels[lo].px != px) return 0;
    uint64_t a = l3_levels[lo].begin, b = l3_levels[lo].end;
    while (a < b) {  // first entry at or after `row`
      const uint64_t mid = a + (b - a) / 2;
      if (l3_rows[mid] < row)
        a = mid + 1;
      else
        b = mid;
    }
    return a == l3_levels[lo].begin ? 0 : l3_sizes[a - 1];
  }
};

// Bytes of a window of `items` stream rows (lane_stage_window): the rows, up to items + 1
// book rows and the rows of one mm table.
FXT_HD inline size_t lane_window_bytes(uint64_t items) {
  return static_cast<size_t>(items + 1) * kBookLevels * (2 * sizeof(int64_t) + 2 * sizeof(double)) +
         static_cast<size_t>(items) * (sizeof(LaneItem) + sizeof(LaneMmRow)) +
         static_cast<size_t>(items + 1);
}

// Copies rows [begin, end) of the stream, the book rows they refer to and the rows of mm
// table `mm_table` (when the stream has it: the table of the block's lanes) into `buffer`
// (lane_window_bytes(end - begin) bytes, 8-byte aligned) and points *view's window at them.
// Called by `threads` cooperating threads (thread = 0..threads-1; the host: 0 and 1), each
// copying every threads-th element; the caller synchronises them before reading the window.
// Book rows of a window are consecutive: each snapshot row adds the next row, and a trade
// first in the window refers to the snapshot before it.
FXT_HD inline void lane_stage_window(const LaneStream& s, uint64_t begin, uint64_t end,
                                     void* buffer, unsigned thread, unsigned threads,
                                     LaneStream* view, uint32_t mm_table = 0) {
  *view = s;
  if (end <= begin) return;
  int64_t row_begin = -1, last = -1;
  for (uint64_t i = begin; i < end && row_begin < 0; ++i) row_begin = s.items[i].book_row;
  // The last row with a book (a store's first rows, before its first snapshot, have none).
  for (uint64_t i = end; i > begin && last < 0; --i) last = s.items[i - 1].book_row;
  const int64_t rows = row_begin < 0 ? 0 : last - row_begin + 1;
  const uint64_t n = end - begin;
  const size_t levels = static_cast<size_t>(n + 1) * kBookLevels;
  int64_t* bid_px = static_cast<int64_t*>(buffer);
  int64_t* ask_px = bid_px + levels;
  double* bid_sz = reinterpret_cast<double*>(ask_px + levels);
  double* ask_sz = bid_sz + levels;
  LaneItem* items = reinterpret_cast<LaneItem*>(ask_sz + levels);
  LaneMmRow* mm = reinterpret_cast<LaneMmRow*>(items + n);
  uint8_t* flags = reinterpret_cast<uint8_t*>(mm + n);
  for (uint64_t i = thread; i < n; i += threads) items[i] = s.items[begin + i];
  if (mm_table < s.n_mm_tables) {
    const LaneMmRow* from = s.mm_rows + mm_table * s.mm_stride + begin;
    for (uint64_t i = thread; i < n; i += threads) mm[i] = from[i];
    view->w_mm_rows = mm;
    view->w_mm_table = mm_table;
  }
  const size_t values = static_cast<size_t>(rows) * kBookLevels;
  const size_t base = static_cast<size_t>(row_begin < 0 ? 0 : row_begin) * kBookLevels;
  for (size_t k = thread; k < values; k += threads) {
    bid_px[k] = s.bid_px[base + k];
    ask_px[k] = s.ask_px[base + k];
    bid_sz[k] = s.bid_sz[base + k];
    ask_sz[k] = s.ask_sz[base + k];
  }
  for (int64_t r = thread; r < rows; r += threads) flags[r] = s.flags[row_begin + r];
  view->w_items = items;
  view->w_begin = begin;
  view->w_end = end;
  view->w_bid_px = bid_px;
  view->w_ask_px = ask_px;
  view->w_bid_sz = bid_sz;
  view->w_ask_sz = ask_sz;
  view->w_flags = flags;
  view->w_row_begin = row_begin < 0 ? 0 : row_begin;
  view->w_row_end = row_begin < 0 ? 0 : row_begin + rows;
}

// The session span of a row's store as mm sees it (MarketMakerStrategy::on_event).
FXT_HD inline void lane_session(const LaneStream& s, const LaneItem& it, MmSnapshot* e) {
  if (it.store < s.n_sessions) {
    e->session_start = s.session_start[it.store];
    e->session_end = s.session_end[it.store];
  } else {
    e->session_start = e->session_end = it.t;
  }
}

// One lane's parameters.
struct LaneConfig {
  uint8_t strategy = kLaneStrategyMm;
  MmParams mm;
  uint32_t mm_table = 0;  // mm: its tick's estimates in LaneStream::mm_rows (mm_ticks[mm_table])
  double mm_tick_limit = 0;  // mm: mm_tick_limit(tick_px)
  bool has_signal = false;
  ExecParams exec;               // twap / ac
  SignalParams signal;           // signal (the probabilities are LaneItem::p)
  uint32_t holdings_offset = 0;  // its schedule in LaneStream::holdings
  FeeSchedule fees;
  QueueModel queue;
  int64_t feed_ns = 0, entry_ns = 0, response_ns = 0;  // constant latencies
  // A recorded curve (sim/latency.h): samples [latency_offset, + latency_samples) of the
  // stream's latency arrays; 0 samples: the constants above.
  uint32_t latency_offset = 0, latency_samples = 0;
  int64_t equity_interval_ns = 1'000'000'000;
  int64_t tick_px = 1;
  double multiplier = 1;
};

// Result rows (sim/types.h's Fill, EquityPoint, OrderRecord without the strings).
struct LaneFillRow {
  int64_t ts_ns = 0;
  uint64_t order_id = 0;
  int64_t px = 0;
  double qty = 0, fee = 0;
  int8_t side = 1;
  uint8_t maker = 0;
};
struct LaneEquityRow {
  int64_t ts_ns = 0;
  double position = 0, cash = 0, mid = 0, equity = 0;
};
struct LaneOrderRow {
  int64_t sent_ns = 0, arrive_ns = 0, done_ns = 0, px = 0;
  double qty = 0, filled_qty = 0, avg_fill_px = 0;
  int8_t side = 1;
  uint8_t type = kLanePostOnly;
  uint8_t state = kLanePending;
};

// Where one lane writes its rows; null pointers (capacity 0): counters only (benchmarks).
struct LaneCapture {
  LaneFillRow* fills = nullptr;
  LaneEquityRow* equity = nullptr;
  LaneOrderRow* orders = nullptr;
  uint32_t fill_cap = 0, equity_cap = 0, order_cap = 0;
};

constexpr int kLaneSlots = 8;        // live orders (pending or resting) per lane
constexpr int kLaneArrivals = 64;    // order messages in flight to the exchange
constexpr int kLaneResponses = 128;  // messages in flight to the strategy
constexpr int kLaneMemory = 16;      // levels with liquidity we took, remembered until refreshed
constexpr int64_t kLaneNever = INT64_MAX;
constexpr int64_t kLaneMinTime = INT64_MIN;

enum : uint32_t { kLaneOk = 0, kLaneOverflow = 1 };

struct LaneLiveOrder {
  uint64_t id = 0;  // 0: free slot
  int64_t px = 0;
  double qty = 0, filled = 0, notional = 0;
  // The queue. L2: the estimate. L3 (l3 set): exact FIFO with l2.ahead the size of the
  // orders ahead (L3Queue::ahead_size), l2.traded the volume traded against them not yet
  // followed by their cancels (L3Queue::pending_traded); the orders ahead are those that
  // rested at our level at stream row l3_join (priority sequence < l3_join).
  L2Queue l2;
  uint64_t l3_join = 0;
  int8_t side = 1;
  uint8_t type = kLanePostOnly;
  bool resting = false, rejoin = false, l3 = false;
};
struct LaneTaken {  // Exchange::Taken: displayed size we took at one level
  int64_t px = 0;
  double displayed = 0, taken = 0;
  int8_t side = 1;
};
struct LaneArrival {
  int64_t t = 0;
  uint64_t id = 0;
  int64_t px = 0;
  double qty = 0;
  uint8_t kind = 0;  // 0 order, 1 cancel, 2 modify
};
struct LaneResponse {
  int64_t t = 0;
  uint64_t id = 0;
  int64_t px = 0;  // fill price, or the order's price now (modified)
  double qty = 0;  // fill size, or the order's total size now (modified)
  double fee = 0;
  int8_t side = 1;
  uint8_t is_fill = 0, final = 0, ack = 0;
};
struct LaneOpen {  // an order the strategy knows to be open (sim/strategy.h OpenOrder)
  uint64_t id = 0;
  int64_t px = 0;  // 0 for market orders; the price now after a modify
  double qty = 0, filled = 0;
  int8_t side = 1;
  uint8_t type = kLanePostOnly;
};
struct LaneRequested {  // signal: the price and total size last asked of a working order
  uint64_t id = 0;
  int64_t px = 0;
  double qty = 0;
};

// Everything one lane accumulates. Device memory per lane: sizeof(LaneState) plus the capture.
struct LaneState {
  // The exchange.
  LaneLiveOrder live[kLaneSlots];
  uint8_t resting[kLaneSlots];  // slots of resting orders, in the order they joined
  uint32_t n_resting = 0;
  LaneTaken memory[kLaneMemory];
  uint32_t n_memory = 0;
  Holdings account;
  double fees_paid = 0;
  double mid = 0;
  int64_t book_row = -1;  // the exchange's book (-1: none yet this session)
  uint64_t orders = 0, fills = 0, equity_rows = 0, events = 0;
  // The replay.
  uint64_t m = 0, d = 0;  // next market row; next row to deliver to the strategy
  int64_t t = kLaneMinTime, now = 0, end = kLaneNever;
  int64_t last_arrival = kLaneMinTime, last_response = kLaneMinTime;
  LaneArrival arrivals[kLaneArrivals];
  uint32_t arr_head = 0, arr_n = 0;
  LaneResponse responses[kLaneResponses];
  uint32_t resp_head = 0, resp_n = 0;
  // The strategy's side.
  Holdings seen;
  LaneOpen open[kLaneSlots];
  uint32_t n_open = 0;
  MmQuotes mm;  // the estimates are the stream's (LaneMmRow)
  ExecState exec;
  SignalState signal;
  uint64_t cancel_sent[kLaneSlots];  // signal: orders asked to cancel
  uint32_t n_cancel_sent = 0;
  LaneRequested requested[kLaneSlots];
  uint32_t n_requested = 0;
  // The last equity row.
  int64_t eq_ts = 0;
  double eq_position = 0, eq_cash = 0, eq_mid = 0;
  uint32_t error = kLaneOk;
  uint8_t started = 0, finished = 0;
  uint8_t l3_session = 0;  // the session's queues are L3 FIFO (MBO order events in the stream)
};

// One lane's run over the stream; advance() may be called repeatedly with growing `until`.
class LaneSim {
 public:
  FXT_HD LaneSim(const LaneStream& s, const LaneConfig& c, LaneState* st, const LaneCapture& cap)
      : s_(s), c_(c), st_(*st), cap_(cap) {}

  // Runs until the next market row to process is `until` (s.n: to the end of the replay).
  FXT_HD_INLINE void advance(uint64_t until) {
    LaneState& st = st_;
    if (!st.started) {
      st.started = 1;
      st.now = s_.n > 0 ? s_.item(0).t : 0;
      // The mm estimates of its tick must be in the stream (run_gpu_lanes adds one table per
      // tick); otherwise the lane stops and is rerun on the CPU engine.
      if (c_.strategy == kLaneStrategyMm &&
          (c_.mm_table >= s_.n_mm_tables || s_.mm_ticks[c_.mm_table] != c_.tick_px))
        overflow();
    }
    // The next market row and the next row to deliver (with their times), kept across the
    // loop: the first changes only when a market row is processed, the second only then (a
    // first row to deliver) and when a row is delivered. Pointers into the window or the
    // stream, valid for this call.
    const LaneItem* nm = next_market();
    const LaneItem* nd = next_delivery();
    int64_t tm = nm != nullptr ? nm->t : kLaneNever;
    int64_t td = nd != nullptr ? nd->t + c_.feed_ns : kLaneNever;
    if (st.finished) return;
    while (st.error == kLaneOk) {
      // The next event: the earliest of market row m (tm), the first order message (ta),
      // delivery d (td) and the first response (tr). The common case is short: with no
      // message in flight either way (ta = tr = never) and a market row left (so the end of
      // the replay is not set yet: st.end stays never until tm is), it is min(tm, td), before
      // the end; the general choice below gives the same event then.
      int64_t t = td < tm ? td : tm;
      int64_t ta = kLaneNever, tr = kLaneNever;
      if (st.arr_n != 0 || st.resp_n != 0 || tm == kLaneNever) {
        if (tm == kLaneNever && st.end == kLaneNever)  // every market row is processed
          st.end = st.t == kLaneMinTime ? st.now : st.t + c_.feed_ns;
        if (st.arr_n > 0) ta = max_of(st.arrivals[st.arr_head].t, st.t);
        if (st.resp_n > 0) tr = st.responses[st.resp_head].t;
        if (ta < t) t = ta;
        if (tr < t) t = tr;
        if (t == kLaneNever || t > st.end) {
          if (st.t != kLaneMinTime) sample_equity(st.t);
          if (st.end != kLaneNever && st.now < st.end) st.now = st.end;
          st.finished = 1;
          return;
        }
      }
      // Equal times: the market row, then order arrivals, then deliveries (market first).
      if (tm == t) {
        if (st.m >= until) return;
        st.t = t;
        market_row(*nm);
        nm = next_market();
        tm = nm != nullptr ? nm->t : kLaneNever;
        if (nd == nullptr) {
          nd = next_delivery();
          td = nd != nullptr ? nd->t + c_.feed_ns : kLaneNever;
        }
      } else if (ta == t) {
        st.t = t;
        const LaneArrival a = st.arrivals[st.arr_head];
        st.arr_head = (st.arr_head + 1) % kLaneArrivals;
        --st.arr_n;
        if (a.kind == 0)
          on_order_arrival(a.id, t);
        else if (a.kind == 1)
          on_cancel_arrival(a.id, t);
        else
          on_modify_arrival(a.id, a.px, a.qty, t);
      } else if (td == t) {
        deliver_market(*nd);
        nd = next_delivery();
        td = nd != nullptr ? nd->t + c_.feed_ns : kLaneNever;
      } else {
        deliver_response();
      }
    }
  }

  // ---- the strategy's context (sim/mm_rules.h) ----
  FXT_HD double position() const { return st_.seen.position; }
  FXT_HD bool open(uint64_t id, double* qty) const {
    for (uint32_t i = 0; i < st_.n_open; ++i) {
      if (st_.open[i].id == id) {
        *qty = st_.open[i].qty;
        return true;
      }
    }
    return false;
  }
  // Units still working in the strategy's open orders (exec_rules.h).
  FXT_HD double working() const {
    double w = 0;
    for (uint32_t i = 0; i < st_.n_open; ++i) w += st_.open[i].qty - st_.open[i].filled;
    return w;
  }
  // A post-only order (mm_rules.h).
  FXT_HD uint64_t submit(int side, int64_t px, double qty) {
    return submit(side, kLanePostOnly, px, qty);
  }
  // An order of any type (exec_rules.h); a market order's price is 0.
  FXT_HD uint64_t submit(int side, uint8_t type, int64_t px, double qty) {
    LaneState& st = st_;
    if (type == kLaneMarket) px = 0;
    const int64_t arrive = arrival_time();
    int slot = -1;
    for (int i = 0; i < kLaneSlots && slot < 0; ++i)
      if (st.live[i].id == 0) slot = i;
    if (slot < 0 || st.n_open >= kLaneSlots) return overflow();
    const uint64_t id = ++st.orders;
    LaneLiveOrder& o = st.live[slot];
    o = LaneLiveOrder();
    o.id = id;
    o.side = static_cast<int8_t>(side);
    o.type = type;
    o.px = px;
    o.qty = qty;
    if (cap_.orders != nullptr) {
      if (id > cap_.order_cap) return overflow();
      LaneOrderRow& r = cap_.orders[id - 1];
      r = LaneOrderRow();
      r.sent_ns = st.now;
      r.arrive_ns = arrive;
      r.side = o.side;
      r.type = type;
      r.px = px;
      r.qty = qty;
    }
    push_arrival(arrive, 0, id, 0, 0);
    LaneOpen& known = st.open[st.n_open++];  // the strategy's record of it
    known = LaneOpen();
    known.id = id;
    known.px = px;
    known.qty = qty;
    known.side = o.side;
    known.type = type;
    return id;
  }
  FXT_HD void cancel(uint64_t id) { push_arrival(arrival_time(), 1, id, 0, 0); }
  // ---- signal_rules.h's order lists ----
  FXT_HD int open_count() const { return static_cast<int>(st_.n_open); }
  FXT_HD SignalOrder open_at(int k) const {
    const LaneOpen& o = st_.open[k];
    SignalOrder s;
    s.id = o.id;
    s.side = o.side;
    s.type = o.type;
    s.px = o.px;
    s.qty = o.qty;
    s.filled = o.filled;
    return s;
  }
  FXT_HD bool cancel_sent(uint64_t id) const {
    for (uint32_t k = 0; k < st_.n_cancel_sent; ++k)
      if (st_.cancel_sent[k] == id) return true;
    return false;
  }
  FXT_HD void mark_cancel_sent(uint64_t id) {
    if (st_.n_cancel_sent >= kLaneSlots) {
      overflow();
      return;
    }
    st_.cancel_sent[st_.n_cancel_sent++] = id;
  }
  FXT_HD void requested(uint64_t id, int64_t* px, double* qty) const {
    for (uint32_t k = 0; k < st_.n_requested; ++k) {
      if (st_.requested[k].id == id) {
        *px = st_.requested[k].px;
        *qty = st_.requested[k].qty;
      }
    }
  }
  FXT_HD void set_requested(uint64_t id, int64_t px, double qty) {
    uint32_t k = 0;
    while (k < st_.n_requested && st_.requested[k].id != id) ++k;
    if (k == st_.n_requested) {
      if (k >= kLaneSlots) {
        overflow();
        return;
      }
      ++st_.n_requested;
    }
    st_.requested[k].id = id;
    st_.requested[k].px = px;
    st_.requested[k].qty = qty;
  }
  FXT_HD void forget_finished() {
    LaneState& st = st_;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st.n_cancel_sent; ++i)
      if (is_open(st.cancel_sent[i])) st.cancel_sent[k++] = st.cancel_sent[i];
    st.n_cancel_sent = k;
    k = 0;
    for (uint32_t i = 0; i < st.n_requested; ++i)
      if (is_open(st.requested[i].id)) st.requested[k++] = st.requested[i];
    st.n_requested = k;
  }
  FXT_HD void forget(uint64_t id) {
    LaneState& st = st_;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st.n_cancel_sent; ++i)
      if (st.cancel_sent[i] != id) st.cancel_sent[k++] = st.cancel_sent[i];
    st.n_cancel_sent = k;
    k = 0;
    for (uint32_t i = 0; i < st.n_requested; ++i)
      if (st.requested[i].id != id) st.requested[k++] = st.requested[i];
    st.n_requested = k;
  }
  FXT_HD void modify(uint64_t id, int64_t px, double qty) {
    push_arrival(arrival_time(), 2, id, px, qty);
  }

 private:
  FXT_HD bool is_open(uint64_t id) const {
    for (uint32_t i = 0; i < st_.n_open; ++i)
      if (st_.open[i].id == id) return true;
    return false;
  }
  FXT_HD uint64_t overflow() {
    st_.error = kLaneOverflow;
    return 0;
  }
  // Market row m (null: none left).
  FXT_HD const LaneItem* next_market() const { return st_.m < s_.n ? &s_.item(st_.m) : nullptr; }
  // The next processed row the strategy sees (order events are the exchange's only; null:
  // none yet), delivered feed latency after its time.
  FXT_HD const LaneItem* next_delivery() {
    LaneState& st = st_;
    for (; st.d < st.m; ++st.d) {
      const LaneItem& it = s_.item(st.d);
      if (it.kind < kLaneOrderEvent) return &it;
    }
    return nullptr;
  }
  // LatencyModel::entry_ns / response_ns: the constant, or the curve at `at_ns`.
  FXT_HD int64_t entry_ns(int64_t at_ns) const {
    if (c_.latency_samples == 0) return c_.entry_ns;
    return interpolate_latency(s_.latency_ts + c_.latency_offset,
                               s_.latency_entry + c_.latency_offset, c_.latency_samples, at_ns);
  }
  FXT_HD int64_t response_ns(int64_t at_ns) const {
    if (c_.latency_samples == 0) return c_.response_ns;
    return interpolate_latency(s_.latency_ts + c_.latency_offset,
                               s_.latency_response + c_.latency_offset, c_.latency_samples, at_ns);
  }
  FXT_HD int64_t arrival_time() {
    st_.last_arrival = in_order_arrival(st_.last_arrival, st_.now, entry_ns(st_.now));
    return st_.last_arrival;
  }
  FXT_HD void push_arrival(int64_t t, uint8_t kind, uint64_t id, int64_t px, double qty) {
    LaneState& st = st_;
    if (st.arr_n >= kLaneArrivals) {
      overflow();
      return;
    }
    LaneArrival& a = st.arrivals[(st.arr_head + st.arr_n) % kLaneArrivals];
    a.t = t;
    a.kind = kind;
    a.id = id;
    a.px = px;
    a.qty = qty;
    ++st.arr_n;
  }
  // A message to the strategy, response latency after act_ns, never overtaking the last.
  FXT_HD LaneResponse* push_response(int64_t act_ns) {
    LaneState& st = st_;
    if (st.resp_n >= kLaneResponses) {
      overflow();
      return nullptr;
    }
    LaneResponse& r = st.responses[(st.resp_head + st.resp_n) % kLaneResponses];
    ++st.resp_n;
    r = LaneResponse();
    st.last_response = in_order_arrival(st.last_response, act_ns, response_ns(act_ns));
    r.t = st.last_response;
    return &r;
  }
  FXT_HD void send_ack(uint64_t id, uint8_t kind, int64_t t, bool final, const LaneLiveOrder* o) {
    LaneResponse* r = push_response(t);
    if (r == nullptr) return;
    r->id = id;
    r->ack = kind;
    r->final = final ? 1 : 0;
    if (o != nullptr) {
      r->px = o->px;
      r->qty = o->qty;
    }
  }

  FXT_HD LaneLiveOrder* find(uint64_t id) {
    if (id == 0) return nullptr;
    for (int i = 0; i < kLaneSlots; ++i)
      if (st_.live[i].id == id) return &st_.live[i];
    return nullptr;
  }
  FXT_HD LaneOrderRow* record(uint64_t id) {
    return cap_.orders != nullptr ? &cap_.orders[id - 1] : nullptr;
  }
  FXT_HD static double remaining(const LaneLiveOrder& o) { return o.qty - o.filled; }

  // ---- the book ----
  FXT_HD double size_at(int side, int64_t px, bool* known) const {
    *known = true;
    if (st_.book_row < 0) return 0;
    return level_size_at(s_.px_row(side, st_.book_row), s_.sz_row(side, st_.book_row), side, px,
                         known);
  }
  // ---- liquidity (Exchange::taken_at, available, best_available, take) ----
  FXT_HD double taken_at(int side, int64_t px) const {
    for (uint32_t k = 0; k < st_.n_memory; ++k)
      if (st_.memory[k].side == side && st_.memory[k].px == px) return st_.memory[k].taken;
    return 0;
  }
  // Liquidity opposite `side` up to `limit` (inclusive), net of what we took.
  FXT_HD double available(int side, int64_t limit) const {
    if (st_.book_row < 0) return 0;
    const int opp = -side;
    const int64_t* p = s_.px_row(opp, st_.book_row);
    const double* sz = s_.sz_row(opp, st_.book_row);
    double total = 0;
    for (int i = 0; i < kBookLevels && p[i] != kEmptyPx; ++i) {
      if (beyond_limit(side, p[i], limit)) break;
      total += max_of(0.0, level_left(sz[i], taken_at(opp, p[i])));
    }
    return total;
  }
  // The first level with size left on `side`.
  FXT_HD int64_t best_available(int side) const {
    if (st_.book_row < 0) return kEmptyPx;
    return best_available(side, s_.book(st_.book_row));
  }
  FXT_HD int64_t best_available(int side, const LaneStream::Book& book) const {
    const int64_t* p = book.px(side);
    const double* sz = book.sz(side);
    for (int i = 0; i < kBookLevels && p[i] != kEmptyPx; ++i)
      if (level_left(sz[i], taken_at(side, p[i])) > kQtyEps) return p[i];
    return kEmptyPx;
  }
  FXT_HD bool would_cross(int side, int64_t px) const {
    return crosses(side, px, best_available(-side));
  }
  // Walks the opposite levels taking up to `want`; one taker fill per level.
  FXT_HD void take(LaneLiveOrder& o, bool has_limit, int64_t limit, double want, int64_t t) {
    LaneState& st = st_;
    if (st.book_row < 0) return;
    const int opp = -o.side;
    const int64_t row = st.book_row;
    for (int i = 0; i < kBookLevels && want > kQtyEps; ++i) {
      const int64_t level_px = s_.px_row(opp, row)[i];
      if (level_px == kEmptyPx) break;
      if (has_limit && beyond_limit(o.side, level_px, limit)) break;
      const double displayed = s_.sz_row(opp, row)[i];
      const double q = walk_take(level_left(displayed, taken_at(opp, level_px)), want);
      if (q <= 0) continue;  // level used up
      uint32_t k = 0;
      while (k < st.n_memory && !(st.memory[k].side == opp && st.memory[k].px == level_px)) ++k;
      if (k == st.n_memory) {
        if (st.n_memory >= kLaneMemory) {
          overflow();
          return;
        }
        st.memory[k].side = static_cast<int8_t>(opp);
        st.memory[k].px = level_px;
        st.memory[k].displayed = displayed;
        st.memory[k].taken = q;
        ++st.n_memory;
      } else {
        st.memory[k].taken += q;
      }
      want -= q;
      fill(o, level_px, q, /*maker=*/false, t);
    }
  }
  // Exchange::on_book's refresh: a level's memory lasts until its displayed size changes or it
  // leaves the displayed book.
  FXT_HD void refresh_memory() {
    LaneState& st = st_;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st.n_memory; ++i) {
      bool known = false;
      const double now = size_at(st.memory[i].side, st.memory[i].px, &known);
      if (known && now == st.memory[i].displayed) st.memory[k++] = st.memory[i];
    }
    st.n_memory = k;
  }
  // Exchange::validate.
  FXT_HD bool valid(uint8_t type, int64_t px, double qty) const {
    if (!mm_finite(qty) || qty <= 0) return false;
    if (type == kLaneMarket) return true;
    if (px == kEmptyPx || px == kLaneMinTime) return false;
    if (c_.tick_px > 1 && px % c_.tick_px != 0) return false;
    return true;
  }

  // ---- queues and fills ----
  FXT_HD void start_queue(LaneLiveOrder& o) {
    o.resting = true;
    o.rejoin = false;
    o.l3 = st_.l3_session != 0;
    if (o.l3) {  // behind every order resting at our price now (L3Queue::join)
      o.l3_join = st_.m;
      o.l2.ahead = s_.l3_level_size(o.side, o.px, st_.m);
      o.l2.traded = 0;
      return;
    }
    bool known = false;
    const double displayed = size_at(o.side, o.px, &known);
    o.l2.join(displayed, known && st_.book_row >= 0);
  }
  FXT_HD void join_queue(LaneLiveOrder& o) {
    start_queue(o);
    st_.resting[st_.n_resting++] = static_cast<uint8_t>(&o - st_.live);
  }
  FXT_HD void prune_resting() {
    uint32_t k = 0;
    for (uint32_t i = 0; i < st_.n_resting; ++i)
      if (st_.live[st_.resting[i]].resting) st_.resting[k++] = st_.resting[i];
    st_.n_resting = k;
  }
  FXT_HD void finish(LaneLiveOrder& o, uint8_t state, int64_t t) {
    o.resting = false;
    if (LaneOrderRow* r = record(o.id)) {
      r->state = state;
      r->done_ns = t;
    }
  }
  FXT_HD void fill(LaneLiveOrder& o, int64_t px, double qty, bool maker, int64_t t) {
    LaneState& st = st_;
    qty = clamp_fill(qty, remaining(o));
    if (qty <= 0) return;
    o.filled += qty;
    o.notional += static_cast<double>(px) * kPxScale * qty;
    const double fee = fill_fee(c_.fees, maker, px, qty, c_.multiplier);
    apply_fill(&st.account, o.side, px, qty, fee, c_.multiplier);
    if (cap_.fills != nullptr) {
      if (st.fills >= cap_.fill_cap) {
        overflow();
        return;
      }
      LaneFillRow& f = cap_.fills[st.fills];
      f.ts_ns = t;
      f.order_id = o.id;
      f.side = o.side;
      f.px = px;
      f.qty = qty;
      f.fee = fee;
      f.maker = maker ? 1 : 0;
    }
    ++st.fills;
    st.fees_paid += fee;
    const bool done = remaining(o) <= kQtyEps;
    if (LaneOrderRow* r = record(o.id)) {
      r->filled_qty = o.filled;
      r->avg_fill_px = o.notional / o.filled;
      if (done) {
        r->state = kLaneFilled;
        r->done_ns = t;
      }
    }
    if (LaneResponse* m = push_response(t)) {
      m->is_fill = 1;
      m->id = o.id;
      m->side = o.side;
      m->px = px;
      m->qty = qty;
      m->fee = fee;
      m->final = done ? 1 : 0;
    }
    if (done) {
      o.resting = false;
      o.id = 0;  // final: the slot is free (pruned from resting by the caller, if it rested)
    }
    sample_equity(t);
  }
  FXT_HD void sample_equity(int64_t t) {
    LaneState& st = st_;
    const double position = st.account.position, cash = st.account.cash, mid = st.mid;
    if (st.equity_rows > 0 && st.eq_ts == t && st.eq_position == position && st.eq_cash == cash &&
        st.eq_mid == mid)
      return;  // nothing new to record
    if (cap_.equity != nullptr) {
      if (st.equity_rows >= cap_.equity_cap) {
        overflow();
        return;
      }
      LaneEquityRow& e = cap_.equity[st.equity_rows];
      e.ts_ns = t;
      e.position = position;
      e.cash = cash;
      e.mid = mid;
      e.equity = cash + position * mid * c_.multiplier;  // Account::equity
    }
    ++st.equity_rows;
    st.eq_ts = t;
    st.eq_position = position;
    st.eq_cash = cash;
    st.eq_mid = mid;
  }

  // ---- order messages (Exchange::on_*_arrival) ----
  FXT_HD void on_order_arrival(uint64_t id, int64_t t) {
    LaneLiveOrder* o = find(id);
    if (o == nullptr) return;
    LaneOrderRow* r = record(id);
    if (r != nullptr) r->arrive_ns = t;
    if (!valid(o->type, o->px, o->qty) ||
        (o->type == kLanePostOnly && would_cross(o->side, o->px))) {
      finish(*o, kLaneRejected, t);
      send_ack(id, kLaneAckRejected, t, true, o);
      o->id = 0;
      return;
    }
    if (r != nullptr) r->state = kLaneOpen;
    send_ack(id, kLaneAccepted, t, false, o);
    switch (o->type) {
      case kLaneMarket:
      case kLaneIoc:
        take(*o, o->type == kLaneIoc, o->px, o->qty, t);
        break;
      case kLaneFok:
        if (available(o->side, o->px) >= o->qty - kQtyEps) take(*o, true, o->px, o->qty, t);
        break;
      case kLaneLimit:
        take(*o, true, o->px, o->qty, t);
        break;
      default:  // post-only
        break;
    }
    if (remaining(*o) <= kQtyEps) return;  // filled (the last fill finished it)
    if (o->type == kLaneLimit || o->type == kLanePostOnly) {
      join_queue(*o);
      return;
    }
    finish(*o, kLaneExpired, t);  // market / IOC / FOK remainder
    send_ack(id, kLaneAckDone, t, true, o);
    o->id = 0;
  }
  FXT_HD void on_cancel_arrival(uint64_t id, int64_t t) {
    LaneLiveOrder* o = find(id);
    if (o == nullptr || !o->resting) {
      send_ack(id, kLaneAckRejected, t, false, o);
      return;
    }
    finish(*o, kLaneCanceled, t);
    prune_resting();
    send_ack(id, kLaneAckCanceled, t, true, o);
    o->id = 0;
  }
  FXT_HD void on_modify_arrival(uint64_t id, int64_t px, double qty, int64_t t) {
    LaneLiveOrder* o = find(id);
    if (o == nullptr || !o->resting || !valid(o->type, px, qty) || qty <= o->filled + kQtyEps) {
      send_ack(id, kLaneAckRejected, t, false, o);
      return;
    }
    const bool price_change = px != o->px;
    if (price_change && o->type == kLanePostOnly && would_cross(o->side, px)) {
      send_ack(id, kLaneAckRejected, t, false, o);
      return;
    }
    const bool loses_priority = price_change || qty > o->qty + kQtyEps;
    LaneOrderRow* r = record(id);
    o->qty = qty;
    if (r != nullptr) r->qty = qty;
    if (!loses_priority) {  // a size decrease keeps the queue position
      send_ack(id, kLaneModified, t, false, o);
      return;
    }
    o->resting = false;
    prune_resting();
    o->px = px;
    if (r != nullptr) r->px = px;
    send_ack(id, kLaneModified, t, false, o);
    if (price_change && o->type == kLaneLimit) take(*o, true, px, remaining(*o), t);
    if (o->id != 0 && remaining(*o) > kQtyEps) join_queue(*o);
  }

  // ---- market data (Exchange::on_trade, on_book, begin_session) ----
  // Row m (`it`).
  FXT_HD void market_row(const LaneItem& it) {
    LaneState& st = st_;
    const int64_t t = st.t;
    if (it.session_start) {  // Exchange::begin_session
      st.book_row = -1;
      st.n_memory = 0;
      st.l3_session = it.session_start == kLaneSessionL3 ? 1 : 0;
      for (uint32_t k = 0; k < st.n_resting; ++k) {
        st.live[st.resting[k]].rejoin = true;
        st.live[st.resting[k]].l3 = false;
      }
    }
    st.mid = it.mid;
    if (it.kind >= kLaneOrderEvent) {  // Exchange::on_order_event: no event, no equity row
      on_order_event(it);
      ++st.m;
      return;
    }
    if (it.kind == kLaneTrade)
      on_trade(it.px, it.sz, it.side, t);
    else
      on_book(it, t);
    ++st.events;
    if (st.equity_rows == 0 || t - st.eq_ts >= c_.equity_interval_ns) sample_equity(t);
    ++st.m;
  }
  FXT_HD void on_trade(int64_t px, double sz, int trade_side, int64_t t) {
    LaneState& st = st_;
    if (st.n_resting == 0) return;
    double used_px_volume = 0;  // of this trade, already given to our earlier orders at px
    int64_t used_px = kEmptyPx;
    int used_side = 0;
    for (uint32_t k = 0; k < st.n_resting; ++k) {
      LaneLiveOrder& o = st.live[st.resting[k]];
      if (!o.resting || o.rejoin) continue;
      if (trades_through(o.side, px, o.px)) {
        fill(o, o.px, remaining(o), /*maker=*/true, t);
        continue;
      }
      if (!trade_hits_level(o.side, o.px, px, trade_side)) continue;
      const double beyond = o.l3 ? fifo_on_trade(o.l2.ahead, &o.l2.traded, sz) : o.l2.on_trade(sz);
      if (used_px != o.px || used_side != o.side) {
        used_px = o.px;
        used_side = o.side;
        used_px_volume = 0;
      }
      const double q = min_of(remaining(o), beyond - used_px_volume);
      if (q > kQtyEps) {
        used_px_volume += q;
        fill(o, o.px, q, /*maker=*/true, t);
      }
    }
    prune_resting();
  }
  // A snapshot row. A queue whose level reads the same as at the last snapshot (which it saw:
  // a lane processes every snapshot row; lane_level_unchanged, from the row's unchanged prefix
  // of its side) and that nothing traded against since keeps its estimate (L2Queue::settled:
  // on_level with the same size would change nothing) without the level's lookup. Its
  // level_size is that snapshot's size (set by on_level there, or by join from the book row it
  // joined at: that snapshot's, or this one's for a rejoin), unless the level was below the
  // displayed depth there: then it is now too, and on_level returns without a change. The
  // resting list is pruned only when a fill ended an order (only fills change it here).
  FXT_HD void on_book(const LaneItem& it, int64_t t) {
    LaneState& st = st_;
    const int64_t row = it.book_row;
    st.book_row = row;
    if (st.n_memory > 0) refresh_memory();
    if (st.n_resting == 0) return;
    const LaneStream::Book book = s_.book(row);
    const bool crossed_book = (it.book & kLaneBookCrossed) != 0;
    // The touches net of what we took, both read before any fill (as Exchange::on_book); with
    // nothing taken, the row's own.
    const int64_t best_bid = st.n_memory == 0 ? it.best_bid : best_available(+1, book);
    const int64_t best_ask = st.n_memory == 0 ? it.best_ask : best_available(-1, book);
    bool filled = false;
    for (uint32_t k = 0; k < st.n_resting; ++k) {
      LaneLiveOrder& o = st.live[st.resting[k]];
      if (!o.resting) continue;
      if (o.rejoin) start_queue(o);  // first book of a new session: back of the level
      if (o.l3) {
        o.l2.traded = 0;  // the event is complete: its fills' cancels have arrived
      } else if (o.l2.settled() && lane_level_unchanged(it.book, o.side, o.px, book.px(o.side))) {
        o.l2.traded = 0;  // on_level's one effect here
      } else {
        bool known = false;
        const double size = level_size_at(book.px(o.side), book.sz(o.side), o.side, o.px, &known);
        o.l2.on_level(c_.queue, size, known);
      }
      if (crossed_book) continue;
      const int64_t opp = o.side > 0 ? best_ask : best_bid;
      if (touch_reaches(o.side, o.px, opp)) {
        fill(o, o.px, remaining(o), /*maker=*/true, t);
        filled = true;
      }
    }
    if (filled) prune_resting();
  }

  // An order event of an L3 session (Exchange::on_order_event, L3Queue::on_event / reduce):
  // an order tracks it when the event's order rested at its level before it joined.
  FXT_HD void on_order_event(const LaneItem& it) {
    LaneState& st = st_;
    for (uint32_t k = 0; k < st.n_resting; ++k) {
      LaneLiveOrder& o = st.live[st.resting[k]];
      if (!o.resting || !o.l3) continue;
      if (it.kind == kLaneOrderClear) {  // the book was cleared: nobody is ahead any more
        o.l2.ahead = 0;
        o.l2.traded = 0;
      } else if (it.side == o.side && it.px == o.px && it.snapshot < o.l3_join) {
        o.l2.ahead = max_of(0.0, o.l2.ahead - it.sz);
        o.l2.traded = max_of(0.0, o.l2.traded - it.sz);
      }
    }
  }

  // ---- deliveries to the strategy (Replay::deliver_market, deliver_response) ----
  // Row d (`it`).
  FXT_HD void deliver_market(const LaneItem& it) {
    LaneState& st = st_;
    ++st.d;
    st.now = it.t + c_.feed_ns;
    if (c_.strategy == kLaneStrategyExec) {
      ExecEvent e;
      e.seen_ns = st.now;
      e.is_trade = it.kind == kLaneTrade;
      e.trade_px = it.px;
      e.trade_sz = it.sz;
      if (it.book_row >= 0) {  // Snapshot::has_bid / has_ask of the book the strategy sees
        e.bid_px = s_.px_row(+1, it.book_row)[0];
        e.ask_px = s_.px_row(-1, it.book_row)[0];
        e.has_bid = e.bid_px != kEmptyPx && s_.sz_row(+1, it.book_row)[0] > 0;
        e.has_ask = e.ask_px != kEmptyPx && s_.sz_row(-1, it.book_row)[0] > 0;
      } else {
        e.bid_px = e.ask_px = kEmptyPx;
      }
      e.multiplier = c_.multiplier;
      exec_on_event(c_.exec, s_.holdings + c_.holdings_offset, &st.exec, e, *this);
      return;
    }
    if (c_.strategy == kLaneStrategySignal) {
      if (it.kind != kLaneSnapshot) return;  // decisions on book updates only
      SignalTouch touch;  // Snapshot::has_bid / has_ask of the book the strategy sees
      touch.bid_px = s_.px_row(+1, it.book_row)[0];
      touch.ask_px = s_.px_row(-1, it.book_row)[0];
      touch.has_bid = touch.bid_px != kEmptyPx && s_.sz_row(+1, it.book_row)[0] > 0;
      touch.has_ask = touch.ask_px != kEmptyPx && s_.sz_row(-1, it.book_row)[0] > 0;
      signal_on_snapshot(c_.signal, &st.signal, it.p, st.now, touch, *this);
      return;
    }
    // mm: the estimates (trades counted, snapshots observed) are the stream's table; a
    // snapshot that counts and is past warmup gets the decision (mm_on_snapshot's second half).
    if (it.kind == kLaneTrade) return;
    const LaneMmRow& row = s_.mm_row(c_.mm_table, st.d - 1);
    if (row.seen <= static_cast<uint64_t>(c_.mm.warmup)) return;  // 0: did not count
    MmSnapshot e;
    e.store = it.store;
    e.ts_ns = it.t;
    e.seen_ns = st.now;
    e.bid_px = row.bid_px;
    e.ask_px = row.ask_px;
    // The store's session span (lane_session), read once per store and advance call: a
    // lane's rows come store by store. A store without a span gets the row's time, per row.
    if (static_cast<int64_t>(it.store) != span_store_) {
      lane_session(s_, it, &e);
      span_start_ = e.session_start;
      span_end_ = e.session_end;
      span_store_ = it.store < s_.n_sessions ? static_cast<int64_t>(it.store) : -1;
    }
    e.session_start = span_start_;
    e.session_end = span_end_;
    e.p = it.p;
    mm_decide(c_.mm, c_.has_signal, &st.mm, e, row.mid_ticks, row.sigma, row.arrival, c_.tick_px,
              c_.mm_tick_limit, *this);
  }
  FXT_HD void erase_open(uint64_t id) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < st_.n_open; ++i)
      if (st_.open[i].id != id) st_.open[k++] = st_.open[i];
    st_.n_open = k;
  }
  FXT_HD void deliver_response() {
    LaneState& st = st_;
    const LaneResponse r = st.responses[st.resp_head];
    st.resp_head = (st.resp_head + 1) % kLaneResponses;
    --st.resp_n;
    st.now = r.t;
    if (r.is_fill) {
      apply_fill(&st.seen, r.side, r.px, r.qty, r.fee, c_.multiplier);
      for (uint32_t i = 0; i < st.n_open; ++i)
        if (st.open[i].id == r.id) st.open[i].filled += r.qty;
    } else if (r.ack == kLaneModified) {
      for (uint32_t i = 0; i < st.n_open; ++i) {
        if (st.open[i].id == r.id) {
          st.open[i].px = r.px;
          st.open[i].qty = r.qty;
        }
      }
    }
    if (r.final) erase_open(r.id);
    if (!r.is_fill && c_.strategy == kLaneStrategySignal) signal_on_ack(r.ack, r.id, *this);
    if (r.is_fill && c_.strategy == kLaneStrategyExec)
      exec_on_fill(&st.exec, r.px, r.qty, r.fee, c_.multiplier);
  }

  const LaneStream& s_;
  const LaneConfig& c_;
  LaneState& st_;
  LaneCapture cap_;
  int64_t span_store_ = -1;  // the store whose span is cached below; -1: none
  int64_t span_start_ = 0, span_end_ = 0;
};

}  // namespace fxt::sim
