// The cross-validation section of `fxt report`: cv.json of `fxt cv` (docs/CV.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "report/report.h"
#include "report/section_util.h"

namespace fxt::report {

Result<std::string> cv_html(const std::string& dir, const std::string& sid, Headline* headline);

}  // namespace fxt::report
