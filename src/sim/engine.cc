// The replay engine (DESIGN §7.1): merges the stores' market data, the order messages in
// flight and the messages to the strategy into one exchange-time line. docs/SIMULATOR.md
// describes the event ordering and latency semantics.
#include "sim/engine.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include "data/store.h"
#include "sim/account.h"
#include "sim/exchange.h"
#include "sim/latency.h"

namespace fxt::sim {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Walks one store's rows in source order. Per snapshot s: its order events (L3 sessions;
// each 'T' event followed by its trade row), its remaining trades, then the snapshot;
// after the last snapshot the rows assigned past it (snapshot index == size()).
class MarketCursor {
 public:
  enum Kind : uint8_t { kNone, kOrderEvent, kTrade, kSnapshot };

  MarketCursor(const StoreReader& r, bool l3) : r_(r), l3_(l3) { advance(); }

  Kind kind() const { return kind_; }
  int64_t ts() const { return ts_; }
  uint64_t index() const { return index_; }

  void advance() {
    const uint64_t n = r_.size(), m = r_.trade_count(), e = l3_ ? r_.event_count() : 0;
    if (trade_due_) {
      trade_due_ = false;
      if (trade_ < m && r_.trade_snapshot[trade_] <= snap_) return set(kTrade, trade_++);
    }
    if (event_ < e && r_.event_snapshot[event_] <= snap_) {
      trade_due_ = r_.event_action[event_] == 'T';
      return set(kOrderEvent, event_++);
    }
    if (trade_ < m && r_.trade_snapshot[trade_] <= snap_) return set(kTrade, trade_++);
    if (snap_ < n) return set(kSnapshot, snap_++);
    kind_ = kNone;
    ts_ = kNever;
  }

 private:
  void set(Kind k, uint64_t i) {
    kind_ = k;
    index_ = i;
    ts_ = k == kSnapshot ? r_.ts_ns[i] : k == kTrade ? r_.trade_ts_ns[i] : r_.event_ts_ns[i];
  }

  const StoreReader& r_;
  bool l3_;
  uint64_t snap_ = 0, trade_ = 0, event_ = 0;
  bool trade_due_ = false;
  Kind kind_ = kNone;
  int64_t ts_ = kNever;
  uint64_t index_ = 0;
};

// Copies row i into *out in place (no temporary Snapshot).
void load_snapshot(const StoreReader& r, uint64_t i, Snapshot* out) {
  out->ts_ns = r.ts_ns[i];
  out->ts_alt_ns = r.ts_alt_ns[i];
  std::memcpy(out->bid_px, r.bid_px.row(i), sizeof out->bid_px);
  std::memcpy(out->ask_px, r.ask_px.row(i), sizeof out->ask_px);
  std::memcpy(out->bid_sz, r.bid_sz.row(i), sizeof out->bid_sz);
  std::memcpy(out->ask_sz, r.ask_sz.row(i), sizeof out->ask_sz);
  std::memcpy(out->bid_ct, r.bid_ct.row(i), sizeof out->bid_ct);
  std::memcpy(out->ask_ct, r.ask_ct.row(i), sizeof out->ask_ct);
  out->flags = r.flags[i];
}

// A FIFO that reuses its storage: emptied (and rewound) whenever it drains, which in a
// replay happens after nearly every event.
template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  T& front() { return items_[head_]; }
  void push_back(T v) { items_.push_back(std::move(v)); }
  void pop_front() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

BookView view_of(const StoreReader& r, uint64_t i) {
  return {r.bid_px.row(i), r.ask_px.row(i), r.bid_sz.row(i), r.ask_sz.row(i), r.flags[i]};
}

}  // namespace

