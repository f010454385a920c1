#include "data/binance.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <deque>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "data/decimal.h"
#include "data/line_reader.h"

namespace fxt {
namespace {

// ---- a small validating JSON scanner -------------------------------------------
// Capture lines are flat objects whose only nesting is "data" and the [[px, qty]]
// level arrays, so the scanner records each member's raw span without building a
// tree (nlohmann::json::parse alone took 3x the whole replay; docs/BINANCE_LOBSTER.md).
// Strings are returned raw (escapes are validated, not decoded): no field we read
// can legitimately contain one.

constexpr int kMaxJsonDepth = 32;
constexpr int kMaxFields = 32;  // members kept per object; extra ones are validated and ignored

struct JsonValue {
  std::string_view raw;  // strings: the content between the quotes; others: the whole text
  char kind = 0;         // '"' string, '{' object, '[' array, 'n' number, 't'/'f' bool, 'z' null
};

struct JsonField {
  std::string_view key;
  JsonValue value;
};

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view s) : s_(s) {}

  size_t pos() const { return i_; }
  const char* expected() const { return expected_; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n'))
      ++i_;
  }
  bool at_end() {
    skip_ws();
    return i_ == s_.size();
  }
  bool consume(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool expect(char c, const char* what) {
    if (consume(c)) return true;
    return fail(what);
  }
  bool fail(const char* what) {
    if (expected_ == nullptr) expected_ = what;
    return false;
  }

  bool string(std::string_view* out) {
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != '"') return fail("a string");
    const size_t start = ++i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        *out = s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return fail("no control characters in a string");
      if (c == '\\') {
        if (++i_ >= s_.size()) break;
        if (std::strchr("\"\\/bfnrtu", s_[i_]) == nullptr || s_[i_] == '\0')
          return fail("a valid escape in a string");
      }
      ++i_;
    }
    return fail("a closing '\"'");
  }

  bool value(JsonValue* out, int depth) {
    skip_ws();
    if (i_ >= s_.size()) return fail("a value");
    if (depth > kMaxJsonDepth) return fail("nesting at most 32 deep");
    const size_t start = i_;
    const char c = s_[i_];
    if (c == '"') {
      out->kind = '"';
      return string(&out->raw);
    }
    if (c == '{') {
      out->kind = '{';
      if (!object(nullptr, nullptr, depth + 1)) return false;
    } else if (c == '[') {
      out->kind = '[';
      ++i_;
      if (!consume(']')) {
        JsonValue v;
        do {
          if (!value(&v, depth + 1)) return false;
        } while (consume(','));
        if (!expect(']', "',' or ']'")) return false;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      out->kind = 'n';
      ++i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                                s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
        ++i_;
    } else if (literal("true")) {
      out->kind = 't';
    } else if (literal("false")) {
      out->kind = 'f';
    } else if (literal("null")) {
      out->kind = 'z';
    } else {
      return fail("a JSON value");
    }
    out->raw = s_.substr(start, i_ - start);
    return true;
  }

  // Parses an object at the cursor; records up to kMaxFields members when fields != null.
  bool object(JsonField* fields, int* n_fields, int depth) {
    if (!expect('{', "'{'")) return false;
    if (n_fields != nullptr) *n_fields = 0;
    if (consume('}')) return true;
    do {
      JsonField f;
      if (!string(&f.key)) return false;
      if (!expect(':', "':'")) return false;
      if (!value(&f.value, depth)) return false;
      if (fields != nullptr && *n_fields < kMaxFields) fields[(*n_fields)++] = f;
    } while (consume(','));
    return expect('}', "',' or '}'");
  }

 private:
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  const char* expected_ = nullptr;
};

struct JsonObject {
  JsonField fields[kMaxFields];
  int n = 0;

  const JsonValue* find(std::string_view key) const {
    for (int i = 0; i < n; ++i) {
      if (fields[i].key == key) return &fields[i].value;
    }
    return nullptr;
  }
};

// ---- parsed messages -------------------------------------------------------------

struct Level {
  int64_t px;   // 1e-9
  int64_t qty;  // 1e-9
};

struct DiffMsg {
  int64_t event_ms = 0;        // E
  int64_t first_id = 0;        // U
  int64_t final_id = 0;        // u
  int64_t prev_final_id = -1;  // pu (USD-M); -1 when absent
  std::vector<Level> bids, asks;
  int64_t local_ns = 0;
  uint64_t line_no = 0;
};

