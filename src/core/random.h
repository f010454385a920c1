// Seeded random numbers whose streams are the same on every platform and standard library
// (std:: distributions are not): one generator family for synth, sampling and bootstrap.
// splitmix64 and Rng are compiled for host and device (FXT_HD): a GPU lane seeded like a CPU
// lane draws the same stream. C++17-clean: included by .cu files.
#pragma once

#include <math.h>

#include <cassert>
#include <cstdint>

#include "core/host_device.h"

namespace fxt {

// One splitmix64 step (Steele, Lea, Flood 2014): advances *state, returns the next output.
FXT_HD inline uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// splitmix64 as a stream, with an unbiased-enough bounded draw for bootstrap resampling.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64(&state_); }
  // Uniform in [0, n), n > 0 (multiply-shift; bias below n / 2^64).
  uint64_t below(uint64_t n) {
    assert(n > 0);
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// xoshiro256** (Blackman, Vigna), its state seeded by four splitmix64 outputs of `seed`.
class Rng {
 public:
  FXT_HD explicit Rng(uint64_t seed) {
    for (auto& s : s_) s = splitmix64(&seed);
  }
  FXT_HD uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (rejection).
  FXT_HD uint64_t uniform(uint64_t bound) {
    // Reject the lowest (2^64 mod bound) values so every residue is equally likely.
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  FXT_HD double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  FXT_HD double uniform_real(double lo, double hi) { return lo + (hi - lo) * unit(); }
  // A standard normal by the Marsaglia polar method on unit() (two uniforms in (−1, 1)²,
  // rejected outside the unit disc; one of the pair is returned, the other dropped, so the
  // stream position depends only on the number of calls and rejections): the draw of
  // sim::standard_normal. On the device, log may differ from glibc's by an ulp (sqrt and the
  // rest are correctly rounded on both), so results agree to ~1e-15 relative, not bit for bit.
  FXT_HD double normal() {
    for (;;) {
      const double u = 2.0 * unit() - 1.0;
      const double v = 2.0 * unit() - 1.0;
      const double s = u * u + v * v;
      if (s > 0 && s < 1) return u * sqrt(-2.0 * log(s) / s);
    }
  }

 private:
  FXT_HD static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace fxt
