#include "sim/backtest.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include "core/file_util.h"
#include "core/text.h"
#include "data/store.h"
#include "sim/engine.h"
#include "sim/lanes.h"
#include "sim/results.h"
#include "sim/stats.h"
#include "sim/strategy_exec.h"
#include "train/run_record.h"
#include "train/trainer.h"

namespace fxt::sim {

namespace {

// The cost assumptions as stats.json and run.json record them.
nlohmann::json latency_json(const LatencyConfig& l) {
  return {{"feed_ns", l.feed_ns},
          {"entry_ns", l.entry_ns},
          {"response_ns", l.response_ns},
          {"file", l.file}};
}
nlohmann::json fees_json(const FeeSchedule& f) {
  return {{"maker_bps", f.maker_bps},
          {"taker_bps", f.taker_bps},
          {"maker_per_unit", f.maker_per_unit},
          {"taker_per_unit", f.taker_per_unit}};
}

// A whole-string double (finite).
bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<int64_t> parse_duration_ns(const std::string& text) {
  static const std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  double value = 0;
  if (text == "0") return int64_t{0};
  for (const auto& [suffix, scale] : kUnits) {
    if (ends_with(text, suffix) &&
        parse_double(std::string_view(text).substr(0, text.size() - suffix.size()), &value)) {
      const double ns = value * scale;
      if (ns < 0 || ns > 9.2e18) break;
      return static_cast<int64_t>(std::llround(ns));
    }
  }
  return UsageError("bad duration '{}' (expected a number >= 0 with ns, us, ms or s, e.g. 2ms)",
                    text);
}

Result<LatencyConfig> parse_latency(const std::string& text) {
  LatencyConfig c;
  std::set<std::string> seen;
  for (const std::string& item : split_fields(text, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int64_t* slot = key == "feed"       ? &c.feed_ns
                    : key == "entry"    ? &c.entry_ns
                    : key == "response" ? &c.response_ns
                                        : nullptr;
    if (eq == std::string::npos || slot == nullptr || !seen.insert(key).second) {
      return UsageError(
          "--latency: bad item '{}' (expected feed=, entry=, response= once each, e.g. "
          "feed=1ms,entry=2ms,response=2ms)",
          item);
    }
    auto d = parse_duration_ns(item.substr(eq + 1));
    if (!d.ok()) return UsageError("--latency {}: {}", key, d.status().message());
    *slot = *d;
  }
  return c;
}

Result<FeeSchedule> parse_fees(const std::string& text) {
  FeeSchedule f;
  std::set<std::string> seen;
  for (const std::string& item : split_fields(text, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const bool maker = key == "maker";
    if (eq == std::string::npos || (!maker && key != "taker") || !seen.insert(key).second) {
      return UsageError(
          "--fees: bad item '{}' (expected maker= and/or taker=, e.g. "
          "maker=-0.2bps,taker=0.5bps or taker=0.25/unit)",
          item);
    }
    for (const std::string& term : split_fields(item.substr(eq + 1), '+')) {
      double v = 0;
      if (ends_with(term, "bps") &&
          parse_double(std::string_view(term).substr(0, term.size() - 3), &v)) {
        (maker ? f.maker_bps : f.taker_bps) = v;
      } else if (ends_with(term, "/unit") &&
                 parse_double(std::string_view(term).substr(0, term.size() - 5), &v)) {
        (maker ? f.maker_per_unit : f.taker_per_unit) = v;
      } else {
        return UsageError("--fees {}: bad fee '{}' (expected <number>bps or <number>/unit)", key,
                          term);
      }
    }
  }
  return f;
}

Result<std::vector<QueueModel>> parse_queue_models(const std::string& text) {
  std::vector<QueueModel> models;
  std::set<std::string> names;
  for (const std::string& item : split_fields(text, ',')) {
    auto m = parse_queue_model(item);
    if (!m.ok()) return UsageError("--queue-models: {}", m.status().message());
    if (!names.insert(queue_model_name(*m)).second) {
      return UsageError("--queue-models: '{}' given twice", item);
    }
    models.push_back(*m);
  }
  return models;
}

std::string queue_model_dir_name(const QueueModel& m) {
  std::string name = queue_model_name(m);
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) c = '-';
  }
  return name;
}

// ---- parameters --------------------------------------------------------------------------------

Result<StrategyParams> StrategyParams::parse(const std::vector<std::string>& items) {
  StrategyParams p;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return UsageError("--param '{}': expected key=value", item);
    }
    const std::string key = item.substr(0, eq);
    if (!p.values_.emplace(key, item.substr(eq + 1)).second) {
      return UsageError("--param {} given twice", key);
    }
  }
  return p;
}