struct TradeMsg {
  Trade trade;
};

using PendingItem = std::variant<DiffMsg, TradeMsg>;

struct PendingTicker {
  int64_t update_id;
  BinanceTop top;
  uint64_t line_no;
};

// The book's best bid/ask after the REST snapshot (from_diff false: first_id =
// final_id = lastUpdateId) or after an applied diff (its U and u).
struct AppliedTop {
  int64_t first_id;
  int64_t final_id;
  BinanceTop top;
  bool from_diff;
};

constexpr size_t kMaxPendingDiffs = size_t{1} << 20;   // before the first snapshot
constexpr size_t kMaxRetainedDiffs = size_t{1} << 16;  // since a gap, for a resync
constexpr size_t kMaxPendingTickers = size_t{1} << 16;
constexpr size_t kMaxRecentTops = size_t{1} << 14;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string top_text(const BinanceTop& t) {
  auto px = [](int64_t v) { return v == kEmptyPx ? std::string("none") : format_decimal(v, 9); };
  return fmt::format("bid {} x {}, ask {} x {}", px(t.bid_px), format_decimal(t.bid_qty, 9),
                     px(t.ask_px), format_decimal(t.ask_qty, 9));
}

}  // namespace

// ---- names -------------------------------------------------------------------------

const char* binance_market_name(BinanceMarket m) {
  switch (m) {
    case BinanceMarket::kAuto:
      return "auto";
    case BinanceMarket::kSpot:
      return "spot";
    case BinanceMarket::kUsdm:
      return "usdm";
  }
  return "?";
}

Result<BinanceMarket> parse_binance_market(std::string_view name) {
  if (name == "auto") return BinanceMarket::kAuto;
  if (name == "spot") return BinanceMarket::kSpot;
  if (name == "usdm" || name == "futures" || name == "um") return BinanceMarket::kUsdm;
  return UsageError("unknown Binance market \"{}\": expected auto, spot or usdm", name);
}

nlohmann::json BinanceStats::to_json() const {
  return nlohmann::json{
      {"market", binance_market_name(market)},
      {"symbol", symbol},
      {"lines", lines},
      {"rest_snapshots", rest_snapshots},
      {"resyncs", resyncs},
      {"snapshots_ignored", snapshots_ignored},
      {"diffs", diffs},
      {"diffs_applied", diffs_applied},
      {"diffs_dropped", diffs_dropped},
      {"diffs_buffered", diffs_buffered},
      {"diffs_lost", diffs_lost},
      {"price_levels_updated", price_levels_updated},
      {"gaps", gaps},
      {"first_gap", first_gap},
      {"trades", trades},
      {"snapshots_emitted", snapshots_emitted},
      {"snapshots_crossed", snapshots_crossed},
      {"snapshots_maybe_bad", snapshots_maybe_bad},
      {"other_messages", other_messages},
      {"tickers", tickers},
      {"tickers_before_book", tickers_before_book},
      {"tickers_compared", tickers_compared},
      {"tickers_agree", tickers_agree},
      {"tickers_agree_px", tickers_agree_px},
      {"ticker_agreement_rate", agreement_rate()},
      {"tickers_exact_u", tickers_exact_u},
      {"tickers_exact_u_matched", tickers_exact_u_matched},
      {"tickers_exact_u_early", tickers_exact_u_early},
      {"ticker_exact_u_match_rate", exact_u_match_rate()},
      {"first_exact_u_mismatch", first_exact_u_mismatch},
      {"aligned_boundary", aligned_boundary},
      {"aligned_boundary_matched", aligned_boundary_matched},
      {"aligned_boundary_rate", aligned_boundary_rate()},
      {"aligned_at_final", aligned_at_final},
      {"aligned_at_final_matched", aligned_at_final_matched},
      {"aligned_between", aligned_between},
      {"aligned_between_matched", aligned_between_matched},
      {"aligned_inside", aligned_inside},
      {"aligned_inside_agree", aligned_inside_agree},
      {"aligned_inside_agree_px", aligned_inside_agree_px},
      {"aligned_inside_rate", aligned_inside_rate()},
      {"aligned_late", aligned_late},
      {"aligned_before_book", aligned_before_book},
      {"aligned_too_old", aligned_too_old},
      {"aligned_unresolved", aligned_unresolved},
      {"first_aligned_mismatch", first_aligned_mismatch},
      {"first_ts_ns", first_ts_ns},
      {"last_ts_ns", last_ts_ns},
  };
}

