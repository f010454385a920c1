// fxt runs list / compare as a user runs them, over run directories written by fxt train and
// fxt eval --run-dir on a tiny synth store; and their one-line errors.
#include <algorithm>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "test_util.h"
#include "train/gbdt.h"
#include "train/trainer.h"

namespace fxt {
namespace {

using test::run_fxt;

const char* kSmall =
    " --epochs 2 --steps-per-epoch 3 --batch 8 --seq 16 --horizons 10,30 --d-model 32"
    " --d-state 8 --head-dim 32 --head-mid 16 --warmup 2 --eval-batch 32 --baseline-max-rows 2000 "
    "--gbdt-max-rows 2000";

nlohmann::json json_of(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

void expect_one_line_error(const test::CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(r.output.rfind("fxt: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
}

// Two trains differing only in --lr, and an eval of the first, under one directory.
class RunsCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::scratch_dir());
    const std::string d = *dir_;
    ASSERT_EQ(run_fxt("synth -q --events 20000 --seed 1 --out " + d + "/m.dbn.zst").exit_code, 0);
    ASSERT_EQ(run_fxt("ingest -q " + d + "/m.dbn.zst --out " + d + "/store").exit_code, 0);
    const std::string train = "train -q --store " + d + "/store" + kSmall;
    auto a = run_fxt(train + " --lr 0.001 --run-dir " + d + "/runs/a");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    auto b = run_fxt(train + " --lr 0.002 --run-dir " + d + "/runs/b");
    ASSERT_EQ(b.exit_code, 0) << b.output;
    auto e = run_fxt("eval -q --bootstrap 0 --checkpoint " + d + "/runs/a/best.ckpt --run-dir " +
                     d + "/runs/evals/a");
    ASSERT_EQ(e.exit_code, 0) << e.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string* dir_;
};
std::string* RunsCliTest::dir_ = nullptr;

TEST_F(RunsCliTest, TrainWritesAFullRunRecord) {
  const nlohmann::json j = json_of(*dir_ + "/runs/a/run.json");
  EXPECT_EQ(j["format"], 1);
  EXPECT_EQ(j["kind"], "train");
  EXPECT_EQ(j["argv"][1], "train");
  EXPECT_NE(j["command_line"].get<std::string>().find("--lr 0.001"), std::string::npos);
  EXPECT_DOUBLE_EQ(j["config"]["lr"].get<double>(), 0.001);
  EXPECT_EQ(j["config_hash"].get<std::string>().size(), 16u);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["method"], "meta-crc32");
  EXPECT_EQ(j["inputs"][0]["path"],
            std::filesystem::absolute(*dir_ + "/store").lexically_normal().string());
  // The backend `--device auto` picked: "cpu", or the GPU's name on a machine with one.
  EXPECT_EQ(j["device"], backend_name(*resolve_cuda("auto", ModelKind::kPerception)));
  EXPECT_EQ(j["epochs_completed"], 2);
  EXPECT_EQ(j["steps_completed"], 6);
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  // The headline metrics agree with metrics.jsonl's last epoch.
  auto lines = read_file(*dir_ + "/runs/a/metrics.jsonl");
  ASSERT_TRUE(lines.ok());
  const std::string text = *lines;
  const size_t last = text.rfind('\n', text.size() - 2);
  const nlohmann::json epoch2 = nlohmann::json::parse(text.substr(last + 1));
  EXPECT_EQ(epoch2["epoch"], 2);
  EXPECT_EQ(j["metrics"]["val_mean_auc"], epoch2["val_mean_auc"]);
  EXPECT_EQ(j["metrics"]["best_epoch"], j["best_epoch"]);
  EXPECT_TRUE(j["metrics"]["best_value"].is_number());
}

TEST_F(RunsCliTest, EvalRunDirWritesEvalJsonAndMetrics) {
  const std::string run = *dir_ + "/runs/evals/a";
  const nlohmann::json ev = json_of(run + "/eval.json");
  const nlohmann::json j = json_of(run + "/run.json");
  EXPECT_EQ(j["kind"], "eval");
  EXPECT_EQ(j["config"]["split"], "test");
  EXPECT_EQ(j["config"]["bootstrap"], 0);
  auto ck = read_file(*dir_ + "/runs/a/best.ckpt");
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(j["config"]["checkpoint_checksum"],
            fmt::format("crc32:{:08x}", crc32_update(0, ck->data(), ck->size())));
  EXPECT_EQ(j["inputs"].size(), 1u);
  for (const std::string who : {"model", "logreg", "gbdt"}) {
    if (who == "gbdt" && !gbdt_available()) continue;  // a build without XGBoost
    const nlohmann::json& p = who == "model" ? ev[who] : ev["baselines"][who];
    EXPECT_EQ(j["metrics"][who]["mean_auc"], p["mean_auc"]) << who;
    EXPECT_EQ(j["metrics"][who]["auc_h10"], p["horizons"][0]["auc"]) << who;
    EXPECT_EQ(j["metrics"][who]["auc_h30"], p["horizons"][1]["auc"]) << who;
  }
}

TEST_F(RunsCliTest, ListFindsEveryRun) {
  auto r = run_fxt("runs list " + *dir_ + "/runs");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Header + three runs, in path order.
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 4) << r.output;
  EXPECT_EQ(r.output.rfind("path", 0), 0u) << r.output;
  const size_t pa = r.output.find(*dir_ + "/runs/a "), pb = r.output.find(*dir_ + "/runs/b ");
  const size_t pe = r.output.find(*dir_ + "/runs/evals/a ");
  ASSERT_NE(pa, std::string::npos) << r.output;
  ASSERT_NE(pb, std::string::npos) << r.output;
  ASSERT_NE(pe, std::string::npos) << r.output;
  EXPECT_LT(pa, pb);
  EXPECT_LT(pb, pe);
  EXPECT_NE(r.output.find("val_mean_auc="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model.mean_auc="), std::string::npos) << r.output;
  const std::string hash = json_of(*dir_ + "/runs/a/run.json")["config_hash"];
  EXPECT_NE(r.output.find(hash.substr(0, 8)), std::string::npos) << r.output;

  auto js = run_fxt("runs list --json " + *dir_ + "/runs/a " + *dir_ + "/runs/b/run.json");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const nlohmann::json arr = nlohmann::json::parse(js.output);
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["path"], *dir_ + "/runs/a");
  EXPECT_EQ(arr[1]["path"], *dir_ + "/runs/b");
  EXPECT_EQ(arr[0]["kind"], "train");
  EXPECT_EQ(arr[0]["metrics"], json_of(*dir_ + "/runs/a/run.json")["metrics"]);
}

TEST_F(RunsCliTest, CompareShowsTheChangedFlagAndTheMetricDifference) {
  const std::string a = *dir_ + "/runs/a", b = *dir_ + "/runs/b";
  const nlohmann::json ja = json_of(a + "/run.json"), jb = json_of(b + "/run.json");
  EXPECT_NE(ja["config_hash"], jb["config_hash"]);

  auto js = run_fxt("runs compare --json " + a + " " + b);
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const nlohmann::json d = nlohmann::json::parse(js.output);
  // Exactly one config key differs: lr.
  ASSERT_EQ(d["config"].size(), 1u) << d.dump(2);
  EXPECT_EQ(d["config"][0]["key"], "lr");
  EXPECT_DOUBLE_EQ(d["config"][0]["a"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(d["config"][0]["b"].get<double>(), 0.002);
  EXPECT_TRUE(d["inputs"].empty());       // the same store, the same checksum
  EXPECT_TRUE(d["environment"].empty());  // same binary, same machine
  bool saw_auc = false;
  for (const nlohmann::json& m : d["metrics"]) {
    if (m["key"] != "val_mean_auc") continue;
    saw_auc = true;
    EXPECT_EQ(m["a"], ja["metrics"]["val_mean_auc"]);
    EXPECT_EQ(m["b"], jb["metrics"]["val_mean_auc"]);
    EXPECT_DOUBLE_EQ(m["diff"].get<double>(), jb["metrics"]["val_mean_auc"].get<double>() -
                                                  ja["metrics"]["val_mean_auc"].get<double>());
  }
  EXPECT_TRUE(saw_auc) << d.dump(2);

  auto t = run_fxt("runs compare " + a + " " + b);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("config (1 keys differ"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("  lr   0.001  0.002"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("same stores and checksums (1)"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("val_mean_auc"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("B - A"), std::string::npos) << t.output;

  // A run against itself: nothing differs and every difference is zero.
  auto same = run_fxt("runs compare --json " + a + " " + a);
  ASSERT_EQ(same.exit_code, 0) << same.output;
  const nlohmann::json s = nlohmann::json::parse(same.output);
  EXPECT_TRUE(s["config"].empty());
  for (const nlohmann::json& m : s["metrics"]) EXPECT_EQ(m["diff"], 0.0) << m.dump();
}

TEST_F(RunsCliTest, CompareShowsAChangedStoreChecksum) {
  // A copy of run a whose input store has another checksum and another device.
  const std::string c = *dir_ + "/runs-edited/c";
  std::filesystem::create_directories(c);
  nlohmann::json j = json_of(*dir_ + "/runs/a/run.json");
  j["inputs"][0]["checksum"] = "crc32:00000000";
  j["device"] = "some other device";
  ASSERT_TRUE(write_file_atomic(c + "/run.json", j.dump(2)).ok());
  auto r = run_fxt("runs compare --json " + *dir_ + "/runs/a " + c);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json d = nlohmann::json::parse(r.output);
  ASSERT_EQ(d["inputs"].size(), 1u);
  EXPECT_EQ(d["inputs"][0]["b"], "crc32:00000000");
  ASSERT_EQ(d["environment"].size(), 1u);
  EXPECT_EQ(d["environment"][0]["key"], "device");
  EXPECT_EQ(d["environment"][0]["a"], backend_name(*resolve_cuda("auto", ModelKind::kPerception)));
}

TEST_F(RunsCliTest, BadInputsExitTwoWithOneLine) {
  const std::string d = *dir_;
  expect_one_line_error(run_fxt("runs compare " + d + "/runs/a " + d + "/nowhere"), d + "/nowhere");
  expect_one_line_error(run_fxt("runs list " + d + "/nowhere"), d + "/nowhere: no such directory");
  std::filesystem::create_directories(d + "/empty");
  expect_one_line_error(run_fxt("runs list " + d + "/empty"), "no run.json found under");
  std::filesystem::create_directories(d + "/broken");
  ASSERT_TRUE(write_file_atomic(d + "/broken/run.json", "{\"format\": 1").ok());
  expect_one_line_error(run_fxt("runs compare " + d + "/runs/a " + d + "/broken"),
                        d + "/broken/run.json: invalid JSON");
  // `runs list` skips an unreadable record with a warning and lists the rest.
  auto r = run_fxt("runs list " + d + "/broken " + d + "/runs/a");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped: " + d + "/broken/run.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(d + "/runs/a "), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fxt
