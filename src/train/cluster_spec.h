// Cluster job specs for a cross-validation (`fxt cv --emit k8s|argo`, docs/CLUSTER.md).
//
// A CV's folds are independent until pooling, so a cluster runs them as one job per fold plus
// a gather job: every fold job runs `fxt cv ... --fold I` (exactly fold I of the plan that
// prepare_cv() computes; a restarted pod resumes from the fold's last.ckpt) and the gather job
// runs `fxt cv ... --pool-only` (the pooling of a local `fxt cv`, writing cv.json). Stores and
// results live on one PersistentVolumeClaim mounted at the same path in every pod.
//
// Two engines:
// - k8s: one batch/v1 Job per fold and one gather Job (apply the gather Job after the fold
//   Jobs complete; it refuses to pool unfinished folds).
// - argo: one argoproj.io/v1alpha1 Workflow whose DAG runs the folds in parallel and then the
//   gather step.
//
// Output is JSON (Kubernetes and Argo accept it), built with nlohmann::json, whose objects
// keep their keys sorted: the same inputs give the same bytes. Pure functions, no I/O.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "train/cv.h"

namespace fxt {

enum class ClusterEngine { kK8s, kArgo };
Result<ClusterEngine> parse_cluster_engine(const std::string& name);  // "k8s", "argo"

struct ClusterSpecConfig {
  ClusterEngine engine = ClusterEngine::kK8s;
  std::string name = "fxt-cv";   // Job/Workflow name prefix (DNS-1123 label)
  std::string image;             // container image whose entrypoint is fxt
  std::string pvc = "fxt-data";  // PersistentVolumeClaim holding stores and results
  std::string mount = "/data";   // where every pod mounts it
  int cpu = 4;                   // CPU request = limit (cores); also the fold's --threads
  std::string memory = "8Gi";    // memory request = limit (Kubernetes quantity)
  bool gpu = false;              // nvidia.com/gpu: 1 per fold (--device cuda)
  int retries = 3;               // pod restarts per job (each resumes from last.ckpt)
};

// Checks the names and quantities Kubernetes would refuse: one line naming the flag.
Status validate_cluster_spec_config(const ClusterSpecConfig& c);

// One emitted file: its name inside the output directory and its contents.
struct SpecFile {
  std::string name;
  nlohmann::json spec;
};

// The specs of a CV: `fold_args[i]` are fxt's arguments for fold i (without the program name),
// `gather_args` those of the gather step. k8s: fold-<i>.json per fold and gather.json; argo:
// workflow.json. Each fold's job carries its global ranges as the annotation
// "foxhunt/ranges" (train/validation/test, [begin, end) in snapshots) for people and tests.
Result<std::vector<SpecFile>> build_cluster_specs(
    const ClusterSpecConfig& c, const FoldPlan& plan,
    const std::vector<std::vector<std::string>>& fold_args,
    const std::vector<std::string>& gather_args);

}  // namespace fxt