// ---- BinanceBook -----------------------------------------------------------------

void BinanceBook::clear() {
  bids_.clear();
  asks_.clear();
}

void BinanceBook::set_bid(int64_t px, int64_t qty) {
  if (qty == 0) {
    bids_.erase(px);
  } else {
    bids_[px] = qty;
  }
}

void BinanceBook::set_ask(int64_t px, int64_t qty) {
  if (qty == 0) {
    asks_.erase(px);
  } else {
    asks_[px] = qty;
  }
}

BinanceTop BinanceBook::top() const {
  BinanceTop t;
  if (!bids_.empty()) {
    t.bid_px = bids_.begin()->first;
    t.bid_qty = bids_.begin()->second;
  }
  if (!asks_.empty()) {
    t.ask_px = asks_.begin()->first;
    t.ask_qty = asks_.begin()->second;
  }
  return t;
}

void BinanceBook::fill(Snapshot* s) const {
  s->clear_levels();
  int i = 0;
  for (auto it = bids_.begin(); it != bids_.end() && i < kBookLevels; ++it, ++i) {
    s->bid_px[i] = it->first;
    s->bid_sz[i] = e9_to_double(it->second);
  }
  i = 0;
  for (auto it = asks_.begin(); it != asks_.end() && i < kBookLevels; ++it, ++i) {
    s->ask_px[i] = it->first;
    s->ask_sz[i] = e9_to_double(it->second);
  }
}

// ---- BinanceReplayer -------------------------------------------------------------

struct BinanceReplayer::Impl {
  enum class State { kNoBook, kAwaitFirst, kLive };

  std::string source;
  BinanceOptions options;
  BookSink* sink;
  BinanceStats st;
  BinanceBook book;
  State state = State::kNoBook;
  bool in_gap = false;            // a continuity rule broke since the last (re)sync
  bool market_tentative = false;  // auto market guessed from a REST snapshot, no diff yet
  int64_t last_update_id = 0;     // lastUpdateId of the snapshot the book was built from
  int64_t prev_final_id = 0;      // u of the last applied diff
  int gaps_logged = 0;
  std::deque<PendingItem> pending;    // kNoBook: diffs and trades in source order
  std::deque<DiffMsg> retained;       // diffs applied since the gap, replayed on a resync
  std::deque<AppliedTop> recent;      // best bid/ask after the snapshot and recent diffs
  bool recent_has_base = false;       // recent.front() is still the snapshot's state
  std::deque<PendingTicker> waiting;  // tickers whose state is not built yet

  // Scratch reused across lines (no allocation per message in steady state).
  JsonObject outer, data, *msg = nullptr;
  DiffMsg diff;
  std::vector<Level> snap_bids, snap_asks;

  Impl(std::string src, const BinanceOptions& opt, BookSink* s)
      : source(std::move(src)), options(opt), sink(s) {
    st.market = opt.market;
  }

  bool spot() const { return st.market == BinanceMarket::kSpot; }

  template <typename... Args>
  Status error(uint64_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    return InvalidInput("{}: line {}: {}", source, line_no,
                        fmt::format(f, std::forward<Args>(args)...));
  }

  // ---- field access (all return an error naming the field) ----
  Status get_int(const JsonObject& o, std::string_view key, uint64_t line_no, int64_t* out,
                 bool* present = nullptr) {
    const JsonValue* v = o.find(key);
    if (v == nullptr) {
      if (present != nullptr) {
        *present = false;
        return Status::Ok();
      }
      return error(line_no, "expected field \"{}\"", key);
    }
    if (present != nullptr) *present = true;
    if (v->kind != 'n' || !parse_int64_fast(v->raw, out) || *out < 0)
      return error(line_no, "field \"{}\": expected a non-negative integer, got {}", key,
                   v->raw.substr(0, 40));
    return Status::Ok();
  }

  Status get_decimal(const JsonObject& o, std::string_view key, uint64_t line_no, int64_t* out) {
    const JsonValue* v = o.find(key);
    if (v == nullptr) return error(line_no, "expected field \"{}\"", key);
    if (v->kind != '"') return error(line_no, "field \"{}\": expected a decimal string", key);
    return decimal(v->raw, key, line_no, out);
  }

