#include "train/optimizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <set>

namespace fxt {

// ---- schedule -----------------------------------------------------------------------------------

Status LrSchedule::validate() const {
  if (!(std::isfinite(peak_lr) && peak_lr > 0)) {
    return InvalidInput("learning rate must be positive and finite, got {}", peak_lr);
  }
  if (warmup_steps < 0) return InvalidInput("warm-up steps must be >= 0, got {}", warmup_steps);
  if (total_steps < warmup_steps) {
    return InvalidInput("total steps ({}) must be >= warm-up steps ({})", total_steps,
                        warmup_steps);
  }
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) {
    return InvalidInput("min_lr_ratio must be in [0, 1], got {}", min_lr_ratio);
  }
  return Status::Ok();
}

double LrSchedule::lr_at(int64_t step) const {
  if (step < 0) step = 0;
  if (step < warmup_steps) {
    return peak_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  if (step >= total_steps) return peak_lr * min_lr_ratio;  // also when T == W
  const double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return peak_lr * (min_lr_ratio + (1.0 - min_lr_ratio) * cosine);
}

// ---- config -------------------------------------------------------------------------------------

Status AdamWConfig::validate() const {
  if (!(beta1 >= 0 && beta1 < 1)) return InvalidInput("beta1 must be in [0, 1), got {}", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) return InvalidInput("beta2 must be in [0, 1), got {}", beta2);
  if (!(std::isfinite(eps) && eps > 0)) return InvalidInput("eps must be > 0, got {}", eps);
  if (!(std::isfinite(weight_decay) && weight_decay >= 0)) {
    return InvalidInput("weight decay must be >= 0, got {}", weight_decay);
  }
  if (std::isnan(max_grad_norm)) return InvalidInput("max grad norm is NaN");
  std::set<std::string> seen;
  for (const auto& [group, mult] : group_lr_multipliers) {
    if (!(std::isfinite(mult) && mult >= 0)) {
      return InvalidInput("learning-rate multiplier of group '{}' must be >= 0, got {}", group,
                          mult);
    }
    if (!seen.insert(group).second) {
      return InvalidInput("learning-rate multiplier of group '{}' given twice", group);
    }
  }
  return Status::Ok();
}

double AdamWConfig::multiplier(const std::string& group) const {
  for (const auto& [name, mult] : group_lr_multipliers) {
    if (name == group) return mult;
  }
  return 1.0;
}

// ---- AdamW --------------------------------------------------------------------------------------

AdamW::AdamW(AdamWConfig cfg) : cfg_(std::move(cfg)) {
  assert(cfg_.validate().ok());
}

Status AdamW::add_params(std::span<float> params, std::span<float> grads,
                         std::vector<model::ParamSpec> specs, std::vector<std::string> groups) {
  if (params.size() != grads.size()) {
    return InvalidInput("parameter buffer has {} elements but gradient buffer {}", params.size(),
                        grads.size());
  }
  if (!groups.empty() && groups.size() != specs.size()) {
    return InvalidInput("{} group names for {} parameter tensors", groups.size(), specs.size());
  }
  std::set<std::string> names;
  for (const Buffer& b : buffers_) {
    for (const model::ParamSpec& s : b.specs) names.insert(s.name);
  }
  std::vector<std::pair<size_t, size_t>> ranges;  // [offset, end) to detect overlaps
  for (const model::ParamSpec& s : specs) {
    if (s.name.empty()) return InvalidInput("parameter tensor without a name");
    if (!names.insert(s.name).second)
      return InvalidInput("parameter '{}' registered twice", s.name);
    size_t numel = 1;
    for (int d : s.shape) {
      if (d < 0) return InvalidInput("parameter '{}' has a negative dimension", s.name);
      numel *= static_cast<size_t>(d);
    }
    if (numel != s.size) {
      return InvalidInput("parameter '{}' has size {} but shape of {} elements", s.name, s.size,
                          numel);
    }
    if (s.offset > params.size() || s.size > params.size() - s.offset) {
      return InvalidInput("parameter '{}' [{}, {}) lies outside the buffer of {} elements", s.name,
                          s.offset, s.offset + s.size, params.size());
    }
    ranges.emplace_back(s.offset, s.offset + s.size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return InvalidInput("parameter tensors overlap at element {}", ranges[i].first);
    }
  }

  Buffer b;
  b.params = params;
  b.grads = grads;
  b.lr_multiplier.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    b.lr_multiplier.push_back(groups.empty() ? cfg_.multiplier("") : cfg_.multiplier(groups[i]));
  }
  b.specs = std::move(specs);
  b.m.assign(params.size(), 0.0f);
  b.v.assign(params.size(), 0.0f);
  buffers_.push_back(std::move(b));
  return Status::Ok();
}

