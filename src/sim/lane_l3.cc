#include "sim/lane_l3.h"

#include <cmath>

#include "sim/fill_rules.h"  // fifo_ahead_cut

namespace fxt::sim {

void LaneL3Annotator::record(int8_t side, int64_t px, uint64_t row) {
  auto& hist = history_[{side, px}];
  const double total = static_cast<double>(book_->level_size(side, px));
  if (hist.empty() ? total != 0 : hist.back().second != total) hist.emplace_back(row, total);
}

void LaneL3Annotator::record_cleared(uint64_t row) {
  for (auto& [key, hist] : history_)
    if (!hist.empty() && hist.back().second != 0) hist.emplace_back(row, 0.0);
}

void LaneL3Annotator::begin_session(uint64_t row) {
  book_ = std::make_unique<MboBook>(nullptr);  // Exchange::begin_session: a new, empty book
  seq_.clear();
  record_cleared(row);
}

Status LaneL3Annotator::apply(const OrderEvent& e, uint64_t row, LaneItem* item) {
  item->kind = e.action == 'R' ? kLaneOrderClear : kLaneOrderEvent;
  item->side = 0;  // tracked by nobody unless set below
  item->px = 0;
  item->sz = 0;
  item->snapshot = kLaneNoSeq;
  Status status = Status::Ok();
  if (!(e.sz >= 0 && e.sz < 4294967296.0 && e.sz == std::floor(e.sz))) {  // mbo_record rounds
    status = UsageError(
        "order event at {} ns has size {}: the GPU lanes' L3 queues need whole sizes in [0, "
        "2^32)",
        e.ts_ns, e.sz);
  }
  const std::optional<OrderPlace> before = book_->order_place(e.order_id);
  if (before) {  // what an order that has this one ahead of it loses (L3Queue::on_event)
    bool behind = false;
    const double amount = fifo_ahead_cut(e.action, e.px, e.sz, before->px,
                                         static_cast<double>(before->size), &behind);
    if (e.action == 'A' || e.action == 'C' || e.action == 'M') {
      item->side = before->side;
      item->px = before->px;
      item->snapshot = seq_.at(e.order_id);
      item->sz = amount;
    }
  }
  book_->apply(mbo_record(e));
  if (e.action == 'R') {
    seq_.clear();
    record_cleared(row);
    return status;
  }
  const std::optional<OrderPlace> after = book_->order_place(e.order_id);
  if (!after) {
    seq_.erase(e.order_id);
  } else if (!before || e.action == 'A' || after->side != before->side ||
             after->px != before->px || after->size > before->size) {
    // A new place at the back of a level; an add of a resting id the book ignores keeps the
    // book's order, but the CPU no longer counts it ahead: a fresh sequence does both.
    seq_[e.order_id] = row;
  }
  if (before && after && after->side != before->side && after->px == before->px &&
      !(e.px != before->px || e.sz > before->size)) {
    status = UsageError(
        "order event at {} ns moves order {} to the other side at its price: the GPU "
        "lanes' L3 queues cannot follow it",
        e.ts_ns, e.order_id);
  }
  if (before) record(before->side, before->px, row);
  if (after && (!before || after->side != before->side || after->px != before->px))
    record(after->side, after->px, row);
  return status;
}

void LaneL3Annotator::finish(std::vector<LaneL3Level>* levels, std::vector<uint64_t>* rows,
                             std::vector<double>* sizes) const {
  levels->clear();
  rows->clear();
  sizes->clear();
  for (const auto& [key, hist] : history_) {  // std::map: sorted by (side, px)
    if (hist.empty()) continue;
    LaneL3Level out;
    out.side = key.first;
    out.px = key.second;
    out.begin = rows->size();
    for (const auto& [r, total] : hist) {
      rows->push_back(r);
      sizes->push_back(total);
    }
    out.end = rows->size();
    levels->push_back(out);
  }
}

}  // namespace fxt::sim
