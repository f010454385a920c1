// Checkpoint files: byte-exact round trip, deterministic bytes, one-line errors for every
// kind of corruption, compatibility messages, and atomic writes.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;

Checkpoint make_checkpoint() {
  Checkpoint c;
  c.config = {{"model", {{"d_model", 64}, {"layers", 2}}}, {"seed", 7}, {"lr", 3e-4}};
  c.feature_stats = {{"names", {"ofi", "spread"}}, {"mean", {0.25, -1.5}}, {"std", {1.0, 0.1}}};
  c.controller = {{"ema_loss", {0.69, 0.68, 0.7}}, {"zmax", 1.25}};
  c.optimizer = {{"step", 12345}, {"beta1", 0.9}};
  c.meta = {{"epoch", 3}, {"best_val_loss", 0.6812}};
  std::vector<float> w(6 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i) - 0.1f;
  c.set_f32("mamba1.in_proj.weight", {6, 5}, w);
  c.set_f32(Checkpoint::adam_m_name("mamba1.in_proj.weight"), {6, 5}, w);
  c.set_f64("heads.bias", {3}, std::vector<double>{0.1, -0.2, 1e-300});
  c.set_i64("counts", {2, 1, 1, 2}, std::vector<int64_t>{1, -2, INT64_MAX, INT64_MIN});
  c.set_u8("mask", {3}, std::vector<uint8_t>{1, 0, 255});  // 3 bytes: the next needs padding
  c.set_f32("scalar", {}, std::vector<float>{42.5f});
  c.set_f32("empty", {0, 4}, std::vector<float>{});
  return c;
}