Result<std::vector<StoreReader>> open_backtest_stores(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return UsageError("backtest: no store given");
  std::vector<StoreReader> stores;
  for (const std::string& dir : dirs) {
    // Sizes are checked on open; the CRC pass is skipped (it costs more than the replay).
    FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(dir));
    if (r.size() == 0) return InvalidInput("{}: store has no snapshots to replay", dir);
    stores.push_back(std::move(r));
  }
  auto symbol = [](const StoreReader& r) -> std::string {
    const nlohmann::json& m = r.meta();
    if (m.contains("instrument") && m["instrument"].contains("symbol") &&
        m["instrument"]["symbol"].is_string())
      return m["instrument"]["symbol"].get<std::string>();
    return "";
  };
  for (size_t k = 1; k < stores.size(); ++k) {
    const StoreReader& a = stores[k - 1];
    const StoreReader& b = stores[k];
    const std::string sa = symbol(a), sb = symbol(b);
    if (!sa.empty() && !sb.empty() && sa != sb)
      return InvalidInput(
          "{}: instrument '{}' differs from '{}' in {}: one backtest replays one "
          "instrument",
          b.dir(), sb, sa, a.dir());
    const int64_t a_first = a.ts_ns[0], a_last = a.ts_ns[a.size() - 1];
    const int64_t b_first = b.ts_ns[0], b_last = b.ts_ns[b.size() - 1];
    if (b_last <= a_first)
      return InvalidInput(
          "{}: store is out of time order: it ends at {} ns, before {} starts at "
          "{} ns; list stores oldest first",
          b.dir(), b_last, a.dir(), a_first);
    if (b_first < a_last)
      return InvalidInput(
          "{}: store overlaps {}: it starts at {} ns, before that one ends at {} "
          "ns; stores must be consecutive sessions",
          b.dir(), a.dir(), b_first, a_last);
  }
  return stores;
}

namespace {

// The replay: one exchange-time line of market rows, order messages arriving at the exchange
// and messages delivered to the strategy. Without a strategy (a market replay, the
// benchmark's baseline) the same loop runs and nothing is delivered.
class Replay final : public StrategyContext {
 public:
  Replay(const std::vector<StoreReader>& stores, const SimConfig& config,
         const Instrument& instrument, LatencyModel latency, Strategy* strategy,
         BacktestResult* result)
      : stores_(stores),
        config_(config),
        instrument_(instrument),
        latency_(std::move(latency)),
        strategy_(strategy),
        result_(result),
        exchange_(config, instrument, result),
        seen_account_(instrument.multiplier) {}

  // The exchange-time line in steps: start, then advance until it returns false. advance(rows)
  // stops before the market row `rows` (counted over all stores from 0) and returns true, or
  // runs to the end of the line (the strategy's on_end included) and returns false.
  void start();
  bool advance(uint64_t rows);

  // ---- StrategyContext ----
  int64_t now_ns() const override { return now_; }
  uint64_t submit(const OrderRequest& request) override {
    const int64_t arrive = arrival_time();
    const uint64_t id = exchange_.register_order(request, now_, arrive);
    arrivals_.push_back({arrive, Arrival::kOrder, id, 0, 0});
    OpenOrder o;
    o.order_id = id;
    o.side = request.side;
    o.type = request.type;
    o.px = request.type == OrderType::kMarket ? 0 : request.px;
    o.qty = request.qty;
    open_.push_back(o);
    return id;
  }
  void cancel(uint64_t order_id) override {
    arrivals_.push_back({arrival_time(), Arrival::kCancel, order_id, 0, 0});
  }
  void modify(uint64_t order_id, int64_t px, double qty) override {
    arrivals_.push_back({arrival_time(), Arrival::kModify, order_id, px, qty});
  }
  const Snapshot& book() const override { return seen_book_; }
  double position() const override { return seen_account_.position(); }
  double cash() const override { return seen_account_.cash(); }
  const std::vector<OpenOrder>& open_orders() const override { return open_; }
  const Instrument& instrument() const override { return instrument_; }

