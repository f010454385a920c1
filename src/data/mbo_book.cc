#include "data/mbo_book.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace fxt {

dbn::MboMsg mbo_record(const OrderEvent& e) {
  dbn::MboMsg m;
  std::memset(&m, 0, sizeof(m));
  m.hd.ts_event = static_cast<uint64_t>(e.ts_ns);
  m.order_id = e.order_id;
  m.price = e.px;
  m.size = e.sz <= 0 ? 0u : static_cast<uint32_t>(std::llround(e.sz));
  m.flags = 0;
  m.action = e.action;
  m.side = e.side > 0 ? 'B' : e.side < 0 ? 'A' : 'N';
  m.ts_recv = static_cast<uint64_t>(e.ts_ns);
  return m;
}
namespace {

constexpr uint8_t kDbnLast = dbn::kFLast;
constexpr uint8_t kDbnSnapshot = dbn::kFSnapshot;

int8_t side_of(char s) {
  return s == 'B' ? int8_t{1} : s == 'A' ? int8_t{-1} : int8_t{0};
}

// Sort key of a price on a side: ascending keys, best price last (see LevelKey).
int64_t key_of(int8_t side, int64_t px) {
  return side > 0 ? px : -px;
}

}  // namespace

// ---- OrderIndex ---------------------------------------------------------------------

MboBook::OrderIndex::OrderIndex() {
  table_.assign(1024, Entry{0, kNil});
  mask_ = table_.size() - 1;
  shift_ = 64 - 10;
}

int32_t MboBook::OrderIndex::find(uint64_t id) const {
  for (size_t i = home(id);; i = (i + 1) & mask_) {
    const Entry& e = table_[i];
    if (e.slot == kNil) return kNil;
    if (e.id == id) return e.slot;
  }
}

void MboBook::OrderIndex::insert(uint64_t id, int32_t slot) {
  if ((size_ + 1) * 2 > table_.size()) grow();
  size_t i = home(id);
  while (table_[i].slot != kNil) i = (i + 1) & mask_;
  table_[i] = Entry{id, slot};
  ++size_;
}

void MboBook::OrderIndex::erase(uint64_t id) {
  size_t i = home(id);
  while (table_[i].id != id || table_[i].slot == kNil) {
    assert(table_[i].slot != kNil && "erase of an absent id");
    i = (i + 1) & mask_;
  }
  // Backward-shift deletion: pull later entries of the probe run into the hole when
  // their home position does not lie cyclically in (hole, j].
  size_t hole = i;
  for (size_t j = (hole + 1) & mask_; table_[j].slot != kNil; j = (j + 1) & mask_) {
    size_t h = home(table_[j].id);
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (!stays) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole].slot = kNil;
  --size_;
}

void MboBook::OrderIndex::clear() {
  std::fill(table_.begin(), table_.end(), Entry{0, kNil});
  size_ = 0;
}

void MboBook::OrderIndex::grow() {
  std::vector<Entry> old = std::move(table_);
  table_.assign(old.size() * 2, Entry{0, kNil});
  mask_ = table_.size() - 1;
  --shift_;
  size_ = 0;
  for (const Entry& e : old) {
    if (e.slot != kNil) insert(e.id, e.slot);
  }
}

// ---- MboBook ------------------------------------------------------------------------

MboBook::MboBook(BookSink* sink) : sink_(sink) {
  orders_.reserve(4096);
  levels_.reserve(1024);
  bids_.reserve(512);
  asks_.reserve(512);
}

void MboBook::apply(const dbn::MboMsg& m) {
  // The end of a F_SNAPSHOT run is an event boundary even without F_LAST.
  if (pending_ > 0 && pending_in_run_ && (m.flags & kDbnSnapshot) == 0) emit();
  fold(m);
  if (m.flags & kDbnLast) emit();
}

void MboBook::finish() {
  if (pending_ == 0) return;
  if (!pending_in_run_) {
    // The input stopped inside an event: the book may be half-updated.
    ++stats_.unterminated_events;
    pending_flags_ |= kFlagMaybeBadBook;
  }
  emit();
}

