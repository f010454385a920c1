// fxt cv --emit k8s|argo (docs/CLUSTER.md): the emitted jobs run exactly fxt cv's folds (hand-
// computed ranges for two fold counts, and the plan.json of a real fxt cv run), running the
// emitted fold and gather commands reproduces fxt cv's outputs byte for byte, the specs pass
// the published Kubernetes/Argo schemas (tests/cluster/validate.mjs; skipped without node or
// its packages) while broken ones fail, and bad flags give one line and exit 2.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "train/cluster_spec.h"

namespace fxt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Horizons 10 and 30 at stride 1: purge 30 snapshots.
const std::string kFlags =
    " --seed 3 --epochs 1 --steps-per-epoch 2 --batch 8 --seq 16 --horizons 10,30 --warmup 1"
    " --d-model 16 --d-state 8 --head-dim 16 --head-mid 8 --bootstrap 10 --baselines logreg"
    " --baseline-max-rows 1000 --gbdt-max-rows 1000";

// DIR/vol is the volume: four 1,500-snapshot days and one 6,000-snapshot store.
std::string volume_fixture() {
  std::vector<std::string> cmds;
  for (int d = 1; d <= 4; ++d) {
    const std::string n = std::to_string(d);
    cmds.push_back("synth -q --events 1500 --seed " + n + " --out DIR/d" + n + ".dbn.zst");
    cmds.push_back("ingest -q DIR/d" + n + ".dbn.zst --out DIR/vol/day" + n);
  }
  cmds.push_back("synth -q --events 6000 --seed 5 --out DIR/one.dbn.zst");
  cmds.push_back("ingest -q DIR/one.dbn.zst --out DIR/vol/one");
  return test::shared_fxt_fixture("cluster-emit-volume", cmds);
}

std::string days(const std::string& dir) {
  std::string s;
  for (int d = 1; d <= 4; ++d) s += " --store " + dir + "/vol/day" + std::to_string(d);
  return s;
}

json load(const std::string& path) {
  return json::parse(test::file_bytes(path), nullptr, false);
}

