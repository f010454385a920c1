#include "sim/gpu_lanes.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/progress.h"
#include "sim/engine.h"
#include "sim/lane_l3.h"
#include "sim/latency.h"
#include "sim/strategy_exec.h"
#include "sim/strategy_mm.h"
#include "sim/strategy_signal.h"

#if defined(FXT_HAVE_CUDA)
#include "gpu/runtime.h"
#endif

namespace fxt::sim {

static_assert(static_cast<uint8_t>(OrderType::kMarket) == kLaneMarket);
static_assert(static_cast<uint8_t>(OrderType::kLimit) == kLaneLimit);
static_assert(static_cast<uint8_t>(OrderType::kPostOnly) == kLanePostOnly);
static_assert(static_cast<uint8_t>(OrderType::kIoc) == kLaneIoc);
static_assert(static_cast<uint8_t>(OrderType::kFok) == kLaneFok);
static_assert(static_cast<uint8_t>(OrderType::kMarket) == kExecMarket);
static_assert(static_cast<uint8_t>(OrderType::kIoc) == kExecIoc);
static_assert(static_cast<uint8_t>(OrderState::kExpired) == kLaneExpired);
static_assert(static_cast<uint8_t>(AckKind::kDone) == kLaneAckDone);
static_assert(static_cast<uint8_t>(OrderType::kMarket) == kSignalMarket);
static_assert(static_cast<uint8_t>(OrderType::kPostOnly) == kSignalPostOnly);
static_assert(static_cast<uint8_t>(AckKind::kRejected) == 1 &&
              static_cast<uint8_t>(AckKind::kCanceled) == 2 &&
              static_cast<uint8_t>(AckKind::kDone) == 4);  // signal_on_ack's codes
static_assert(static_cast<uint8_t>(OrderState::kPending) == kLanePending);
static_assert(static_cast<uint8_t>(OrderState::kOpen) == kLaneOpen);
static_assert(static_cast<uint8_t>(OrderState::kFilled) == kLaneFilled);
static_assert(static_cast<uint8_t>(OrderState::kCanceled) == kLaneCanceled);
static_assert(static_cast<uint8_t>(OrderState::kRejected) == kLaneRejected);
static_assert(static_cast<uint8_t>(AckKind::kAccepted) == kLaneAccepted);
static_assert(static_cast<uint8_t>(AckKind::kRejected) == kLaneAckRejected);
static_assert(static_cast<uint8_t>(AckKind::kCanceled) == kLaneAckCanceled);
static_assert(static_cast<uint8_t>(AckKind::kModified) == kLaneModified);

namespace {

// run_backtest_on's rule: the store's tick unless the config names one (tick_px != 1).
int64_t store_tick_px(const LaneMarket& market, int64_t tick_px) {
  if (tick_px == 1 && market.stores.front().tick_px() > 0) return market.stores.front().tick_px();
  return tick_px;
}

// One side's first level with size > kQtyEps (LaneItem::best_bid / best_ask): the exchange's
// best_available with no liquidity taken (level_left(size, 0) = size).
int64_t first_level_with_size(const int64_t* px, const double* sz) {
  for (int i = 0; i < kBookLevels && px[i] != kEmptyPx; ++i)
    if (level_left(sz[i], 0.0) > kQtyEps) return px[i];
  return kEmptyPx;
}

}  // namespace

LaneStreamData build_lane_stream(const LaneMarket& market, bool l3, Status* status) {
  LaneStreamData d;
  LaneL3Annotator annotator;
  bool any_l3 = false;
  size_t rows = 0;
  for (const StoreReader& r : market.stores) rows += r.size();
  d.items.reserve(market.events);
  d.bid_px.resize(rows * kBookLevels);
  d.ask_px.resize(rows * kBookLevels);
  d.bid_sz.resize(rows * kBookLevels);
  d.ask_sz.resize(rows * kBookLevels);
  d.flags.resize(rows);
  int64_t t = kLaneMinTime;  // the engine's exchange time: monotone over every store
  double mid = 0;            // Exchange::mid_: the last two-sided mid
  size_t offset = 0;
  const SignalSeries* signal = market.inputs.signal.get();
  for (uint32_t k = 0; k < market.stores.size(); ++k) {
    const StoreReader& r = market.stores[k];
    d.session_start.push_back(market.inputs.sessions[k].start_ns);
    d.session_end.push_back(market.inputs.sessions[k].end_ns);
    for (uint64_t i = 0; i < r.size(); ++i) {
      const size_t g = (offset + i) * kBookLevels;
      std::memcpy(&d.bid_px[g], r.bid_px.row(i), kBookLevels * sizeof(int64_t));
      std::memcpy(&d.ask_px[g], r.ask_px.row(i), kBookLevels * sizeof(int64_t));
      std::memcpy(&d.bid_sz[g], r.bid_sz.row(i), kBookLevels * sizeof(double));
      std::memcpy(&d.ask_sz[g], r.ask_sz.row(i), kBookLevels * sizeof(double));
      d.flags[offset + i] = r.flags[i];
    }
    int64_t last_book = -1;
    bool first = true;
    // The replay engine's rule (Replay::next_store): L3 where the store has order events.
    const bool store_l3 = l3 && r.event_count() > 0;
    if (store_l3) {
      annotator.begin_session(d.items.size());
      any_l3 = true;
    }
    walk_market_rows(r, store_l3, [&](MarketRowKind kind, uint64_t i, int64_t ts) {
      LaneItem it;
      t = std::max(ts, t);
      it.t = t;
      it.store = k;
      it.session_start = !first ? 0 : store_l3 ? kLaneSessionL3 : kLaneSessionL2;
      first = false;
      if (kind == MarketRowKind::kOrderEvent) {
        it.book_row = last_book;
        Status s = annotator.apply(r.order_event(i), d.items.size(), &it);
        if (!s.ok() && status != nullptr && status->ok())
          *status = UsageError("store {} ({}): {}", k, r.dir(), s.message());
      } else if (kind == MarketRowKind::kTrade) {
        it.kind = kLaneTrade;
        it.px = r.trade_px[i];
        it.sz = r.trade_sz[i];
        it.side = r.trade_side[i];
        it.snapshot = r.trade_snapshot[i];
        it.book_row = last_book;
      } else {
        it.kind = kLaneSnapshot;
        it.snapshot = i;
        const int64_t previous = last_book;  // this store's previous snapshot row, or -1
        last_book = static_cast<int64_t>(offset + i);
        it.book_row = last_book;
        bool two_sided = false;
        const double m = touch_mid(r.bid_px.row(i)[0], r.bid_sz.row(i)[0], r.ask_px.row(i)[0],
                                   r.ask_sz.row(i)[0], &two_sided);
        if (two_sided) mid = m;
        it.book = (r.flags[i] & (kFlagCrossed | kFlagLocked)) != 0 ? kLaneBookCrossed : 0;
        if (previous >= 0) {
          const uint64_t j = static_cast<uint64_t>(previous) - offset;
          it.book |= static_cast<uint8_t>(lane_side_prefix_code(r.bid_px.row(i), r.bid_sz.row(i),
                                                                r.bid_px.row(j), r.bid_sz.row(j))
                                          << kLaneBidPrefixShift);
          it.book |= static_cast<uint8_t>(lane_side_prefix_code(r.ask_px.row(i), r.ask_sz.row(i),
                                                                r.ask_px.row(j), r.ask_sz.row(j))
                                          << kLaneAskPrefixShift);
        }
        it.best_bid = first_level_with_size(r.bid_px.row(i), r.bid_sz.row(i));
        it.best_ask = first_level_with_size(r.ask_px.row(i), r.ask_sz.row(i));
        if (signal != nullptr) it.p = signal->at(k, i);
      }
      it.mid = mid;
      d.items.push_back(it);
    });
    offset += r.size();
  }
  if (any_l3) annotator.finish(&d.l3_levels, &d.l3_rows, &d.l3_sizes);
  // The mm estimates at the tick every lane gets unless it names one (lane_tick_px).
  add_lane_mm_table(&d, market.stores.empty() ? 1 : store_tick_px(market, 1));
  return d;
}

uint32_t add_lane_mm_table(LaneStreamData* d, int64_t tick) {
  for (size_t k = 0; k < d->mm_ticks.size(); ++k)
    if (d->mm_ticks[k] == tick) return static_cast<uint32_t>(k);
  const uint64_t n = d->items.size();
  if (d->mm_ticks.empty()) d->mm_stride = n;
  const LaneStream s = d->view();
  const size_t base = d->mm_rows.size();
  d->mm_rows.resize(base + d->mm_stride);
  MmEstimates est;
  for (uint64_t i = 0; i < n && i < d->mm_stride; ++i) {
    const LaneItem& it = s.items[i];
    if (it.kind == kLaneTrade) {
      mm_on_trade(&est);
      continue;
    }
    if (it.kind != kLaneSnapshot) continue;  // order events: the exchange's only
    const LaneStream::Book book = s.book(it.book_row);
    MmSnapshot e;  // as deliver_market / MarketMakerStrategy::on_event build it
    e.store = it.store;
    e.ts_ns = it.t;
    e.bid_px = book.bid_px[0];
    e.ask_px = book.ask_px[0];
    e.bid_sz = book.bid_sz[0];
    e.ask_sz = book.ask_sz[0];
    lane_session(s, it, &e);
    if (!mm_observe(&est, e, tick)) continue;
    LaneMmRow& r = d->mm_rows[base + i];
    r.sigma = mm_sigma_estimate(est);
    r.arrival = mm_arrival_estimate(est);
    r.mid_ticks = est.last_mid_ticks;
    r.bid_px = e.bid_px;
    r.ask_px = e.ask_px;
    r.seen = est.snapshots_seen;
  }
  d->mm_ticks.push_back(tick);
  return static_cast<uint32_t>(d->mm_ticks.size() - 1);
}

Result<LaneConfig> gpu_lane_config(const LaneMarket& market, const Lane& lane,
                                   std::vector<double>* holdings) {
  const bool exec = lane.strategy == "twap" || lane.strategy == "ac";
  if (lane.sim.instrument.multiplier <= 0)
    return UsageError("instrument multiplier must be > 0, got {}", lane.sim.instrument.multiplier);
  if (lane.sim.equity_interval_ns < 0)
    return UsageError("equity interval must be >= 0 ns, got {}", lane.sim.equity_interval_ns);
  FXT_RETURN_IF_ERROR(LatencyModel::create(lane.sim.latency).status());
  FXT_ASSIGN_OR_RETURN(StrategyParams params, StrategyParams::parse(lane.params));
  FXT_ASSIGN_OR_RETURN(StrategyFactory f,
                       make_strategy_factory(lane.strategy, std::move(params), market.inputs));
  LaneConfig c;
  c.fees = lane.sim.fees;
  c.queue = lane.sim.queue;
  c.feed_ns = lane.sim.latency.feed_ns;
  c.entry_ns = lane.sim.latency.entry_ns;
  c.response_ns = lane.sim.latency.response_ns;
  c.equity_interval_ns = lane.sim.equity_interval_ns;
  c.multiplier = lane.sim.instrument.multiplier;
  c.tick_px = store_tick_px(market, lane.sim.instrument.tick_px);
  if (lane.strategy == "signal") {  // the factory's resolved config
    const nlohmann::json& j = f.config;
    SignalConfig sc;
    for (auto [key, slot] : std::initializer_list<std::pair<const char*, double*>>{
             {"long_small", &sc.long_small},   {"long_half", &sc.long_half},
             {"long_full", &sc.long_full},     {"short_small", &sc.short_small},
             {"short_half", &sc.short_half},   {"short_full", &sc.short_full},
             {"flat_band", &sc.flat_band},     {"size_small", &sc.size_small},
             {"size_half", &sc.size_half},     {"size_full", &sc.size_full},
             {"kelly", &sc.kelly},             {"kelly_cap", &sc.kelly_cap},
             {"max_position", &sc.max_position}, {"lot", &sc.lot}}) {
      *slot = j.at(key).get<double>();
    }
    sc.passive = j.at("entry").get<std::string>() == "passive";
    sc.max_hold_ns = j.at("max_hold_ns").get<int64_t>();
    c.strategy = kLaneStrategySignal;
    c.signal = signal_params(sc);
    c.has_signal = true;
    return c;
  }
  if (!exec) {
    FXT_ASSIGN_OR_RETURN(MarketMakerConfig mm, MarketMakerConfig::from_json(f.config));
    c.strategy = kLaneStrategyMm;
    c.mm = mm_params(mm);
    if (c.tick_px > 0) c.mm_tick_limit = mm_tick_limit(c.tick_px);
    c.has_signal = market.inputs.signal != nullptr;
    return c;
  }
  // twap / ac: the factory's resolved config (window in exchange time, schedule).
  const nlohmann::json& j = f.config;
  ExecutionConfig e;
  e.side = j.at("side").get<std::string>() == "buy" ? Side::kBuy : Side::kSell;
  e.qty = j.at("qty").get<double>();
  e.slices = j.at("slices").get<int>();
  e.limit = j.at("order").get<std::string>() == "limit";
  e.limit_ticks = j.at("limit_ticks").get<double>();
  e.lot = j.at("lot").get<double>();
  const int64_t start = j.at("window_start_ns").get<int64_t>();
  const int64_t end = j.at("window_end_ns").get<int64_t>();
  if (!exec_slices_exact(end - start, e.slices)) {
    return UsageError(
        "--device cuda: a {} ns window in {} slices is beyond the GPU lanes' int64 slice "
        "arithmetic; use --device cpu",
        end - start, e.slices);
  }
  c.strategy = kLaneStrategyExec;
  c.exec = exec_params(e, start, end, c.tick_px);
  if (holdings != nullptr) {
    c.holdings_offset = static_cast<uint32_t>(holdings->size());
    const std::vector<double> h = j.at("holdings").get<std::vector<double>>();
    holdings->insert(holdings->end(), h.begin(), h.end());
  }
  return c;
}

bool gpu_lanes_available() {
#if defined(FXT_HAVE_CUDA)
  return gpu::cuda_available();
#else
  return false;
#endif
}

void run_lane_batch_host(const LaneStreamData& stream, LaneBatch* b, int threads,
                         const LaneChunkCallback& on_chunk) {
  const size_t n = b->configs.size();
  b->states.assign(n, LaneState());
  const bool capture = b->fill_cap > 0;
  if (capture) {
    b->fills.assign(n * b->fill_cap, LaneFillRow());
    b->equity.assign(n * b->equity_cap, LaneEquityRow());
    b->orders.assign(n * b->order_cap, LaneOrderRow());
  }
  const LaneStream view = stream.view();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      LaneCapture cap;
      if (capture) {
        cap.fills = &b->fills[i * b->fill_cap];
        cap.equity = &b->equity[i * b->equity_cap];
        cap.orders = &b->orders[i * b->order_cap];
        cap.fill_cap = b->fill_cap;
        cap.equity_cap = b->equity_cap;
        cap.order_cap = b->order_cap;
      }
      LaneSim sim(view, b->configs[i], &b->states[i], cap);
      sim.advance(view.n);
      if (on_chunk) {
        std::lock_guard<std::mutex> lock(mutex);
        on_chunk(view.n);
      }
    }
  };
  const size_t n_threads = std::min(n, static_cast<size_t>(std::max(threads, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

namespace {

// Equity rows the market alone samples (no fills) at this interval: the capacity's base.
uint64_t market_equity_rows(const LaneStreamData& d, int64_t interval) {
  uint64_t rows = 0;
  int64_t last = 0;
  for (const LaneItem& it : d.items) {
    if (it.kind >= kLaneOrderEvent) continue;  // order events sample no equity
    if (rows == 0 || it.t - last >= interval) {
      ++rows;
      last = it.t;
    }
  }
  return rows;
}

// Lane i's rows as the BacktestResult the CPU engine would have produced.
BacktestResult lane_result(const LaneBatch& b, size_t i) {
  const LaneState& st = b.states[i];
  const LaneConfig& c = b.configs[i];
  BacktestResult r;
  r.instrument.tick_px = c.tick_px;
  r.instrument.multiplier = c.multiplier;
  r.fees_paid = st.fees_paid;
  r.events = st.events;
  r.orders.reserve(st.orders);
  for (uint64_t k = 0; k < st.orders; ++k) {
    const LaneOrderRow& o = b.orders[i * b.order_cap + k];
    OrderRecord rec;
    rec.order_id = k + 1;
    rec.sent_ns = o.sent_ns;
    rec.arrive_ns = o.arrive_ns;
    rec.done_ns = o.done_ns;
    rec.side = o.side > 0 ? Side::kBuy : Side::kSell;
    rec.type = static_cast<OrderType>(o.type);
    rec.px = o.px;
    rec.qty = o.qty;
    rec.filled_qty = o.filled_qty;
    rec.avg_fill_px = o.avg_fill_px;
    rec.state = static_cast<OrderState>(o.state);
    r.orders.push_back(rec);
  }
  r.fills.reserve(st.fills);
  for (uint64_t k = 0; k < st.fills; ++k) {
    const LaneFillRow& f = b.fills[i * b.fill_cap + k];
    Fill fill;
    fill.ts_ns = f.ts_ns;
    fill.order_id = f.order_id;
    fill.side = f.side > 0 ? Side::kBuy : Side::kSell;
    fill.px = f.px;
    fill.qty = f.qty;
    fill.fee = f.fee;
    fill.maker = f.maker != 0;
    r.fills.push_back(fill);
  }
  r.equity.reserve(st.equity_rows);
  for (uint64_t k = 0; k < st.equity_rows; ++k) {
    const LaneEquityRow& e = b.equity[i * b.equity_cap + k];
    r.equity.push_back({e.ts_ns, e.position, e.cash, e.mid, e.equity});
  }
  return r;
}

}  // namespace

Result<std::vector<LaneOutcome>> run_gpu_lanes(const LaneMarket& market,
                                               const std::vector<Lane>& lanes,
                                               const GpuLaneOptions& options, GpuLaneReport* report,
                                               const LaneSink& sink, uint64_t max_events) {
  std::vector<LaneConfig> configs;
  std::vector<StrategyFactory> factories;
  std::vector<double> holdings;  // the twap/ac lanes' schedules, for the stream
  for (size_t i = 0; i < lanes.size(); ++i) {
    Result<LaneConfig> c = gpu_lane_config(market, lanes[i], &holdings);
    if (!c.ok())
      return Status(c.status().code(), fmt::format("lane {}: {}", i, c.status().message()));
    configs.push_back(*c);
    Result<StrategyParams> params = StrategyParams::parse(lanes[i].params);
    Result<StrategyFactory> f =
        make_strategy_factory(lanes[i].strategy, std::move(params).value(), market.inputs);
    factories.push_back(std::move(f).value());
  }
#if !defined(FXT_HAVE_CUDA)
  if (options.on_device)
    return UsageError(
        "--device cuda: this build has no CUDA (configure with CUDA); use --device cpu");
#endif
  if (options.on_device && !gpu_lanes_available())
    return UsageError("--device cuda: no CUDA device found; use --device cpu");
  GpuLaneReport rep;
  // Recorded latency curves, one copy per file, shared by the lanes that name it.
  LaneStreamData shared;  // the latency curves and schedules every stream carries
  shared.holdings = std::move(holdings);
  std::map<std::string, std::pair<uint32_t, uint32_t>> curves;  // file -> offset, samples
  for (size_t i = 0; i < lanes.size(); ++i) {
    const std::string& file = lanes[i].sim.latency.file;
    if (file.empty()) continue;
    auto it = curves.find(file);
    if (it == curves.end()) {
      FXT_ASSIGN_OR_RETURN(LatencyModel model, LatencyModel::create(lanes[i].sim.latency));
      const auto offset = static_cast<uint32_t>(shared.latency_ts.size());
      const auto samples = static_cast<uint32_t>(model.samples());
      shared.latency_ts.insert(shared.latency_ts.end(), model.sample_ts().begin(),
                               model.sample_ts().end());
      shared.latency_entry.insert(shared.latency_entry.end(), model.entry_samples().begin(),
                                  model.entry_samples().end());
      shared.latency_response.insert(shared.latency_response.end(),
                                     model.response_samples().begin(),
                                     model.response_samples().end());
      it = curves.emplace(file, std::make_pair(offset, samples)).first;
    }
    configs[i].latency_offset = it->second.first;
    configs[i].latency_samples = it->second.second;
  }
  // Lanes with L3 FIFO queues (use_l3 on MBO stores) replay the order events too: their stream
  // differs (order-event rows, exchange times), so they run apart from the L2 lanes, whose
  // stream stays without order events.
  const bool mbo = std::any_of(market.stores.begin(), market.stores.end(),
                               [](const StoreReader& r) { return r.event_count() > 0; });
  std::vector<size_t> group[2];  // [0]: L2 stream, [1]: L3 stream
  for (size_t i = 0; i < lanes.size(); ++i) group[mbo && lanes[i].sim.use_l3 ? 1 : 0].push_back(i);

  std::vector<LaneOutcome> outcomes(lanes.size());
  std::vector<size_t> fallback;
  double seconds = 0;
  for (int l3 : {1, 0}) {  // L3 first: a store the L3 lanes cannot follow is refused up front
    const std::vector<size_t>& ids = group[l3];
    if (ids.empty()) continue;
    Status exact = Status::Ok();
    LaneStreamData stream = build_lane_stream(market, l3 == 1, &exact);
    if (!exact.ok()) {
      return UsageError("lane {}: --device cuda: {}; set l2 = true or use --device cpu", ids[0],
                        exact.message());
    }
    if (max_events > 0 && max_events < stream.items.size()) stream.items.resize(max_events);
    // One mm table per tick of this stream's mm lanes (none without mm lanes).
    bool any_mm = false;
    for (size_t i : ids) any_mm = any_mm || configs[i].strategy == kLaneStrategyMm;
    if (!any_mm) {
      stream.mm_rows = {};
      stream.mm_ticks.clear();
    }
    for (size_t i : ids)
      if (configs[i].strategy == kLaneStrategyMm)
        configs[i].mm_table = add_lane_mm_table(&stream, configs[i].tick_px);
    stream.holdings = shared.holdings;
    stream.latency_ts = shared.latency_ts;
    stream.latency_entry = shared.latency_entry;
    stream.latency_response = shared.latency_response;
    rep.stream_bytes += stream.bytes();
    // Progress counts market events (snapshots and trades): an L3 stream's order-event rows
    // are scaled away.
    const uint64_t rows = stream.items.size();
    const LaneChunkCallback progress = [&options, &market, rows](uint64_t lane_events) {
      if (options.progress == nullptr) return;
      options.progress->advance(
          rows > market.events
              ? static_cast<uint64_t>(static_cast<double>(lane_events) *
                                      static_cast<double>(market.events) /
                                      static_cast<double>(rows))
              : lane_events);
    };

    LaneBatch shape;
    if (options.capture) {
      int64_t min_interval = INT64_MAX;
      for (size_t i : ids) min_interval = std::min(min_interval, configs[i].equity_interval_ns);
      const uint64_t base = market_equity_rows(stream, min_interval);
      shape.fill_cap = options.row_capacity > 0 ? options.row_capacity : 1u << 14;
      shape.order_cap = shape.fill_cap;
      shape.equity_cap =
          static_cast<uint32_t>(std::min<uint64_t>(base + 2 * shape.fill_cap + 2, UINT32_MAX));
    }
    rep.bytes_per_lane = std::max(rep.bytes_per_lane, shape.bytes_per_lane());
    size_t budget = options.memory_budget;
#if defined(FXT_HAVE_CUDA)
    std::unique_ptr<DeviceLaneStream> device_stream;
    if (options.on_device) {
      device_stream = std::make_unique<DeviceLaneStream>(stream);
      if (budget == 0) {
        // A batch's rows come back to host memory too: at most 8 GiB of them at once.
        budget = std::min(lane_device_free_bytes() / 10 * 6, size_t{8} << 30);
      }
    }
#endif
    if (budget == 0) budget = size_t{1} << 30;
    size_t batch = options.batch;
    if (batch == 0) batch = std::max<size_t>(1, budget / shape.bytes_per_lane());
    batch = std::min(batch, std::max<size_t>(ids.size(), 1));
    rep.batch_lanes = std::max(rep.batch_lanes, batch);

    const auto start = std::chrono::steady_clock::now();
    for (size_t begin = 0; begin < ids.size(); begin += batch) {
      const size_t end = std::min(ids.size(), begin + batch);
      LaneBatch b = shape;
      for (size_t k = begin; k < end; ++k) b.configs.push_back(configs[ids[k]]);
#if defined(FXT_HAVE_CUDA)
      if (options.on_device)
        run_lane_batch_device(*device_stream, &b, progress);
      else
#endif
        run_lane_batch_host(stream, &b, options.threads, progress);
      ++rep.batches;
      for (size_t k = begin; k < end; ++k) {
        const size_t i = ids[k];
        const LaneState& st = b.states[k - begin];
        if (st.error != kLaneOk || !st.finished) {
          fallback.push_back(i);
          continue;
        }
        if (!options.capture) {
          LaneOutcome& o = outcomes[i];
          o.position = st.account.position;
          o.cash = st.account.cash;
          o.fees = st.account.fees;
          o.fills = st.fills;
          o.orders = st.orders;
          o.events = st.events;
          continue;
        }
        const BacktestResult r = lane_result(b, k - begin);
        const std::unique_ptr<Strategy> strategy = factories[i].make();
        if (auto* e = dynamic_cast<ExecutionStrategy*>(strategy.get())) e->set_state(st.exec);
        outcomes[i] = lane_outcome(r, lanes[i].sim, *strategy);
        if (sink) FXT_RETURN_IF_ERROR(sink(i, r));
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(fallback.begin(), fallback.end());
  rep.kernel_seconds = seconds;
  rep.cpu_fallback_lanes = fallback.size();
  if (!fallback.empty() &&
      max_events == 0) {  // rerun on the CPU engine: the reference, so never a wrong row
    std::vector<Lane> subset;
    for (size_t i : fallback) subset.push_back(lanes[i]);
    LaneOptions cpu;
    cpu.threads = std::max(options.threads, 1);
    const LaneSink sub_sink = [&](size_t k, const BacktestResult& r) {
      return sink ? sink(fallback[k], r) : Status::Ok();
    };
    FXT_ASSIGN_OR_RETURN(std::vector<LaneOutcome> redone, run_lanes(market, subset, cpu, sub_sink));
    for (size_t k = 0; k < fallback.size(); ++k) outcomes[fallback[k]] = std::move(redone[k]);
  }
  if (report != nullptr) *report = rep;
  return outcomes;
}

}  // namespace fxt::sim
