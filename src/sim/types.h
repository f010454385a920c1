// The exchange simulator's vocabulary (DESIGN §7), shared by the replay engine, the
// strategies, the model market and the result writers.
//
// Units: prices are int64 fixed point in 1e-9 currency units like the store (kPxScale);
// quantities are double (contracts, shares or coins); cash, fees and equity are double in
// currency, already multiplied by the contract multiplier. Times are ns since the epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/book.h"
#include "sim/fill_rules.h"

namespace fxt::sim {

enum class Side : int8_t { kBuy = 1, kSell = -1 };
inline int sign(Side s) { return static_cast<int>(s); }

// DESIGN §7.2. kMarket walks the displayed levels; kLimit rests (GTC) after taking what
// crosses; kPostOnly is rejected if it would cross; kIoc takes what it can and cancels the
// rest; kFok fills completely at arrival or not at all.
enum class OrderType : uint8_t { kMarket, kLimit, kPostOnly, kIoc, kFok };
const char* order_type_name(OrderType t);  // "market", "limit", "post_only", "ioc", "fok"

struct OrderRequest {
  Side side = Side::kBuy;
  OrderType type = OrderType::kLimit;
  int64_t px = 0;  // limit price (1e-9); ignored for kMarket
  double qty = 0;  // > 0
};

enum class OrderState : uint8_t { kPending, kOpen, kFilled, kCanceled, kRejected, kExpired };
const char* order_state_name(OrderState s);  // "pending", "open", "filled", ...

// One execution of (part of) one of our orders at one price level.
struct Fill {
  int64_t ts_ns = 0;  // exchange time of the execution
  uint64_t order_id = 0;
  Side side = Side::kBuy;
  int64_t px = 0;
  double qty = 0;
  double fee = 0;  // currency; negative = rebate
  bool maker = false;
};

// What the exchange tells the strategy about an order, received response latency after
// the exchange acted. kDone = an IOC/FOK/market remainder expired.
enum class AckKind : uint8_t { kAccepted, kRejected, kCanceled, kModified, kDone };
struct Ack {
  int64_t ts_ns = 0;  // when the strategy receives it
  uint64_t order_id = 0;
  AckKind kind = AckKind::kAccepted;
  std::string reason;  // for kRejected: "post-only would cross", "unknown order", ...
};

enum class EventKind : uint8_t { kSnapshot, kTrade };

// A market event as the strategy sees it, feed latency after it happened.
struct MarketEvent {
  EventKind kind = EventKind::kSnapshot;
  int64_t ts_ns = 0;    // exchange time
  int64_t seen_ns = 0;  // ts_ns + feed latency: the strategy's clock at delivery
  uint32_t store = 0;   // index into the backtest's store list
  uint64_t snapshot = 0;  // snapshot index in that store (for trades: the one it belongs to)
  const Snapshot* book = nullptr;  // the latest book at or before this event; never null
  const Trade* trade = nullptr;    // kTrade only
};

// FeeSchedule, Instrument, QueueModelKind and QueueModel live in sim/fill_rules.h (shared
// with device code).

struct LatencyConfig {
  int64_t feed_ns = 0;      // event happened -> strategy sees it
  int64_t entry_ns = 0;     // strategy sends -> exchange receives
  int64_t response_ns = 0;  // exchange acts -> strategy receives the ack/fill
  // Optional recorded latency file (CSV "ts_ns,entry_ns,response_ns", sorted by ts_ns):
  // entry/response latency linearly interpolated at the send time, clamped at the ends.
  std::string file;
};

struct SimConfig {
  Instrument instrument;  // tick_px is filled from the store when left at 1
  FeeSchedule fees;
  LatencyConfig latency;
  QueueModel queue;
  bool use_l3 = true;  // exact FIFO queues on stores with MBO order events
  int64_t equity_interval_ns = 1'000'000'000;  // equity sampled at least this often, and at fills
};

// Result rows (DESIGN §7.4).
struct OrderRecord {
  uint64_t order_id = 0;
  int64_t sent_ns = 0;     // strategy clock when sent
  int64_t arrive_ns = 0;   // exchange time it arrived
  int64_t done_ns = 0;     // exchange time it reached its final state (0 = still open at end)
  Side side = Side::kBuy;
  OrderType type = OrderType::kLimit;
  int64_t px = 0;
  double qty = 0;
  double filled_qty = 0;
  double avg_fill_px = 0;  // currency per unit (not multiplied); 0 when nothing filled
  OrderState state = OrderState::kPending;
  std::string reason;
};

struct EquityPoint {
  int64_t ts_ns = 0;
  double position = 0;
  double cash = 0;
  double mid = 0;     // currency per unit
  double equity = 0;  // cash + position·mid·multiplier
};

struct BacktestResult {
  std::vector<OrderRecord> orders;
  std::vector<Fill> fills;
  std::vector<EquityPoint> equity;
  Instrument instrument;
  double fees_paid = 0;  // sum of Fill::fee
  uint64_t events = 0;   // market events replayed
};

}  // namespace fxt::sim