// The container arguments of a k8s Job file.
std::vector<std::string> job_args(const json& job) {
  return job["spec"]["template"]["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
}

// `args` as a shell command line for run_fxt, the pod's mount path mapped to the local volume.
std::string local_command(const std::vector<std::string>& args, const std::string& mount,
                          const std::string& volume) {
  std::string cmd = "-q";
  for (std::string a : args) {
    if (a.rfind(mount + "/", 0) == 0) a = volume + a.substr(mount.size());
    cmd += " '" + a + "'";
  }
  return cmd;
}

json ranges_of(const json& job_metadata) {
  return json::parse(job_metadata["annotations"]["foxhunt/ranges"].get<std::string>());
}

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ClusterEmit, JobsCarryTheFoldsOfTheCvPlan) {
  const std::string dir = volume_fixture();
  ASSERT_FALSE(dir.empty());
  const std::string out = test::scratch_dir();
  // Two folds by store, embargo 5: gap 35; fold i tests on day i + 3, validates on day i + 2
  // (cut short by the gap) and trains on day i + 1 (cut short by the gap).
  auto r = test::run_fxt("cv" + days(dir) + " --folds 2 --embargo 5" + kFlags +
                         " --emit k8s --image reg.example/fxt:1 --out " + out + "/k8s");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json want_store = json::array(
      {json{{"train", {0, 1465}}, {"validation", {1500, 2965}}, {"test", {3000, 4500}}},
       json{{"train", {1500, 2965}}, {"validation", {3000, 4465}}, {"test", {4500, 6000}}}});
  for (int i = 0; i < 2; ++i) {
    const json job = load(out + "/k8s/fold-" + std::to_string(i) + ".json");
    ASSERT_FALSE(job.is_discarded()) << i;
    EXPECT_EQ(job["metadata"]["name"], "fxt-cv-fold-" + std::to_string(i));
    EXPECT_EQ(ranges_of(job["metadata"]), want_store[static_cast<size_t>(i)]) << i;
    const std::vector<std::string> a = job_args(job);
    ASSERT_GE(a.size(), 12u);
    EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 11),
              (std::vector<std::string>{"cv", "--store", "/data/day1", "--store", "/data/day2",
                                        "--store", "/data/day3", "--store", "/data/day4", "--out",
                                        "/data/cv/fxt-cv"}));
    EXPECT_EQ(std::vector<std::string>(a.end() - 2, a.end()),
              (std::vector<std::string>{"--fold", std::to_string(i)}));
    EXPECT_NE(std::find(a.begin(), a.end(), "--embargo"), a.end());
    // CPU only: no GPU requested.
    EXPECT_FALSE(job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].contains(
        "nvidia.com/gpu"));
  }
  // Options from --config's file and flags reach the jobs too.
  test::write_bytes(out + "/run.toml", "[cv]\nepochs = 2\nembargo = 7\n");
  r = test::run_fxt("--config " + out + "/run.toml cv" + days(dir) +
                    " --folds 2 --no-lambda --horizons 10,30 --emit k8s --image x --out " + out +
                    "/cfg");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string joined;
  for (const std::string& a : job_args(load(out + "/cfg/fold-1.json"))) joined += a + " ";
  EXPECT_EQ(joined,
            "cv --store /data/day1 --store /data/day2 --store /data/day3 --store /data/day4 "
            "--out /data/cv/fxt-cv --folds 2 --embargo 7 --epochs 2 --horizons 10,30 --no-lambda "
            "--threads 4 --fold 1 ");
  const std::vector<std::string> g = job_args(load(out + "/k8s/gather.json"));
  EXPECT_EQ(g.back(), "--pool-only");
  EXPECT_FALSE(fs::exists(out + "/k8s/fold-2.json"));

  // Three folds by block over one 6,000-snapshot store (M = 7 blocks, W = 3, gap 30), as an
  // Argo Workflow on the GPU: fold i tests on block 4 + i.
  r = test::run_fxt("cv --store " + dir + "/vol/one --folds 3" + kFlags +
                    " --device cuda --emit argo --image reg.example/fxt:1 --name es-cv --out " +
                    out + "/argo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json wf = load(out + "/argo/workflow.json");
  ASSERT_FALSE(wf.is_discarded());
  EXPECT_EQ(wf["metadata"]["name"], "es-cv");
  const json& t = wf["spec"]["templates"];
  ASSERT_EQ(t.size(), 5u);  // the DAG, three folds, gather
  EXPECT_EQ(t[0]["dag"]["tasks"][3]["dependencies"], json::array({"fold-0", "fold-1", "fold-2"}));
  const json want_block = json::array(
      {json{{"train", {0, 2541}}, {"validation", {2571, 3398}}, {"test", {3428, 4285}}},
       json{{"train", {857, 3398}}, {"validation", {3428, 4255}}, {"test", {4285, 5142}}},
       json{{"train", {1714, 4255}}, {"validation", {4285, 5112}}, {"test", {5142, 6000}}}});
  for (size_t i = 0; i < 3; ++i) {
    const json& fold = t[i + 1];
    EXPECT_EQ(fold["name"], "fold-" + std::to_string(i));
    EXPECT_EQ(ranges_of(fold["metadata"]), want_block[i]) << i;
    const auto a = fold["container"]["args"].get<std::vector<std::string>>();
    EXPECT_EQ(a.back(), std::to_string(i));
    EXPECT_EQ(fold["container"]["resources"]["limits"]["nvidia.com/gpu"], "1");
  }
  EXPECT_FALSE(t[4]["container"]["resources"]["limits"].contains("nvidia.com/gpu"));  // gather
}