void MboBook::fold(const dbn::MboMsg& m) {
  ++stats_.events;
  ++pending_;
  pending_in_run_ = (m.flags & kDbnSnapshot) != 0;
  pending_run_seen_ |= pending_in_run_;
  if (m.flags & dbn::kFMaybeBadBook) pending_flags_ |= kFlagMaybeBadBook;
  if (m.flags & dbn::kFBadTsRecv) pending_flags_ |= kFlagBadTimestamp;
  last_ts_recv_ = static_cast<int64_t>(m.ts_recv);
  last_ts_event_ = static_cast<int64_t>(m.hd.ts_event);

  const int8_t side = side_of(m.side);
  if (sink_ != nullptr) {
    OrderEvent e;
    e.ts_ns = last_ts_recv_;
    e.order_id = m.order_id;
    e.px = m.price;
    e.sz = static_cast<double>(m.size);
    e.action = m.action;
    e.side = side;
    e.flags = m.flags;
    sink_->on_order_event(e);
  }

  switch (m.action) {
    case 'A':
      ++stats_.adds;
      on_add(m, side);
      break;
    case 'C':
      ++stats_.cancels;
      on_cancel(m);
      break;
    case 'M':
      ++stats_.modifies;
      on_modify(m, side);
      break;
    case 'R':
      ++stats_.clears;
      clear_book();
      break;
    case 'T':
      ++stats_.trades;
      if (sink_ != nullptr) {
        Trade t;
        t.ts_ns = last_ts_recv_;
        t.px = m.price;
        t.sz = static_cast<double>(m.size);
        t.side = side;  // Databento's side on a trade is the aggressor's
        sink_->on_trade(t);
      }
      break;
    case 'F':
      ++stats_.fills;
      break;  // the passive side of a 'T': no Trade of its own
    case 'N':
      ++stats_.nones;
      break;
    default:
      ++stats_.unknown_actions;
      break;
  }
}

void MboBook::emit() {
  snap_.flags = pending_flags_;
  if (pending_run_seen_) snap_.flags |= kFlagSnapshotRun;
  fill_levels(&snap_);
  snap_.ts_ns = last_ts_recv_;
  snap_.ts_alt_ns = last_ts_event_;

  ++stats_.snapshots;
  if (snap_.flags & kFlagSnapshotRun) ++stats_.snapshot_run_snapshots;
  if (snap_.flags & kFlagCrossed) ++stats_.crossed_snapshots;
  if (snap_.flags & kFlagLocked) ++stats_.locked_snapshots;
  if (snap_.flags & kFlagMaybeBadBook) ++stats_.maybe_bad_book_snapshots;
  if (snap_.flags & kFlagBadTimestamp) ++stats_.bad_ts_snapshots;
  if (sink_ != nullptr) sink_->on_snapshot(snap_);

  pending_ = 0;
  pending_in_run_ = false;
  pending_run_seen_ = false;
  pending_flags_ = 0;
}

void MboBook::fill_levels(Snapshot* out) const {
  const uint8_t keep = static_cast<uint8_t>(out->flags & ~(kFlagCrossed | kFlagLocked));
  const size_t nb = std::min<size_t>(bids_.size(), kBookLevels);
  const size_t na = std::min<size_t>(asks_.size(), kBookLevels);
  for (size_t i = 0; i < static_cast<size_t>(kBookLevels); ++i) {
    if (i < nb) {
      const Level& l = levels_[bids_[bids_.size() - 1 - i].level];
      out->bid_px[i] = l.px;
      out->bid_sz[i] = static_cast<double>(l.size);
      out->bid_ct[i] = l.count;
    } else {
      out->bid_px[i] = kEmptyPx;
      out->bid_sz[i] = 0.0;
      out->bid_ct[i] = 0;
    }
    if (i < na) {
      const Level& l = levels_[asks_[asks_.size() - 1 - i].level];
      out->ask_px[i] = l.px;
      out->ask_sz[i] = static_cast<double>(l.size);
      out->ask_ct[i] = l.count;
    } else {
      out->ask_px[i] = kEmptyPx;
      out->ask_sz[i] = 0.0;
      out->ask_ct[i] = 0;
    }
  }
  out->flags = keep;
  out->mark_crossed_or_locked();
}

// ---- actions ------------------------------------------------------------------------

void MboBook::on_add(const dbn::MboMsg& m, int8_t side) {
  if (side == 0 || m.size == 0 || m.price == kEmptyPx) {
    ++stats_.ignored_adds;
    return;
  }
  int32_t slot = index_.find(m.order_id);
  if (slot != kNil) {
    ++stats_.duplicate_add_ids;
    remove_order(slot);
  }
  add_order(m.order_id, side, m.price, m.size);
}