  Status decimal(std::string_view text, std::string_view key, uint64_t line_no, int64_t* out) {
    if (parse_decimal_fast(text, 9, out) && *out >= 0) return Status::Ok();
    Result<int64_t> r = parse_decimal_e9(text);
    if (!r.ok()) return error(line_no, "field \"{}\": {}", key, r.status().message());
    return error(line_no, "field \"{}\": expected a non-negative number, got {}", key, text);
  }

  Status get_levels(const JsonObject& o, std::string_view key, uint64_t line_no,
                    std::vector<Level>* out) {
    out->clear();
    const JsonValue* v = o.find(key);
    if (v == nullptr) return error(line_no, "expected field \"{}\"", key);
    if (v->kind != '[') return error(line_no, "field \"{}\": expected an array", key);
    // The span was validated as JSON already; here only the [[str, str], ...] shape.
    JsonScanner sc(v->raw);
    sc.expect('[', "'['");
    if (sc.consume(']')) return Status::Ok();
    do {
      std::string_view px, qty;
      if (!sc.expect('[', "") || !sc.string(&px) || !sc.expect(',', "") || !sc.string(&qty) ||
          !sc.expect(']', ""))
        return error(line_no, "field \"{}\": entry {}: expected [\"price\", \"quantity\"]", key,
                     out->size());
      Level l{};
      FXT_RETURN_IF_ERROR(decimal(px, key, line_no, &l.px));
      FXT_RETURN_IF_ERROR(decimal(qty, key, line_no, &l.qty));
      out->push_back(l);
    } while (sc.consume(','));
    if (!sc.expect(']', "") || !sc.at_end())
      return error(line_no, "field \"{}\": expected ',' or ']' after entry {}", key, out->size());
    return Status::Ok();
  }

  Status check_symbol(std::string_view symbol, uint64_t line_no) {
    if (symbol.empty()) return Status::Ok();
    std::string s = upper(symbol);
    if (st.symbol.empty()) {
      st.symbol = std::move(s);
    } else if (s != st.symbol) {
      return error(line_no, "expected one instrument ({}), got {}", st.symbol, s);
    }
    return Status::Ok();
  }

