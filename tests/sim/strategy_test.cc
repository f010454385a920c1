// The built-in strategies (DESIGN §7.3) against a fake StrategyContext that records every
// order action: signal thresholds -> exposure levels -> orders, Kelly sizing, maximum holding
// time, passive entry; mm quotes (rounding, skew, inventory limits, requotes); twap/ac child
// orders; the predictions CSV reader and the backtest flag grammars.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "data/store.h"
#include "sim/backtest.h"
#include "sim/strategy_exec.h"
#include "sim/strategy_mm.h"
#include "sim/strategy_signal.h"
#include "test_util.h"

namespace fxt::sim {
namespace {

constexpr int64_t kTick = 250'000'000;  // 0.25 (ES)
constexpr int64_t kSec = 1'000'000'000;

int64_t px(double currency) {
  return static_cast<int64_t>(std::llround(currency * 1e9));
}

Snapshot book_at(double bid, double ask, double size = 10) {
  Snapshot s;
  s.bid_px[0] = px(bid);
  s.ask_px[0] = px(ask);
  s.bid_sz[0] = s.ask_sz[0] = size;
  return s;
}

// Records every submit / cancel / modify; orders stay open until the test fills or ends them.
class FakeContext : public StrategyContext {
 public:
  struct Action {
    char kind;  // 'S' submit, 'C' cancel, 'M' modify
    uint64_t id;
    Side side;
    OrderType type;
    int64_t px;
    double qty;
  };

  FakeContext() {
    instrument_.tick_px = kTick;
    book_ = book_at(4000.00, 4000.25);
  }
  int64_t now_ns() const override { return now; }
  uint64_t submit(const OrderRequest& r) override {
    OpenOrder o;
    o.order_id = next_id_++;
    o.side = r.side;
    o.type = r.type;
    o.px = r.px;
    o.qty = r.qty;
    open_.push_back(o);
    actions.push_back({'S', o.order_id, r.side, r.type, r.px, r.qty});
    return o.order_id;
  }
  void cancel(uint64_t id) override {
    actions.push_back({'C', id, Side::kBuy, OrderType::kLimit, 0, 0});
  }
  void modify(uint64_t id, int64_t new_px, double qty) override {
    actions.push_back({'M', id, Side::kBuy, OrderType::kLimit, new_px, qty});
  }
  const Snapshot& book() const override { return book_; }
  double position() const override { return position_; }
  double cash() const override { return 0; }
  const std::vector<OpenOrder>& open_orders() const override { return open_; }
  const Instrument& instrument() const override { return instrument_; }

  // Fills `qty` of order `id` at its price; removes it when complete.
  // `at_px` (0: the order's price) and `fee` for market orders and fee accounting.
  void fill(Strategy& s, uint64_t id, double qty, int64_t at_px = 0, double fee = 0) {
    auto it = std::find_if(open_.begin(), open_.end(),
                           [&](const OpenOrder& o) { return o.order_id == id; });
    ASSERT_NE(it, open_.end());
    it->filled_qty += qty;
    position_ += sign(it->side) * qty;
    Fill f;
    f.order_id = id;
    f.side = it->side;
    f.qty = qty;
    f.px = at_px != 0 ? at_px : it->px;
    f.fee = fee;
    if (it->filled_qty >= it->qty - 1e-12) open_.erase(it);
    s.on_fill(f, *this);
  }
  void fill_all(Strategy& s) {
    while (!open_.empty())
      fill(s, open_.front().order_id, open_.front().qty - open_.front().filled_qty);
  }
  // The order ends without (more) fills: canceled or an IOC remainder expired.
  void end(Strategy& s, uint64_t id, AckKind kind) {
    std::erase_if(open_, [&](const OpenOrder& o) { return o.order_id == id; });
    Ack a;
    a.order_id = id;
    a.kind = kind;
    s.on_ack(a, *this);
  }
  // Delivers a snapshot event (store 0) at time t.
  void snapshot(Strategy& s, uint64_t index, int64_t t) {
    now = t;
    MarketEvent e;
    e.kind = EventKind::kSnapshot;
    e.ts_ns = e.seen_ns = t;
    e.snapshot = index;
    e.book = &book_;
    s.on_event(e, *this);
  }

  // Delivers a market print at time t.
  void trade(Strategy& s, int64_t trade_px, double size, int64_t t) {
    now = t;
    Trade tr;
    tr.ts_ns = t;
    tr.px = trade_px;
    tr.sz = size;
    MarketEvent e;
    e.kind = EventKind::kTrade;
    e.ts_ns = e.seen_ns = t;
    e.book = &book_;
    e.trade = &tr;
    s.on_event(e, *this);
  }
  int64_t now = 0;
  Snapshot book_;
  std::vector<Action> actions;