TEST(ClusterEmit, EmittedCommandsReproduceFxtCv) {
  const std::string dir = volume_fixture();
  ASSERT_FALSE(dir.empty());
  const std::string out = test::scratch_dir();
  // The volume: a copy of the store in a fresh folder (the fixture is read-only); fxt cv
  // reads the same path, so both runs record the same stores.
  const std::string vol = out + "/vol";
  fs::create_directories(vol);
  fs::copy(dir + "/vol/one", vol + "/one", fs::copy_options::recursive);
  const std::string ref = out + "/ref";
  auto r = test::run_fxt("cv -q --store " + vol + "/one --folds 2 --threads 1" + kFlags +
                         " --out " + ref);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = test::run_fxt(
      "cv --store " + vol + "/one --folds 2" + kFlags +
      " --emit k8s --image fxt:test --mount /mnt/v --cv-dir runs/cv --cpu 2 --volume-root " + vol +
      "/ --out " + out + "/specs");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // Fold ranges equal the plan.json fxt cv wrote.
  const json plan = load(ref + "/plan.json");
  for (int i = 0; i < 2; ++i) {
    const json job = load(out + "/specs/fold-" + std::to_string(i) + ".json");
    const json& pf = plan["plan"]["folds"][static_cast<size_t>(i)];
    const json want = {
        {"train", pf["train"]}, {"validation", pf["validation"]}, {"test", pf["test"]}};
    EXPECT_EQ(ranges_of(job["metadata"]), want) << i;
  }

  // The gather step refuses to pool before the folds ran.
  const std::string gather =
      local_command(job_args(load(out + "/specs/gather.json")), "/mnt/v", vol);
  r = test::run_fxt(gather);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--pool-only: fold 0 is not finished"), std::string::npos) << r.output;

  // The fold jobs, in reverse order (they run in parallel on a cluster), then the gather.
  for (int i = 1; i >= 0; --i) {
    const json job = load(out + "/specs/fold-" + std::to_string(i) + ".json");
    r = test::run_fxt(local_command(job_args(job), "/mnt/v", vol));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // A fold job writes only inside its folder.
    EXPECT_FALSE(fs::exists(vol + "/runs/cv/plan.json"));
    EXPECT_FALSE(fs::exists(vol + "/runs/cv/run.json"));
  }
  r = test::run_fxt(gather);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pooled over 2 folds"), std::string::npos) << r.output;

  const std::string cv = vol + "/runs/cv";
  EXPECT_EQ(test::file_bytes(cv + "/cv.json"), test::file_bytes(ref + "/cv.json"));
  EXPECT_EQ(test::file_bytes(cv + "/plan.json"), test::file_bytes(ref + "/plan.json"));
  for (const char* fold : {"/fold_0", "/fold_1"}) {
    for (const char* f : {"/rows.bin", "/best.ckpt", "/last.ckpt"}) {
      const std::string bytes = test::file_bytes(cv + fold + f);
      EXPECT_FALSE(bytes.empty()) << fold << f;
      EXPECT_EQ(bytes, test::file_bytes(ref + fold + f)) << fold << f;
    }
    EXPECT_EQ(test::jsonl_without(cv + fold + "/metrics.jsonl", "seconds"),
              test::jsonl_without(ref + fold + "/metrics.jsonl", "seconds"))
        << fold;
    json a = load(cv + fold + "/eval.json"), b = load(ref + fold + "/eval.json");
    a.erase("checkpoint");  // its path
    b.erase("checkpoint");
    EXPECT_EQ(a, b) << fold;
    EXPECT_EQ(test::file_bytes(cv + fold + "/cv_plan.json"), test::file_bytes(ref + "/plan.json"));
  }
  const json run = load(cv + "/run.json");
  EXPECT_EQ(run["kind"], "cv");
  EXPECT_EQ(run["complete"], true);
}

// node and tests/cluster/node_modules (npm ci there), or "" when absent.
std::string validator() {
  const fs::path script = fs::path(__FILE__).parent_path().parent_path() / "cluster/validate.mjs";
  if (std::system("node --version > /dev/null 2>&1") != 0) return "";
  if (!fs::exists(script.parent_path() / "node_modules/kubernetes-models") ||
      !fs::exists(script.parent_path() / "node_modules/@kubernetes-models/argo-workflows")) {
    return "";
  }
  return script.string();
}

// Runs the validator on files; its exit code and output.
test::CommandResult validate(const std::string& script, const std::vector<std::string>& files) {
  std::string cmd = "node '" + script + "'";
  for (const std::string& f : files) cmd += " '" + f + "'";
  const std::string log = test::scratch_dir() + "/validate.log";
  const int status = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::file_bytes(log)};
}

