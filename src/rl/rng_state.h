// An Rng's state as four 64-bit words and back: how a saved training run (rl/resume.h) and the
// envs' lane records (VecEnv::save_lanes) keep their random streams, so a resumed run draws
// exactly what the uninterrupted one would. Host code.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <type_traits>

#include "core/random.h"

namespace fxt::rl {

// xoshiro256**'s state is its whole object representation.
static_assert(std::is_trivially_copyable_v<Rng> && sizeof(Rng) == sizeof(std::array<uint64_t, 4>));

inline std::array<uint64_t, 4> rng_words(const Rng& rng) {
  return std::bit_cast<std::array<uint64_t, 4>>(rng);
}

// An Rng positioned where the one that gave `w` (rng_words) was.
inline Rng rng_from_words(std::span<const uint64_t, 4> w) {
  return std::bit_cast<Rng>(std::array<uint64_t, 4>{w[0], w[1], w[2], w[3]});
}

}  // namespace fxt::rl
