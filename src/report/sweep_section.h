// The parameter-sweep section of `fxt report` (DESIGN §7.5, §9; docs/SWEEP.md): from a sweep
// directory's sweep.json, a heatmap of mean total PnL over two grid keys (the first two [grid]
// keys that vary, unless `axes` names them), the Pareto front (max drawdown against Sharpe, or
// against total PnL when every Sharpe is null), a table of the best lanes and, when the grid varies
// the queue model, each parameter set's queue-model band of total PnL.
// Ids: SID-heatmap, SID-pareto, SID-best, SID-band.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fxt::report {

// The section's HTML and its headline metrics (name, value).
Result<std::string> sweep_html(const std::string& dir, const std::string& sid,
                               const std::vector<std::string>& axes,
                               std::vector<std::pair<std::string, std::string>>* headline);

}  // namespace fxt::report