Status StrategyParams::get(const std::string& key, double* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return Status::Ok();
  used_[key] = true;
  if (!parse_double(it->second, out)) {
    return UsageError("--param {}={}: expected a number", key, it->second);
  }
  return Status::Ok();
}

Status StrategyParams::get(const std::string& key, int* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return Status::Ok();
  used_[key] = true;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    return UsageError("--param {}={}: expected an integer", key, s);
  }
  return Status::Ok();
}

Status StrategyParams::get_duration(const std::string& key, int64_t* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return Status::Ok();
  used_[key] = true;
  auto d = parse_duration_ns(it->second);
  if (!d.ok()) return UsageError("--param {}: {}", key, d.status().message());
  *out = *d;
  return Status::Ok();
}

Status StrategyParams::get_choice(const std::string& key, const std::vector<std::string>& choices,
                                  std::string* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return Status::Ok();
  used_[key] = true;
  if (std::find(choices.begin(), choices.end(), it->second) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    return UsageError("--param {}={}: expected one of {}", key, it->second, list);
  }
  *out = it->second;
  return Status::Ok();
}

Status StrategyParams::check_all_used(const std::string& strategy) const {
  for (const auto& [key, value] : values_) {
    if (!used_.count(key)) {
      return UsageError("--param {}: not a parameter of strategy {} (see docs/BACKTEST.md)", key,
                        strategy);
    }
  }
  return Status::Ok();
}

// ---- registry ----------------------------------------------------------------------------------

double stores_lot_size(const std::vector<StoreReader>& stores) {
  for (const StoreReader& r : stores) {
    for (const Column<double>* c : {&r.bid_sz, &r.ask_sz}) {
      const uint64_t n = c->rows * static_cast<uint64_t>(c->width);
      for (uint64_t i = 0; i < n; ++i) {
        if (c->data[i] != std::floor(c->data[i])) return 0;
      }
    }
  }
  return 1;
}

nlohmann::json run_stats(const BacktestResult& result, const SimConfig& c,
                         const Strategy& strategy) {
  nlohmann::json stats = compute_stats(result);
  // The costs the run assumed (they default to zero: say so).
  const bool no_latency = c.latency.feed_ns == 0 && c.latency.entry_ns == 0 &&
                          c.latency.response_ns == 0 && c.latency.file.empty();
  const bool no_fees = c.fees.maker_bps == 0 && c.fees.taker_bps == 0 &&
                       c.fees.maker_per_unit == 0 && c.fees.taker_per_unit == 0;
  stats["assumed_costs"] = {{"latency", latency_json(c.latency)},
                            {"fees", fees_json(c.fees)},
                            {"zero_latency_and_fees", no_latency && no_fees}};
  if (nlohmann::json report = strategy.report(); !report.is_null()) {
    stats["execution"] = std::move(report);
  }
  return stats;
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> kNames = {"signal", "mm", "twap", "ac"};
  return kNames;
}

