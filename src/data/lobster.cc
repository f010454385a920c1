#include "data/lobster.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "data/decimal.h"

namespace fxt {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerDay = 86'400 * kNsPerSecond;
constexpr int64_t kPxPerLobsterUnit = 100'000;  // $1e-4 in 1e-9 units
constexpr int64_t kDummyAskPx = 9'999'999'999;
constexpr int64_t kDummyBidPx = -9'999'999'999;

// Line-by-line over a memory-mapped file; the last line may lack its '\n'.
class LineCursor {
 public:
  explicit LineCursor(std::string_view data) : data_(data) {}
  bool next(std::string_view* line) {
    if (pos_ >= data_.size()) return false;
    const void* nl = std::memchr(data_.data() + pos_, '\n', data_.size() - pos_);
    const size_t end = nl == nullptr
                           ? data_.size()
                           : static_cast<size_t>(static_cast<const char*>(nl) - data_.data());
    *line = data_.substr(pos_, end - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = end + 1;
    ++line_no_;
    return true;
  }
  uint64_t line_no() const { return line_no_; }
  bool at_end() const { return pos_ >= data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  uint64_t line_no_ = 0;
};

// Splits on ','; returns the field count (fields past `max` are counted, not stored).
size_t split_csv(std::string_view line, std::string_view* fields, size_t max) {
  size_t n = 0, start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    const std::string_view f = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (n < max) fields[n] = f;
    ++n;
    if (comma == std::string_view::npos) return n;
    start = comma + 1;
  }
}

size_t count_fields(std::string_view line) {
  size_t n = 1;
  for (char c : line) n += c == ',';
  return n;
}

// The weekday of a day number, 0 = Sunday (1970-01-01 was a Thursday).
int weekday(int64_t days) {
  return static_cast<int>(((days % 7) + 11) % 7);
}

// Day of the month of the n-th (1-based) Sunday; n = -1: the last one.
unsigned nth_sunday(int64_t year, unsigned month, int n) {
  if (n > 0) {
    const int w = weekday(days_from_civil(year, month, 1));
    return static_cast<unsigned>(1 + (7 - w) % 7 + 7 * (n - 1));
  }
  // Last Sunday: step back from the last day of the month (months used here have 31 days).
  const int w = weekday(days_from_civil(year, month, 31));
  return static_cast<unsigned>(31 - w);
}

}  // namespace

Result<int64_t> parse_iso_date(std::string_view text) {
  auto digits = [&text](size_t at, size_t n, unsigned* out) {
    *out = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      *out = *out * 10 + static_cast<unsigned>(text[i] - '0');
    }
    return true;
  };
  unsigned y = 0, m = 0, d = 0;
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' || !digits(0, 4, &y) ||
      !digits(5, 2, &m) || !digits(8, 2, &d))
    return InvalidInput("\"{}\": expected a date YYYY-MM-DD", text);
  static constexpr unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1] || (m == 2 && d == 29 && !leap))
    return InvalidInput("\"{}\": no such date", text);
  return days_from_civil(y, m, d);
}

int new_york_utc_offset_minutes(int64_t year, unsigned month, unsigned day,
                                int64_t local_ns_of_day) {
  constexpr int kEst = -300, kEdt = -240;
  unsigned start_month = 3, end_month = 11, start_day = 0, end_day = 0;
  if (year >= 2007) {
    start_day = nth_sunday(year, 3, 2);
    end_day = nth_sunday(year, 11, 1);
  } else {
    start_month = 4;
    end_month = 10;
    start_day = nth_sunday(year, 4, 1);
    end_day = nth_sunday(year, 10, -1);
  }
  const int64_t two_am = 2 * 3600 * kNsPerSecond;
  if (month < start_month || month > end_month) return kEst;
  if (month > start_month && month < end_month) return kEdt;
  if (month == start_month) {
    if (day != start_day) return day > start_day ? kEdt : kEst;
    return local_ns_of_day >= two_am ? kEdt : kEst;
  }
  if (day != end_day) return day < end_day ? kEdt : kEst;
  return local_ns_of_day < two_am ? kEdt : kEst;
}

nlohmann::json LobsterStats::to_json() const {
  return nlohmann::json{
      {"symbol", symbol},
      {"date", date},
      {"levels", levels},
      {"utc_offset_minutes", utc_offset_minutes},
      {"rows", rows},
      {"snapshots", snapshots},
      {"adds", adds},
      {"partial_cancels", partial_cancels},
      {"deletes", deletes},
      {"visible_executions", visible_executions},
      {"hidden_executions", hidden_executions},
      {"crosses", crosses},
      {"halt_messages", halt_messages},
      {"trades", trades},
      {"buyer_initiated", buyer_initiated},
      {"seller_initiated", seller_initiated},
      {"order_events", order_events},
      {"snapshots_crossed", snapshots_crossed},
      {"first_ts_ns", first_ts_ns},
      {"last_ts_ns", last_ts_ns},
  };
}