 private:
  struct Arrival {
    enum Kind : uint8_t { kOrder, kCancel, kModify };
    int64_t t;
    Kind kind;
    uint64_t id;
    int64_t px;
    double qty;
  };
  struct Delivery {  // a market event on its way to the strategy
    int64_t seen_ns;
    int64_t ts_ns;
    uint32_t store;
    EventKind kind;
    uint64_t snapshot;  // MarketEvent::snapshot
    int64_t book;       // snapshot row of MarketEvent::book; -1: none yet (empty book)
    uint64_t trade;
  };
  struct Response {
    int64_t t;
    Outgoing msg;
  };

  // Order messages travel one session in order: an arrival never overtakes an earlier one.
  int64_t arrival_time() {
    last_arrival_ = in_order_arrival(last_arrival_, now_, latency_.entry_ns(now_));
    return last_arrival_;
  }
  void drain_outbox() {
    for (Outgoing& o : exchange_.outbox()) {
      last_response_ = in_order_arrival(last_response_, o.act_ns, latency_.response_ns(o.act_ns));
      responses_.push_back({last_response_, std::move(o)});
    }
    exchange_.outbox().clear();
  }
  void market_item(int64_t t);
  void next_store();
  void finish();
  void deliver_market(const Delivery& d);
  void deliver_response(Response& r);
  OpenOrder* find_open(uint64_t id) {
    for (OpenOrder& o : open_)
      if (o.order_id == id) return &o;
    return nullptr;
  }
  void erase_open(uint64_t id) {
    std::erase_if(open_, [&](const OpenOrder& o) { return o.order_id == id; });
  }

  const std::vector<StoreReader>& stores_;
  const SimConfig& config_;
  Instrument instrument_;
  LatencyModel latency_;
  Strategy* strategy_;
  BacktestResult* result_;
  Exchange exchange_;

  size_t store_ = 0;
  std::unique_ptr<MarketCursor> cursor_;
  bool session_started_ = false;
  int64_t last_book_ = -1;  // last snapshot row processed in the current store
  int64_t t_ = std::numeric_limits<int64_t>::min();  // exchange time (monotone)
  uint64_t rows_ = 0;                                // market rows processed, over all stores
  int64_t end_ = kNever;                             // set once the market data is exhausted
  bool done_ = false;

  Fifo<Arrival> arrivals_;
  Fifo<Delivery> market_out_;
  Fifo<Response> responses_;
  int64_t last_arrival_ = std::numeric_limits<int64_t>::min();
  int64_t last_response_ = std::numeric_limits<int64_t>::min();

