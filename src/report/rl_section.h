// The reinforcement-learning section of `fxt report` (docs/RL.md): the learning curve and the
// policy against its closed form.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "report/report.h"
#include "report/section_util.h"

namespace fxt::report {

Result<std::string> rl_html(const std::string& dir, const std::string& sid, Headline* headline);

}  // namespace fxt::report
