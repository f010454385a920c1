// core/precision.h: the names --precision, run.json and the bench JSON use, and each mode's
// input rounding bound (the unit of the GPU parity tests' tolerances).
#include "core/precision.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <gtest/gtest.h>

namespace fxt {
namespace {

TEST(Precision, NamesRoundTrip) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    const std::optional<Precision> back = precision_from_name(precision_name(p));
    ASSERT_TRUE(back.has_value()) << precision_name(p);
    EXPECT_EQ(*back, p) << precision_name(p);
  }
  EXPECT_STREQ(precision_name(Precision::kFp32), "fp32");
  EXPECT_STREQ(precision_name(Precision::kTf32), "tf32");
  EXPECT_STREQ(precision_name(Precision::kBf16), "bf16");
}

TEST(Precision, UnknownNamesAreRefused) {
  for (const char* s : {"", "fp16", "BF16", "bf16 ", "tf32x", "fp64", "bfloat16"}) {
    EXPECT_FALSE(precision_from_name(s).has_value()) << "'" << s << "'";
  }
}

// One unit in the last kept place for TF32 (11 significant bits, may truncate), half a unit for
// BF16 (8 significant bits, rounded to nearest even), FP32's own rounding: ordered coarsest last.
TEST(Precision, InputErrorOfEachFormat) {
  EXPECT_EQ(precision_input_error(Precision::kFp32), std::ldexp(1.0, -24));
  EXPECT_EQ(precision_input_error(Precision::kTf32), std::ldexp(1.0, -10));
  EXPECT_EQ(precision_input_error(Precision::kBf16), std::ldexp(1.0, -8));
  EXPECT_LT(precision_input_error(Precision::kTf32), precision_input_error(Precision::kBf16));
}

// The BF16 bound on real values: x rounded to 8 significant bits (to nearest even) is within
// 2^-8 |x|, and the bound is reached at a tie.
TEST(Precision, Bf16BoundHoldsForRoundToNearest) {
  const double e = precision_input_error(Precision::kBf16);
  double worst = 0.0;
  for (int i = 1; i < 5000; ++i) {
    const double x = 1.0 + i / 4096.0 + std::ldexp(1.0, -20) * (i % 7);
    int ex = 0;
    const double f = std::frexp(x, &ex);  // x = f 2^ex, f in [0.5, 1)
    const double r = std::ldexp(std::nearbyint(std::ldexp(f, 8)), ex - 8);  // 8 bits, nearest even
    worst = std::max(worst, std::abs(r - x) / std::abs(x));
  }
  EXPECT_LE(worst, e);
  EXPECT_GT(worst, 0.9 * e);
}

}  // namespace
}  // namespace fxt