std::string bytes_of(const std::string& path) {
  auto r = read_file(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::string();
}

void write_bytes(const std::string& path, const std::string& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Field positions of the header (docs/CHECKPOINT.md).
constexpr size_t kVersionAt = 8, kHeaderCrcAt = 48, kHeaderBytes = 56;

template <typename T>
void poke(std::string& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}
void fix_header_crc(std::string& b) {
  poke<uint32_t>(b, kHeaderCrcAt, crc32_update(0, b.data(), kHeaderCrcAt));
}

std::string error_of(const std::string& bytes, const std::string& path) {
  write_bytes(path, bytes);
  auto r = read_checkpoint(path);
  return r.ok() ? std::string("OK") : r.status().message();
}

TEST(Checkpoint, RoundTripIsExact) {
  std::string path = test::scratch_dir() + "/a.ckpt";
  Checkpoint c = make_checkpoint();
  ASSERT_TRUE(write_checkpoint(path, c).ok());
  auto r = read_checkpoint(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->source, path);
  EXPECT_EQ(r->config, c.config);
  EXPECT_EQ(r->feature_stats, c.feature_stats);
  EXPECT_EQ(r->controller, c.controller);
  EXPECT_EQ(r->optimizer, c.optimizer);
  EXPECT_EQ(r->meta, c.meta);
  EXPECT_EQ(r->optimizer["step"].get<int64_t>(), 12345);
  ASSERT_EQ(r->tensors.size(), c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    EXPECT_EQ(r->tensors[i].name, c.tensors[i].name);
    EXPECT_EQ(r->tensors[i].dtype, c.tensors[i].dtype);
    EXPECT_EQ(r->tensors[i].shape, c.tensors[i].shape);
    EXPECT_EQ(r->tensors[i].data, c.tensors[i].data) << c.tensors[i].name;
  }
  auto bias = r->get_f64("heads.bias", std::vector<int64_t>{3});
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ((*bias)[2], 1e-300);
  auto counts = r->get_i64("counts");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ((*counts)[3], INT64_MIN);
  std::vector<float> w(30);
  ASSERT_TRUE(r->read_f32_into("mamba1.in_proj.weight", std::vector<int64_t>{6, 5}, w).ok());
  EXPECT_EQ(w[7], 0.01f * 7 - 0.1f);
  EXPECT_EQ(r->find("scalar")->numel(), 1);
  EXPECT_EQ(r->find("empty")->numel(), 0);

  // Written again from what was read: the same bytes.
  std::string again = test::scratch_dir() + "/b.ckpt";
  ASSERT_TRUE(write_checkpoint(again, *r).ok());
  EXPECT_EQ(bytes_of(path), bytes_of(again));
}

TEST(Checkpoint, SameCheckpointSameBytesAndAligned) {
  std::string dir = test::scratch_dir();
  Checkpoint c = make_checkpoint();
  ASSERT_TRUE(write_checkpoint(dir + "/1.ckpt", c).ok());
  ASSERT_TRUE(write_checkpoint(dir + "/2.ckpt", c).ok());
  std::string b = bytes_of(dir + "/1.ckpt");
  EXPECT_EQ(b, bytes_of(dir + "/2.ckpt"));
  auto s = serialize_checkpoint(c);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, b);
  EXPECT_EQ(b.substr(0, 8), std::string("FXTCKPT\0", 8));
  auto parsed = parse_checkpoint(b, "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  // Every tensor starts 8-byte aligned: find the data of "scalar" (after the 3-byte "mask").
  float v = 42.5f;
  size_t at = b.rfind(std::string(reinterpret_cast<const char*>(&v), 4));
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(at % 8, 0u);
  EXPECT_FALSE(fs::exists(dir + "/1.ckpt.tmp-" + std::to_string(::getpid())));
}

TEST(Checkpoint, TruncatedAnywhereIsAClearError) {
  std::string dir = test::scratch_dir();
  std::string b = *serialize_checkpoint(make_checkpoint());
  std::string path = dir + "/t.ckpt";
  EXPECT_EQ(error_of("", path), path + ": not a foxhunt checkpoint (bad magic)");
  EXPECT_EQ(error_of(b.substr(0, 5), path),
            path + ": truncated: 5 bytes, shorter than the 56-byte header");
  EXPECT_EQ(error_of(b.substr(0, 40), path),
            path + ": truncated: 40 bytes, shorter than the 56-byte header");
  for (size_t len : {size_t{56}, size_t{100}, b.size() / 2, b.size() - 1}) {
    EXPECT_EQ(error_of(b.substr(0, len), path),
              fmt::format("{}: truncated: {} bytes, header says {}", path, len, b.size()));
  }
  // Every cut gives an error, never a crash or a checkpoint.
  for (size_t len = 0; len < b.size(); len += 7) {
    EXPECT_FALSE(parse_checkpoint(std::string_view(b).substr(0, len), "x").ok()) << len;
  }
  EXPECT_EQ(error_of(b + "junk", path), fmt::format("{}: {} bytes, header says {} (trailing data)",
                                                    path, b.size() + 4, b.size()));
}

TEST(Checkpoint, FlippedTensorByteNamesTheTensor) {
  std::string path = test::scratch_dir() + "/f.ckpt";
  Checkpoint c = make_checkpoint();
  std::string b = *serialize_checkpoint(c);
  // The weight's values are the first tensor data; find their first bytes.
  const auto& d = c.find("mamba1.in_proj.weight")->data;
  size_t at = b.find(std::string(reinterpret_cast<const char*>(d.data()), 16));
  ASSERT_NE(at, std::string::npos);
  b[at + 5] = static_cast<char>(b[at + 5] ^ 0x10);
  EXPECT_EQ(error_of(b, path),
            path + ": tensor 'mamba1.in_proj.weight': CRC32 mismatch (corrupt file)");
}

TEST(Checkpoint, FlippedIndexOrHeaderByte) {
  std::string path = test::scratch_dir() + "/i.ckpt";
  std::string b = *serialize_checkpoint(make_checkpoint());
  std::string x = b;
  x[kHeaderBytes + 20] = static_cast<char>(x[kHeaderBytes + 20] ^ 1);  // inside the config JSON
  EXPECT_EQ(error_of(x, path), path + ": index CRC32 mismatch (corrupt file)");
  x = b;
  x[17] = static_cast<char>(x[17] ^ 1);  // tensor count
  EXPECT_EQ(error_of(x, path), path + ": header CRC32 mismatch (corrupt file)");
}

TEST(Checkpoint, BadMagicAndVersions) {
  std::string path = test::scratch_dir() + "/m.ckpt";
  std::string b = *serialize_checkpoint(make_checkpoint());
  std::string x = b;
  x[3] = 'X';
  EXPECT_EQ(error_of(x, path), path + ": not a foxhunt checkpoint (bad magic)");
  x = b;
  poke<uint32_t>(x, kVersionAt, 2);
  fix_header_crc(x);
  EXPECT_EQ(error_of(x, path), path + ": format version 2 is newer than this build reads (1)");
  poke<uint32_t>(x, kVersionAt, 0);
  EXPECT_EQ(error_of(x, path), path + ": format version 0 is not valid");
  auto missing = read_checkpoint(path + ".nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path + ".nope"), std::string::npos);
}

// Rebuilds a file whose index entry for the last tensor ("empty") says something else:
// serialize, then patch the entry's fields and fix both checksums.
TEST(Checkpoint, OffsetOutOfBoundsAndBadEntries) {
  std::string path = test::scratch_dir() + "/o.ckpt";
  Checkpoint c;
  c.set_f32("a", {2}, std::vector<float>{1, 2});
  c.set_f32("b", {2}, std::vector<float>{3, 4});
  std::string b = *serialize_checkpoint(c);
  uint64_t index_bytes = 0;
  std::memcpy(&index_bytes, b.data() + 24, 8);
  size_t index_end = kHeaderBytes + index_bytes;
  // The last entry ends with offset u64, nbytes u64, crc u32.
  size_t offset_at = index_end - 20, nbytes_at = index_end - 12;
  auto patched = [&](size_t at, uint64_t v) {
    std::string x = b;
    poke<uint64_t>(x, at, v);
    poke<uint32_t>(x, 20, crc32_update(0, x.data() + kHeaderBytes, index_bytes));
    fix_header_crc(x);
    return x;
  };
  EXPECT_EQ(error_of(patched(offset_at, b.size()), path),
            fmt::format("{}: tensor 'b': bytes [{}, +8) out of bounds (data region [{}, {}), "
                        "previous tensor ends at {}, 8-byte aligned)",
                        path, b.size(), b.size() - 16, b.size(), b.size() - 8));
  EXPECT_NE(error_of(patched(offset_at, b.size() - 16), path).find("tensor 'b': bytes"),
            std::string::npos);  // overlaps tensor 'a'
  EXPECT_NE(error_of(patched(offset_at, UINT64_MAX - 3), path).find("out of bounds"),
            std::string::npos);
  EXPECT_EQ(error_of(patched(nbytes_at, 12), path),
            path + ": tensor 'b': 12 bytes, but shape [2] f32 needs 8");
}

TEST(Checkpoint, CompatibilityCheckSaysWhatDiffers) {
  Checkpoint expected;
  expected.set_f32("embed", {4, 8}, std::vector<float>(32));
  expected.set_f32("mamba1.in_proj.weight", {6, 5}, std::vector<float>(30));
  expected.set_f32("heads.weight", {3, 8}, std::vector<float>(24));
  expected.set_f32("heads.bias", {3}, std::vector<float>(3));
  EXPECT_TRUE(check_compatible(expected, expected).ok());

  Checkpoint loaded;
  loaded.source = "run/best.ckpt";
  loaded.set_f32("embed", {4, 8}, std::vector<float>(32));
  loaded.set_f32("mamba1.in_proj.weight", {5, 6}, std::vector<float>(30));
  loaded.set_f64("heads.bias", {3}, std::vector<double>(3));
  loaded.set_f32("cfc.tau", {8}, std::vector<float>(8));
  Status s = check_compatible(expected, loaded);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "run/best.ckpt: does not match the model: missing tensors 'heads.weight'; unexpected "
            "tensors 'cfc.tau'; 'mamba1.in_proj.weight' shape [5,6] vs expected [6,5]; "
            "'heads.bias' dtype f64 vs expected f32");

  EXPECT_TRUE(expect_tensor(loaded, "embed", DType::kF32, std::vector<int64_t>{4, 8}).ok());
  EXPECT_EQ(expect_tensor(loaded, "embed", DType::kF32, std::vector<int64_t>{4, 9}).message(),
            "run/best.ckpt: tensor 'embed': shape [4,8], expected [4,9]");
  EXPECT_EQ(expect_tensor(loaded, "nope", DType::kF32, std::vector<int64_t>{1}).message(),
            "run/best.ckpt: tensor 'nope': not found");
  EXPECT_EQ(loaded.get_f32("heads.bias").status().message(),
            "run/best.ckpt: tensor 'heads.bias': dtype f64, expected f32");
  EXPECT_EQ(loaded.get_f32("embed", std::vector<int64_t>{8, 4}).status().message(),
            "run/best.ckpt: tensor 'embed': shape [4,8], expected [8,4]");
}

TEST(Checkpoint, InvalidCheckpointIsRefusedAndExistingFileKept) {
  std::string dir = test::scratch_dir();
  std::string path = dir + "/keep.ckpt";
  Checkpoint good = make_checkpoint();
  ASSERT_TRUE(write_checkpoint(path, good).ok());
  std::string before = bytes_of(path);

  Checkpoint bad = good;
  bad.controller["ema_loss"][1] = std::numeric_limits<double>::quiet_NaN();
  Status s = write_checkpoint(path, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), path +
                             ": section 'controller': non-finite number at "
                             "'/ema_loss/1' (JSON cannot hold it)");
  bad = good;
  bad.tensors.push_back(bad.tensors[0]);
  EXPECT_EQ(write_checkpoint(path, bad).message(),
            path + ": tensor 'mamba1.in_proj.weight' appears twice");
  bad = good;
  bad.tensors[0].data.pop_back();
  EXPECT_NE(write_checkpoint(path, bad).message().find("119 data bytes"), std::string::npos);
  bad = good;
  bad.tensors[0].shape = {1, 1, 1, 1, 30};
  EXPECT_NE(write_checkpoint(path, bad).message().find("5 dims, at most 4"), std::string::npos);

  EXPECT_EQ(bytes_of(path), before);
  // Only the committed file: no temporary left behind by any attempt.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "keep.ckpt");
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(Checkpoint, WriteIntoMissingDirectoryFails) {
  std::string dir = test::scratch_dir();
  Status s = write_checkpoint(dir + "/no/such/dir/x.ckpt", make_checkpoint());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("no/such/dir/x.ckpt"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Checkpoint, EmptyCheckpointRoundTrips) {
  std::string path = test::scratch_dir() + "/e.ckpt";
  Checkpoint c;
  ASSERT_TRUE(write_checkpoint(path, c).ok());
  auto r = read_checkpoint(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->tensors.empty());
  EXPECT_EQ(r->config, nlohmann::json::object());
  EXPECT_EQ(bytes_of(path).size() % 8, 0u);
}

}  // namespace
}  // namespace fxt
