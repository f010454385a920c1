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

Exposure classify_probability(const SignalConfig& c, double p) {
  p = std::clamp(p, 0.0, 1.0);
  if (p >= c.long_full) return Exposure::kLongFull;
  if (p >= c.long_half) return Exposure::kLongHalf;
  if (p >= c.long_small) return Exposure::kLongSmall;
  if (p <= c.short_full) return Exposure::kShortFull;
  if (p <= c.short_half) return Exposure::kShortHalf;
  if (p <= c.short_small) return Exposure::kShortSmall;
  if (std::fabs(p - 0.5) <= c.flat_band) return Exposure::kFlat;
  return Exposure::kHold;
}

double level_exposure(const SignalConfig& c, Exposure level, double p, double current) {
  double size = 0;
  switch (level) {
    case Exposure::kHold:
      return current;
    case Exposure::kFlat:
      return 0;
    case Exposure::kShortFull:
    case Exposure::kLongFull:
      size = c.size_full;
      break;
    case Exposure::kShortHalf:
    case Exposure::kLongHalf:
      size = c.size_half;
      break;
    case Exposure::kShortSmall:
    case Exposure::kLongSmall:
      size = c.size_small;
      break;
  }
  const bool is_long =
      level == Exposure::kLongSmall || level == Exposure::kLongHalf || level == Exposure::kLongFull;
  if (c.kelly > 0)
    return std::clamp(c.kelly * (2 * std::clamp(p, 0.0, 1.0) - 1), -c.kelly_cap, c.kelly_cap);
  return is_long ? size : -size;
}

SignalStrategy::SignalStrategy(const SignalConfig& config,
                               std::shared_ptr<const SignalSeries> series)
    : config_(config), series_(std::move(series)) {
  eps_ = 1e-9 * std::max(1.0, config_.max_position);
}

double SignalStrategy::round_to_lot(double qty) const {
  if (config_.lot <= 0) return qty;
  return std::trunc(qty / config_.lot + (qty >= 0 ? 1e-9 : -1e-9)) * config_.lot;
}

void SignalStrategy::on_event(const MarketEvent& event, StrategyContext& ctx) {
  if (event.kind != EventKind::kSnapshot) return;  // decisions on book updates only
  const double p = series_ ? series_->at(event.store, event.snapshot) : 0.5;
  const Exposure level = classify_probability(config_, p);
  const double position = ctx.position();
  const int sign = position > eps_ ? 1 : (position < -eps_ ? -1 : 0);
  if (sign != 0 && sign != held_sign_) held_since_ns_ = event.seen_ns;  // opened or flipped
  held_sign_ = sign;

  if (timer_block_ && level != blocked_level_) timer_block_ = false;
  if (config_.max_hold_ns > 0 && sign != 0 && !timer_block_ &&
      event.seen_ns - held_since_ns_ >= config_.max_hold_ns) {
    timer_block_ = true;
    blocked_level_ = level;
  }
  level_ = level;
  if (timer_block_) {
    exposure_ = 0;
  } else {
    exposure_ = level_exposure(config_, level, p, exposure_);
  }
  target_ = round_to_lot(exposure_ * config_.max_position);
  trade_toward(ctx);
}

void SignalStrategy::on_ack(const Ack& ack, StrategyContext& ctx) {
  (void)ctx;
  if (ack.kind == AckKind::kRejected || ack.kind == AckKind::kCanceled ||
      ack.kind == AckKind::kDone) {
    std::erase(cancel_sent_, ack.order_id);
    std::erase_if(requested_, [&](const Requested& r) { return r.order_id == ack.order_id; });
  }
}

void SignalStrategy::forget_finished(const std::vector<OpenOrder>& open) {
  auto is_open = [&](uint64_t id) {
    return std::any_of(open.begin(), open.end(),
                       [&](const OpenOrder& o) { return o.order_id == id; });
  };
  std::erase_if(cancel_sent_, [&](uint64_t id) { return !is_open(id); });
  std::erase_if(requested_, [&](const Requested& r) { return !is_open(r.order_id); });
}

void SignalStrategy::trade_toward(StrategyContext& ctx) {
  const double position = ctx.position();
  forget_finished(ctx.open_orders());
  if (config_.passive) {
    trade_passive(ctx, position);
  } else {
    trade_market(ctx, position);
  }
}

void SignalStrategy::trade_market(StrategyContext& ctx, double position) {
  double working = 0;  // signed quantity of our orders still to fill
  for (const OpenOrder& o : ctx.open_orders()) {
    working += sign(o.side) * (o.qty - o.filled_qty);
  }
  const double need = target_ - position - working;
  if (std::fabs(need) <= eps_) return;
  OrderRequest r;
  r.side = need > 0 ? Side::kBuy : Side::kSell;
  r.type = OrderType::kMarket;
  r.qty = std::fabs(need);
  ctx.submit(r);
}

void SignalStrategy::trade_passive(StrategyContext& ctx, double position) {
  const double need = target_ - position;
  const Side want = need > 0 ? Side::kBuy : Side::kSell;
  const Snapshot& book = ctx.book();
  const bool has_touch = want == Side::kBuy ? book.has_bid() : book.has_ask();
  const int64_t touch = want == Side::kBuy ? book.bid_px[0] : book.ask_px[0];
  const std::vector<OpenOrder> open = ctx.open_orders();  // copy: we act while iterating
  const OpenOrder* keep = nullptr;
  for (const OpenOrder& o : open) {
    if (std::find(cancel_sent_.begin(), cancel_sent_.end(), o.order_id) != cancel_sent_.end()) {
      continue;
    }
    if (std::fabs(need) <= eps_ || o.side != want || keep != nullptr ||
        o.type == OrderType::kMarket) {
      ctx.cancel(o.order_id);
      cancel_sent_.push_back(o.order_id);
      continue;
    }
    keep = &o;
  }
  if (std::fabs(need) <= eps_ || !has_touch) return;
  if (keep == nullptr) {
    OrderRequest r;
    r.side = want;
    r.type = OrderType::kPostOnly;
    r.px = touch;
    r.qty = std::fabs(need);
    const uint64_t id = ctx.submit(r);
    requested_.push_back({id, touch, r.qty});
    return;
  }
  // Join the touch with the size still needed (total size = filled so far + needed).
  const double total = keep->filled_qty + std::fabs(need);
  auto it = std::find_if(requested_.begin(), requested_.end(),
                         [&](const Requested& r) { return r.order_id == keep->order_id; });
  const int64_t cur_px = it != requested_.end() ? it->px : keep->px;
  const double cur_qty = it != requested_.end() ? it->qty : keep->qty;
  if (cur_px == touch && std::fabs(cur_qty - total) <= eps_) return;
  ctx.modify(keep->order_id, touch, total);
  if (it != requested_.end()) {
    it->px = touch;
    it->qty = total;
  } else {
    requested_.push_back({keep->order_id, touch, total});
  }
}

}  // namespace fxt::sim
