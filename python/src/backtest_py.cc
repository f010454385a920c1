// foxhunt backtests (DESIGN §7): the built-in strategies through sim::run_backtest_spec exactly
// as `fxt backtest` runs them, and Python strategy objects driving the same replay engine
// (sim::run_backtest) through an adapter.
//
// The Python path keeps the GIL for the whole run and calls only the hooks the strategy
// overrides (the wrapper passes None for the others): the replay loop stays in C++, so a
// strategy without on_event costs nothing per event. The Context and Event objects handed to
// the hooks are created once and refilled per call; outside a call they refuse access (their
// pointers into the engine are cleared), so a strategy that keeps them cannot read freed memory.
#include <chrono>
#include <cmath>
#include <optional>

#include "bindings.h"
#include "data/store.h"
#include "sim/backtest.h"
#include "sim/engine.h"
#include "sim/results.h"
#include "sim/stats.h"

namespace fxt::python {

namespace {

using sim::StrategyContext;

// The simulator settings both paths share, from the CLI's flag grammar (docs/BACKTEST.md).
struct SimArgs {
  std::string latency, latency_file, fees, equity_interval = "1s";
  double multiplier = 0;  // 0: the store's contract multiplier (1 when unknown)
  bool l2 = false;
};

sim::SimConfig sim_config(const SimArgs& a) {
  sim::SimConfig c;
  if (!a.latency.empty()) c.latency = unwrap(sim::parse_latency(a.latency));
  c.latency.file = a.latency_file;
  if (!a.fees.empty()) c.fees = unwrap(sim::parse_fees(a.fees));
  c.equity_interval_ns = unwrap(sim::parse_duration_ns(a.equity_interval));
  if (c.equity_interval_ns <= 0) raise(UsageError("--equity-interval must be > 0"));
  c.use_l3 = !a.l2;
  if (a.multiplier < 0 || std::isnan(a.multiplier)) raise(UsageError("--multiplier must be > 0"));
  if (a.multiplier > 0) c.instrument.multiplier = a.multiplier;
  return c;
}

const char* ack_kind_name(sim::AckKind k) {
  switch (k) {
    case sim::AckKind::kAccepted:
      return "accepted";
    case sim::AckKind::kRejected:
      return "rejected";
    case sim::AckKind::kCanceled:
      return "canceled";
    case sim::AckKind::kModified:
      return "modified";
    case sim::AckKind::kDone:
      return "done";
  }
  return "unknown";
}

sim::Side parse_side(const py::handle& side) {
  if (py::isinstance<py::str>(side)) {
    const std::string s = side.cast<std::string>();
    if (s == "buy") return sim::Side::kBuy;
    if (s == "sell") return sim::Side::kSell;
  } else if (py::isinstance<py::int_>(side)) {
    const long v = side.cast<long>();
    if (v == 1) return sim::Side::kBuy;
    if (v == -1) return sim::Side::kSell;
  }
  raise(UsageError("side {}: expected 'buy', 'sell', 1 or -1", std::string(py::repr(side))));
}

sim::OrderType parse_order_type(const std::string& t) {
  for (auto k : {sim::OrderType::kMarket, sim::OrderType::kLimit, sim::OrderType::kPostOnly,
                 sim::OrderType::kIoc, sim::OrderType::kFok}) {
    if (t == sim::order_type_name(k)) return k;
  }
  raise(UsageError("order type '{}': expected market, limit, post_only, ioc or fok", t));
}

// The strategy's view of the engine, valid only during a hook.
struct PyContext {
  StrategyContext* ctx = nullptr;
  StrategyContext& get() const {
    if (ctx == nullptr) raise(UsageError("the strategy context is only valid inside a callback"));
    return *ctx;
  }
};

// A market event; the book pointer is valid only during on_event.
struct PyEvent {
  sim::MarketEvent e;
  const Snapshot& book() const {
    if (e.book == nullptr) raise(UsageError("an event's book is only valid inside on_event"));
    return *e.book;
  }
};

py::array_t<int64_t> levels(const int64_t (&v)[kBookLevels]) {
  return py::array_t<int64_t>(kBookLevels, v);
}
py::array_t<double> levels(const double (&v)[kBookLevels]) {
  return py::array_t<double>(kBookLevels, v);
}

// Calls the Python hooks; the first Python exception stops further calls and is re-raised
// when the replay returns.
class PyStrategy : public sim::Strategy {
 public:
  PyStrategy(py::object on_start, py::object on_event, py::object on_fill, py::object on_ack,
             py::object on_end)
      : on_start_(std::move(on_start)),
        on_event_(std::move(on_event)),
        on_fill_(std::move(on_fill)),
        on_ack_(std::move(on_ack)),
        on_end_(std::move(on_end)),
        ctx_obj_(py::cast(PyContext{})),
        event_obj_(py::cast(PyEvent{})),
        ctx_(ctx_obj_.cast<PyContext*>()),
        event_(event_obj_.cast<PyEvent*>()) {}