 private:
  uint64_t next_id_ = 1;
  double position_ = 0;
  std::vector<OpenOrder> open_;
  Instrument instrument_;
};

std::shared_ptr<const SignalSeries> series_of(std::vector<float> p) {
  auto s = std::make_shared<SignalSeries>();
  s->horizon = 10;
  s->per_store.push_back(std::move(p));
  return s;
}

// ---- signal ----------------------------------------------------------------------------------

TEST(SignalThresholds, MapProbabilitiesToTheEightLevels) {
  SignalConfig c;
  ASSERT_TRUE(c.validate().ok());
  EXPECT_EQ(classify_probability(c, 0.90), Exposure::kLongFull);
  EXPECT_EQ(classify_probability(c, 0.65), Exposure::kLongFull);  // thresholds are inclusive
  EXPECT_EQ(classify_probability(c, 0.62), Exposure::kLongHalf);
  EXPECT_EQ(classify_probability(c, 0.56), Exposure::kLongSmall);
  EXPECT_EQ(classify_probability(c, 0.53), Exposure::kHold);
  EXPECT_EQ(classify_probability(c, 0.515), Exposure::kFlat);
  EXPECT_EQ(classify_probability(c, 0.50), Exposure::kFlat);
  EXPECT_EQ(classify_probability(c, 0.47), Exposure::kHold);
  EXPECT_EQ(classify_probability(c, 0.45), Exposure::kShortSmall);
  EXPECT_EQ(classify_probability(c, 0.38), Exposure::kShortHalf);
  EXPECT_EQ(classify_probability(c, 0.10), Exposure::kShortFull);
  EXPECT_EQ(classify_probability(c, 1.70), Exposure::kLongFull);  // clamped
  EXPECT_DOUBLE_EQ(level_exposure(c, Exposure::kLongHalf, 0.62, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(level_exposure(c, Exposure::kShortSmall, 0.45, 0.0), -0.25);
  EXPECT_DOUBLE_EQ(level_exposure(c, Exposure::kHold, 0.53, -0.5), -0.5);
  EXPECT_DOUBLE_EQ(level_exposure(c, Exposure::kFlat, 0.5, 1.0), 0.0);
  EXPECT_STREQ(exposure_name(Exposure::kShortHalf), "short_half");

  SignalConfig bad = c;
  bad.long_small = 0.45;
  EXPECT_FALSE(bad.validate().ok());
  bad = c;
  bad.flat_band = 0.06;  // reaches past long_small
  EXPECT_FALSE(bad.validate().ok());
}

TEST(SignalStrategy, MarketOrdersFollowTheLevels) {
  SignalConfig c;
  c.max_position = 4;
  SignalStrategy s(c, series_of({0.70f, 0.62f, 0.53f, 0.50f, 0.30f}));
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);  // long full: +4
  ctx.snapshot(s, 0, 1);  // same level while the order works: nothing more
  ASSERT_EQ(ctx.actions.size(), 1u);
  EXPECT_EQ(ctx.actions[0].side, Side::kBuy);
  EXPECT_EQ(ctx.actions[0].type, OrderType::kMarket);
  EXPECT_DOUBLE_EQ(ctx.actions[0].qty, 4);
  ctx.fill_all(s);
  ctx.snapshot(s, 1, 2);  // long half: 4 -> 2
  ASSERT_EQ(ctx.actions.size(), 2u);
  EXPECT_EQ(ctx.actions[1].side, Side::kSell);
  EXPECT_DOUBLE_EQ(ctx.actions[1].qty, 2);
  ctx.fill_all(s);
  ctx.snapshot(s, 2, 3);  // hold: keeps 2
  EXPECT_EQ(ctx.actions.size(), 2u);
  EXPECT_DOUBLE_EQ(s.target_position(), 2);
  ctx.snapshot(s, 3, 4);  // flat: sell 2
  ASSERT_EQ(ctx.actions.size(), 3u);
  EXPECT_EQ(ctx.actions[2].side, Side::kSell);
  EXPECT_DOUBLE_EQ(ctx.actions[2].qty, 2);
  ctx.fill_all(s);
  ctx.snapshot(s, 4, 5);  // short full: -4
  ASSERT_EQ(ctx.actions.size(), 4u);
  EXPECT_EQ(ctx.actions[3].side, Side::kSell);
  EXPECT_DOUBLE_EQ(ctx.actions[3].qty, 4);
  EXPECT_EQ(s.last_level(), Exposure::kShortFull);
}

TEST(SignalStrategy, KellySizingIsCapped) {
  SignalConfig c;
  c.max_position = 10;
  c.kelly = 2;
  c.kelly_cap = 0.5;
  // p = 0.56: 2·(2·0.56 − 1) = 0.24 -> 2.4 units; p = 0.9: 1.6 capped at 0.5 -> 5;
  // p = 0.3: −0.8 capped at −0.5 -> −5.
  SignalStrategy s(c, series_of({0.56f, 0.90f, 0.30f}));
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);
  EXPECT_NEAR(s.target_position(), 2.4, 1e-6);
  ASSERT_EQ(ctx.actions.size(), 1u);
  EXPECT_NEAR(ctx.actions[0].qty, 2.4, 1e-6);
  ctx.fill_all(s);
  ctx.snapshot(s, 1, 1);
  EXPECT_NEAR(s.target_position(), 5.0, 1e-9);
  EXPECT_NEAR(ctx.actions.back().qty, 2.6, 1e-6);
  ctx.fill_all(s);
  ctx.snapshot(s, 2, 2);
  EXPECT_NEAR(s.target_position(), -5.0, 1e-9);
  EXPECT_EQ(ctx.actions.back().side, Side::kSell);
  EXPECT_NEAR(ctx.actions.back().qty, 10.0, 1e-6);
}

TEST(SignalStrategy, LotRoundsTargetsTowardZero) {
  SignalConfig c;
  c.max_position = 3;
  c.lot = 1;
  SignalStrategy s(c, series_of({0.62f}));  // long half: 1.5 -> 1
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);
  EXPECT_DOUBLE_EQ(s.target_position(), 1);
  ASSERT_EQ(ctx.actions.size(), 1u);
  EXPECT_DOUBLE_EQ(ctx.actions[0].qty, 1);
}

TEST(SignalStrategy, MaximumHoldingTimeFlattensUntilTheLevelChanges) {
  SignalConfig c;
  c.max_hold_ns = 10 * kSec;
  SignalStrategy s(c, series_of({0.70f, 0.70f, 0.70f, 0.70f, 0.70f, 0.62f}));
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);  // buy 1
  ctx.fill_all(s);
  ctx.snapshot(s, 1, 1 * kSec);   // the position is first seen open: held since 1 s
  ctx.snapshot(s, 2, 10 * kSec);  // held 9 s: keep
  ASSERT_EQ(ctx.actions.size(), 1u);
  ctx.snapshot(s, 3, 11 * kSec);  // held 10 s: flatten
  ASSERT_EQ(ctx.actions.size(), 2u);
  EXPECT_EQ(ctx.actions[1].side, Side::kSell);
  EXPECT_DOUBLE_EQ(ctx.actions[1].qty, 1);
  ctx.fill_all(s);
  ctx.snapshot(s, 4, 12 * kSec);  // the same level: stay flat
  EXPECT_EQ(ctx.actions.size(), 2u);
  ctx.snapshot(s, 5, 13 * kSec);  // a new level (long half): re-enter at 0.5
  ASSERT_EQ(ctx.actions.size(), 3u);
  EXPECT_EQ(ctx.actions[2].side, Side::kBuy);
  EXPECT_DOUBLE_EQ(ctx.actions[2].qty, 0.5);
}