void MboBook::on_cancel(const dbn::MboMsg& m) {
  int32_t slot = index_.find(m.order_id);
  if (slot == kNil) {
    ++stats_.cancel_unknown_ids;
    ++stats_.unknown_order_ids;
    return;
  }
  Order& o = orders_[slot];
  if (m.size >= o.size) {
    if (m.size > o.size) ++stats_.oversize_cancels;
    remove_order(slot);
    return;
  }
  o.size -= m.size;
  levels_[o.level].size -= m.size;
}

void MboBook::on_modify(const dbn::MboMsg& m, int8_t side) {
  int32_t slot = index_.find(m.order_id);
  if (slot == kNil) {
    // Databento's own book treats a modify of an unknown order as an add.
    ++stats_.modify_unknown_ids;
    ++stats_.unknown_order_ids;
    if (side == 0 || m.size == 0 || m.price == kEmptyPx) {
      ++stats_.ignored_adds;
      return;
    }
    add_order(m.order_id, side, m.price, m.size);
    return;
  }
  if (m.size == 0 || m.price == kEmptyPx) {
    ++stats_.removing_modifies;
    remove_order(slot);
    return;
  }
  Order& o = orders_[slot];
  const int8_t new_side = side != 0 ? side : o.side;
  if (new_side != o.side || m.price != o.px || m.size > o.size) {
    // Priority lost: to the back of the (possibly new) level.
    unlink(slot);
    o.side = new_side;
    o.px = m.price;
    o.size = m.size;
    link_back(slot);
    return;
  }
  // Size decrease (or no change) at the same price keeps the queue position.
  levels_[o.level].size -= o.size - m.size;
  o.size = m.size;
}

void MboBook::clear_book() {
  orders_.clear();
  free_order_ = kNil;
  live_orders_ = 0;
  levels_.clear();
  free_level_ = kNil;
  bids_.clear();
  asks_.clear();
  index_.clear();
  stats_.orders_resting = 0;
}

// ---- order and level bookkeeping ----------------------------------------------------

void MboBook::add_order(uint64_t id, int8_t side, int64_t px, uint32_t size) {
  int32_t slot;
  if (free_order_ != kNil) {
    slot = free_order_;
    free_order_ = orders_[slot].next;
  } else {
    slot = static_cast<int32_t>(orders_.size());
    orders_.emplace_back();
  }
  Order& o = orders_[slot];
  o.id = id;
  o.px = px;
  o.size = size;
  o.side = side;
  link_back(slot);
  index_.insert(id, slot);
  ++live_orders_;
  stats_.orders_resting = live_orders_;
  stats_.max_orders_resting = std::max<uint64_t>(stats_.max_orders_resting, live_orders_);
}

void MboBook::remove_order(int32_t slot) {
  unlink(slot);
  index_.erase(orders_[slot].id);
  orders_[slot].next = free_order_;
  free_order_ = slot;
  --live_orders_;
  stats_.orders_resting = live_orders_;
}

int32_t MboBook::find_level(int8_t side, int64_t px) const {
  const std::vector<LevelKey>& book = side > 0 ? bids_ : asks_;
  const int64_t key = key_of(side, px);
  auto it = std::lower_bound(book.begin(), book.end(), key,
                             [](const LevelKey& k, int64_t v) { return k.key < v; });
  return it != book.end() && it->key == key ? it->level : kNil;
}

void MboBook::link_back(int32_t slot) {
  Order& o = orders_[slot];
  std::vector<LevelKey>& book = o.side > 0 ? bids_ : asks_;
  const int64_t key = key_of(o.side, o.px);
  auto it = std::lower_bound(book.begin(), book.end(), key,
                             [](const LevelKey& k, int64_t v) { return k.key < v; });
  int32_t li;
  if (it != book.end() && it->key == key) {
    li = it->level;
  } else {
    if (free_level_ != kNil) {
      li = free_level_;
      free_level_ = levels_[li].head;
    } else {
      li = static_cast<int32_t>(levels_.size());
      levels_.emplace_back();
    }
    levels_[li] = Level{o.px, 0, 0, kNil, kNil};
    book.insert(it, LevelKey{key, li});
    uint32_t n = static_cast<uint32_t>(book.size());
    uint32_t& max_levels = o.side > 0 ? stats_.max_bid_levels : stats_.max_ask_levels;
    max_levels = std::max(max_levels, n);
  }
  Level& l = levels_[li];
  o.level = li;
  o.prev = l.tail;
  o.next = kNil;
  if (l.tail != kNil)
    orders_[l.tail].next = slot;
  else
    l.head = slot;
  l.tail = slot;
  l.size += o.size;
  ++l.count;
}

