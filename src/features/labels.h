// Direction labels of DESIGN §2.5: does the mid move up or down h snapshots ahead?
//
// For horizon h and snapshot t: y = 1 if mid(t+h) > mid(t), 0 if lower. The label is
// masked (mask = 0) when the mids are equal, when either mid is undefined (an empty side),
// when either book is crossed or locked, when t+h is past the end of the store, and, with
// min_move_ticks > 0, when |mid(t+h) - mid(t)| < min_move_ticks ticks. Mids are compared
// exactly as integer bid+ask sums. Labels never look past their own store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/store.h"

namespace fxt {

constexpr int kMaxHorizons = 8;

struct LabelConfig {
  std::vector<int> horizons = {30, 100, 300, 1000, 6000};  // snapshots, 1-8 of them
  int64_t min_move_ticks = 0;
};

// n x H row-major; y is 0/1 (0 where masked), mask is 1 where y is a real label.
struct Labels {
  int horizons = 0;
  std::vector<uint8_t> y, mask;
};

Status validate_label_config(const LabelConfig& config);
Status compute_labels(const StoreReader& store, const LabelConfig& config, Labels* out);

// "30,100,300" -> {30, 100, 300}; checks count 1-8 and each horizon >= 1.
Result<std::vector<int>> parse_horizons(const std::string& text);

}  // namespace fxt