TEST(SignalStrategy, PassiveEntryJoinsAndFollowsTheTouch) {
  SignalConfig c;
  c.passive = true;
  SignalStrategy s(c, series_of({0.70f, 0.70f, 0.70f, 0.30f}));
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);  // post-only buy 1 at the bid 4000.00
  ASSERT_EQ(ctx.actions.size(), 1u);
  EXPECT_EQ(ctx.actions[0].type, OrderType::kPostOnly);
  EXPECT_EQ(ctx.actions[0].side, Side::kBuy);
  EXPECT_EQ(ctx.actions[0].px, px(4000.00));
  const uint64_t id = ctx.actions[0].id;
  ctx.book_ = book_at(4000.50, 4000.75);
  ctx.snapshot(s, 1, 1);  // the bid moved up: follow it
  ASSERT_EQ(ctx.actions.size(), 2u);
  EXPECT_EQ(ctx.actions[1].kind, 'M');
  EXPECT_EQ(ctx.actions[1].id, id);
  EXPECT_EQ(ctx.actions[1].px, px(4000.50));
  EXPECT_DOUBLE_EQ(ctx.actions[1].qty, 1);
  ctx.fill(s, id, 0.4);
  ctx.snapshot(s, 2, 2);  // partially filled at the touch: 0.6 more needed, total still 1
  EXPECT_EQ(ctx.actions.size(), 2u);
  ctx.snapshot(s, 3, 3);  // short full: −1 − 0.4 = −1.4 -> cancel the bid, offer 1.4 at the ask
  ASSERT_EQ(ctx.actions.size(), 4u);
  EXPECT_EQ(ctx.actions[2].kind, 'C');
  EXPECT_EQ(ctx.actions[2].id, id);
  EXPECT_EQ(ctx.actions[3].kind, 'S');
  EXPECT_EQ(ctx.actions[3].side, Side::kSell);
  EXPECT_EQ(ctx.actions[3].px, px(4000.75));
  EXPECT_NEAR(ctx.actions[3].qty, 1.4, 1e-12);
  ctx.snapshot(s, 3, 4);  // the cancel is in flight: not sent again
  EXPECT_EQ(ctx.actions.size(), 4u);
}

// ---- mm --------------------------------------------------------------------------------------