  void on_start(StrategyContext& ctx) override { call(on_start_, ctx); }
  void on_event(const sim::MarketEvent& event, StrategyContext& ctx) override {
    if (on_event_.is_none() || error_) return;
    event_->e = event;
    call(on_event_, ctx, event_obj_);
    event_->e.book = nullptr;
    event_->e.trade = nullptr;
  }
  void on_fill(const sim::Fill& fill, StrategyContext& ctx) override {
    if (!on_fill_.is_none() && !error_) call(on_fill_, ctx, py::cast(fill));
  }
  void on_ack(const sim::Ack& ack, StrategyContext& ctx) override {
    if (!on_ack_.is_none() && !error_) call(on_ack_, ctx, py::cast(ack));
  }
  void on_end(StrategyContext& ctx) override { call(on_end_, ctx); }

  void rethrow() {
    if (error_) throw *error_;
  }

 private:
  template <typename... Args>
  void call(const py::object& hook, StrategyContext& ctx, Args&&... args) {
    if (hook.is_none() || error_) return;
    ctx_->ctx = &ctx;
    try {
      hook(ctx_obj_, std::forward<Args>(args)...);
    } catch (py::error_already_set& e) {
      error_.emplace(std::move(e));
    }
    ctx_->ctx = nullptr;
  }

