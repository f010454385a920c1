// Latency: constants, the recorded-file curve (interpolation, clamping) and one-line
// errors naming file:line for bad files.
#include "sim/latency.h"

#include <cstdio>

#include <gtest/gtest.h>

#include "test_util.h"

namespace fxt::sim {
namespace {

std::string write(const std::string& text) {
  static int n = 0;
  const std::string path = fxt::test::scratch_dir() + "/lat" + std::to_string(n++) + ".csv";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

TEST(Latency, Constant) {
  LatencyConfig c;
  c.feed_ns = 5;
  c.entry_ns = 100;
  c.response_ns = 30;
  auto m = LatencyModel::create(c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->feed_ns(), 5);
  EXPECT_EQ(m->entry_ns(0), 100);
  EXPECT_EQ(m->entry_ns(1'000'000), 100);
  EXPECT_EQ(m->response_ns(42), 30);
  c.entry_ns = -1;
  auto bad = LatencyModel::create(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
}

TEST(Latency, FileInterpolatesAndClamps) {
  LatencyConfig c;
  c.feed_ns = 7;
  c.file = write("ts_ns,entry_ns,response_ns\r\n1000,100,50\r\n2000,300,50\r\n\r\n4000,100,150\n");
  auto m = LatencyModel::create(c);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->samples(), 3u);
  EXPECT_EQ(m->feed_ns(), 7);
  EXPECT_EQ(m->entry_ns(0), 100);  // clamped before the first sample
  EXPECT_EQ(m->entry_ns(1000), 100);
  EXPECT_EQ(m->entry_ns(1500), 200);  // halfway 100 -> 300
  EXPECT_EQ(m->entry_ns(1250), 150);
  EXPECT_EQ(m->entry_ns(2000), 300);
  EXPECT_EQ(m->entry_ns(3000), 200);  // halfway 300 -> 100
  EXPECT_EQ(m->entry_ns(9000), 100);  // clamped after the last
  EXPECT_EQ(m->response_ns(1999), 50);
  EXPECT_EQ(m->response_ns(3000), 100);
  EXPECT_EQ(m->response_ns(3001), 100);  // 50 + 100·1001/2000 = 100.05 -> 100
  EXPECT_EQ(m->response_ns(3010), 101);  // 100.5 rounds away from zero
}

TEST(Latency, BadFilesNameFileAndLine) {
  struct Case {
    const char* text;
    const char* expect;  // substring of the message after "path:"
  };
  const Case cases[] = {
      {"ts,entry,response\n1,2,3\n", "1: expected the header"},
      {"ts_ns,entry_ns,response_ns\n1,2,3\n2,x,3\n", "3: expected three integers"},
      {"ts_ns,entry_ns,response_ns\n1,2\n", "2: expected three integers"},
      {"ts_ns,entry_ns,response_ns\n1,2,3,4\n", "2: expected three integers"},
      {"ts_ns,entry_ns,response_ns\n1,2,-3\n", "2: latencies must be >= 0"},
      {"ts_ns,entry_ns,response_ns\n5,2,3\n5,2,3\n", "3: ts_ns must increase"},
      {"ts_ns,entry_ns,response_ns\n", "2: expected at least one"},
      {"", "1: expected the header"},
  };
  for (const Case& k : cases) {
    const std::string path = write(k.text);
    auto m = LatencyModel::load_file(path, 0);
    ASSERT_FALSE(m.ok()) << k.text;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(m.status().message().find(path + ":" + k.expect), 0u) << m.status().message();
    EXPECT_EQ(m.status().message().find('\n'), std::string::npos);
  }
  auto missing = LatencyModel::load_file("/nonexistent/lat.csv", 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fxt::sim
