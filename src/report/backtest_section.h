// The backtest section of `fxt report`: stats.json, the equity and fills of each queue model's run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "report/report.h"
#include "report/section_util.h"

namespace fxt::report {

Result<std::string> backtest_html(const std::string& dir, const std::string& sid,
                                  const ReportOptions& opt, Headline* headline);

}  // namespace fxt::report
