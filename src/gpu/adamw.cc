// Host helpers of the GPU AdamW that need the model's types (C++20): ParamSpec -> segments.
#include <cassert>

#include "gpu/adamw.h"
#include "model/mamba2.h"  // ParamSpec

namespace fxt::gpu {

std::vector<AdamSegment> segments_from_specs(const std::vector<model::ParamSpec>& specs,
                                             const std::vector<double>& lr_multipliers) {
  assert(lr_multipliers.empty() || lr_multipliers.size() == specs.size());
  std::vector<AdamSegment> out;
  out.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    AdamSegment s;
    s.offset = specs[i].offset;
    s.size = specs[i].size;
    s.weight_decay = specs[i].weight_decay;
    s.lr_multiplier = lr_multipliers.empty() ? 1.0 : lr_multipliers[i];
    out.push_back(s);
  }
  return out;
}

}  // namespace fxt::gpu
