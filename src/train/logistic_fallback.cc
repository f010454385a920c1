// The logistic fallback (see logistic_fallback.h).
#include "train/logistic_fallback.h"

#include <algorithm>
#include <cmath>

#include "train/scoring.h"

namespace fxt::train_detail {

nlohmann::json LogisticStart::to_json() const {
  nlohmann::json v = nlohmann::json::array();
  for (double x : val) v.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json());
  nlohmann::json j = {{"skip_w", skip_w}, {"bias", bias}, {"val", v}};
  if (!ple_w.empty()) j["ple_w"] = ple_w;
  return j;
}

Result<LogisticStart> LogisticStart::from_json(const nlohmann::json& j, int horizons, int features,
                                               const std::string& where, int ple_bins) {
  LogisticStart s;
  try {
    s.skip_w = j.at("skip_w").get<std::vector<float>>();
    s.bias = j.at("bias").get<std::vector<float>>();
    if (j.contains("ple_w")) s.ple_w = j.at("ple_w").get<std::vector<float>>();
    // A NaN validation value is stored as null (JSON holds no NaN).
    for (const nlohmann::json& v : j.at("val")) {
      s.val.push_back(v.is_null() ? std::nan("") : v.get<double>());
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: bad meta.logistic_start: {}", where, e.what());
  }
  const auto h = static_cast<size_t>(horizons);
  if (s.skip_w.size() != h * static_cast<size_t>(features) || s.bias.size() != h ||
      s.val.size() != h) {
    return InvalidInput("{}: meta.logistic_start holds {} weights, {} biases and {} values for {} "
                        "horizons of {} features",
                        where, s.skip_w.size(), s.bias.size(), s.val.size(), horizons, features);
  }
  const size_t ple = h * static_cast<size_t>(features) * static_cast<size_t>(ple_bins);
  if (s.ple_w.size() != ple) {
    return InvalidInput("{}: meta.logistic_start holds {} PLE weights, expected {}", where,
                        s.ple_w.size(), ple);
  }
  for (const std::vector<float>* v : {&s.skip_w, &s.ple_w}) {
    for (float w : *v) {
      if (!std::isfinite(w)) {
        return InvalidInput("{}: meta.logistic_start: non-finite weight", where);
      }
    }
  }
  for (float b : s.bias) {
    if (!std::isfinite(b)) return InvalidInput("{}: meta.logistic_start: non-finite bias", where);
  }
  return s;
}

std::vector<double> per_horizon_values(const ValResult& val, const StopMetric& stop) {
  if (stop.lower_is_better) return val.loss_h;
  std::vector<double> v;
  for (const auto& h : val.metrics.horizons) v.push_back(h.auc);
  return v;
}

LogisticStart capture_logistic_start(const model::PerceptionConfig& pc,
                                     const std::vector<float>& params, const ValResult& val0,
                                     const StopMetric& stop) {
  const model::PerceptionLayout l = model::perception_layout(pc);
  const auto nh = static_cast<size_t>(pc.horizons), f = static_cast<size_t>(pc.features);
  LogisticStart s;
  s.skip_w.assign(params.begin() + static_cast<std::ptrdiff_t>(l.skip_w),
                  params.begin() + static_cast<std::ptrdiff_t>(l.skip_w + nh * f));
  for (size_t j = 0; j < nh; ++j) {
    s.bias.push_back(params[l.heads + j * static_cast<size_t>(l.head.size) +
                            static_cast<size_t>(l.head.bs)]);
  }
  if (pc.ple_bins > 0) {
    const size_t width = nh * f * static_cast<size_t>(pc.ple_bins);
    s.ple_w.assign(params.begin() + static_cast<std::ptrdiff_t>(l.ple_w),
                   params.begin() + static_cast<std::ptrdiff_t>(l.ple_w + width));
  }
  s.val = per_horizon_values(val0, stop);
  return s;
}

HeadChoice choose_heads(const LogisticStart& start, const ValResult& val, const StopMetric& stop) {
  const std::vector<double> trained = per_horizon_values(val, stop);
  HeadChoice c;
  c.logistic.assign(trained.size(), false);
  std::vector<double> composed(trained.size());
  for (size_t h = 0; h < trained.size(); ++h) {
    const double t = trained[h], s = start.val[h];
    // The start wins where it is strictly better, or where the trained value is undefined.
    const bool better = stop.lower_is_better ? s < t : s > t;
    c.logistic[h] = std::isfinite(s) && (!std::isfinite(t) || better);
    composed[h] = c.logistic[h] ? s : t;
  }
  if (stop.horizon_index >= 0) {
    c.value = composed[static_cast<size_t>(stop.horizon_index)];
    return c;
  }
  double sum = 0.0;
  int defined = 0;
  for (double v : composed) {
    if (std::isfinite(v)) {
      sum += v;
      ++defined;
    }
  }
  c.value = defined > 0 ? sum / defined : std::nan("");
  return c;
}

std::vector<float> with_logistic_heads(const model::PerceptionConfig& pc,
                                       const std::vector<float>& params,
                                       const LogisticStart& start,
                                       const std::vector<bool>& logistic) {
  const model::PerceptionLayout l = model::perception_layout(pc);
  const auto f = static_cast<size_t>(pc.features);
  std::vector<float> p = params;
  for (size_t j = 0; j < logistic.size(); ++j) {
    if (!logistic[j]) continue;
    std::copy_n(start.skip_w.begin() + static_cast<std::ptrdiff_t>(j * f), f,
                p.begin() + static_cast<std::ptrdiff_t>(l.skip_w + j * f));
    float* head = p.data() + l.heads + j * static_cast<size_t>(l.head.size);
    // m = w_m·z2 + b_m = 0 and the trunk's w_s·s = 0: the logit is skip.weight·x + b_s.
    model::head_silence(l.head, head);
    head[l.head.bs] = start.bias[j];
    if (pc.snapshot_heads) {
      // The snapshot head falls silent too: its m, w_s·x and b_s are 0.
      float* xh = p.data() + l.xheads + j * static_cast<size_t>(l.xhead.size);
      model::head_silence(l.xhead, xh);
      xh[l.xhead.bs] = 0.0f;
    }
    if (pc.ple_bins > 0) {
      // The PLE path's row goes back to the start's too (0 after a logistic start, the GAM's
      // shape after a GAM start).
      const size_t width = f * static_cast<size_t>(pc.ple_bins);
      const auto at = static_cast<std::ptrdiff_t>(l.ple_w + j * width);
      if (start.ple_w.empty()) {
        std::fill_n(p.begin() + at, width, 0.0f);
      } else {
        std::copy_n(start.ple_w.begin() + static_cast<std::ptrdiff_t>(j * width), width,
                    p.begin() + at);
      }
    }
  }
  return p;
}

}  // namespace fxt::train_detail
