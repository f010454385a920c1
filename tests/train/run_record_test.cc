// The run registry's record (train/run_record.h): write/read round trip, the config hash
// (FNV-1a 64 of the canonical dump), store checksums, and the one-line read errors.
#include "train/run_record.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"

namespace fxt {
namespace {

TEST(ConfigHash, IsFnv1a64OfTheCanonicalDump) {
  // Hand-checked against a reference FNV-1a 64 (offset 0xcbf29ce484222325, prime 0x100000001b3).
  EXPECT_EQ(config_hash(nlohmann::json::object()), "08f44b07b5901a25");  // "{}"
  EXPECT_EQ(config_hash(nlohmann::json::parse(R"({"a":1,"b":[30,100]})")), "3f054a7d6e0254ed");
}

TEST(ConfigHash, IgnoresKeyOrderAndSeesEveryValue) {
  const auto a = nlohmann::json::parse(R"({"lr": 0.001, "horizons": [30, 100], "m": {"x": 1}})");
  const auto b = nlohmann::json::parse(R"({"m": {"x": 1}, "horizons": [30, 100], "lr": 0.001})");
  EXPECT_EQ(config_hash(a), config_hash(b));
  auto c = a;
  c["lr"] = 0.002;
  EXPECT_NE(config_hash(a), config_hash(c));
  auto d = a;
  d["m"]["x"] = 2;  // a nested value
  EXPECT_NE(config_hash(a), config_hash(d));
  auto e = a;
  e["horizons"] = {100, 30};  // array order is meaningful
  EXPECT_NE(config_hash(a), config_hash(e));
}

TEST(StoreChecksum, PlainDirectoryIsCrc32OfNamesAndBytesInNameOrder) {
  const std::string dir = test::scratch_dir();
  ASSERT_TRUE(write_file_atomic(dir + "/b.bin", "xyz").ok());
  ASSERT_TRUE(write_file_atomic(dir + "/a.bin", "hello").ok());
  auto c = store_checksum(dir);
  ASSERT_TRUE(c.ok()) << c.status().message();
  // zlib.crc32(b"a.bin\0hello" b"b.bin\0xyz"), computed by hand in Python.
  EXPECT_EQ((*c)["checksum"], "crc32:7a94c9e0");
  EXPECT_EQ((*c)["method"], "files-crc32");
  EXPECT_EQ((*c)["files"], 2);
  EXPECT_EQ((*c)["bytes"], 8);
  EXPECT_EQ((*c)["path"], std::filesystem::absolute(dir).lexically_normal().string());

  ASSERT_TRUE(write_file_atomic(dir + "/b.bin", "xyZ").ok());  // one byte changed
  auto changed = store_checksum(dir);
  ASSERT_TRUE(changed.ok());
  EXPECT_NE((*changed)["checksum"], (*c)["checksum"]);
  EXPECT_EQ((*changed)["bytes"], 8);
}

TEST(StoreChecksum, StoreIsCrc32OfItsMetaJson) {
  const std::string dir = test::scratch_dir();
  const std::string meta = R"({"columns":{"ts_ns":{"crc32":1234}}})";
  ASSERT_TRUE(write_file_atomic(dir + "/meta.json", meta).ok());
  ASSERT_TRUE(write_file_atomic(dir + "/ts_ns.bin", std::string(16, '\0')).ok());
  auto c = store_checksum(dir);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)["method"], "meta-crc32");
  EXPECT_EQ((*c)["checksum"],
            fmt::format("crc32:{:08x}", crc32_update(0, meta.data(), meta.size())));
  EXPECT_EQ((*c)["files"], 2);
  EXPECT_EQ((*c)["bytes"], meta.size() + 16);

  // Another column CRC in meta.json (what a changed column file comes with) changes it.
  ASSERT_TRUE(
      write_file_atomic(dir + "/meta.json", R"({"columns":{"ts_ns":{"crc32":1235}}})").ok());
  auto changed = store_checksum(dir);
  ASSERT_TRUE(changed.ok());
  EXPECT_NE((*changed)["checksum"], (*c)["checksum"]);
}

TEST(FileChecksum, IsCrc32OfTheBytes) {
  const std::string dir = test::scratch_dir();
  ASSERT_TRUE(write_file_atomic(dir + "/f", "123456789").ok());
  auto c = file_checksum(dir + "/f");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, "crc32:cbf43926");  // the CRC-32 check value
  EXPECT_FALSE(file_checksum(dir + "/missing").ok());
}

TEST(StoreChecksum, MissingDirectoryIsOneLineNotFound) {
  auto c = store_checksum("/nonexistent/store");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/store"), std::string::npos);
}

