// fxt cv --emit k8s|argo: the cluster specs of a CV instead of running it (docs/CLUSTER.md,
// train/cluster_spec.h). The fold jobs run `fxt cv` with the same flags as this command plus
// `--fold I`, the gather job with `--pool-only`; the plan is prepare_cv()'s, computed here from
// the local stores, which must lie under --volume-root (the local view of the volume the pods
// mount at --mount).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "train/cluster_spec.h"
#include "train/cv.h"

namespace fxt::cli {

struct CvEmitFlags {
  std::string engine;  // "" = run the CV on this machine
  ClusterSpecConfig spec;
  std::string volume_root;  // default: the stores' common parent directory
  std::string cv_dir;       // results inside the volume; default cv/<name>
};

// Registers --emit, --image, --pvc, --mount, --volume-root, --cv-dir, --name, --cpu, --memory
// and --retries on fxt cv.
void add_cv_emit_flags(CLI::App* cmd, CvEmitFlags* f);

// Writes the specs into out_dir (created; every file atomically) and prints what to apply.
// `cmd` is the parsed fxt cv command: its given options become the jobs' arguments.
Status emit_cv_specs(const CLI::App& cmd, const CvConfig& config,
                     const std::vector<std::string>& stores, const std::string& out_dir,
                     const CvEmitFlags& f);

}  // namespace fxt::cli
