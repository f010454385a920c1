// The synthetic market's ceiling in `fxt report`: the "oracle" object of an `fxt eval` or
// `fxt cv` JSON (train/comparison.h compare_with_oracle, train/oracle_rows.h) as a table — the
// oracle, the model, the stacked model and the best baseline on the oracle's rows, and the
// share of the baseline-to-oracle gap the model recovers, each with its interval — and a chart
// of the four AUCs per horizon. Real data has no oracle: the section is then empty.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fxt::report {

// "" when `oracle` is not an object with horizons. `which` names the rows ("test rows",
// "pooled test rows"); ids start with `sid`.
std::string oracle_html(const nlohmann::json& oracle, const std::string& sid,
                        const std::string& which);

}  // namespace fxt::report
