#include "sim/strategy_signal.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "core/file_util.h"
#include "data/store.h"

namespace fxt::sim {

namespace {

// The next comma-separated field of `line` starting at *pos (advances past the comma).
std::string_view next_field(std::string_view line, size_t* pos) {
  const size_t start = *pos;
  size_t end = line.find(',', start);
  if (end == std::string_view::npos) end = line.size();
  *pos = end + 1;
  return line.substr(start, end - start);
}

}  // namespace

Result<std::vector<float>> load_predictions(const std::string& csv_path, int horizon,
                                            const StoreReader& store, int* chosen) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(csv_path));
  std::string_view rest(text);
  uint64_t line_no = 0;
  // One line without its "\n" / "\r\n"; false at the end of the file.
  auto next_line = [&](std::string_view* line) {
    if (rest.empty()) return false;
    size_t nl = rest.find('\n');
    *line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    ++line_no;
    return true;
  };

  std::string_view header;
  if (!next_line(&header))
    return InvalidInput("{}:1: empty file (expected a fxt predict CSV)", csv_path);
  size_t pos = 0;
  if (next_field(header, &pos) != "ts_ns") {
    return InvalidInput("{}:1: header must start with ts_ns (a fxt predict CSV)", csv_path);
  }
  int column = -1, n_columns = 0;
  std::string names;
  while (pos <= header.size()) {
    std::string_view name = next_field(header, &pos);
    int h = 0;
    const bool is_prob =
        name.size() > 3 && name.substr(0, 3) == "p_h" &&
        std::from_chars(name.data() + 3, name.data() + name.size(), h).ec == std::errc() && h > 0;
    if (!is_prob) {
      return InvalidInput("{}:1: column '{}' is not p_h<horizon>", csv_path, std::string(name));
    }
    if (!names.empty()) names += ',';
    names += std::string(name);
    if (column < 0 && (horizon == 0 || h == horizon)) {
      column = n_columns;
      if (chosen != nullptr) *chosen = h;
    }
    ++n_columns;
  }
  if (column < 0) {
    return InvalidInput("{}:1: no column p_h{} (columns: {})", csv_path, horizon,
                        names.empty() ? "none" : names);
  }

  const uint64_t n = store.size();
  std::vector<float> probs;
  probs.reserve(n);
  std::string_view line;
  while (next_line(&line)) {
    if (line.empty() && rest.empty()) break;  // a final blank line
    const uint64_t row = probs.size();
    if (row >= n) {
      return InvalidInput("{}:{}: more rows than the {} snapshots of store {}", csv_path, line_no,
                          n, store.dir());
    }
    pos = 0;
    std::string_view ts_field = next_field(line, &pos);
    int64_t ts = 0;
    auto [tp, tec] = std::from_chars(ts_field.data(), ts_field.data() + ts_field.size(), ts);
    if (tec != std::errc() || tp != ts_field.data() + ts_field.size()) {
      return InvalidInput("{}:{}: bad ts_ns '{}'", csv_path, line_no, std::string(ts_field));
    }
    if (ts != store.ts_ns[row]) {
      return InvalidInput("{}:{}: ts_ns {} but snapshot {} of store {} is at {}", csv_path, line_no,
                          ts, row, store.dir(), store.ts_ns[row]);
    }
    std::string_view field;
    for (int c = 0; c <= column; ++c) {
      if (pos > line.size()) {
        return InvalidInput("{}:{}: {} fields, expected {}", csv_path, line_no, c + 1,
                            n_columns + 1);
      }
      field = next_field(line, &pos);
    }
    double p = 0;
    auto [pp, pec] = std::from_chars(field.data(), field.data() + field.size(), p);
    if (pec != std::errc() || pp != field.data() + field.size() || !(p >= 0.0 && p <= 1.0)) {
      return InvalidInput("{}:{}: bad probability '{}' (expected a number in [0, 1])", csv_path,
                          line_no, std::string(field));
    }
    probs.push_back(static_cast<float>(p));
  }
  if (probs.size() != n) {
    return InvalidInput("{}:{}: {} rows but store {} has {} snapshots", csv_path, line_no + 1,
                        probs.size(), store.dir(), n);
  }
  return probs;
}

const char* exposure_name(Exposure e) {
  switch (e) {
    case Exposure::kShortFull:
      return "short_full";
    case Exposure::kShortHalf:
      return "short_half";
    case Exposure::kShortSmall:
      return "short_small";
    case Exposure::kHold:
      return "hold";
    case Exposure::kLongSmall:
      return "long_small";
    case Exposure::kLongHalf:
      return "long_half";
    case Exposure::kLongFull:
      return "long_full";
    case Exposure::kFlat:
      return "flat";
  }
  return "?";
}

Status SignalConfig::validate() const {
  if (!(0 < short_full && short_full < short_half && short_half < short_small &&
        short_small < 0.5 && 0.5 < long_small && long_small < long_half && long_half < long_full &&
        long_full < 1)) {
    return UsageError(
        "signal thresholds must satisfy 0 < short_full < short_half < short_small < 0.5 < "
        "long_small < long_half < long_full < 1");
  }
  if (!(flat_band >= 0 && 0.5 - flat_band > short_small && 0.5 + flat_band < long_small)) {
    return UsageError("signal flat_band must be >= 0 and inside (short_small, long_small)");
  }
  if (!(size_small > 0 && size_half > 0 && size_full > 0 && size_small <= 1 && size_half <= 1 &&
        size_full <= 1)) {
    return UsageError("signal size_small/size_half/size_full must be in (0, 1]");
  }
  if (!(kelly >= 0) || !(kelly_cap > 0 && kelly_cap <= 1)) {
    return UsageError("signal kelly must be >= 0 and kelly_cap in (0, 1]");
  }
  if (!(max_position > 0)) return UsageError("signal max_position must be > 0");
  if (!(lot >= 0)) return UsageError("signal lot must be >= 0");
  if (max_hold_ns < 0) return UsageError("signal max_hold must be >= 0");
  return Status::Ok();
}

