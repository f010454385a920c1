// Seeded random numbers whose streams are the same on every platform and standard library
// (std:: distributions are not): one generator family for synth, sampling and bootstrap.
#pragma once

#include <cassert>
#include <cstdint>

namespace fxt {

// One splitmix64 step (Steele, Lea, Flood 2014): advances *state, returns the next output.
inline uint64_t splitmix64(uint64_t* state) {
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
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) s = splitmix64(&seed);
  }
  uint64_t next() {
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
  uint64_t uniform(uint64_t bound) {
    // Reject the lowest (2^64 mod bound) values so every residue is equally likely.
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  double uniform_real(double lo, double hi) { return lo + (hi - lo) * unit(); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace fxt