  // What the strategy knows.
  int64_t now_ = 0;
  Snapshot seen_book_;
  uint32_t seen_store_ = 0;
  int64_t seen_row_ = -1;
  Trade seen_trade_;
  Account seen_account_;
  std::vector<OpenOrder> open_;
};

void Replay::next_store() {
  while (store_ < stores_.size()) {
    const StoreReader& r = stores_[store_];
    const bool l3 = config_.use_l3 && r.event_count() > 0;
    cursor_ = std::make_unique<MarketCursor>(r, l3);
    session_started_ = false;
    last_book_ = -1;
    if (cursor_->kind() != MarketCursor::kNone) return;
    ++store_;
  }
  cursor_.reset();
}

void Replay::market_item(int64_t t) {
  const StoreReader& r = stores_[store_];
  if (!session_started_) {
    exchange_.begin_session(config_.use_l3 && r.event_count() > 0);
    session_started_ = true;
  }
  const uint64_t i = cursor_->index();
  const auto kind = cursor_->kind();
  const int64_t seen = t + latency_.feed_ns();
  switch (kind) {
    case MarketCursor::kOrderEvent:
      exchange_.on_order_event(r.order_event(i), t);
      break;
    case MarketCursor::kTrade: {
      Trade tr = r.trade(i);
      tr.ts_ns = t;  // monotone exchange time
      exchange_.on_trade(tr, t);
      ++result_->events;
      if (strategy_ != nullptr) {
        market_out_.push_back({seen, t, static_cast<uint32_t>(store_), EventKind::kTrade,
                               r.trade_snapshot[i], last_book_, i});
      }
      break;
    }
    case MarketCursor::kSnapshot:
      exchange_.on_book(view_of(r, i), t);
      last_book_ = static_cast<int64_t>(i);
      ++result_->events;
      if (strategy_ != nullptr) {
        market_out_.push_back(
            {seen, t, static_cast<uint32_t>(store_), EventKind::kSnapshot, i, last_book_, 0});
      }
      break;
    case MarketCursor::kNone:
      break;
  }
  drain_outbox();
  if (kind != MarketCursor::kOrderEvent &&
      (result_->equity.empty() || t - result_->equity.back().ts_ns >= config_.equity_interval_ns))
    exchange_.sample_equity(t);
  cursor_->advance();
  if (cursor_->kind() == MarketCursor::kNone) {
    ++store_;
    next_store();
  }
}

void Replay::deliver_market(const Delivery& d) {
  now_ = d.seen_ns;
  if (d.book < 0) {
    if (seen_row_ >= 0 || seen_store_ != d.store) seen_book_ = Snapshot();
  } else if (d.store != seen_store_ || d.book != seen_row_) {
    load_snapshot(stores_[d.store], static_cast<uint64_t>(d.book), &seen_book_);
  }
  seen_store_ = d.store;
  seen_row_ = d.book;
  MarketEvent e;
  e.kind = d.kind;
  e.ts_ns = d.ts_ns;
  e.seen_ns = d.seen_ns;
  e.store = d.store;
  e.snapshot = d.snapshot;
  e.book = &seen_book_;
  if (d.kind == EventKind::kTrade) {
    seen_trade_ = stores_[d.store].trade(d.trade);
    e.trade = &seen_trade_;
  }
  strategy_->on_event(e, *this);
}

void Replay::deliver_response(Response& r) {
  now_ = r.t;
  Outgoing& m = r.msg;
  if (m.is_fill) {
    seen_account_.apply_fill(m.fill.side, m.fill.px, m.fill.qty, m.fill.fee);
    if (OpenOrder* o = find_open(m.fill.order_id)) {
      o->filled_qty += m.fill.qty;
      o->acknowledged = true;
    }
    if (m.final) erase_open(m.fill.order_id);
    strategy_->on_fill(m.fill, *this);
    return;
  }
  m.ack.ts_ns = r.t;
  if (OpenOrder* o = find_open(m.ack.order_id)) {
    if (m.ack.kind == AckKind::kAccepted) o->acknowledged = true;
    if (m.ack.kind == AckKind::kModified) {
      o->px = m.new_px;
      o->qty = m.new_qty;
    }
  }
  if (m.final) erase_open(m.ack.order_id);
  strategy_->on_ack(m.ack, *this);
}

void Replay::start() {
  next_store();
  now_ = cursor_ ? cursor_->ts() : 0;
  if (strategy_ != nullptr) strategy_->on_start(*this);
}

bool Replay::advance(uint64_t rows) {
  while (!done_) {
    const int64_t tm = cursor_ ? std::max(cursor_->ts(), t_) : kNever;
    if (!cursor_ && end_ == kNever)
      end_ = t_ == std::numeric_limits<int64_t>::min() ? now_ : t_ + latency_.feed_ns();
    const int64_t ta = arrivals_.empty() ? kNever : std::max(arrivals_.front().t, t_);
    const int64_t td = market_out_.empty() ? kNever : market_out_.front().seen_ns;
    const int64_t tr = responses_.empty() ? kNever : responses_.front().t;
    const int64_t t = std::min({tm, ta, td, tr});
    if (t == kNever || t > end_) {
      finish();
      break;
    }
    // Equal times: the exchange's market row, then order arrivals, then what the strategy
    // receives (market data before responses).
    if (tm == t) {
      if (rows_ >= rows) return true;  // paused before the row: resuming takes it up here
      t_ = t;
      market_item(t);
      ++rows_;
    } else if (ta == t) {
      t_ = t;
      const Arrival a = arrivals_.front();
      arrivals_.pop_front();
      if (a.kind == Arrival::kOrder)
        exchange_.on_order_arrival(a.id, t);
      else if (a.kind == Arrival::kCancel)
        exchange_.on_cancel_arrival(a.id, t);
      else
        exchange_.on_modify_arrival(a.id, a.px, a.qty, t);
      drain_outbox();
    } else if (td == t) {
      const Delivery d = market_out_.front();
      market_out_.pop_front();
      deliver_market(d);
    } else {
      Response resp = std::move(responses_.front());
      responses_.pop_front();
      deliver_response(resp);
    }
  }
  return false;
}

void Replay::finish() {
  done_ = true;
  if (t_ != std::numeric_limits<int64_t>::min()) exchange_.sample_equity(t_);
  now_ = std::max(now_, end_ == kNever ? now_ : end_);
  if (strategy_ != nullptr) strategy_->on_end(*this);
}

Status check_config(const SimConfig& config) {
  if (config.instrument.multiplier <= 0)
    return UsageError("instrument multiplier must be > 0, got {}", config.instrument.multiplier);
  if (config.equity_interval_ns < 0)
    return UsageError("equity interval must be >= 0 ns, got {}", config.equity_interval_ns);
  return Status::Ok();
}

}  // namespace