TEST(MarketMaker, AvellanedaStoikovQuotesRoundedSkewedAndLimited) {
  MarketMakerConfig c;
  c.gamma = 0.1;
  c.k = 1.0;
  c.max_inventory = 2;
  c.skew_ticks = 2;
  MarketMakerStrategy plain(c, {}, nullptr);
  const Snapshot book = book_at(4000.00, 4000.25);  // mid 16000.5 ticks
  // half spread (γσ²τ + (2/γ)ln(1 + γ/k)) / 2 = (0.4 + 20 ln 1.1) / 2 = 1.15310 ticks:
  // bid 15999.347 -> 15999 (3999.75), ask 16001.653 -> 16002 (4000.50).
  MarketMakerQuote q = plain.quote(book, kTick, 0, 1.0, 2.0, 0, 0.5);
  EXPECT_TRUE(q.has_bid && q.has_ask);
  EXPECT_EQ(q.bid_px, px(3999.75));
  EXPECT_EQ(q.ask_px, px(4000.50));
  // Inventory 2 (= the limit): reservation 16000.5 − 2·0.1·4 = 15999.7; no more bids.
  q = plain.quote(book, kTick, 2, 1.0, 2.0, 0, 0.5);
  EXPECT_FALSE(q.has_bid);
  EXPECT_TRUE(q.has_ask);
  EXPECT_EQ(q.ask_px, px(4000.25));  // 16000.853 -> 16001
  q = plain.quote(book, kTick, -2, 1.0, 2.0, 0, 0.5);
  EXPECT_TRUE(q.has_bid);
  EXPECT_FALSE(q.has_ask);
  // A signal p = 0.75 shifts both sides by 2·(2·0.75 − 1) = 1 tick.
  MarketMakerStrategy skewed(c, {}, series_of({0.75f}));
  q = skewed.quote(book, kTick, 0, 1.0, 2.0, 0, 0.75);
  EXPECT_EQ(q.bid_px, px(4000.00));  // 16000.347 -> 16000
  EXPECT_EQ(q.ask_px, px(4000.75));  // 16002.653 -> 16003
  // A huge skew is held one tick inside the opposite touch (post-only never crosses).
  q = skewed.quote(book, kTick, 0, 1.0, 2.0, 0, 1.0 + 9.0);
  EXPECT_EQ(q.bid_px, px(4000.00));
  EXPECT_GE(q.ask_px, px(4000.25));
}

TEST(MarketMaker, GlftNeedsAnArrivalRate) {
  MarketMakerConfig c;
  c.model = QuoteModel::kGlft;
  c.gamma = 0.1;
  c.k = 1.0;
  MarketMakerStrategy s(c, {}, nullptr);
  const Snapshot book = book_at(4000.00, 4000.25);
  EXPECT_FALSE(s.quote(book, kTick, 0, 1.0, 2.0, 0, 0.5).has_bid);
  const MarketMakerQuote q = s.quote(book, kTick, 0, 1.0, 2.0, 100.0, 0.5);
  EXPECT_TRUE(q.has_bid && q.has_ask);
  EXPECT_LE(q.bid_px, px(4000.00));
  EXPECT_GE(q.ask_px, px(4000.25));
  EXPECT_EQ(q.bid_px % kTick, 0);
  EXPECT_EQ(q.ask_px % kTick, 0);
}

TEST(MarketMaker, QuotesThenRequotesOnlyOnATickMove) {
  MarketMakerConfig c;
  c.gamma = 0.1;
  c.k = 1.0;
  c.sigma = 2.0;
  c.warmup = 0;
  MarketMakerStrategy s(c, {{0, 100 * kSec}}, nullptr);
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);  // τ = 1: the quote of the test above
  ASSERT_EQ(ctx.actions.size(), 2u);
  EXPECT_EQ(ctx.actions[0].type, OrderType::kPostOnly);
  EXPECT_EQ(ctx.actions[0].side, Side::kBuy);
  EXPECT_EQ(ctx.actions[0].px, px(3999.75));
  EXPECT_EQ(ctx.actions[1].side, Side::kSell);
  EXPECT_EQ(ctx.actions[1].px, px(4000.50));
  ctx.snapshot(s, 1, 1);  // same book: nothing
  EXPECT_EQ(ctx.actions.size(), 2u);
  ctx.book_ = book_at(4000.25, 4000.50);  // one tick up: both requoted by one tick
  ctx.snapshot(s, 2, 2);
  ASSERT_EQ(ctx.actions.size(), 4u);
  EXPECT_EQ(ctx.actions[2].kind, 'M');
  EXPECT_EQ(ctx.actions[2].px, px(4000.00));
  EXPECT_EQ(ctx.actions[3].kind, 'M');
  EXPECT_EQ(ctx.actions[3].px, px(4000.75));

  c.requote_ticks = 2;
  MarketMakerStrategy lazy(c, {{0, 100 * kSec}}, nullptr);
  FakeContext ctx2;
  ctx2.snapshot(lazy, 0, 0);
  ctx2.book_ = book_at(4000.25, 4000.50);
  ctx2.snapshot(lazy, 1, 1);
  EXPECT_EQ(ctx2.actions.size(), 2u);  // a one-tick move is below requote_ticks
}

