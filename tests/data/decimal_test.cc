// Exact decimal text <-> int64 fixed point.
#include "data/decimal.h"

#include <limits>
#include <string>

#include "test_util.h"

namespace fxt {
namespace {

int64_t ok9(const char* s) {
  Result<int64_t> r = parse_decimal_e9(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().message();
  return r.ok() ? *r : -1;
}

std::string err(std::string_view s, int scale = 9) {
  Result<int64_t> r = parse_decimal(s, scale);
  EXPECT_FALSE(r.ok()) << s;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  return r.status().message();
}

TEST(Decimal, ParsesExactly) {
  EXPECT_EQ(ok9("61837.63000000"), 61837630000000);
  EXPECT_EQ(ok9("0.00000000"), 0);
  EXPECT_EQ(ok9("0.014"), 14000000);
  EXPECT_EQ(ok9("3.78826000"), 3788260000);
  EXPECT_EQ(ok9("0.000000001"), 1);
  EXPECT_EQ(ok9("1"), 1000000000);
  EXPECT_EQ(ok9("-2.5"), -2500000000);
  EXPECT_EQ(ok9("-0"), 0);
  EXPECT_EQ(ok9("007.10"), 7100000000);
  // Digits past the 9th decimal are accepted only when they are zeros.
  EXPECT_EQ(ok9("1.1234567890000"), 1123456789);
  EXPECT_EQ(parse_decimal("34200.004241176", 9).value(), 34200004241176);
  EXPECT_EQ(parse_decimal("34200.00426064", 9).value(), 34200004260640);
  EXPECT_EQ(parse_decimal("12.34", 2).value(), 1234);
  EXPECT_EQ(parse_decimal("12", 0).value(), 12);
}

TEST(Decimal, Int64Limits) {
  EXPECT_EQ(parse_decimal("9223372036.854775807", 9).value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parse_decimal("-9223372036.854775808", 9).value(), std::numeric_limits<int64_t>::min());
  EXPECT_NE(err("9223372036.854775808").find("out of range"), std::string::npos);
  EXPECT_NE(err("9223372037").find("out of range"), std::string::npos);
  EXPECT_NE(err("99999999999999999999999").find("out of range"), std::string::npos);
  EXPECT_EQ(parse_int64("-9223372036854775808").value(), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(parse_int64("9223372036854775808").ok());
}

TEST(Decimal, RejectsBadSyntaxWithAClearMessage) {
  EXPECT_NE(err("1.0000000001").find("more than 9 decimals"), std::string::npos);
  EXPECT_NE(err("1.5", 0).find("more than 0 decimals"), std::string::npos);
  EXPECT_NE(err("").find("empty"), std::string::npos);
  EXPECT_EQ(err("1e5"), "\"1e5\": unexpected 'e' at offset 1, expected a decimal number");
  EXPECT_NE(err("+1").find("unexpected '+'"), std::string::npos);
  EXPECT_NE(err(" 1").find("unexpected ' '"), std::string::npos);
  EXPECT_NE(err("1 ").find("unexpected ' '"), std::string::npos);
  EXPECT_NE(err("1.2.3").find("unexpected '.' at offset 3"), std::string::npos);
  EXPECT_NE(err(".5").find("a digit before the decimal point"), std::string::npos);
  EXPECT_NE(err("-").find("a digit before the decimal point"), std::string::npos);
  EXPECT_NE(err("5.").find("a digit after the decimal point"), std::string::npos);
  EXPECT_NE(err("1,5").find("unexpected ','"), std::string::npos);
  EXPECT_NE(err("0x10").find("unexpected 'x'"), std::string::npos);
  EXPECT_FALSE(parse_int64("1.0").ok());
  EXPECT_FALSE(parse_int64("").ok());
  EXPECT_EQ(parse_decimal("1", 19).status().code(), StatusCode::kInternal);
}

TEST(Decimal, FastFormsAgree) {
  for (const char* s : {"1", "0.1", "-3.25", "1.0000000001", "abc", "", "99999999999"}) {
    int64_t fast = 0;
    Result<int64_t> slow = parse_decimal_e9(s);
    EXPECT_EQ(parse_decimal_fast(s, 9, &fast), slow.ok()) << s;
    if (slow.ok()) {
      EXPECT_EQ(fast, *slow) << s;
    }
  }
}

TEST(Decimal, FormatRoundTrips) {
  EXPECT_EQ(format_decimal(61837630000000, 9), "61837.63");
  EXPECT_EQ(format_decimal(1, 9), "0.000000001");
  EXPECT_EQ(format_decimal(-2500000000, 9), "-2.5");
  EXPECT_EQ(format_decimal(5, 0), "5");
  EXPECT_EQ(format_decimal(std::numeric_limits<int64_t>::min(), 9), "-9223372036.854775808");
  for (const char* s : {"0.014", "61800.3", "-0.5", "123456789.987654321"}) {
    EXPECT_EQ(format_decimal(ok9(s), 9), s);
  }
}

TEST(Decimal, DoubleConversionIsNearest) {
  for (const char* s : {"0.014", "3.78826", "0.1", "61837.63", "0.000000001", "1234.567891"}) {
    EXPECT_EQ(e9_to_double(ok9(s)), std::stod(s)) << s;
  }
}

}  // namespace
}  // namespace fxt