namespace {

Result<SignalConfig> signal_config(StrategyParams& p) {
  SignalConfig c;
  for (auto [key, slot] :
       std::initializer_list<std::pair<const char*, double*>>{{"long_small", &c.long_small},
                                                              {"long_half", &c.long_half},
                                                              {"long_full", &c.long_full},
                                                              {"short_small", &c.short_small},
                                                              {"short_half", &c.short_half},
                                                              {"short_full", &c.short_full},
                                                              {"flat_band", &c.flat_band},
                                                              {"size_small", &c.size_small},
                                                              {"size_half", &c.size_half},
                                                              {"size_full", &c.size_full},
                                                              {"kelly", &c.kelly},
                                                              {"kelly_cap", &c.kelly_cap},
                                                              {"max_position", &c.max_position},
                                                              {"lot", &c.lot}}) {
    FXT_RETURN_IF_ERROR(p.get(key, slot));
  }
  std::string entry = "market";
  FXT_RETURN_IF_ERROR(p.get_choice("entry", {"market", "passive"}, &entry));
  c.passive = entry == "passive";
  FXT_RETURN_IF_ERROR(p.get_duration("max_hold", &c.max_hold_ns));
  FXT_RETURN_IF_ERROR(p.check_all_used("signal"));
  FXT_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<MarketMakerConfig> mm_config(StrategyParams& p) {
  MarketMakerConfig c;
  std::string model = "as";
  FXT_RETURN_IF_ERROR(p.get_choice("model", {"as", "glft"}, &model));
  c.model = model == "glft" ? QuoteModel::kGlft : QuoteModel::kAvellanedaStoikov;
  for (auto [key, slot] :
       std::initializer_list<std::pair<const char*, double*>>{{"gamma", &c.gamma},
                                                              {"k", &c.k},
                                                              {"sigma", &c.sigma},
                                                              {"arrival", &c.arrival},
                                                              {"order_qty", &c.order_qty},
                                                              {"max_inventory", &c.max_inventory},
                                                              {"requote_ticks", &c.requote_ticks},
                                                              {"skew_ticks", &c.skew_ticks}}) {
    FXT_RETURN_IF_ERROR(p.get(key, slot));
  }
  FXT_RETURN_IF_ERROR(p.get("warmup", &c.warmup));
  FXT_RETURN_IF_ERROR(p.check_all_used("mm"));
  FXT_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<ExecutionConfig> exec_config(StrategyParams& p, bool ac, double store_lot) {
  ExecutionConfig c;
  c.lot = store_lot;
  std::string side = "sell", order = "market";
  FXT_RETURN_IF_ERROR(p.get_choice("side", {"buy", "sell"}, &side));
  c.side = side == "buy" ? Side::kBuy : Side::kSell;
  FXT_RETURN_IF_ERROR(p.get_choice("order", {"market", "limit"}, &order));
  c.limit = order == "limit";
  FXT_RETURN_IF_ERROR(p.get("qty", &c.qty));
  FXT_RETURN_IF_ERROR(p.get_duration("start", &c.start_ns));
  FXT_RETURN_IF_ERROR(p.get_duration("duration", &c.duration_ns));
  FXT_RETURN_IF_ERROR(p.get("slices", &c.slices));
  FXT_RETURN_IF_ERROR(p.get("limit_ticks", &c.limit_ticks));
  FXT_RETURN_IF_ERROR(p.get("lot", &c.lot));
  if (ac) {
    FXT_RETURN_IF_ERROR(p.get("urgency", &c.urgency));
    FXT_RETURN_IF_ERROR(p.get("sigma", &c.sigma));
    FXT_RETURN_IF_ERROR(p.get("eta", &c.eta));
    FXT_RETURN_IF_ERROR(p.get("risk_aversion", &c.risk_aversion));
  }
  FXT_RETURN_IF_ERROR(p.check_all_used(ac ? "ac" : "twap"));
  FXT_RETURN_IF_ERROR(c.validate(ac));
  return c;
}

}  // namespace

Result<StrategyFactory> make_strategy_factory(const std::string& name, StrategyParams params,
                                              const StrategyInputs& inputs) {
  StrategyFactory f;
  f.name = name;
  if (name == "signal") {
    FXT_ASSIGN_OR_RETURN(SignalConfig c, signal_config(params));
    if (!inputs.signal) {
      return UsageError("--strategy signal needs --predictions or --checkpoint");
    }
    f.config = c.to_json();
    f.config["horizon"] = inputs.signal->horizon;
    auto series = inputs.signal;
    f.make = [c, series] { return std::make_unique<SignalStrategy>(c, series); };
  } else if (name == "mm") {
    FXT_ASSIGN_OR_RETURN(MarketMakerConfig c, mm_config(params));
    f.config = c.to_json();
    if (inputs.signal) f.config["signal_horizon"] = inputs.signal->horizon;
    auto sessions = inputs.sessions;
    auto series = inputs.signal;
    f.make = [c, sessions, series] {
      return std::make_unique<MarketMakerStrategy>(c, sessions, series);
    };
  } else if (name == "twap" || name == "ac") {
    const bool ac = name == "ac";
    const bool lot_given = params.has("lot");
    FXT_ASSIGN_OR_RETURN(ExecutionConfig c, exec_config(params, ac, inputs.lot_size));
    if (inputs.sessions.empty()) return UsageError("--strategy {} needs at least one store", name);
    const int64_t start = inputs.sessions.front().start_ns + c.start_ns;
    const int64_t end = c.duration_ns > 0 ? start + c.duration_ns : inputs.sessions.back().end_ns;
    f.config = c.to_json(ac);
    f.config["lot_source"] = lot_given             ? "param"
                             : inputs.lot_size > 0 ? "store (whole sizes)"
                                                   : "store (fractional sizes)";
    f.config["window_start_ns"] = start;
    f.config["window_end_ns"] = std::max(start, end);
    f.config["holdings"] = execution_holdings(c, ac, std::max<int64_t>(0, end - start));
    f.make = [c, ac, start, end] { return std::make_unique<ExecutionStrategy>(c, ac, start, end); };
  } else {
    return UsageError("--strategy must be signal, mm, twap or ac (got '{}')", name);
  }
  return f;
}

// ---- the run -----------------------------------------------------------------------------------

namespace {

nlohmann::json spec_json(const BacktestSpec& s, const std::vector<QueueModel>& models) {
  std::vector<std::string> names;
  for (const auto& m : models) names.push_back(queue_model_name(m));
  const SimConfig& c = s.sim;
  return {
      {"stores", s.stores},
      {"strategy", s.strategy},
      {"params", s.params},
      {"checkpoint", s.checkpoint},
      {"predictions", s.predictions},
      {"horizon", s.horizon},
      {"queue_models", names},
      {"latency", latency_json(c.latency)},
      {"fees", fees_json(c.fees)},
      {"instrument", {{"tick_px", c.instrument.tick_px}, {"multiplier", c.instrument.multiplier}}},
      {"use_l3", c.use_l3},
      {"equity_interval_ns", c.equity_interval_ns},
      {"out", s.out_dir}};
}

}  // namespace

Result<BacktestOutcome> run_backtest_spec(const BacktestSpec& spec,
                                          const std::string& command_line) {
  const auto t0 = std::chrono::steady_clock::now();
  RunRecord record("backtest");  // start time, for RUN_DIR/run.json
  if (spec.stores.empty()) return UsageError("--store: give at least one store directory");
  if (spec.out_dir.empty()) return UsageError("--out: give the run directory");
  if (!spec.checkpoint.empty() && !spec.predictions.empty()) {
    return UsageError("give --checkpoint or --predictions, not both");
  }
  if (!spec.predictions.empty() && spec.predictions.size() != spec.stores.size()) {
    return UsageError("--predictions: {} files for {} stores (one per store, in order)",
                      spec.predictions.size(), spec.stores.size());
  }
  if (spec.horizon < 0) return UsageError("--horizon must be > 0");
  if (spec.threads < 1) return UsageError("--threads must be >= 1");
  if (std::find(strategy_names().begin(), strategy_names().end(), spec.strategy) ==
      strategy_names().end()) {
    return UsageError("--strategy must be signal, mm, twap or ac (got '{}')", spec.strategy);
  }
  FXT_ASSIGN_OR_RETURN(StrategyParams params, StrategyParams::parse(spec.params));

  SimConfig sim = spec.sim;
  StrategyInputs inputs;
  std::vector<StoreReader> stores;
  for (const std::string& dir : spec.stores) {
    FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(dir));
    const uint64_t n = r.size();
    inputs.sessions.push_back(n > 0 ? SessionSpan{r.ts_ns[0], r.ts_ns[n - 1]} : SessionSpan{});
    stores.push_back(std::move(r));
  }
  inputs.lot_size = stores_lot_size(stores);
  if (!spec.multiplier_given) {
    const auto& inst = stores.front().meta().value("instrument", nlohmann::json::object());
    const double m = inst.value("contract_multiplier", 1.0);
    sim.instrument.multiplier = m > 0 ? m : 1.0;
  }
  if (!(sim.instrument.multiplier > 0)) return UsageError("--multiplier must be > 0");
  if (sim.instrument.tick_px <= 1) sim.instrument.tick_px = stores.front().tick_px();

  // Never write into another run's directory (train/run_record.h): refuse before the work.
  FXT_RETURN_IF_ERROR(RunRecord("backtest").claim(spec.out_dir));
  std::error_code ec;
  const bool out_existed = std::filesystem::exists(spec.out_dir, ec);
  std::filesystem::create_directories(spec.out_dir, ec);
  if (ec) return IoError("{}: cannot create the run directory: {}", spec.out_dir, ec.message());
  // A run directory this run created is removed again when the run fails (an input error
  // below must not leave an empty or half-filled directory that looks like a result).
  struct RemoveUnlessKept {
    std::string dir;
    bool armed;
    ~RemoveUnlessKept() {
      std::error_code e;
      if (armed) std::filesystem::remove_all(dir, e);
    }
  } created{spec.out_dir, !out_existed};

  // Predictions: computed from a checkpoint into RUN_DIR, or given; then read back (one path).
  std::vector<std::string> prediction_files = spec.predictions;
  if (!spec.checkpoint.empty()) {
    for (size_t i = 0; i < spec.stores.size(); ++i) {
      const std::string path =
          spec.out_dir +
          (spec.stores.size() == 1 ? "/predictions.csv" : fmt::format("/predictions_{}.csv", i));
      FXT_RETURN_IF_ERROR(predict(spec.checkpoint, spec.stores[i], path, spec.threads));
      prediction_files.push_back(path);
    }
  }
  if (!prediction_files.empty()) {
    FXT_ASSIGN_OR_RETURN(inputs.signal, load_signal_series(prediction_files, spec.horizon, stores));
  }
  // Stores built from MBO replay exact FIFO queues (unless --l2): the L2 queue models then
  // play no part, so comparing them would report a band of zero that means nothing.
  const bool exact_queues =
      sim.use_l3 && std::all_of(stores.begin(), stores.end(),
                                [](const StoreReader& r) { return r.event_count() > 0; });
  if (exact_queues && spec.queue_models.size() > 1) {
    return UsageError(
        "--queue-models compares L2 queue estimates, but every store is L3 (built from MBO) "
        "and replays exact FIFO queues; add --l2 to estimate the queues from the depth instead");
  }
  stores.clear();  // the engine opens them itself

  FXT_ASSIGN_OR_RETURN(StrategyFactory factory,
                       make_strategy_factory(spec.strategy, std::move(params), inputs));
  std::vector<QueueModel> models = spec.queue_models;
  if (models.empty()) models.push_back(sim.queue);

  // One run per queue model, up to spec.threads at once; each run owns its strategy, engine and
  // result, so the files do not depend on the thread count.
  BacktestOutcome out;
  out.runs.resize(models.size());
  std::vector<Status> statuses(models.size());
  std::vector<uint64_t> events(models.size(), 0);
  auto run_one = [&](size_t i) {
    QueueModelRun& run = out.runs[i];
    run.model = models[i];
    run.name = exact_queues ? "l3-fifo" : queue_model_name(models[i]);
    run.dir =
        models.size() == 1 ? spec.out_dir : spec.out_dir + "/" + queue_model_dir_name(models[i]);
    SimConfig c = sim;
    c.queue = models[i];
    try {
      std::unique_ptr<Strategy> strategy = factory.make();
      Result<BacktestResult> result = run_backtest(spec.stores, c, strategy.get());
      if (!result.ok()) {
        statuses[i] = result.status();
        return;
      }
      run.stats = run_stats(*result, c, *strategy);
      events[i] = result->events;
      statuses[i] = write_backtest_results(run.dir, *result, run.stats);
    } catch (const std::exception& e) {
      statuses[i] = InternalError("queue model {}: {}", run.name, e.what());
    }
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < models.size(); i = next++) run_one(i);
  };
  const size_t n_threads = std::min(models.size(), static_cast<size_t>(spec.threads));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const Status& st : statuses) FXT_RETURN_IF_ERROR(st);
  out.events = events.back();
  std::vector<std::string> names;
  std::vector<nlohmann::json> all_stats;
  for (const QueueModelRun& run : out.runs) {
    names.push_back(run.name);
    all_stats.push_back(run.stats);
  }
  if (models.size() > 1) {
    out.band = model_risk_band(names, all_stats);
    nlohmann::json top = {{"queue_models", names}, {"model_risk_band", out.band}};
    for (size_t i = 0; i < names.size(); ++i) top["models"][names[i]] = all_stats[i];
    FXT_RETURN_IF_ERROR(write_file_atomic(spec.out_dir + "/stats.json", top.dump(2) + "\n"));
  }

  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // RUN_DIR/run.json through the run registry (train/run_record.h, docs/RUNS.md). The config
  // holds everything that defines the run (the strategy too, so its hash covers the params);
  // the output directory is not part of it.
  if (fxt::command_line().empty() && !command_line.empty()) {
    record.set_argv(split_fields(command_line, ' '));  // started in-process, not from main()
  }
  nlohmann::json config = spec_json(spec, models);
  config.erase("out");
  config["instrument"] = {{"tick_px", sim.instrument.tick_px},
                          {"multiplier", sim.instrument.multiplier}};
  config["prediction_files"] = prediction_files;
  config["strategy"] = {{"name", factory.name}, {"params", factory.config}};
  record.set_config(config);
  for (const std::string& d : spec.stores) FXT_RETURN_IF_ERROR(record.add_input_store(d));
  record.set("strategy", config["strategy"]);
  record.set("store_dirs", spec.stores);
  record.set("out_dir", spec.out_dir);
  record.set("events_per_run", out.events);
  // Headline metrics: the main statistics of each queue model's run (one run: flat).
  auto headline = [](const nlohmann::json& stats) {
    nlohmann::json m = nlohmann::json::object();
    for (const char* k : {"total_pnl", "sharpe_annualised", "sharpe_basis", "max_drawdown",
                          "trades", "fill_ratio", "fees", "final_position"}) {
      if (stats.contains(k)) m[k] = stats[k];
    }
    return m;
  };
  nlohmann::json metrics = nlohmann::json::object();
  if (out.runs.size() == 1) {
    metrics = headline(out.runs.front().stats);
  } else {
    for (const QueueModelRun& run : out.runs) metrics[run.name] = headline(run.stats);
  }
  record.set_metrics(std::move(metrics));
  FXT_RETURN_IF_ERROR(record.write(spec.out_dir));
  out.run_info = record.to_json();
  created.armed = false;
  return out;
}

}  // namespace fxt::sim