  py::object on_start_, on_event_, on_fill_, on_ack_, on_end_;
  py::object ctx_obj_, event_obj_;
  PyContext* ctx_;
  PyEvent* event_;
  std::optional<py::error_already_set> error_;
};

void bind_strategy_types(py::module_& m) {
  py::class_<PyContext>(m, "Context", "the engine as a strategy sees it (valid inside a hook)")
      .def_property_readonly("now_ns", [](const PyContext& c) { return c.get().now_ns(); })
      .def(
          "submit",
          [](const PyContext& c, const py::object& side, double qty, int64_t px,
             const std::string& type) {
            sim::OrderRequest r;
            r.side = parse_side(side);
            r.type = parse_order_type(type);
            if (!(qty > 0) || !std::isfinite(qty)) {
              raise(UsageError("order quantity {}: expected a finite number > 0", qty));
            }
            if (r.type != sim::OrderType::kMarket && px <= 0) {
              raise(UsageError("{} order price {}: expected a positive price in 1e-9 units",
                               sim::order_type_name(r.type), px));
            }
            r.qty = qty;
            r.px = px;
            return c.get().submit(r);
          },
          py::arg("side"), py::arg("qty"), py::arg("px") = 0, py::arg("type") = "limit",
          "send an order (side 'buy'/'sell' or +1/-1; px in 1e-9 units); returns its id")
      .def("cancel", [](const PyContext& c, uint64_t id) { c.get().cancel(id); })
      .def(
          "modify",
          [](const PyContext& c, uint64_t id, int64_t px, double qty) {
            if (!(qty > 0) || !std::isfinite(qty)) {
              raise(UsageError("order quantity {}: expected a finite number > 0", qty));
            }
            c.get().modify(id, px, qty);
          },
          py::arg("order_id"), py::arg("px"), py::arg("qty"))
      .def_property_readonly("position", [](const PyContext& c) { return c.get().position(); })
      .def_property_readonly("cash", [](const PyContext& c) { return c.get().cash(); })
      .def_property_readonly("tick_px",
                             [](const PyContext& c) { return c.get().instrument().tick_px; })
      .def_property_readonly("multiplier",
                             [](const PyContext& c) { return c.get().instrument().multiplier; })
      .def_property_readonly("best_bid_px",
                             [](const PyContext& c) { return c.get().book().bid_px[0]; })
      .def_property_readonly("best_ask_px",
                             [](const PyContext& c) { return c.get().book().ask_px[0]; })
      .def_property_readonly("open_orders", [](const PyContext& c) {
        py::list out;
        for (const sim::OpenOrder& o : c.get().open_orders()) {
          py::dict d;
          d["order_id"] = o.order_id;
          d["side"] = sim::sign(o.side);
          d["type"] = sim::order_type_name(o.type);
          d["px"] = o.px;
          d["qty"] = o.qty;
          d["filled_qty"] = o.filled_qty;
          d["acknowledged"] = o.acknowledged;
          out.append(d);
        }
        return out;
      });

  py::class_<PyEvent>(m, "Event", "a market event as the strategy sees it (inside on_event)")
      .def_property_readonly("kind",
                             [](const PyEvent& e) {
                               return e.e.kind == sim::EventKind::kTrade ? "trade" : "snapshot";
                             })
      .def_property_readonly("ts_ns", [](const PyEvent& e) { return e.e.ts_ns; })
      .def_property_readonly("seen_ns", [](const PyEvent& e) { return e.e.seen_ns; })
      .def_property_readonly("store", [](const PyEvent& e) { return e.e.store; })
      .def_property_readonly("snapshot", [](const PyEvent& e) { return e.e.snapshot; })
      .def_property_readonly("best_bid_px", [](const PyEvent& e) { return e.book().bid_px[0]; })
      .def_property_readonly("best_ask_px", [](const PyEvent& e) { return e.book().ask_px[0]; })
      .def_property_readonly("best_bid_sz", [](const PyEvent& e) { return e.book().bid_sz[0]; })
      .def_property_readonly("best_ask_sz", [](const PyEvent& e) { return e.book().ask_sz[0]; })
      .def_property_readonly("bid_px", [](const PyEvent& e) { return levels(e.book().bid_px); })
      .def_property_readonly("ask_px", [](const PyEvent& e) { return levels(e.book().ask_px); })
      .def_property_readonly("bid_sz", [](const PyEvent& e) { return levels(e.book().bid_sz); })
      .def_property_readonly("ask_sz", [](const PyEvent& e) { return levels(e.book().ask_sz); })
      .def_property_readonly("trade_px",
                             [](const PyEvent& e) -> py::object {
                               e.book();  // valid only inside on_event
                               if (e.e.trade == nullptr) return py::none();
                               return py::int_(e.e.trade->px);
                             })
      .def_property_readonly("trade_sz",
                             [](const PyEvent& e) -> py::object {
                               e.book();
                               if (e.e.trade == nullptr) return py::none();
                               return py::float_(e.e.trade->sz);
                             })
      .def_property_readonly("trade_side", [](const PyEvent& e) -> py::object {
        e.book();
        if (e.e.trade == nullptr) return py::none();
        return py::int_(e.e.trade->side);
      });

  py::class_<sim::Fill>(m, "Fill", "one execution of (part of) one of our orders")
      .def_readonly("ts_ns", &sim::Fill::ts_ns)
      .def_readonly("order_id", &sim::Fill::order_id)
      .def_property_readonly("side", [](const sim::Fill& f) { return sim::sign(f.side); })
      .def_readonly("px", &sim::Fill::px)
      .def_readonly("qty", &sim::Fill::qty)
      .def_readonly("fee", &sim::Fill::fee)
      .def_readonly("maker", &sim::Fill::maker)
      .def("__repr__", [](const sim::Fill& f) {
        return fmt::format("Fill(ts_ns={}, order_id={}, side={}, px={}, qty={}, fee={}, maker={})",
                           f.ts_ns, f.order_id, sim::sign(f.side), f.px, f.qty, f.fee, f.maker);
      });

  py::class_<sim::Ack>(m, "Ack", "the exchange's answer about an order")
      .def_readonly("ts_ns", &sim::Ack::ts_ns)
      .def_readonly("order_id", &sim::Ack::order_id)
      .def_property_readonly("kind", [](const sim::Ack& a) { return ack_kind_name(a.kind); })
      .def_readonly("reason", &sim::Ack::reason)
      .def("__repr__", [](const sim::Ack& a) {
        return fmt::format("Ack(ts_ns={}, order_id={}, kind={}, reason='{}')", a.ts_ns, a.order_id,
                           ack_kind_name(a.kind), a.reason);
      });
}

}  // namespace

void bind_backtest(py::module_& m) {
  bind_strategy_types(m);

  m.def("_backtest_builtin", [](const std::vector<std::string>& stores, const std::string& strategy,
                                const std::vector<std::string>& params,
                                const std::string& checkpoint,
                                const std::vector<std::string>& predictions, int horizon,
                                const SimArgs& a, const std::string& queue_models, int threads,
                                const std::string& out) {
    sim::BacktestSpec spec;
    spec.stores = stores;
    spec.strategy = strategy;
    spec.params = params;
    spec.checkpoint = checkpoint;
    spec.predictions = predictions;
    spec.horizon = horizon;
    spec.sim = sim_config(a);
    spec.multiplier_given = a.multiplier > 0;
    if (!queue_models.empty()) spec.queue_models = unwrap(sim::parse_queue_models(queue_models));
    spec.out_dir = out;
    spec.threads = threads;
    Result<sim::BacktestOutcome> r = InternalError("not run");
    {
      py::gil_scoped_release release;
      r = sim::run_backtest_spec(spec, "");
    }
    const sim::BacktestOutcome o = unwrap(std::move(r));
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : o.runs) {
      runs.push_back({{"name", run.name}, {"dir", run.dir}, {"stats", run.stats}});
    }
    return to_python(
        {{"runs", runs}, {"band", o.band}, {"events", o.events}, {"wall_seconds", o.wall_seconds}});
  });