TEST(ClusterEmit, SpecsPassThePublishedSchemasAndBrokenOnesFail) {
  const std::string script = validator();
  if (script.empty()) {
    GTEST_SKIP() << "node or tests/cluster/node_modules is absent (run `npm ci` in tests/cluster): "
                    "schema validation skipped";
  }
  const std::string dir = volume_fixture();
  ASSERT_FALSE(dir.empty());
  const std::string out = test::scratch_dir();
  std::vector<std::string> files;
  for (const char* device : {"cpu", "cuda"}) {
    const std::string k8s = out + "/k8s-" + device, argo = out + "/argo-" + device;
    for (const auto& [engine, where] : {std::pair{"k8s", k8s}, std::pair{"argo", argo}}) {
      auto r = test::run_fxt("cv" + days(dir) + " --folds 2" + kFlags + " --device " + device +
                             " --emit " + engine + " --image registry.example.com/fxt:1.0 --out " +
                             where);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    for (const char* f : {"/fold-0.json", "/fold-1.json", "/gather.json"}) files.push_back(k8s + f);
    files.push_back(argo + "/workflow.json");
  }
  auto v = validate(script, files);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(lines(v.output), files.size()) << v.output;

  // Broken specs: each must be refused.
  json job = load(out + "/k8s-cpu/fold-0.json");
  json wf = load(out + "/argo-cpu/workflow.json");
  struct Broken {
    std::string name, expect;
    json spec;
  };
  std::vector<Broken> broken;
  json j = job;
  j["spec"]["template"]["spec"]["containers"][0].erase("image");
  broken.push_back({"no-image.json", "has no image", j});
  j = job;
  j["spec"]["template"]["spec"]["containers"][0].erase("name");
  broken.push_back({"no-name.json", "must have required property", j});
  j = job;
  j["spec"]["backoffLimit"] = "three";
  broken.push_back({"bad-backoff.json", "must be integer", j});
  j = job;
  j["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"].erase("claimName");
  broken.push_back({"no-claim.json", "claimName", j});
  j = wf;
  j["spec"]["templates"][1]["container"].erase("image");
  broken.push_back({"wf-no-image.json", "has no image", j});
  j = wf;
  j["spec"]["templates"][0]["dag"]["tasks"][0].erase("name");
  broken.push_back({"wf-task-no-name.json", "must have required property", j});
  std::vector<std::string> paths;
  for (const Broken& b : broken) {
    paths.push_back(out + "/" + b.name);
    test::write_bytes(paths.back(), b.spec.dump(2));
  }
  v = validate(script, paths);  // one node start for all (each start loads the schemas)
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_EQ(lines(v.output), broken.size()) << v.output;
  std::istringstream report(v.output);
  for (size_t i = 0; i < broken.size(); ++i) {
    std::string line;
    std::getline(report, line);
    EXPECT_EQ(line.rfind(paths[i] + ": invalid: ", 0), 0u) << line;
    EXPECT_NE(line.find(broken[i].expect), std::string::npos) << line;
  }
}

TEST(ClusterEmit, SameInputsGiveSameBytes) {
  const std::string dir = volume_fixture();
  ASSERT_FALSE(dir.empty());
  const std::string out = test::scratch_dir();
  for (const char* engine : {"k8s", "argo"}) {
    for (const char* sub : {"/a", "/b", "/a"}) {  // the third writes over the first
      const std::string where = out + "/" + engine + sub;
      auto r = test::run_fxt("cv" + days(dir) + " --folds 2" + kFlags + " --emit " + engine +
                             " --image fxt:1 --out " + where);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    for (const auto& e : fs::directory_iterator(out + "/" + engine + "/a")) {
      const std::string name = e.path().filename().string();
      EXPECT_FALSE(test::file_bytes(e.path().string()).empty()) << name;
      EXPECT_EQ(test::file_bytes(e.path().string()),
                test::file_bytes(out + "/" + engine + "/b/" + name))
          << name;
    }
  }
}

TEST(ClusterEmit, BadFlagsGiveOneLineAndExitTwo) {
  const std::string dir = volume_fixture();
  ASSERT_FALSE(dir.empty());
  const std::string out = test::scratch_dir();
  const std::string base = "cv -q" + days(dir) + kFlags;
  struct Case {
    std::string flags, expect;
  };
  const std::vector<Case> cases = {
      {" --emit k8s --out " + out + "/a", "--emit needs --image"},
      {" --emit k8s --image 'a b' --out " + out + "/a", "--image 'a b': expected an image"},
      {" --emit k8s --image x --name Bad_Name --out " + out + "/a", "--name 'Bad_Name'"},
      {" --emit k8s --image x --memory 8GB --out " + out + "/a", "--memory '8GB'"},
      {" --emit k8s --image x --pvc Data --out " + out + "/a", "--pvc 'Data'"},
      {" --emit k8s --image x --mount data --out " + out + "/a", "--mount 'data'"},
      {" --emit k8s --image x --cv-dir /abs --out " + out + "/a", "--cv-dir '/abs'"},
      {" --emit k8s --image x --cv-dir ../up --out " + out + "/a", "--cv-dir '../up'"},
      {" --emit k8s --image x --volume-root " + out + " --out " + out + "/a",
       "is not inside --volume-root"},
      {" --emit yaml --image x --out " + out + "/a", "--emit"},
      {" --emit k8s --image x --folds 3 --by store --out " + out + "/a",
       "--folds 3 by store with 1 training store(s) needs at least 5 stores"},
      {" --emit argo --image x --fold 1 --out " + out + "/a", "--fold does not apply with --emit"},
      {" --fold 2 --out " + out + "/b", "--fold 2 is out of range: the plan has 2 folds"},
      {" --fold 0 --pool-only --out " + out + "/b", "--fold and --pool-only exclude each other"},
      {" --pool-only --out " + out + "/b", "--pool-only: fold 0 is not finished"},
  };
  for (const Case& c : cases) {
    const std::string folds = c.flags.find("--folds") == std::string::npos ? " --folds 2" : "";
    const auto r = test::run_fxt(base + folds + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.output;
    EXPECT_NE(r.output.find("fxt: error: "), std::string::npos) << c.flags << ": " << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.flags << ": " << r.output;
    EXPECT_EQ(lines(r.output), 1u) << c.flags << ": " << r.output;
  }
  EXPECT_FALSE(fs::exists(out + "/a"));  // nothing written on an error
  // An output folder holding a file this emission would not write (a stale fold-2.json).
  fs::create_directories(out + "/c");
  test::write_bytes(out + "/c/fold-2.json", "{}");
  const auto r = test::run_fxt(base + " --folds 2 --emit k8s --image x --out " + out + "/c");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("holds fold-2.json, which this emission would not write"),
            std::string::npos)
      << r.output;
}

TEST(ClusterSpec, ConfigChecksAndEngineNames) {
  ClusterSpecConfig c;
  c.image = "fxt:1";
  EXPECT_TRUE(validate_cluster_spec_config(c).ok());
  c.name = std::string(52, 'a');
  EXPECT_TRUE(validate_cluster_spec_config(c).ok());
  c.name = std::string(53, 'a');  // "-fold-999" would not fit a 63-character name
  EXPECT_FALSE(validate_cluster_spec_config(c).ok());
  c.name = "-a";
  EXPECT_FALSE(validate_cluster_spec_config(c).ok());
  c.name = "a";
  c.memory = "512Mi";
  EXPECT_TRUE(validate_cluster_spec_config(c).ok());
  c.memory = "0";
  EXPECT_FALSE(validate_cluster_spec_config(c).ok());
  c.memory = "8Gi";
  const auto ok_with = [&](std::string ClusterSpecConfig::*field, const std::string& v) {
    ClusterSpecConfig d = c;
    d.*field = v;
    return validate_cluster_spec_config(d).ok();
  };
  for (const char* v : {"512Mi", "8G", "1"})
    EXPECT_TRUE(ok_with(&ClusterSpecConfig::memory, v)) << v;
  for (const char* v : {"", "08Gi", "8GB", "Gi", "-1"}) {
    EXPECT_FALSE(ok_with(&ClusterSpecConfig::memory, v)) << v;
  }
  for (const char* v : {"data", "a.b-c", "x1"})
    EXPECT_TRUE(ok_with(&ClusterSpecConfig::pvc, v)) << v;
  for (const char* v : {"", "a..b", "A", "a_b", ".a", "a-"}) {
    EXPECT_FALSE(ok_with(&ClusterSpecConfig::pvc, v)) << v;
  }
  for (const char* v : {"/data", "/mnt/fxt_1.v"}) {
    EXPECT_TRUE(ok_with(&ClusterSpecConfig::mount, v)) << v;
  }
  for (const char* v : {"", "/", "data", "/data/", "/a//b", "/a b"}) {
    EXPECT_FALSE(ok_with(&ClusterSpecConfig::mount, v)) << v;
  }
  EXPECT_TRUE(ok_with(&ClusterSpecConfig::image, "reg.io:5000/a/fxt:1.0@sha256:ab12"));
  for (const char* v : {"", "-x", "a b", "a;b"}) {
    EXPECT_FALSE(ok_with(&ClusterSpecConfig::image, v)) << v;
  }
  EXPECT_EQ(*parse_cluster_engine("argo"), ClusterEngine::kArgo);
  EXPECT_FALSE(parse_cluster_engine("helm").ok());
}

}  // namespace
}  // namespace fxt
