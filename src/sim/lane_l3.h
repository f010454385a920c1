// L3 FIFO queues on the GPU lanes (DESIGN §7.5, docs/SWEEP.md "L3 queues on the lanes"): host
// preprocessing of an MBO store's order events, once per run, so that a lane keeps only a
// size ahead, a pending traded volume and a join sequence per order.
//
// The annotator applies the order events, in the replay engine's order, to the same MboBook the
// CPU exchange keeps (through data/mbo_book.h's mbo_record), and gives every resting order a
// priority sequence: the global stream row at which it got its place in its level (an add, a
// modify that loses priority). An order of ours that joins a level at stream row J (rows < J
// applied) has ahead of it exactly the orders resting there with sequence < J, and their total
// size is the level's size history looked up at J. Each order-event row is annotated with what
// L3Queue::on_event would do to an order that has the event's order ahead of it: the level
// (side, price) the order rested at before the event, its sequence, and the amount to reduce
// the size ahead by — C: min(size, cancelled); M at another price, a larger size or size 0:
// the whole size (priority lost); M smaller: size - new size; A of a resting id: the whole
// size; R: clear every queue. Trades, fills and unknown ids change nothing.
//
// Where the CPU's per-order bookkeeping and the book would disagree the annotator gives the
// order a fresh sequence (an ignored re-add of a resting id: the CPU drops it from the queues,
// the book keeps it) or refuses the store (a modify that moves an order to the other side at
// the same price without growing it: the CPU keeps it ahead, the book moves it; sizes that are
// not whole numbers in [0, 2^32), which the record rounds): the lanes are exact or not run.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "data/book.h"
#include "data/mbo_book.h"
#include "sim/lane_engine.h"

namespace fxt::sim {

class LaneL3Annotator {
 public:
  // A new session (store): the book starts empty. `row`: the stream row of its first row.
  void begin_session(uint64_t row);
  // Order event `e` at stream row `row` (rows increase): annotates *item (kind, side, px, sz,
  // snapshot) and applies the event to the book. An event the lanes cannot follow exactly
  // returns an error (the item is still annotated).
  Status apply(const OrderEvent& e, uint64_t row, LaneItem* item);
  // The level histories, sorted by (side, px), into the stream's arrays.
  void finish(std::vector<LaneL3Level>* levels, std::vector<uint64_t>* rows,
              std::vector<double>* sizes) const;

 private:
  using Key = std::pair<int8_t, int64_t>;  // (side, px)
  // Appends the level's total after `row` to its history when it changed.
  void record(int8_t side, int64_t px, uint64_t row);
  // Every level that holds something ends at 0 at `row` (a clear or a new session).
  void record_cleared(uint64_t row);

  std::unique_ptr<MboBook> book_ = std::make_unique<MboBook>(nullptr);
  std::unordered_map<uint64_t, uint64_t> seq_;                       // resting id -> sequence
  std::map<Key, std::vector<std::pair<uint64_t, double>>> history_;  // (row, total after it)
};

}  // namespace fxt::sim