TEST(RunRecord, RoundTripKeepsEveryField) {
  char arg0[] = "fxt", arg1[] = "train", arg2[] = "--lr", arg3[] = "0.5", arg4[] = "a b";
  char* argv[] = {arg0, arg1, arg2, arg3, arg4};
  set_command_line(5, argv);
  ASSERT_EQ(command_line().size(), 5u);

  const std::string store = test::scratch_dir();
  ASSERT_TRUE(write_file_atomic(store + "/x.bin", "hello").ok());
  const auto config = nlohmann::json::parse(R"({"lr": 0.5, "horizons": [10, 30]})");

  RunRecord r("train");
  r.set_config(config);
  ASSERT_TRUE(r.add_input_store(store).ok());
  r.set_device("test-device");
  r.set("epochs_completed", 3);
  r.set("timings", {{"total_seconds", 1.5}});
  r.set_metrics({{"best_value", 0.25}, {"val_mean_auc", 0.6}});
  const std::string run = test::scratch_dir() + "/nested/run";  // created by write()
  ASSERT_TRUE(r.write(run).ok());

  auto back = read_run_record(run);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const nlohmann::json& j = *back;
  EXPECT_EQ(j["format"], 1);
  EXPECT_EQ(j["kind"], "train");
  EXPECT_EQ(j["fxt_version"], FXT_VERSION);
  EXPECT_EQ(j["argv"], nlohmann::json({"fxt", "train", "--lr", "0.5", "a b"}));
  EXPECT_EQ(j["command_line"], "fxt train --lr 0.5 'a b'");
  EXPECT_EQ(j["config"], config);
  EXPECT_EQ(j["config_hash"], config_hash(config));
  ASSERT_EQ(j["inputs"].size(), 1u);
  auto sc = store_checksum(store);
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(j["inputs"][0], *sc);
  EXPECT_EQ(j["git_revision"], FXT_GIT_REV);
  EXPECT_EQ(j["build_type"], FXT_BUILD_TYPE);
  EXPECT_EQ(j["device"], "test-device");
  EXPECT_TRUE(j["host"].is_string());
  EXPECT_EQ(j["epochs_completed"], 3);
  EXPECT_DOUBLE_EQ(j["timings"]["total_seconds"].get<double>(), 1.5);
  EXPECT_EQ(j["metrics"], nlohmann::json::parse(R"({"best_value": 0.25, "val_mean_auc": 0.6})"));
  // Times: ISO-8601 UTC with milliseconds; end after start; wall and peak memory positive.
  const std::string start = j["start_utc"], end = j["end_utc"];
  ASSERT_EQ(start.size(), 24u) << start;
  EXPECT_EQ(start[10], 'T');
  EXPECT_EQ(start.back(), 'Z');
  EXPECT_LE(start, end);
  EXPECT_GT(j["start_unix_ns"].get<int64_t>(), 1'700'000'000'000'000'000);
  EXPECT_GE(j["wall_seconds"].get<double>(), 0.0);
  EXPECT_LT(j["wall_seconds"].get<double>(), 60.0);
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 1 << 20);

  // Everything but the end-of-run fields equals what to_json() gives now.
  nlohmann::json now = r.to_json(), stored = j;
  for (const char* k : {"end_utc", "wall_seconds", "peak_rss_bytes"}) {
    now.erase(k);
    stored.erase(k);
  }
  EXPECT_EQ(now, stored);

  // A path to the run.json file itself reads the same record.
  auto by_file = read_run_record(run + "/run.json");
  ASSERT_TRUE(by_file.ok());
  EXPECT_EQ(*by_file, j);
  set_command_line(0, nullptr);
}

TEST(RunRecord, DefaultsWithoutConfigOrMetrics) {
  RunRecord r("backtest");
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["config"], nlohmann::json::object());
  EXPECT_EQ(j["config_hash"], "08f44b07b5901a25");
  EXPECT_EQ(j["inputs"], nlohmann::json::array());
  EXPECT_EQ(j["metrics"], nlohmann::json::object());
  EXPECT_EQ(r.kind(), "backtest");
}

TEST(RunRecord, AddInputStoreFailsOnAMissingStore) {
  RunRecord r("eval");
  const Status s = r.add_input_store("/nonexistent/store");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(r.to_json()["inputs"].size(), 0u);
}

TEST(ReadRunRecord, BadInputsGiveOneLineErrorsNamingTheFile) {
  const std::string dir = test::scratch_dir();
  auto missing = read_run_record(dir + "/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir + "/none"), std::string::npos);

  auto expect_invalid = [&](const std::string& text, const std::string& what) {
    ASSERT_TRUE(write_file_atomic(dir + "/run.json", text).ok());
    auto r = read_run_record(dir);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << text;
    const std::string& m = r.status().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(dir + "/run.json"), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  };
  expect_invalid("{\"format\": 1,", "invalid JSON at byte 14: unexpected end of input");
  expect_invalid("[1, 2]", "expected a JSON object");
  expect_invalid(R"({"kind": "train"})", "no \"format\" field");
  expect_invalid(R"({"format": 2, "kind": "train"})", "run record format 2");
  expect_invalid(R"({"format": 1, "kind": "train", "config": {}})",
                 "missing field \"config_hash\"");
}

}  // namespace
}  // namespace fxt