void MboBook::unlink(int32_t slot) {
  Order& o = orders_[slot];
  Level& l = levels_[o.level];
  if (o.prev != kNil)
    orders_[o.prev].next = o.next;
  else
    l.head = o.next;
  if (o.next != kNil)
    orders_[o.next].prev = o.prev;
  else
    l.tail = o.prev;
  l.size -= o.size;
  if (--l.count > 0) return;
  // The level emptied: drop it from its side and recycle its slot.
  std::vector<LevelKey>& book = o.side > 0 ? bids_ : asks_;
  const int64_t key = key_of(o.side, o.px);
  auto it = std::lower_bound(book.begin(), book.end(), key,
                             [](const LevelKey& k, int64_t v) { return k.key < v; });
  assert(it != book.end() && it->level == o.level);
  book.erase(it);
  l.head = free_level_;
  free_level_ = o.level;
}

// ---- queries ------------------------------------------------------------------------

std::optional<QueuePosition> MboBook::queue_position(uint64_t order_id) const {
  int32_t slot = index_.find(order_id);
  if (slot == kNil) return std::nullopt;
  const Order& o = orders_[slot];
  const Level& l = levels_[o.level];
  QueuePosition q;
  q.side = o.side;
  q.px = o.px;
  q.size = o.size;
  q.level_size = l.size;
  q.level_orders = l.count;
  for (int32_t i = l.head; i != slot; i = orders_[i].next) {
    q.size_ahead += orders_[i].size;
    ++q.orders_ahead;
  }
  return q;
}

std::optional<OrderPlace> MboBook::order_place(uint64_t order_id) const {
  const int32_t slot = index_.find(order_id);
  if (slot == kNil) return std::nullopt;
  const Order& o = orders_[slot];
  return OrderPlace{o.side, o.px, o.size};
}

uint64_t MboBook::level_size(int8_t side, int64_t px) const {
  if (side == 0) return 0;
  const int32_t li = find_level(side, px);
  return li == kNil ? 0 : levels_[li].size;
}

size_t MboBook::level_orders(int8_t side, int64_t px, std::vector<RestingOrder>* out) const {
  out->clear();
  if (side == 0) return 0;
  int32_t li = find_level(side, px);
  if (li == kNil) return 0;
  for (int32_t i = levels_[li].head; i != kNil; i = orders_[i].next) {
    out->push_back(RestingOrder{orders_[i].id, orders_[i].size});
  }
  return out->size();
}

int64_t MboBook::best_bid_px() const {
  return bids_.empty() ? kEmptyPx : levels_[bids_.back().level].px;
}

int64_t MboBook::best_ask_px() const {
  return asks_.empty() ? kEmptyPx : levels_[asks_.back().level].px;
}

// ---- file replay --------------------------------------------------------------------

Status replay_mbo_file(const std::string& path, BookSink* sink, MboStats* stats,
                       const MboReplayOptions& options) {
  dbn::ReaderOptions reader_options;
  reader_options.fragment_version = options.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(dbn::Reader reader, dbn::Reader::open(path, reader_options));
  MboBook book(sink);
  uint64_t other_records = 0;
  uint64_t other_instrument_records = 0;
  uint32_t instrument = options.instrument_id;
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    if (rec.rtype() != dbn::kRTypeMbo) {
      ++other_records;
      continue;
    }
    if (rec.size() < sizeof(dbn::MboMsg)) {
      return InvalidInput("{}: MBO record at byte {} is {} bytes, expected at least {}", path,
                          rec.offset, rec.size(), sizeof(dbn::MboMsg));
    }
    const auto& m = rec.as<dbn::MboMsg>();
    if (instrument == 0) instrument = m.hd.instrument_id;
    if (m.hd.instrument_id != instrument) {
      if (options.instrument_id == 0) {
        return InvalidInput(
            "{}: MBO record at byte {} is for instrument {}, but the file began with "
            "instrument {}; one book replays one instrument (choose one)",
            path, rec.offset, m.hd.instrument_id, instrument);
      }
      ++other_instrument_records;
      continue;
    }
    book.apply(m);
  }
  FXT_RETURN_IF_ERROR(reader.status());
  book.finish();
  if (stats != nullptr) {
    *stats = book.stats();
    stats->other_records = other_records;
    stats->other_instrument_records = other_instrument_records;
  }
  return Status::Ok();
}

}  // namespace fxt