StepStats AdamW::step(double lr) {
  StepStats stats;
  stats.lr = lr;

  // Global norm: serial double accumulation in registration order, so it never depends on
  // threads or scheduling.
  double sum_sq = 0.0;
  for (const Buffer& b : buffers_) {
    for (const model::ParamSpec& s : b.specs) {
      const float* g = b.grads.data() + s.offset;
      for (size_t i = 0; i < s.size; ++i) sum_sq += static_cast<double>(g[i]) * g[i];
    }
  }
  stats.grad_norm = std::sqrt(sum_sq);
  if (!std::isfinite(stats.grad_norm)) return stats;  // skipped: nothing changes

  if (cfg_.max_grad_norm > 0 && stats.grad_norm > cfg_.max_grad_norm) {
    stats.clip_scale = cfg_.max_grad_norm / stats.grad_norm;
    const float scale = static_cast<float>(stats.clip_scale);
    for (Buffer& b : buffers_) {
      for (const model::ParamSpec& s : b.specs) {
        float* g = b.grads.data() + s.offset;
        for (size_t i = 0; i < s.size; ++i) g[i] *= scale;
      }
    }
  }

  ++step_;
  // Step-dependent scalars in double, then the element loop in float (PyTorch's AdamW form:
  // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)).
  const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(step_));
  const float beta1 = static_cast<float>(cfg_.beta1);
  const float beta2 = static_cast<float>(cfg_.beta2);
  const float one_minus_beta1 = static_cast<float>(1.0 - cfg_.beta1);
  const float one_minus_beta2 = static_cast<float>(1.0 - cfg_.beta2);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float eps = static_cast<float>(cfg_.eps);
  for (Buffer& b : buffers_) {
    for (size_t k = 0; k < b.specs.size(); ++k) {
      const model::ParamSpec& s = b.specs[k];
      const double group_lr = lr * b.lr_multiplier[k];
      const float step_size = static_cast<float>(group_lr / bc1);
      const float decay =
          s.weight_decay ? static_cast<float>(1.0 - group_lr * cfg_.weight_decay) : 1.0f;
      float* p = b.params.data() + s.offset;
      const float* g = b.grads.data() + s.offset;
      float* m = b.m.data() + s.offset;
      float* v = b.v.data() + s.offset;
      for (size_t i = 0; i < s.size; ++i) {
        m[i] = beta1 * m[i] + one_minus_beta1 * g[i];
        v[i] = beta2 * v[i] + one_minus_beta2 * g[i] * g[i];
        const float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + eps;
        p[i] = p[i] * decay - step_size * m[i] / denom;
      }
    }
  }
  stats.applied = true;
  return stats;
}

void AdamW::save_state(Checkpoint* ckpt) const {
  ckpt->optimizer["step"] = step_;
  nlohmann::json mult = nlohmann::json::object();
  for (const auto& [group, value] : cfg_.group_lr_multipliers) mult[group] = value;
  ckpt->optimizer["adamw"] = {{"beta1", cfg_.beta1},
                              {"beta2", cfg_.beta2},
                              {"eps", cfg_.eps},
                              {"weight_decay", cfg_.weight_decay},
                              {"max_grad_norm", cfg_.max_grad_norm},
                              {"group_lr_multipliers", mult}};
  for (const Buffer& b : buffers_) {
    for (const model::ParamSpec& s : b.specs) {
      const std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
      ckpt->set_f32(Checkpoint::adam_m_name(s.name), shape,
                    std::span<const float>(b.m.data() + s.offset, s.size));
      ckpt->set_f32(Checkpoint::adam_v_name(s.name), shape,
                    std::span<const float>(b.v.data() + s.offset, s.size));
    }
  }
}

void AdamW::export_state(int64_t* step, std::vector<std::vector<float>>* m,
                         std::vector<std::vector<float>>* v) const {
  *step = step_;
  m->clear();
  v->clear();
  for (const Buffer& b : buffers_) {
    m->push_back(b.m);
    v->push_back(b.v);
  }
}

Status AdamW::import_state(int64_t step, const std::vector<std::vector<float>>& m,
                           const std::vector<std::vector<float>>& v) {
  if (step < 0) return InvalidInput("optimizer state: negative step {}", step);
  if (m.size() != buffers_.size() || v.size() != buffers_.size()) {
    return InvalidInput("optimizer state: {} moment buffers for {} registered", m.size(),
                        buffers_.size());
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (m[i].size() != buffers_[i].m.size() || v[i].size() != buffers_[i].v.size()) {
      return InvalidInput("optimizer state: buffer {} holds {} moments, expected {}", i,
                          m[i].size(), buffers_[i].m.size());
    }
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    buffers_[i].m = m[i];
    buffers_[i].v = v[i];
  }
  step_ = step;
  return Status::Ok();
}

Status AdamW::load_state(const Checkpoint& ckpt) {
  const std::string where = ckpt.source.empty() ? "checkpoint" : ckpt.source;
  const auto it = ckpt.optimizer.find("step");
  if (it == ckpt.optimizer.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return InvalidInput("{}: optimizer section has no non-negative integer 'step'", where);
  }
  const int64_t step = it->get<int64_t>();

  // Read everything into copies first so a failure leaves the optimizer untouched.
  std::vector<std::vector<float>> m(buffers_.size()), v(buffers_.size());
  for (size_t bi = 0; bi < buffers_.size(); ++bi) {
    const Buffer& b = buffers_[bi];
    m[bi] = b.m;
    v[bi] = b.v;
    for (const model::ParamSpec& s : b.specs) {
      const std::vector<int64_t> shape(s.shape.begin(), s.shape.end());
      FXT_RETURN_IF_ERROR(ckpt.read_f32_into(Checkpoint::adam_m_name(s.name), shape,
                                             std::span<float>(m[bi].data() + s.offset, s.size)));
      FXT_RETURN_IF_ERROR(ckpt.read_f32_into(Checkpoint::adam_v_name(s.name), shape,
                                             std::span<float>(v[bi].data() + s.offset, s.size)));
    }
  }
  for (size_t bi = 0; bi < buffers_.size(); ++bi) {
    buffers_[bi].m = std::move(m[bi]);
    buffers_[bi].v = std::move(v[bi]);
  }
  step_ = step;
  return Status::Ok();
}

}  // namespace fxt