Status import_lobster(const std::string& message_csv, const std::string& orderbook_csv,
                      const LobsterOptions& options, BookSink* sink, LobsterStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  LobsterStats st;
  const std::string name = std::filesystem::path(message_csv).filename().string();
  st.symbol = name.substr(0, name.find('_'));

  // The trading day: given, or the first YYYY-MM-DD in the file name.
  st.date = options.date;
  if (st.date.empty()) {
    for (size_t i = 0; i + 10 <= name.size(); ++i) {
      if (parse_iso_date(std::string_view(name).substr(i, 10)).ok()) {
        st.date = name.substr(i, 10);
        break;
      }
    }
    if (st.date.empty())
      return UsageError("{}: no trading day (YYYY-MM-DD) in the file name; give the date",
                        message_csv);
  }
  Result<int64_t> day = parse_iso_date(st.date);
  if (!day.ok()) return UsageError("LOBSTER date {}", day.status().message());
  const int64_t midnight_ns = *day * kNsPerDay;
  const int64_t year = std::stoll(st.date.substr(0, 4));
  const auto month = static_cast<unsigned>(std::stoi(st.date.substr(5, 2)));
  const auto mday = static_cast<unsigned>(std::stoi(st.date.substr(8, 2)));

  FXT_ASSIGN_OR_RETURN(MappedFile msg_file, MappedFile::open(message_csv));
  FXT_ASSIGN_OR_RETURN(MappedFile book_file, MappedFile::open(orderbook_csv));
  LineCursor msgs(msg_file.view()), books(book_file.view());

  constexpr size_t kMessageFields = 6;
  std::string_view mf[kMessageFields];
  std::vector<std::string_view> bf;
  size_t book_fields = 0;
  std::string_view mline, bline;

  for (;;) {
    const bool have_msg = msgs.next(&mline);
    const bool have_book = books.next(&bline);
    // A final empty line in both files is the end; anywhere else it is a short file.
    const bool msg_done = !have_msg || (mline.empty() && msgs.at_end());
    const bool book_done = !have_book || (bline.empty() && books.at_end());
    if (msg_done && book_done) break;
    if (msg_done)
      return InvalidInput(
          "{}: ends after {} rows, but {} has more (expected the same number "
          "of rows)",
          message_csv, st.rows, orderbook_csv);
    if (book_done)
      return InvalidInput(
          "{}: ends after {} rows, but {} has more (expected the same number "
          "of rows)",
          orderbook_csv, st.rows, message_csv);
    const uint64_t line_no = msgs.line_no();

    // ---- message row ----
    const size_t n = split_csv(mline, mf, kMessageFields);
    if (n != kMessageFields)
      return InvalidInput("{}: line {}: expected 6 fields, got {}", message_csv, line_no, n);
    static constexpr const char* kMsgNames[] = {"time", "type",  "order id",
                                                "size", "price", "direction"};
    int64_t v[kMessageFields];
    {
      Result<int64_t> t = parse_decimal(mf[0], 9);  // seconds -> ns, exactly
      if (!t.ok())
        return InvalidInput("{}: line {}: field 1 (time): {}", message_csv, line_no,
                            t.status().message());
      v[0] = *t;
    }
    for (size_t i = 1; i < kMessageFields; ++i) {
      Result<int64_t> r = parse_int64(mf[i]);
      if (!r.ok())
        return InvalidInput("{}: line {}: field {} ({}): {}", message_csv, line_no, i + 1,
                            kMsgNames[i], r.status().message());
      v[i] = *r;
    }
    const int64_t local_ns = v[0];
    const int64_t type = v[1], order_id = v[2], size = v[3], price = v[4], direction = v[5];
    if (local_ns < 0 || local_ns >= 2 * kNsPerDay)
      return InvalidInput("{}: line {}: time {}: expected seconds after midnight", message_csv,
                          line_no, mf[0]);
    if (type < 1 || type > 7)
      return InvalidInput("{}: line {}: type {}: expected 1-7", message_csv, line_no, type);
    if (direction != 1 && direction != -1)
      return InvalidInput("{}: line {}: direction {}: expected 1 or -1", message_csv, line_no,
                          direction);
    if (order_id < 0 || size < 0)
      return InvalidInput("{}: line {}: expected a non-negative order id and size", message_csv,
                          line_no);
    if (price > INT64_MAX / kPxPerLobsterUnit || price < -INT64_MAX / kPxPerLobsterUnit)
      return InvalidInput("{}: line {}: price {} out of range", message_csv, line_no, price);

    // ---- orderbook row ----
    const size_t nb = count_fields(bline);
    if (st.rows == 0) {
      if (nb % 4 != 0)
        return InvalidInput("{}: line {}: expected 4 fields per level, got {} fields",
                            orderbook_csv, line_no, nb);
      book_fields = nb;
      st.levels = static_cast<int>(nb / 4);
      bf.resize(nb);
    } else if (nb != book_fields) {
      return InvalidInput("{}: line {}: expected {} fields, got {}", orderbook_csv, line_no,
                          book_fields, nb);
    }
    split_csv(bline, bf.data(), book_fields);
    Snapshot s;
    for (size_t i = 0; i < book_fields; ++i) {
      int64_t x = 0;
      if (!parse_int64_fast(bf[i], &x)) {
        Result<int64_t> r = parse_int64(bf[i]);
        return InvalidInput("{}: line {}: field {}: {}", orderbook_csv, line_no, i + 1,
                            r.ok() ? "unexpected" : r.status().message());
      }
      const size_t level = i / 4;
      if (level >= static_cast<size_t>(kBookLevels)) continue;
      const int lv = static_cast<int>(level);
      switch (i % 4) {
        case 0:
        case 2: {  // ask_px, bid_px: kept when real; sizes decide emptiness below
          const bool dummy = x == kDummyAskPx || x == kDummyBidPx;
          if (!dummy && (x > INT64_MAX / kPxPerLobsterUnit || x < -INT64_MAX / kPxPerLobsterUnit))
            return InvalidInput("{}: line {}: field {}: price {} out of range", orderbook_csv,
                                line_no, i + 1, x);
          (i % 4 == 0 ? s.ask_px : s.bid_px)[lv] = dummy ? kEmptyPx : x * kPxPerLobsterUnit;
          break;
        }
        default: {
          if (x < 0)
            return InvalidInput("{}: line {}: field {}: expected a non-negative size, got {}",
                                orderbook_csv, line_no, i + 1, x);
          (i % 4 == 1 ? s.ask_sz : s.bid_sz)[lv] = static_cast<double>(x);
        }
      }
    }
    for (int lv = 0; lv < kBookLevels; ++lv) {  // a level is empty when its size is 0
      if (s.ask_sz[lv] == 0) s.ask_px[lv] = kEmptyPx;
      if (s.bid_sz[lv] == 0) s.bid_px[lv] = kEmptyPx;
      if (s.ask_px[lv] == kEmptyPx) s.ask_sz[lv] = 0;
      if (s.bid_px[lv] == kEmptyPx) s.bid_sz[lv] = 0;
    }

    // ---- time ----
    const int offset_min = options.utc_offset_minutes.has_value()
                               ? *options.utc_offset_minutes
                               : new_york_utc_offset_minutes(year, month, mday, local_ns);
    const int64_t ts = midnight_ns + local_ns - int64_t{offset_min} * 60 * kNsPerSecond;
    if (st.rows == 0) {
      st.utc_offset_minutes = offset_min;
      st.first_ts_ns = ts;
    }
    st.last_ts_ns = ts;
    ++st.rows;

    // ---- emit: order event, trade, snapshot ----
    const int64_t px = price * kPxPerLobsterUnit;
    static constexpr char kActions[] = {'N', 'A', 'C', 'C', 'F', 'F'};
    if (type <= 5) {
      OrderEvent e;
      e.ts_ns = ts;
      e.order_id = static_cast<uint64_t>(order_id);
      e.px = px;
      e.sz = static_cast<double>(size);
      e.action = kActions[type];
      e.side = static_cast<int8_t>(direction);  // the resting order's side: +1 bid
      ++st.order_events;
      if (sink != nullptr) sink->on_order_event(e);
    }
    switch (type) {
      case 1:
        ++st.adds;
        break;
      case 2:
        ++st.partial_cancels;
        break;
      case 3:
        ++st.deletes;
        break;
      case 4:
        ++st.visible_executions;
        break;
      case 5:
        ++st.hidden_executions;
        break;
      case 6:
        ++st.crosses;
        break;
      default:
        ++st.halt_messages;
        break;
    }
    if (type >= 4 && type <= 6) {
      Trade t;
      t.ts_ns = ts;
      t.px = px;
      t.sz = static_cast<double>(size);
      // An executed buy limit order was hit by a seller; crosses have no aggressor.
      t.side = type == 6 ? int8_t{0} : static_cast<int8_t>(-direction);
      ++st.trades;
      if (t.side > 0) ++st.buyer_initiated;
      if (t.side < 0) ++st.seller_initiated;
      if (sink != nullptr) sink->on_trade(t);
    }
    s.ts_ns = ts;
    s.mark_crossed_or_locked();
    if (s.flags & (kFlagCrossed | kFlagLocked)) ++st.snapshots_crossed;
    ++st.snapshots;
    if (sink != nullptr) sink->on_snapshot(s);
  }
  if (st.rows == 0) return InvalidInput("{}: no rows (expected LOBSTER messages)", message_csv);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats != nullptr) *stats = st;
  return Status::Ok();
}

}  // namespace fxt