TEST(MarketMaker, InventoryLimitCancelsTheSideThatWouldExceedIt) {
  MarketMakerConfig c;
  c.gamma = 0.1;
  c.k = 1.0;
  c.sigma = 2.0;
  c.warmup = 0;
  c.max_inventory = 1;
  MarketMakerStrategy s(c, {{0, 100 * kSec}}, nullptr);
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);
  ASSERT_EQ(ctx.actions.size(), 2u);
  const uint64_t bid = ctx.actions[0].id, ask = ctx.actions[1].id;
  ctx.fill(s, bid, 1);  // long 1 = the limit: no more bids
  ctx.snapshot(s, 1, 1);
  ASSERT_EQ(ctx.actions.size(), 2u);  // the filled bid is gone; the ask stays
  ctx.fill(s, ask, 1);                // flat again: both sides quoted anew
  ctx.snapshot(s, 2, 2);
  ASSERT_EQ(ctx.actions.size(), 4u);
  EXPECT_EQ(ctx.actions[2].kind, 'S');
  EXPECT_EQ(ctx.actions[3].kind, 'S');
  const uint64_t ask2 = ctx.actions[3].id;
  ctx.fill(s, ask2, 1);  // short 1 = the limit: the working bid stays, no new ask
  ctx.snapshot(s, 3, 3);
  EXPECT_EQ(ctx.actions.size(), 4u);
  // The limit tightened under a working quote: that quote is canceled.
  MarketMakerConfig tight = c;
  tight.max_inventory = 1;
  MarketMakerStrategy s2(tight, {{0, 100 * kSec}}, nullptr);
  FakeContext ctx2;
  ctx2.snapshot(s2, 0, 0);                 // bid #1, ask #2
  ctx2.fill(s2, ctx2.actions[1].id, 0.5);  // short 0.5: an ask fill would reach −1.5
  ctx2.snapshot(s2, 1, 1);
  ASSERT_EQ(ctx2.actions.size(), 3u);
  EXPECT_EQ(ctx2.actions[2].kind, 'C');
  EXPECT_EQ(ctx2.actions[2].id, ctx2.actions[1].id);
}

TEST(MarketMaker, EstimatesSigmaAndArrivalsPerSession) {
  MarketMakerConfig c;
  c.warmup = 100;
  MarketMakerStrategy s(c, {{0, 10 * kSec}}, nullptr);
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);
  ctx.book_ = book_at(4000.25, 4000.50);  // +1 tick in 1 s = 0.1 session
  ctx.snapshot(s, 1, 1 * kSec);
  MarketEvent t;
  t.kind = EventKind::kTrade;
  t.book = &ctx.book_;
  s.on_event(t, ctx);
  // Realised variance 1 tick² over 0.1 session: σ = sqrt(10); one trade / 0.1 = 10 per session.
  EXPECT_NEAR(s.sigma_estimate(), std::sqrt(10.0), 1e-9);
  EXPECT_NEAR(s.arrival_estimate(), 10.0, 1e-9);
  EXPECT_TRUE(ctx.actions.empty());  // still warming up
}

// ---- twap / ac -------------------------------------------------------------------------------

TEST(Execution, TwapChildrenAreTheScheduleDifferences) {
  ExecutionConfig c;
  c.qty = 10;
  c.slices = 4;
  ExecutionStrategy s(c, false, 0, 4 * kSec);
  FakeContext ctx;
  for (int j = 0; j <= 5; ++j) {
    ctx.snapshot(s, static_cast<uint64_t>(j), j * kSec);
    ctx.fill_all(s);
  }
  ASSERT_EQ(ctx.actions.size(), 4u);
  for (const auto& a : ctx.actions) {
    EXPECT_EQ(a.side, Side::kSell);
    EXPECT_EQ(a.type, OrderType::kMarket);
    EXPECT_NEAR(a.qty, 2.5, 1e-12);
  }
  EXPECT_NEAR(s.executed(), 10, 1e-12);
}

TEST(Execution, AlmgrenChrissChildrenFollowTheSinhCurve) {
  ExecutionConfig c;
  c.side = Side::kBuy;
  c.qty = 10;
  c.slices = 4;
  c.urgency = 2;
  ExecutionStrategy s(c, true, 0, 4 * kSec);
  FakeContext ctx;
  for (int j = 0; j < 4; ++j) {
    ctx.snapshot(s, static_cast<uint64_t>(j), j * kSec + 1);
    ctx.fill_all(s);
  }
  // Holdings 10·sinh(2(1 − j/4))/sinh 2 = 10, 5.870861, 3.240271, 1.436767, 0.
  const double want[] = {4.129139, 2.630590, 1.803504, 1.436767};
  ASSERT_EQ(ctx.actions.size(), 4u);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(ctx.actions[static_cast<size_t>(j)].side, Side::kBuy);
    EXPECT_NEAR(ctx.actions[static_cast<size_t>(j)].qty, want[j], 1e-6) << j;
  }
}