  // ---- dispatch ----
  Status feed(std::string_view line, uint64_t line_no) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) return Status::Ok();
    const size_t sp = line.find(' ');
    int64_t local_ns = 0;
    if (sp == std::string_view::npos || !parse_int64_fast(line.substr(0, sp), &local_ns) ||
        local_ns < 0)
      return error(line_no, "expected '<local receive ns> <json>'");
    const std::string_view json = line.substr(sp + 1);
    JsonScanner sc(json);
    if (!sc.object(outer.fields, &outer.n, 1) || !sc.at_end()) {
      return error(line_no, "invalid JSON at column {}: expected {}", sp + 2 + sc.pos(),
                   sc.expected() != nullptr ? sc.expected() : "the end of the line");
    }
    ++st.lines;

    if (outer.find("lastUpdateId") != nullptr) return on_rest_snapshot(outer, local_ns, line_no);

    // Combined stream: {"stream": "<symbol>@<kind>", "data": {...}}; else a bare payload.
    std::string_view kind;
    const JsonValue* stream = outer.find("stream");
    if (stream != nullptr) {
      const JsonValue* d = outer.find("data");
      if (stream->kind != '"') return error(line_no, "field \"stream\": expected a string");
      if (d == nullptr || d->kind != '{') return error(line_no, "expected an object \"data\"");
      JsonScanner dsc(d->raw);
      if (!dsc.object(data.fields, &data.n, 1)) return error(line_no, "invalid \"data\" object");
      msg = &data;
      const size_t at = stream->raw.find('@');
      if (at == std::string_view::npos)
        return error(line_no, "field \"stream\": expected '<symbol>@<kind>', got {}",
                     stream->raw.substr(0, 40));
      kind = stream->raw.substr(at + 1);
      if (kind == "depth" || kind.starts_with("depth@")) {
        kind = "depthUpdate";
      } else if (kind != "trade" && kind != "bookTicker") {
        ++st.other_messages;
        return Status::Ok();
      }
      FXT_RETURN_IF_ERROR(check_symbol(stream->raw.substr(0, at), line_no));
    } else {
      msg = &outer;
      const JsonValue* e = outer.find("e");
      if (e != nullptr && e->kind == '"') {
        kind = e->raw;
      } else if (outer.find("u") != nullptr && outer.find("B") != nullptr &&
                 outer.find("A") != nullptr) {
        kind = "bookTicker";  // spot bookTicker payloads carry no "e"
      }
    }
    if (const JsonValue* s = msg->find("s"); s != nullptr && s->kind == '"')
      FXT_RETURN_IF_ERROR(check_symbol(s->raw, line_no));

    if (kind == "depthUpdate") return on_diff(*msg, local_ns, line_no);
    if (kind == "trade") return on_trade(*msg, line_no);
    if (kind == "bookTicker") return on_ticker(*msg, line_no);
    ++st.other_messages;
    return Status::Ok();
  }

  // ---- REST snapshot ----
  Status on_rest_snapshot(const JsonObject& o, int64_t local_ns, uint64_t line_no) {
    (void)local_ns;
    int64_t id = 0;
    FXT_RETURN_IF_ERROR(get_int(o, "lastUpdateId", line_no, &id));
    FXT_RETURN_IF_ERROR(get_levels(o, "bids", line_no, &snap_bids));
    FXT_RETURN_IF_ERROR(get_levels(o, "asks", line_no, &snap_asks));
    // Only the USD-M REST response carries an event time; the first diff has the last word.
    if (st.market == BinanceMarket::kAuto) {
      st.market = o.find("E") != nullptr ? BinanceMarket::kUsdm : BinanceMarket::kSpot;
      market_tentative = true;
    }
    ++st.rest_snapshots;

    if (state != State::kNoBook && !in_gap) {
      ++st.snapshots_ignored;  // the diff chain is intact: the book is already exact
      return Status::Ok();
    }
    const bool resync = state != State::kNoBook;
    if (resync) ++st.resyncs;
    book.clear();
    for (const Level& l : snap_bids) book.set_bid(l.px, l.qty);
    for (const Level& l : snap_asks) book.set_ask(l.px, l.qty);
    last_update_id = id;
    state = State::kAwaitFirst;
    in_gap = false;
    recent.clear();
    recent.push_back({id, id, book.top(), /*from_diff=*/false});
    recent_has_base = true;
    // Waiting tickers older than this snapshot describe states the book never had.
    size_t kept = 0;
    for (size_t i = 0; i < waiting.size(); ++i) {
      if (waiting[i].update_id < id) {
        ++st.aligned_before_book;
      } else {
        waiting[kept++] = waiting[i];
      }
    }
    waiting.resize(kept);
    if (resync) {
      // Diffs received since the gap may already be past lastUpdateId: replay them
      // silently so the book catches up; the next live diff emits.
      std::deque<DiffMsg> replay;
      replay.swap(retained);
      for (DiffMsg& d : replay) apply_diff(d, /*emit=*/false, /*count=*/false);
    } else {
      std::deque<PendingItem> items;
      items.swap(pending);
      for (PendingItem& item : items) {
        if (auto* d = std::get_if<DiffMsg>(&item)) {
          apply_diff(*d, /*emit=*/true, /*count=*/true);
        } else {
          emit_trade(std::get<TradeMsg>(item).trade);
        }
      }
    }
    return Status::Ok();
  }

  // ---- diff-depth ----
  Status on_diff(const JsonObject& o, int64_t local_ns, uint64_t line_no) {
    DiffMsg& d = diff;
    d.local_ns = local_ns;
    d.line_no = line_no;
    FXT_RETURN_IF_ERROR(get_int(o, "E", line_no, &d.event_ms));
    if (d.event_ms > INT64_MAX / 1'000'000) return error(line_no, "field \"E\": out of range");
    FXT_RETURN_IF_ERROR(get_int(o, "U", line_no, &d.first_id));
    FXT_RETURN_IF_ERROR(get_int(o, "u", line_no, &d.final_id));
    if (d.first_id > d.final_id)
      return error(line_no, "expected U <= u, got U={} u={}", d.first_id, d.final_id);
    bool has_pu = false;
    FXT_RETURN_IF_ERROR(get_int(o, "pu", line_no, &d.prev_final_id, &has_pu));
    if (!has_pu) d.prev_final_id = -1;
    FXT_RETURN_IF_ERROR(get_levels(o, "b", line_no, &d.bids));
    FXT_RETURN_IF_ERROR(get_levels(o, "a", line_no, &d.asks));
    const BinanceMarket seen = has_pu ? BinanceMarket::kUsdm : BinanceMarket::kSpot;
    if (st.market == BinanceMarket::kAuto || market_tentative) {
      st.market = seen;
      market_tentative = false;
    } else if (st.market != seen) {
      return error(line_no, "{}",
                   has_pu ? "unexpected field \"pu\" in a spot diff (USD-M?)"
                          : "expected field \"pu\" in a USD-M diff (spot?)");
    }
    ++st.diffs;
    if (state == State::kNoBook) {
      ++st.diffs_buffered;
      if (pending_diffs_ >= kMaxPendingDiffs) drop_oldest_pending();
      pending.emplace_back(d);
      ++pending_diffs_;
      return Status::Ok();
    }
    apply_diff(d, /*emit=*/true, /*count=*/true);
    return Status::Ok();
  }

  void drop_oldest_pending() {
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (std::holds_alternative<DiffMsg>(*it)) {
        pending.erase(it);
        --pending_diffs_;
        ++st.diffs_lost;
        return;
      }
    }
  }

  void gap(const DiffMsg& d, std::string what) {
    ++st.gaps;
    if (!in_gap) retained.clear();  // keep every diff since the first gap of this episode
    in_gap = true;
    std::string text = fmt::format("line {}: {}", d.line_no, what);
    if (st.first_gap.empty()) st.first_gap = text;
    if (gaps_logged < options.max_gaps_logged) {
      log_warn("{}: gap at {}; later snapshots are flagged maybe-bad until a new REST snapshot",
               source, text);
      if (++gaps_logged == options.max_gaps_logged) log_warn("{}: further gaps not logged", source);
    }
  }

  // Applies the sync rules to one diff. `count`: false while replaying retained diffs
  // on a resync (they were counted when they arrived).
  void apply_diff(const DiffMsg& d, bool emit, bool count) {
    const int64_t L = last_update_id;
    if (state == State::kAwaitFirst) {
      const bool stale = spot() ? d.final_id <= L : d.final_id < L;
      if (stale) {
        if (count) ++st.diffs_dropped;
        return;
      }
      const bool bridges =
          spot() ? d.first_id <= L + 1 && L + 1 <= d.final_id : d.first_id <= L && L <= d.final_id;
      if (!bridges) {
        gap(d, fmt::format("first diff after snapshot lastUpdateId={} has U={} u={}; expected "
                           "U <= {} <= u",
                           L, d.first_id, d.final_id, spot() ? L + 1 : L));
      }
      state = State::kLive;
    } else {
      const bool continuous =
          spot() ? d.first_id == prev_final_id + 1 : d.prev_final_id == prev_final_id;
      if (!continuous) {
        gap(d, spot() ? fmt::format("U={} after u={}; expected U = {}", d.first_id, prev_final_id,
                                    prev_final_id + 1)
                      : fmt::format("pu={} after u={}; expected pu = {}", d.prev_final_id,
                                    prev_final_id, prev_final_id));
        if (d.final_id <= prev_final_id) {
          // Entirely older than the book: applying it would move the book backwards.
          if (count) ++st.diffs_dropped;
          return;
        }
      }
    }
    settle_before(d);
    for (const Level& l : d.bids) book.set_bid(l.px, l.qty);
    for (const Level& l : d.asks) book.set_ask(l.px, l.qty);
    prev_final_id = d.final_id;
    if (count) {
      ++st.diffs_applied;
      st.price_levels_updated += d.bids.size() + d.asks.size();
    }
    if (in_gap) {
      if (retained.size() >= kMaxRetainedDiffs) retained.pop_front();  // newest matter most
      retained.push_back(d);
    }

    const BinanceTop t = book.top();
    if (recent.size() >= kMaxRecentTops) {
      recent.pop_front();
      recent_has_base = false;
    }
    recent.push_back({d.first_id, d.final_id, t, /*from_diff=*/true});
    resolve_waiting(d.final_id, t);
    if (emit) emit_snapshot(d);
  }

  void emit_snapshot(const DiffMsg& d) {
    Snapshot s;
    book.fill(&s);
    s.ts_ns = d.event_ms * 1'000'000;
    s.ts_alt_ns = d.local_ns;
    s.flags = in_gap ? kFlagMaybeBadBook : 0;
    s.mark_crossed_or_locked();
    if (s.flags & (kFlagCrossed | kFlagLocked)) ++st.snapshots_crossed;
    if (s.flags & kFlagMaybeBadBook) ++st.snapshots_maybe_bad;
    if (st.snapshots_emitted == 0) st.first_ts_ns = s.ts_ns;
    st.last_ts_ns = s.ts_ns;
    ++st.snapshots_emitted;
    if (sink != nullptr) sink->on_snapshot(s);
  }

  // ---- trades ----
  Status on_trade(const JsonObject& o, uint64_t line_no) {
    TradeMsg m;
    int64_t t_ms = 0, px = 0, qty = 0;
    FXT_RETURN_IF_ERROR(get_decimal(o, "p", line_no, &px));
    FXT_RETURN_IF_ERROR(get_decimal(o, "q", line_no, &qty));
    FXT_RETURN_IF_ERROR(get_int(o, "T", line_no, &t_ms));
    if (t_ms > INT64_MAX / 1'000'000) return error(line_no, "field \"T\": out of range");
    const JsonValue* maker = o.find("m");
    if (maker == nullptr || (maker->kind != 't' && maker->kind != 'f'))
      return error(line_no, "expected a boolean field \"m\"");
    m.trade.ts_ns = t_ms * 1'000'000;
    m.trade.px = px;
    m.trade.sz = e9_to_double(qty);
    // m: the buyer was the maker, so the seller aggressed.
    m.trade.side = maker->kind == 't' ? -1 : 1;
    ++st.trades;
    if (state == State::kNoBook) {
      pending.emplace_back(m);  // keep the order relative to the buffered diffs
    } else {
      emit_trade(m.trade);
    }
    return Status::Ok();
  }

  void emit_trade(const Trade& t) {
    if (sink != nullptr) sink->on_trade(t);
  }

  // ---- bookTicker ----
  Status on_ticker(const JsonObject& o, uint64_t line_no) {
    int64_t id = 0;
    BinanceTop t;
    FXT_RETURN_IF_ERROR(get_int(o, "u", line_no, &id));
    FXT_RETURN_IF_ERROR(get_decimal(o, "b", line_no, &t.bid_px));
    FXT_RETURN_IF_ERROR(get_decimal(o, "B", line_no, &t.bid_qty));
    FXT_RETURN_IF_ERROR(get_decimal(o, "a", line_no, &t.ask_px));
    FXT_RETURN_IF_ERROR(get_decimal(o, "A", line_no, &t.ask_qty));
    ++st.tickers;
    if (state == State::kNoBook) {
      ++st.tickers_before_book;
    } else {
      ++st.tickers_compared;
      const BinanceTop now = book.top();
      if (now == t) ++st.tickers_agree;
      if (now.bid_px == t.bid_px && now.ask_px == t.ask_px) ++st.tickers_agree_px;
    }
    // Exact and aligned checks: against the book after the last state whose final u
    // is <= this u, whether that state was built before this line or is still to come.
    // A u equal to the snapshot's id waits too: the first diff may end at it (USD-M).
    const PendingTicker w{id, t, line_no};
    if (state != State::kNoBook && !recent.empty() &&
        (id < recent.back().final_id ||
         (id == recent.back().final_id && recent.back().from_diff))) {
      settle_late(w);
    } else {
      if (waiting.size() >= kMaxPendingTickers) {
        waiting.pop_front();
        ++st.aligned_unresolved;
      }
      waiting.push_back(w);
    }
    return Status::Ok();
  }

  // A ticker whose state is already built (or gone).
  void settle_late(const PendingTicker& w) {
    // The last state with final u <= w.update_id (final ids are non-decreasing).
    auto it = std::upper_bound(recent.begin(), recent.end(), w.update_id,
                               [](int64_t id, const AppliedTop& a) { return id < a.final_id; });
    if (it == recent.begin()) {
      if (recent_has_base) {
        ++st.aligned_before_book;
      } else {
        ++st.aligned_too_old;
      }
      return;
    }
    ++st.aligned_late;
    const AppliedTop& at = *(it - 1);
    if (at.final_id == w.update_id) {
      if (at.from_diff) check_exact(w.update_id, w.top, at.top, w.line_no);
      check_boundary(w, at.top, /*at_final=*/true);
      return;
    }
    // at is not the newest state (the ticker would be waiting otherwise).
    const AppliedTop& next = *it;
    if (w.update_id < std::max(next.first_id, at.final_id + 1)) {
      check_boundary(w, at.top, /*at_final=*/false);
    } else {
      check_inside(w, next.top);
    }
  }

  // Called with the diff `d` about to be applied on top of recent.back(): waiting
  // tickers below its first id saw the book as it stands now.
  void settle_before(const DiffMsg& d) {
    if (recent.empty()) return;
    const AppliedTop& now = recent.back();
    const int64_t first = std::max(d.first_id, now.final_id + 1);
    size_t kept = 0;
    for (size_t i = 0; i < waiting.size(); ++i) {
      const PendingTicker& w = waiting[i];
      if (w.update_id < first && w.update_id != d.final_id) {
        check_boundary(w, now.top, /*at_final=*/w.update_id == now.final_id);
      } else {
        waiting[kept++] = w;
      }
    }
    waiting.resize(kept);
  }

  void check_boundary(const PendingTicker& w, const BinanceTop& book_state, bool at_final) {
    const bool match = w.top == book_state;
    ++st.aligned_boundary;
    st.aligned_boundary_matched += match;
    if (at_final) {
      ++st.aligned_at_final;
      st.aligned_at_final_matched += match;
    } else {
      ++st.aligned_between;
      st.aligned_between_matched += match;
    }
    if (!match && st.first_aligned_mismatch.empty()) {
      st.first_aligned_mismatch = fmt::format(
          "line {}: u={} ({}): ticker {}; book {}", w.line_no, w.update_id,
          at_final ? "at a final u" : "between bundles", top_text(w.top), top_text(book_state));
    }
  }

  void check_inside(const PendingTicker& w, const BinanceTop& bundle_end) {
    ++st.aligned_inside;
    st.aligned_inside_agree += w.top == bundle_end;
    st.aligned_inside_agree_px +=
        w.top.bid_px == bundle_end.bid_px && w.top.ask_px == bundle_end.ask_px;
  }

  void resolve_waiting(int64_t final_id, const BinanceTop& book_top) {
    // Tickers at or below this u are settled now: equal ones are checked exactly,
    // the others (settle_before took those below U) fell inside this diff's bundle.
    size_t kept = 0;
    for (size_t i = 0; i < waiting.size(); ++i) {
      const PendingTicker& w = waiting[i];
      if (w.update_id == final_id) {
        ++st.tickers_exact_u_early;
        check_exact(w.update_id, w.top, book_top, w.line_no);
        check_boundary(w, book_top, /*at_final=*/true);
      } else if (w.update_id < final_id) {
        check_inside(w, book_top);
      } else {
        waiting[kept++] = w;
      }
    }
    waiting.resize(kept);
  }

  void check_exact(int64_t id, const BinanceTop& ticker, const BinanceTop& book_top,
                   uint64_t line_no) {
    ++st.tickers_exact_u;
    if (ticker == book_top) {
      ++st.tickers_exact_u_matched;
    } else if (st.first_exact_u_mismatch.empty()) {
      st.first_exact_u_mismatch = fmt::format("line {}: u={}: ticker {}; book {}", line_no, id,
                                              top_text(ticker), top_text(book_top));
    }
  }

  Status finish() {
    st.aligned_unresolved += waiting.size();
    waiting.clear();
    if (state == State::kNoBook) {
      st.diffs_lost += pending_diffs_;
      pending.clear();
      pending_diffs_ = 0;
      return InvalidInput(
          "{}: no REST depth snapshot (a line with \"lastUpdateId\") in {} lines; "
          "{} diffs could not be applied",
          source, st.lines, st.diffs_lost);
    }
    return Status::Ok();
  }

  size_t pending_diffs_ = 0;
};

BinanceReplayer::BinanceReplayer(std::string source, const BinanceOptions& options, BookSink* sink)
    : impl_(std::make_unique<Impl>(std::move(source), options, sink)) {}
BinanceReplayer::~BinanceReplayer() = default;

Status BinanceReplayer::feed_line(std::string_view line, uint64_t line_no) {
  return impl_->feed(line, line_no);
}
Status BinanceReplayer::finish() {
  return impl_->finish();
}
const BinanceStats& BinanceReplayer::stats() const {
  return impl_->st;
}
const BinanceBook& BinanceReplayer::book() const {
  return impl_->book;
}
bool BinanceReplayer::synced() const {
  return impl_->state != Impl::State::kNoBook && !impl_->in_gap;
}

// ---- whole capture ---------------------------------------------------------------

Status replay_binance_capture(const std::string& path, const BinanceOptions& options,
                              BookSink* sink, BinanceStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  BinanceReplayer replayer(path, options, sink);
  Status status = for_each_line(
      path, [&](std::string_view line, uint64_t line_no) { return replayer.feed_line(line, line_no); });
  if (status.ok()) status = replayer.finish();
  if (stats != nullptr) {
    *stats = replayer.stats();
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return status;
}

}  // namespace fxt
