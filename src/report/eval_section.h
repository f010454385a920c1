// The evaluation section of `fxt report`: an `fxt eval` JSON (model, every baseline and the
// base rate per horizon with bootstrap intervals, the verdict lines, calibration and the oracle).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "report/report.h"
#include "report/section_util.h"

namespace fxt::report {

// One plain verdict line per horizon (train/comparison.h), as a list; "" when there are none.
std::string verdict_html(const nlohmann::json& entries);
// The section of one eval JSON; ids start with `sid`.
std::string eval_html(const nlohmann::json& ev, const std::string& sid, Headline* headline);

}  // namespace fxt::report