void walk_market_rows(const StoreReader& r, bool l3,
                      const std::function<void(MarketRowKind, uint64_t, int64_t)>& fn) {
  for (MarketCursor c(r, l3); c.kind() != MarketCursor::kNone; c.advance()) {
    const MarketRowKind kind = c.kind() == MarketCursor::kOrderEvent ? MarketRowKind::kOrderEvent
                               : c.kind() == MarketCursor::kTrade    ? MarketRowKind::kTrade
                                                                     : MarketRowKind::kSnapshot;
    fn(kind, c.index(), c.ts());
  }
}

Result<BacktestResult> run_backtest(const std::vector<std::string>& store_dirs,
                                    const SimConfig& config, Strategy* strategy) {
  FXT_RETURN_IF_ERROR(check_config(config));
  FXT_ASSIGN_OR_RETURN(std::vector<StoreReader> stores, open_backtest_stores(store_dirs));
  return run_backtest_on(stores, config, strategy);
}

struct BacktestRun::State {
  BacktestResult result;
  std::unique_ptr<Replay> replay;
};

BacktestRun::BacktestRun() = default;
BacktestRun::~BacktestRun() = default;
BacktestRun::BacktestRun(BacktestRun&&) noexcept = default;
BacktestRun& BacktestRun::operator=(BacktestRun&&) noexcept = default;

Result<BacktestRun> BacktestRun::start(const std::vector<StoreReader>& stores,
                                       const SimConfig& config, Strategy* strategy) {
  if (stores.empty()) return UsageError("backtest: no store given");
  FXT_RETURN_IF_ERROR(check_config(config));
  FXT_ASSIGN_OR_RETURN(LatencyModel latency, LatencyModel::create(config.latency));
  BacktestRun run;
  run.state_ = std::make_unique<State>();
  BacktestResult& result = run.state_->result;
  result.instrument = config.instrument;
  if (result.instrument.tick_px == 1 && stores.front().tick_px() > 0)
    result.instrument.tick_px = stores.front().tick_px();
  run.state_->replay = std::make_unique<Replay>(stores, config, result.instrument,
                                                std::move(latency), strategy, &result);
  run.state_->replay->start();
  return run;
}

bool BacktestRun::advance(uint64_t rows) {
  return state_->replay->advance(rows);
}

BacktestResult BacktestRun::finish() {
  advance(std::numeric_limits<uint64_t>::max());  // no row is past the last: runs to the end
  state_->replay.reset();
  return std::move(state_->result);
}

Result<BacktestResult> run_backtest_on(const std::vector<StoreReader>& stores,
                                       const SimConfig& config, Strategy* strategy) {
  FXT_ASSIGN_OR_RETURN(BacktestRun run, BacktestRun::start(stores, config, strategy));
  return run.finish();
}

}  // namespace fxt::sim