TEST(Execution, ShortfallsRollIntoTheNextChildAndLimitsAreMarketable) {
  ExecutionConfig c;
  c.qty = 10;
  c.slices = 4;
  c.limit = true;
  c.limit_ticks = 2;
  ExecutionStrategy s(c, false, 0, 4 * kSec);
  FakeContext ctx;
  ctx.snapshot(s, 0, 0);
  ASSERT_EQ(ctx.actions.size(), 1u);
  EXPECT_EQ(ctx.actions[0].type, OrderType::kIoc);
  EXPECT_EQ(ctx.actions[0].px, px(4000.00 - 0.50));  // two ticks through the bid
  ctx.fill(s, ctx.actions[0].id, 1.0);               // 1 of 2.5 filled, the rest expires
  ctx.end(s, ctx.actions[0].id, AckKind::kDone);
  ctx.snapshot(s, 1, 2 * kSec + 5);  // slices 1 and 2 at once: due 7.5, done 1 -> 6.5
  ASSERT_EQ(ctx.actions.size(), 2u);
  EXPECT_NEAR(ctx.actions[1].qty, 6.5, 1e-12);
  ctx.snapshot(s, 2, 3 * kSec);  // 6.5 still working: due 10 − 1 − 6.5 = 2.5
  ASSERT_EQ(ctx.actions.size(), 3u);
  EXPECT_NEAR(ctx.actions[2].qty, 2.5, 1e-12);
}

// Before: an ES TWAP of 5 lots in 10 slices sent ten children of 0.5 contracts.
TEST(Execution, ChildrenAreWholeLots) {
  ExecutionConfig c;
  c.qty = 5;
  c.slices = 10;
  c.lot = 1;
  ASSERT_TRUE(c.validate(false).ok());
  ExecutionStrategy s(c, false, 0, 10 * kSec);
  FakeContext ctx;
  for (int j = 0; j < 10; ++j) {
    ctx.snapshot(s, static_cast<uint64_t>(j), j * kSec);
    ctx.fill_all(s);
  }
  // Due by the end of slice j: 0.5 (j + 1); whole lots at slices 1, 3, 5, 7, 9.
  ASSERT_EQ(ctx.actions.size(), 5u);
  for (const auto& a : ctx.actions) EXPECT_EQ(a.qty, 1.0);
  EXPECT_EQ(s.executed(), 5.0);
  c.qty = 5.5;
  EXPECT_NE(c.validate(false).message().find("not a whole number of lots"), std::string::npos);
}

TEST(Execution, ReportsShortfallAgainstArrivalAndVwap) {
  ExecutionConfig c;
  c.qty = 4;
  c.slices = 2;
  ExecutionStrategy s(c, false, 0, 2 * kSec);
  FakeContext ctx;  // book 4000.00 / 4000.25: arrival mid 4000.125
  ctx.snapshot(s, 0, 0);
  ASSERT_EQ(ctx.actions.size(), 1u);
  ctx.fill(s, ctx.actions[0].id, 2, px(4000.00), 1.0);
  ctx.trade(s, px(4000.00), 3, kSec / 2);
  ctx.snapshot(s, 1, kSec);
  ASSERT_EQ(ctx.actions.size(), 2u);
  ctx.fill(s, ctx.actions[1].id, 2, px(3999.75), 1.0);
  ctx.trade(s, px(4001.00), 1, 3 * kSec / 2);
  ctx.trade(s, px(5000.00), 100, 3 * kSec);  // after the window: not in the VWAP
  const nlohmann::json r = s.report();
  // Average 3999.875; VWAP (3·4000 + 4001)/4 = 4000.25; a sell below a benchmark is a cost.
  EXPECT_DOUBLE_EQ(r["avg_fill_px"].get<double>(), 3999.875);
  EXPECT_DOUBLE_EQ(r["arrival_px"].get<double>(), 4000.125);
  EXPECT_DOUBLE_EQ(r["market_vwap_px"].get<double>(), 4000.25);
  EXPECT_DOUBLE_EQ(r["market_volume"].get<double>(), 4.0);
  EXPECT_NEAR(r["shortfall_bps"].get<double>(), 0.25 / 4000.125 * 1e4, 1e-9);
  EXPECT_NEAR(r["vwap_slippage_bps"].get<double>(), 0.375 / 4000.25 * 1e4, 1e-9);
  EXPECT_NEAR(r["fees_bps"].get<double>(), 2.0 / 15999.5 * 1e4, 1e-9);
  EXPECT_NEAR(r["shortfall_with_fees_bps"].get<double>(),
              0.25 / 4000.125 * 1e4 + 2.0 / 15999.5 * 1e4, 1e-9);
  EXPECT_EQ(r["unfilled_qty"].get<double>(), 0.0);
}

