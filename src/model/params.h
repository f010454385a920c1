// Named parameter tensors of a whole model inside one flat buffer.
//
// A model keeps all its parameters in one contiguous buffer (llm.c style) and its gradients in a
// second buffer of identical layout. ModelParamSpec names each tensor for checkpoints and tells
// the optimizer whether to decay it and which learning-rate group it belongs to. The per-block
// ParamSpec (name, offset, size, shape, decay) is declared with the Mamba2 block; this header
// adds the group tag and lookups over a list of specs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/mamba2.h"  // ParamSpec

namespace fxt::model {

// Parameter groups of the perception model (docs/MODEL.md):
//   "mamba"  variable selection, both Mamba2 blocks and both LayerNorms
//   "cfc"    attention-pool query and the CfC cell
//   "heads"  the H gated residual heads
inline constexpr std::string_view kGroupMamba = "mamba";
inline constexpr std::string_view kGroupCfc = "cfc";
inline constexpr std::string_view kGroupHeads = "heads";

struct ModelParamSpec : ParamSpec {
  std::string group;  // one of the kGroup* names
};

// Sum of the sizes; equals the buffer size when the specs tile it.
inline std::size_t total_param_count(const std::vector<ModelParamSpec>& specs) {
  std::size_t n = 0;
  for (const ModelParamSpec& s : specs) n += s.size;
  return n;
}

// The spec named `name`, or nullptr.
inline const ModelParamSpec* find_param(const std::vector<ModelParamSpec>& specs,
                                        std::string_view name) {
  for (const ModelParamSpec& s : specs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace fxt::model
