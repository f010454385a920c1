// The training-run section of `fxt report`: the epochs of metrics.jsonl, run.json's settings and,
// when the run directory holds one, its eval.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "report/report.h"
#include "report/section_util.h"

namespace fxt::report {

// The lines of a metrics.jsonl file, each a JSON object (one-line errors with the line number).
Result<std::vector<nlohmann::json>> read_metrics_jsonl(const std::string& path);
Result<std::string> train_html(const std::string& dir, const std::string& sid, Headline* headline);

}  // namespace fxt::report