// twap and ac take the lot from the stores: 1 when every size is whole, else fractional.
TEST(Execution, BacktestLotComesFromTheStoreSizes) {
  const std::string dir = test::scratch_dir();
  for (double size : {10.0, 2.5}) {
    SCOPED_TRACE(size);
    const std::string store = dir + "/store" + std::to_string(static_cast<int>(size * 10));
    auto w = StoreWriter::create(store, StoreInfo{});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 20; ++i) {
      Snapshot sn = book_at(100.0, 100.25, size);
      sn.ts_ns = 1'000'000'000LL * (i + 1);
      w->on_snapshot(sn);
    }
    ASSERT_TRUE(w->finish().ok());
    BacktestSpec spec;
    spec.stores = {store};
    spec.strategy = "twap";
    const double qty = size == 10.0 ? 5 : 2;  // within the displayed size (taken once)
    spec.params = {"qty=" + std::to_string(qty)};
    spec.out_dir = store + "_bt";
    auto out = run_backtest_spec(spec, "");
    ASSERT_TRUE(out.ok()) << out.status().message();
    const nlohmann::json& e = out->runs.front().stats["execution"];
    EXPECT_EQ(e["lot"].get<double>(), size == 10.0 ? 1.0 : 0.0);
    EXPECT_NEAR(e["executed_qty"].get<double>(), qty, 1e-9);
    EXPECT_EQ(e["arrival_px"].get<double>(), 100.125);
    // Sold at the bid: 100.125 − 100 = 0.125 below the arrival mid.
    EXPECT_NEAR(e["shortfall_bps"].get<double>(), 0.125 / 100.125 * 1e4, 1e-9);
    EXPECT_EQ(out->runs.front().stats["trades"].get<int>(), size == 10.0 ? 5 : 10);
    // The costs assumed are in stats.json, and a run without any says so.
    const nlohmann::json& costs = out->runs.front().stats["assumed_costs"];
    EXPECT_EQ(costs["latency"]["entry_ns"], 0);
    EXPECT_EQ(costs["fees"]["taker_bps"], 0.0);
    EXPECT_TRUE(costs["zero_latency_and_fees"].get<bool>());
    if (size != 10.0) continue;
    spec.sim.latency.entry_ns = 1'000'000;
    spec.sim.fees.taker_bps = 0.5;
    spec.out_dir = store + "_costs";
    auto costly = run_backtest_spec(spec, "");
    ASSERT_TRUE(costly.ok()) << costly.status().message();
    const nlohmann::json& c2 = costly->runs.front().stats["assumed_costs"];
    EXPECT_EQ(c2["latency"]["entry_ns"], 1'000'000);
    EXPECT_EQ(c2["fees"]["taker_bps"], 0.5);
    EXPECT_FALSE(c2["zero_latency_and_fees"].get<bool>());
  }
}

// ---- predictions CSV -------------------------------------------------------------------------

class PredictionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir();
    auto w = StoreWriter::create(dir_ + "/store", StoreInfo{});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 3; ++i) {
      Snapshot s = book_at(100.0, 100.25);
      s.ts_ns = 1000 + i;
      w->on_snapshot(s);
    }
    ASSERT_TRUE(w->finish().ok());
    auto r = StoreReader::open(dir_ + "/store");
    ASSERT_TRUE(r.ok());
    store_ = std::make_unique<StoreReader>(std::move(*r));
  }
  std::string write(const std::string& text) {
    const std::string path = dir_ + "/p.csv";
    EXPECT_TRUE(write_file_atomic(path, text).ok());
    return path;
  }
  std::string error(const std::string& text, int horizon) {
    auto r = load_predictions(write(text), horizon, *store_);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  }
  std::string dir_;
  std::unique_ptr<StoreReader> store_;
};

TEST_F(PredictionsTest, ReadsTheChosenHorizon) {
  const std::string path = write("ts_ns,p_h10,p_h30\n1000,0.1,0.6\n1001,0.2,0.7\n1002,0.3,0.8\n");
  int chosen = 0;
  auto p = load_predictions(path, 30, *store_, &chosen);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(chosen, 30);
  ASSERT_EQ(p->size(), 3u);
  EXPECT_FLOAT_EQ((*p)[0], 0.6f);
  EXPECT_FLOAT_EQ((*p)[2], 0.8f);
  auto first = load_predictions(path, 0, *store_, &chosen);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(chosen, 10);
  EXPECT_FLOAT_EQ((*first)[1], 0.2f);
}

TEST_F(PredictionsTest, ErrorsNameFileAndLine) {
  const std::string p = dir_ + "/p.csv";
  EXPECT_EQ(error("ts_ns,p_h10\n1000,0.1\n1001,0.2\n", 10),
            p + ":4: 2 rows but store " + dir_ + "/store has 3 snapshots");
  EXPECT_EQ(error("ts_ns,p_h10\n1000,0.1\n1001,0.2\n1002,0.3\n1003,0.4\n", 10),
            p + ":5: more rows than the 3 snapshots of store " + dir_ + "/store");
  EXPECT_EQ(error("ts_ns,p_h10,p_h30\n1000,0.1,0.2\n", 100),
            p + ":1: no column p_h100 (columns: p_h10,p_h30)");
  EXPECT_EQ(error("ts_ns,p_h10\n1000,0.1\n1001,abc\n1002,0.3\n", 10),
            p + ":3: bad probability 'abc' (expected a number in [0, 1])");
  EXPECT_EQ(error("ts_ns,p_h10\n1000,0.1\n1001,1.5\n1002,0.3\n", 10),
            p + ":3: bad probability '1.5' (expected a number in [0, 1])");
  EXPECT_EQ(error("ts_ns,p_h10\n1000,0.1\n1001,0.2\n1005,0.3\n", 10),
            p + ":4: ts_ns 1005 but snapshot 2 of store " + dir_ + "/store is at 1002");
  EXPECT_EQ(error("ts_ns,p_h10,p_h30\n1000,0.1\n", 30), p + ":2: 2 fields, expected 3");
  EXPECT_EQ(error("time,p_h10\n", 10), p + ":1: header must start with ts_ns (a fxt predict CSV)");
}

