// Helpers for the simulator tests: hand-built stores and a scripted strategy.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "data/store.h"
#include "sim/engine.h"
#include "sim/strategy.h"
#include "test_util.h"

namespace fxt::sim::test {

// Whole currency units to store prices (1e-9): px(100) = 100e9.
constexpr int64_t px(int64_t units) {
  return units * 1'000'000'000;
}
constexpr int64_t kTick = 1'000'000'000;  // the test stores' tick: 1.00

using Levels = std::vector<std::pair<int64_t, double>>;  // (price units, size), best first

inline Snapshot book(int64_t ts, const Levels& bids, const Levels& asks) {
  Snapshot s;
  s.ts_ns = ts;
  for (size_t i = 0; i < bids.size(); ++i) {
    s.bid_px[i] = px(bids[i].first);
    s.bid_sz[i] = bids[i].second;
    s.bid_ct[i] = 1;
  }
  for (size_t i = 0; i < asks.size(); ++i) {
    s.ask_px[i] = px(asks[i].first);
    s.ask_sz[i] = asks[i].second;
    s.ask_ct[i] = 1;
  }
  s.mark_crossed_or_locked();
  return s;
}

inline Trade trade(int64_t ts, int64_t px_units, double sz, int8_t side) {
  return Trade{ts, px(px_units), sz, side};
}

// One row of a hand-built store, in source order.
struct Row {
  enum Kind { kSnap, kTrade, kEvent } kind;
  Snapshot snap;
  Trade tr;
  OrderEvent ev;
};
inline Row S(const Snapshot& s) {
  return {Row::kSnap, s, {}, {}};
}
inline Row T(const Trade& t) {
  return {Row::kTrade, {}, t, {}};
}
inline Row E(int64_t ts, uint64_t id, int64_t px_units, double sz, char action, int8_t side) {
  OrderEvent e;
  e.ts_ns = ts;
  e.order_id = id;
  e.px = px(px_units);
  e.sz = sz;
  e.action = action;
  e.side = side;
  return {Row::kEvent, {}, {}, e};
}

// Writes a store named `name` under a fresh scratch dir and returns its path.
inline std::string write_store(const std::vector<Row>& rows, const std::string& name = "store",
                               const std::string& symbol = "TEST", const std::string& dir = "") {
  const std::string path = (dir.empty() ? fxt::test::scratch_dir() : dir) + "/" + name;
  StoreInfo info;
  info.source_path = "hand-built";
  info.source_format = "test";
  info.symbol = symbol;
  info.tick_px = kTick;
  info.has_trades = true;
  auto w = StoreWriter::create(path, info);
  EXPECT_TRUE(w.ok()) << w.status().message();
  for (const Row& r : rows) {
    if (r.kind == Row::kSnap) w->on_snapshot(r.snap);
    if (r.kind == Row::kTrade) w->on_trade(r.tr);
    if (r.kind == Row::kEvent) w->on_order_event(r.ev);
  }
  Status st = w->finish();
  EXPECT_TRUE(st.ok()) << st.message();
  return path;
}

// A strategy that runs scripted actions at the first event seen at or after given times
// (strategy clock) and records everything it receives.
class Script : public Strategy {
 public:
  using Action = std::function<void(StrategyContext&)>;
  void at(int64_t seen_ns, Action a) { actions_.emplace(seen_ns, std::move(a)); }

  void on_event(const MarketEvent& e, StrategyContext& ctx) override {
    events.push_back(e);
    books.push_back(*e.book);
    while (!actions_.empty() && actions_.begin()->first <= e.seen_ns) {
      Action a = std::move(actions_.begin()->second);
      actions_.erase(actions_.begin());
      a(ctx);
    }
  }
  void on_fill(const Fill& f, StrategyContext& ctx) override {
    fills.push_back(f);
    fill_seen_ns.push_back(ctx.now_ns());
    positions.push_back(ctx.position());
    cashes.push_back(ctx.cash());
  }
  void on_ack(const Ack& a, StrategyContext& ctx) override {
    (void)ctx;
    acks.push_back(a);
  }
  void on_end(StrategyContext& ctx) override {
    end_open = ctx.open_orders();
    end_position = ctx.position();
    end_cash = ctx.cash();
  }

  std::vector<MarketEvent> events;  // pointers inside are stale after the call
  std::vector<Snapshot> books;
  std::vector<Fill> fills;
  std::vector<int64_t> fill_seen_ns;
  std::vector<double> positions, cashes;
  std::vector<Ack> acks;
  std::vector<OpenOrder> end_open;
  double end_position = 0, end_cash = 0;

 private:
  std::multimap<int64_t, Action> actions_;
};

inline OrderRequest order(Side side, OrderType type, int64_t px_units, double qty) {
  OrderRequest r;
  r.side = side;
  r.type = type;
  r.px = px(px_units);
  r.qty = qty;
  return r;
}

inline BacktestResult run_ok(const std::vector<std::string>& stores, const SimConfig& config,
                             Strategy* strategy) {
  auto r = run_backtest(stores, config, strategy);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : BacktestResult{};
}

// Conservation: after every fill the result has an equity row at the fill's time whose
// position and cash are the running totals of the fills so far (cash moves by
// −side·px·qty·multiplier − fee); every equity row has equity = cash + position·mid·
// multiplier; fees_paid is the sum of the fees.
inline void expect_conservation(const BacktestResult& r) {
  double pos = 0, cash = 0, fees = 0;
  size_t row = 0;
  for (const Fill& f : r.fills) {
    const double n = static_cast<double>(f.px) * 1e-9 * f.qty * r.instrument.multiplier;
    pos += sign(f.side) * f.qty;
    cash -= sign(f.side) * n + f.fee;
    fees += f.fee;
    bool found = false;
    for (; row < r.equity.size(); ++row) {
      const EquityPoint& p = r.equity[row];
      if (p.ts_ns == f.ts_ns && std::fabs(p.position - pos) < 1e-9 &&
          std::fabs(p.cash - cash) < 1e-6 * (1 + std::fabs(cash))) {
        found = true;
        break;
      }
    }
    ASSERT_TRUE(found) << "no equity row after the fill of order " << f.order_id << " at "
                       << f.ts_ns << " with position " << pos << " and cash " << cash;
  }
  EXPECT_NEAR(fees, r.fees_paid, 1e-6 * (1 + std::fabs(fees)));
  for (const EquityPoint& p : r.equity)
    EXPECT_NEAR(p.equity, p.cash + p.position * p.mid * r.instrument.multiplier,
                1e-9 * (1 + std::fabs(p.equity)));
  if (!r.equity.empty()) {
    EXPECT_NEAR(r.equity.back().position, pos, 1e-9);
    EXPECT_NEAR(r.equity.back().cash, cash, 1e-6 * (1 + std::fabs(cash)));
  }
}

}  // namespace fxt::sim::test
