// The strategy interface of DESIGN §7.3. The replay engine calls a Strategy with every
// market event (on its own clock, feed latency late), every fill and every ack; the
// strategy acts through its StrategyContext. Orders take effect entry latency later.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/types.h"

namespace fxt::sim {

// An order of ours that is not yet final, as the strategy knows it.
struct OpenOrder {
  uint64_t order_id = 0;
  Side side = Side::kBuy;
  OrderType type = OrderType::kLimit;
  int64_t px = 0;
  double qty = 0;         // current total size
  double filled_qty = 0;  // so far
  bool acknowledged = false;
};

class StrategyContext {
 public:
  virtual ~StrategyContext() = default;
  virtual int64_t now_ns() const = 0;  // the strategy's clock
  // Sends an order; it reaches the exchange entry latency later. Returns its id (> 0).
  virtual uint64_t submit(const OrderRequest& request) = 0;
  virtual void cancel(uint64_t order_id) = 0;
  // New price and/or total size; a price change or size increase loses queue priority.
  virtual void modify(uint64_t order_id, int64_t px, double qty) = 0;
  virtual const Snapshot& book() const = 0;  // the latest book the strategy has seen
  virtual double position() const = 0;       // from fills received so far
  virtual double cash() const = 0;           // currency, fees included
  virtual const std::vector<OpenOrder>& open_orders() const = 0;
  virtual const Instrument& instrument() const = 0;
};

// Sends an order of `type` (a sim/types.h OrderType code) through ctx: the adapters of the
// shared strategy rules (sim/*_rules.h) submit through this. side +1 buy, -1 sell.
inline uint64_t submit_order(StrategyContext& ctx, int side, uint8_t type, int64_t px, double qty) {
  OrderRequest r;
  r.side = side > 0 ? Side::kBuy : Side::kSell;
  r.type = static_cast<OrderType>(type);
  r.px = px;
  r.qty = qty;
  return ctx.submit(r);
}

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual void on_start(StrategyContext& ctx) { (void)ctx; }
  virtual void on_event(const MarketEvent& event, StrategyContext& ctx) = 0;
  virtual void on_fill(const Fill& fill, StrategyContext& ctx) { (void)fill, (void)ctx; }
  virtual void on_ack(const Ack& ack, StrategyContext& ctx) { (void)ack, (void)ctx; }
  virtual void on_end(StrategyContext& ctx) { (void)ctx; }
  // What the strategy measured about its own run, for stats.json (null: nothing). The
  // execution strategies report their shortfall against the arrival price and the VWAP.
  virtual nlohmann::json report() const { return nullptr; }
};

}  // namespace fxt::sim