// ---- flag grammars and the registry ----------------------------------------------------------

TEST(BacktestFlags, DurationsLatenciesFeesQueueModels) {
  EXPECT_EQ(*parse_duration_ns("250ns"), 250);
  EXPECT_EQ(*parse_duration_ns("1.5us"), 1500);
  EXPECT_EQ(*parse_duration_ns("2ms"), 2'000'000);
  EXPECT_EQ(*parse_duration_ns("3s"), 3'000'000'000);
  EXPECT_EQ(*parse_duration_ns("0"), 0);
  EXPECT_FALSE(parse_duration_ns("5").ok());
  EXPECT_FALSE(parse_duration_ns("-1ms").ok());
  EXPECT_FALSE(parse_duration_ns("ms").ok());

  auto l = parse_latency("feed=1ms,entry=2ms,response=500us");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->feed_ns, 1'000'000);
  EXPECT_EQ(l->entry_ns, 2'000'000);
  EXPECT_EQ(l->response_ns, 500'000);
  EXPECT_FALSE(parse_latency("feed=1ms,feed=2ms").ok());
  EXPECT_FALSE(parse_latency("wire=1ms").ok());

  auto f = parse_fees("maker=-0.2bps,taker=0.5bps+0.1/unit");
  ASSERT_TRUE(f.ok());
  EXPECT_DOUBLE_EQ(f->maker_bps, -0.2);
  EXPECT_DOUBLE_EQ(f->taker_bps, 0.5);
  EXPECT_DOUBLE_EQ(f->taker_per_unit, 0.1);
  EXPECT_DOUBLE_EQ(f->maker_per_unit, 0);
  EXPECT_DOUBLE_EQ(parse_fees("maker=0.25/unit")->maker_per_unit, 0.25);
  EXPECT_FALSE(parse_fees("maker=0.2").ok());
  EXPECT_FALSE(parse_fees("rebate=1bps").ok());

  auto q = parse_queue_models("risk-averse,power:2,log");
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_EQ(q->size(), 3u);
  EXPECT_EQ((*q)[1].kind, QueueModelKind::kPower);
  EXPECT_DOUBLE_EQ((*q)[1].power, 2);
  EXPECT_EQ(queue_model_dir_name((*q)[1]), "power-2");
  EXPECT_FALSE(parse_queue_models("log,log").ok());
  EXPECT_FALSE(parse_queue_models("fifo").ok());
}

TEST(BacktestRegistry, ParamsAreCheckedAndDefaulted) {
  StrategyInputs in;
  in.sessions = {{0, 100 * kSec}};
  in.signal = series_of({0.5f});
  for (const std::string& name : strategy_names()) {
    auto f = make_strategy_factory(name, *StrategyParams::parse({}), in);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().message();
    EXPECT_NE(f->make(), nullptr);
  }
  auto sig = make_strategy_factory(
      "signal", *StrategyParams::parse({"entry=passive", "max_hold=5s", "long_full=0.7"}), in);
  ASSERT_TRUE(sig.ok()) << sig.status().message();
  EXPECT_EQ(sig->config["entry"], "passive");
  EXPECT_EQ(sig->config["max_hold_ns"], 5 * kSec);
  EXPECT_DOUBLE_EQ(sig->config["long_full"].get<double>(), 0.7);
  EXPECT_EQ(sig->config["horizon"], 10);
  auto twap = make_strategy_factory("twap", *StrategyParams::parse({"slices=5", "qty=3"}), in);
  ASSERT_TRUE(twap.ok());
  EXPECT_EQ(twap->config["window_end_ns"], 100 * kSec);
  EXPECT_EQ(twap->config["holdings"].size(), 6u);

  auto unknown = make_strategy_factory("mm", *StrategyParams::parse({"gama=1"}), in);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "--param gama: not a parameter of strategy mm (see docs/BACKTEST.md)");
  auto bad = make_strategy_factory("twap", *StrategyParams::parse({"slices=x"}), in);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--param slices=x: expected an integer");
  EXPECT_FALSE(StrategyParams::parse({"novalue"}).ok());
  EXPECT_FALSE(StrategyParams::parse({"a=1", "a=2"}).ok());
  StrategyInputs no_signal = in;
  no_signal.signal = nullptr;
  auto need = make_strategy_factory("signal", *StrategyParams::parse({}), no_signal);
  ASSERT_FALSE(need.ok());
  EXPECT_EQ(need.status().message(), "--strategy signal needs --predictions or --checkpoint");
  EXPECT_FALSE(make_strategy_factory("vwap", *StrategyParams::parse({}), in).ok());
}

}  // namespace
}  // namespace fxt::sim