nlohmann::json SignalConfig::to_json() const {
  return {{"long_small", long_small},
          {"long_half", long_half},
          {"long_full", long_full},
          {"short_small", short_small},
          {"short_half", short_half},
          {"short_full", short_full},
          {"flat_band", flat_band},
          {"size_small", size_small},
          {"size_half", size_half},
          {"size_full", size_full},
          {"kelly", kelly},
          {"kelly_cap", kelly_cap},
          {"max_position", max_position},
          {"lot", lot},
          {"entry", passive ? "passive" : "market"},
          {"max_hold_ns", max_hold_ns}};
}

SignalParams signal_params(const SignalConfig& c) {
  SignalParams p;
  p.long_small = c.long_small;
  p.long_half = c.long_half;
  p.long_full = c.long_full;
  p.short_small = c.short_small;
  p.short_half = c.short_half;
  p.short_full = c.short_full;
  p.flat_band = c.flat_band;
  p.size_small = c.size_small;
  p.size_half = c.size_half;
  p.size_full = c.size_full;
  p.kelly = c.kelly;
  p.kelly_cap = c.kelly_cap;
  p.max_position = c.max_position;
  p.lot = c.lot;
  p.passive = c.passive;
  p.max_hold_ns = c.max_hold_ns;
  p.eps = 1e-9 * std::max(1.0, c.max_position);
  return p;
}

Exposure classify_probability(const SignalConfig& c, double p) {
  return static_cast<Exposure>(signal_level(signal_params(c), p));
}

double level_exposure(const SignalConfig& c, Exposure level, double p, double current) {
  return signal_level_exposure(signal_params(c), static_cast<int8_t>(level), p, current);
}

SignalStrategy::SignalStrategy(const SignalConfig& config,
                               std::shared_ptr<const SignalSeries> series)
    : params_(signal_params(config)), series_(std::move(series)) {}

namespace {

// signal_rules.h's context over the engine's StrategyContext and the strategy's order lists.
class SignalContext {
 public:
  SignalContext(StrategyContext& ctx, std::vector<uint64_t>* cancel_sent,
                std::vector<SignalRequested>* requested)
      : ctx_(ctx), cancel_sent_(*cancel_sent), requested_(*requested) {}
  double position() const { return ctx_.position(); }
  int open_count() const { return static_cast<int>(ctx_.open_orders().size()); }
  SignalOrder open_at(int k) const {
    const OpenOrder& o = ctx_.open_orders()[static_cast<size_t>(k)];
    SignalOrder s;
    s.id = o.order_id;
    s.side = sign(o.side);
    s.type = static_cast<uint8_t>(o.type);
    s.px = o.px;
    s.qty = o.qty;
    s.filled = o.filled_qty;
    return s;
  }
  uint64_t submit(int side, uint8_t type, int64_t px, double qty) {
    return submit_order(ctx_, side, type, px, qty);
  }
  void cancel(uint64_t id) { ctx_.cancel(id); }
  void modify(uint64_t id, int64_t px, double qty) { ctx_.modify(id, px, qty); }
  bool cancel_sent(uint64_t id) const {
    return std::find(cancel_sent_.begin(), cancel_sent_.end(), id) != cancel_sent_.end();
  }
  void mark_cancel_sent(uint64_t id) { cancel_sent_.push_back(id); }
  void requested(uint64_t id, int64_t* px, double* qty) const {
    for (const SignalRequested& r : requested_) {
      if (r.order_id == id) {
        *px = r.px;
        *qty = r.qty;
      }
    }
  }
  void set_requested(uint64_t id, int64_t px, double qty) {
    for (SignalRequested& r : requested_) {
      if (r.order_id == id) {
        r.px = px;
        r.qty = qty;
        return;
      }
    }
    requested_.push_back({id, px, qty});
  }
  void forget_finished() {
    const std::vector<OpenOrder>& open = ctx_.open_orders();
    auto is_open = [&](uint64_t id) {
      return std::any_of(open.begin(), open.end(),
                         [&](const OpenOrder& o) { return o.order_id == id; });
    };
    std::erase_if(cancel_sent_, [&](uint64_t id) { return !is_open(id); });
    std::erase_if(requested_, [&](const SignalRequested& r) { return !is_open(r.order_id); });
  }
  void forget(uint64_t id) {
    std::erase(cancel_sent_, id);
    std::erase_if(requested_, [&](const SignalRequested& r) { return r.order_id == id; });
  }

 private:
  StrategyContext& ctx_;
  std::vector<uint64_t>& cancel_sent_;
  std::vector<SignalRequested>& requested_;
};

}  // namespace

void SignalStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  if (event.kind != EventKind::kSnapshot) return;  // decisions on book updates only
  const double p = series_ ? series_->at(event.store, event.snapshot) : 0.5;
  const Snapshot& book = ctx.book();
  SignalTouch touch;
  touch.has_bid = book.has_bid();
  touch.has_ask = book.has_ask();
  touch.bid_px = book.bid_px[0];
  touch.ask_px = book.ask_px[0];
  SignalContext c(ctx, &cancel_sent_, &requested_);
  signal_on_snapshot(params_, &state_, p, event.seen_ns, touch, c);
}

void SignalStrategy::on_ack(const Ack& ack, StrategyContext& ctx) {
  SignalContext c(ctx, &cancel_sent_, &requested_);
  signal_on_ack(static_cast<uint8_t>(ack.kind), ack.order_id, c);
}

}  // namespace fxt::sim
