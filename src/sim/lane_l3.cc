#include "sim/lane_l3.h"

#include <algorithm>
#include <cmath>

namespace fxt::sim {

void LaneL3Annotator::change(int8_t side, int64_t px, int64_t delta, uint64_t row) {
  Level& l = levels_[{side, px}];
  l.total = static_cast<uint64_t>(static_cast<int64_t>(l.total) + delta);
  l.hist.emplace_back(row, static_cast<double>(l.total));
}

void LaneL3Annotator::clear(uint64_t row) {
  for (auto& [key, l] : levels_) {
    if (l.total == 0) continue;
    l.total = 0;
    l.hist.emplace_back(row, 0.0);
  }
  orders_.clear();
}

void LaneL3Annotator::begin_session(uint64_t row) {
  clear(row);  // Exchange::begin_session: a new, empty MboBook
}

Status LaneL3Annotator::apply(const OrderEvent& e, uint64_t row, LaneItem* item) {
  item->kind = kLaneOrderEvent;
  item->side = 0;  // tracked by nobody unless set below
  item->px = 0;
  item->sz = 0;
  item->snapshot = kLaneNoSeq;
  Status status = Status::Ok();
  // to_mbo (sim/exchange.cc): the size MboBook sees.
  if (!(e.sz >= 0 && e.sz < 4294967296.0 && e.sz == std::floor(e.sz))) {
    status = UsageError(
        "order event at {} ns has size {}: the GPU lanes' L3 queues need whole sizes in [0, "
        "2^32)",
        e.ts_ns, e.sz);
  }
  const uint32_t size = e.sz <= 0 ? 0u : static_cast<uint32_t>(std::llround(e.sz));
  const int8_t side = e.side > 0 ? int8_t{1} : e.side < 0 ? int8_t{-1} : int8_t{0};
  auto it = orders_.find(e.order_id);
  auto track = [&](const Order& o, double amount) {  // what an order behind `o` loses
    item->side = o.side;
    item->px = o.px;
    item->snapshot = o.seq;
    item->sz = amount;
  };
  switch (e.action) {
    case 'A': {
      if (it != orders_.end()) track(it->second, it->second.size);  // replaced: behind us now
      if (side == 0 || size == 0 || e.px == kEmptyPx) {  // MboBook ignores the add
        if (it != orders_.end()) it->second.seq = row;   // the CPU no longer counts it ahead
        break;
      }
      if (it != orders_.end()) {
        change(it->second.side, it->second.px, -static_cast<int64_t>(it->second.size), row);
        orders_.erase(it);
      }
      orders_[e.order_id] = Order{e.px, row, size, side};
      change(side, e.px, size, row);
      break;
    }
    case 'C': {
      if (it == orders_.end()) break;
      Order& o = it->second;
      track(o, std::min(e.sz, static_cast<double>(o.size)));
      if (size >= o.size) {
        change(o.side, o.px, -static_cast<int64_t>(o.size), row);
        orders_.erase(it);
      } else {
        o.size -= size;
        change(o.side, o.px, -static_cast<int64_t>(size), row);
      }
      break;
    }
    case 'M': {
      if (it == orders_.end()) {  // MboBook: a modify of an unknown order is an add
        if (side == 0 || size == 0 || e.px == kEmptyPx) break;
        orders_[e.order_id] = Order{e.px, row, size, side};
        change(side, e.px, size, row);
        break;
      }
      Order& o = it->second;
      if (size == 0 || e.px == kEmptyPx) {  // removed
        track(o, o.size);
        change(o.side, o.px, -static_cast<int64_t>(o.size), row);
        orders_.erase(it);
        break;
      }
      const int8_t new_side = side != 0 ? side : o.side;
      const bool cpu_loses = e.px != o.px || e.sz > o.size;  // L3Queue::on_event
      if (!cpu_loses && new_side != o.side) {
        status = UsageError(
            "order event at {} ns moves order {} to the other side at its price: the GPU "
            "lanes' L3 queues cannot follow it",
            e.ts_ns, e.order_id);
      }
      if (cpu_loses) {
        track(o, o.size);
      } else {
        track(o, static_cast<double>(o.size) - e.sz);
      }
      if (new_side != o.side || e.px != o.px || size > o.size) {  // to the back of a level
        change(o.side, o.px, -static_cast<int64_t>(o.size), row);
        o.side = new_side;
        o.px = e.px;
        o.size = size;
        o.seq = row;
        change(o.side, o.px, size, row);
      } else {  // keeps its place
        change(o.side, o.px, -static_cast<int64_t>(o.size - size), row);
        o.size = size;
      }
      break;
    }
    case 'R':
      item->kind = kLaneOrderClear;
      clear(row);
      break;
    default:  // T, F, N and anything else: the book does not change
      break;
  }
  return status;
}

void LaneL3Annotator::finish(std::vector<LaneL3Level>* levels, std::vector<uint64_t>* rows,
                             std::vector<double>* sizes) const {
  levels->clear();
  rows->clear();
  sizes->clear();
  for (const auto& [key, l] : levels_) {  // std::map: sorted by (side, px)
    if (l.hist.empty()) continue;
    LaneL3Level out;
    out.side = key.first;
    out.px = key.second;
    out.begin = rows->size();
    for (const auto& [row, total] : l.hist) {
      rows->push_back(row);
      sizes->push_back(total);
    }
    out.end = rows->size();
    levels->push_back(out);
  }
}

}  // namespace fxt::sim
