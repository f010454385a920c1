// Core utilities: status/result plumbing, exit codes, atomic files, memory maps.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/mapped_file.h"
#include "core/progress.h"
#include "core/status.h"
#include "test_util.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;

Result<int> parse_positive(int v) {
  if (v <= 0) return InvalidInput("value {} at offset {}: expected a positive number", v, 7);
  return v;
}

Status doubled(int v, int* out) {
  FXT_ASSIGN_OR_RETURN(int x, parse_positive(v));
  *out = 2 * x;
  return Status::Ok();
}

TEST(Status, CarriesMessagesAndExitCodes) {
  int out = 0;
  EXPECT_TRUE(doubled(21, &out).ok());
  EXPECT_EQ(out, 42);
  Status s = doubled(-1, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "value -1 at offset 7: expected a positive number");
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_EQ(UsageError("x").exit_code(), 2);
  EXPECT_EQ(NotFound("x").exit_code(), 2);
  EXPECT_EQ(IoError("x").exit_code(), 1);
  EXPECT_EQ(InternalError("x").exit_code(), 1);
  EXPECT_EQ(Status::Ok().exit_code(), 0);
}

TEST(Files, AtomicWriteLeavesNoTemporaryAndCrcMatchesZlib) {
  std::string dir = test::scratch_dir();
  std::string path = dir + "/a.bin";
  {
    auto w = BufferedFileWriter::create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->write("123456789").ok());
    EXPECT_EQ(w->crc32(), 0xCBF43926u);  // the CRC-32 check value
    EXPECT_FALSE(fs::exists(path));      // invisible until committed
    ASSERT_TRUE(w->commit().ok());
  }
  auto r = read_file(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "123456789");
  {
    auto w = BufferedFileWriter::create(dir + "/b.bin");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->write("partial").ok());
    // Dropped without commit(): like a killed process, nothing is left behind.
  }
  EXPECT_FALSE(fs::exists(dir + "/b.bin"));
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
}

TEST(Files, LargeWritesBypassTheBuffer) {
  std::string path = test::scratch_dir() + "/big.bin";
  std::string big(3 << 20, 'x');
  big[12345] = 'y';
  auto w = BufferedFileWriter::create(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->write("head").ok());
  ASSERT_TRUE(w->write(big).ok());
  ASSERT_TRUE(w->commit().ok());
  auto m = MappedFile::open(path);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->size(), big.size() + 4);
  EXPECT_EQ(m->view().substr(0, 4), "head");
  EXPECT_EQ(m->data()[4 + 12345], 'y');
  EXPECT_EQ(crc32_update(0, m->data(), m->size()), w->crc32());
}

TEST(Files, MappedFileErrors) {
  auto missing = MappedFile::open("/nonexistent/file.dbn");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/file.dbn"), std::string::npos);
  std::string dir = test::scratch_dir();
  auto d = MappedFile::open(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidInput);
  ASSERT_TRUE(write_file_atomic(dir + "/empty", "").ok());
  auto e = MappedFile::open(dir + "/empty");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 0u);
}

TEST(Progress, HumanCounts) {
  EXPECT_EQ(human_count(999), "999 ");
  EXPECT_EQ(human_count(12345), "12.3 k");
  EXPECT_EQ(human_count(2.5e6), "2.50 M");
  EXPECT_EQ(human_count(3.25e9), "3.25 G");
}

}  // namespace
}  // namespace fxt