  m.def("_backtest_python",
        [](const std::vector<std::string>& stores, const py::tuple& hooks, const SimArgs& a,
           const std::string& queue_model, const std::string& out) {
          if (stores.empty()) raise(UsageError("--store: give at least one store directory"));
          if (hooks.size() != 5) raise(InternalError("five hooks expected"));
          sim::SimConfig c = sim_config(a);
          if (!queue_model.empty()) c.queue = unwrap(sim::parse_queue_model(queue_model));
          {
            // The instrument from the first store, as run_backtest_spec does.
            const StoreReader r = unwrap(StoreReader::open(stores.front(), false));
            if (a.multiplier <= 0) {
              const auto& inst = r.meta().value("instrument", nlohmann::json::object());
              const double mult = inst.value("contract_multiplier", 1.0);
              c.instrument.multiplier = mult > 0 ? mult : 1.0;
            }
            c.instrument.tick_px = r.tick_px() > 0 ? r.tick_px() : 1;
          }
          // Named as run_backtest_spec names its runs: exact FIFO queues on MBO stores (unless l2).
          bool exact_queues = c.use_l3;
          for (const std::string& dir : stores) {
            exact_queues = exact_queues && unwrap(StoreReader::open(dir, false)).event_count() > 0;
          }
          PyStrategy strategy(hooks[0], hooks[1], hooks[2], hooks[3], hooks[4]);
          const auto t0 = std::chrono::steady_clock::now();
          Result<sim::BacktestResult> result = sim::run_backtest(stores, c, &strategy);
          const double secs =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          strategy.rethrow();
          const sim::BacktestResult res = unwrap(std::move(result));
          const nlohmann::json stats = sim::compute_stats(res);
          Status st;
          {
            py::gil_scoped_release release;
            st = sim::write_backtest_results(out, res, stats);
          }
          check(st);
          nlohmann::json run = {{"name", exact_queues ? "l3-fifo" : sim::queue_model_name(c.queue)},
                                {"dir", out},
                                {"stats", stats}};
          return to_python({{"runs", nlohmann::json::array({run})},
                            {"band", nullptr},
                            {"events", res.events},
                            {"wall_seconds", secs}});
        });

  py::class_<SimArgs>(m, "_SimArgs")
      .def(py::init<>())
      .def_readwrite("latency", &SimArgs::latency)
      .def_readwrite("latency_file", &SimArgs::latency_file)
      .def_readwrite("fees", &SimArgs::fees)
      .def_readwrite("equity_interval", &SimArgs::equity_interval)
      .def_readwrite("multiplier", &SimArgs::multiplier)
      .def_readwrite("l2", &SimArgs::l2);
}

}  // namespace fxt::python
