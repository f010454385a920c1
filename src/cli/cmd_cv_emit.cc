// fxt cv --emit: cluster specs for a CV (see cmd_cv_emit.h, docs/CLUSTER.md).
#include "cli/cmd_cv_emit.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cli/flag_checks.h"
#include "core/file_util.h"

namespace fxt::cli {

namespace fs = std::filesystem;

namespace {

// Flags of this command that are not passed on to the jobs: where and how to emit, the paths
// (rewritten for the volume) and the local piecing of a run (each job runs its fold whole).
const std::set<std::string>& flags_not_passed() {
  static const std::set<std::string> names = {
      "--store",       "--out",    "--fold",  "--pool-only", "--stop-after-folds",
      "--stop-after",  "--emit",   "--image", "--pvc",       "--mount",
      "--volume-root", "--cv-dir", "--name",  "--cpu",       "--memory",
      "--retries",     "--help"};
  return names;
}

// The options the user gave (on the command line or in --config's file), in registration
// order, as arguments: what a fold job must repeat to run the same CV.
std::vector<std::string> given_options(const CLI::App& cmd, bool* threads_given) {
  std::vector<std::string> args;
  *threads_given = false;
  for (const CLI::Option* opt : cmd.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || flags_not_passed().count(name) != 0) continue;
    if (name == "--threads") *threads_given = true;
    if (opt->get_expected_min() == 0) {  // a flag
      if (opt->as<bool>()) args.push_back(name);
      continue;
    }
    for (const std::string& v : opt->results()) {
      args.push_back(name);
      args.push_back(v);
    }
  }
  return args;
}

// The deepest directory holding every path.
fs::path common_parent(const std::vector<std::string>& paths) {
  fs::path root = fs::path(paths.front()).parent_path();
  for (const std::string& p : paths) {
    while (!root.empty() && root != root.root_path()) {
      const fs::path rel = fs::path(p).lexically_relative(root);
      if (!rel.empty() && *rel.begin() != "..") break;
      root = root.parent_path();
    }
  }
  return root;
}

// `local` (absolute, normal) as the pods see it: its place under the volume root, under mount.
Result<std::string> in_volume(const fs::path& local, const fs::path& root, const std::string& mount,
                              const char* what) {
  const fs::path rel = local.lexically_relative(root);
  if (rel.empty() || *rel.begin() == ".." || rel == ".") {
    return UsageError("{} {} is not inside --volume-root {}: the pods see only the volume", what,
                      local.string(), root.string());
  }
  return (fs::path(mount) / rel).generic_string();
}

}  // namespace

void add_cv_emit_flags(CLI::App* cmd, CvEmitFlags* f) {
  cmd->add_option("--emit", f->engine,
                  "write cluster specs instead of running: k8s (one batch/v1 Job per fold and a "
                  "gather Job) or argo (one Workflow); --out is then where they go "
                  "(docs/CLUSTER.md)")
      ->check(CLI::IsMember({"k8s", "argo"}));
  cmd->add_option("--image", f->spec.image, "--emit: container image whose entrypoint is fxt");
  cmd->add_option("--pvc", f->spec.pvc,
                  "--emit: PersistentVolumeClaim holding the stores and the results")
      ->capture_default_str();
  cmd->add_option("--mount", f->spec.mount, "--emit: where the pods mount the volume")
      ->capture_default_str();
  cmd->add_option("--volume-root", f->volume_root,
                  "--emit: the local directory that is the volume's root (the stores must lie "
                  "under it; default: their common parent)");
  cmd->add_option("--cv-dir", f->cv_dir,
                  "--emit: the CV directory inside the volume (default: cv/<name>)");
  cmd->add_option("--name", f->spec.name, "--emit: Job/Workflow name (a Kubernetes name)")
      ->capture_default_str();
  cmd->add_option("--cpu", f->spec.cpu,
                  "--emit: CPU cores per job (request = limit; the folds' --threads unless given)")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  cmd->add_option("--memory", f->spec.memory, "--emit: memory per job (request = limit)")
      ->capture_default_str();
  cmd->add_option("--retries", f->spec.retries,
                  "--emit: pod restarts per job (a restarted fold resumes from its last.ckpt)")
      ->capture_default_str()
      ->check(int_range(0, 100));
}

Status emit_cv_specs(const CLI::App& cmd, const CvConfig& config,
                     const std::vector<std::string>& stores, const std::string& out_dir,
                     const CvEmitFlags& f) {
  for (const char* local : {"--fold", "--pool-only", "--stop-after-folds", "--stop-after"}) {
    if (cmd.get_option(local)->count() > 0) {
      return UsageError("{} does not apply with --emit: every job runs its whole fold", local);
    }
  }
  ClusterSpecConfig spec = f.spec;
  FXT_ASSIGN_OR_RETURN(spec.engine, parse_cluster_engine(f.engine));
  if (spec.image.empty()) return UsageError("--emit needs --image (the fxt container image)");
  spec.gpu = config.train.device == "cuda";
  FXT_RETURN_IF_ERROR(validate_cluster_spec_config(spec));
  FXT_ASSIGN_OR_RETURN(const CvSetup setup, prepare_cv(config, stores));

  fs::path root = f.volume_root.empty() ? common_parent(setup.stores)
                                        : fs::absolute(fs::path(f.volume_root)).lexically_normal();
  if (!root.has_filename() && root != root.root_path()) root = root.parent_path();  // "dir/"

  const std::string cv_rel = f.cv_dir.empty() ? "cv/" + spec.name : f.cv_dir;
  const fs::path cv_path = fs::path(cv_rel).lexically_normal();
  if (cv_rel.empty() || cv_path.is_absolute() || *cv_path.begin() == ".." || cv_path == ".") {
    return UsageError("--cv-dir '{}': expected a relative path inside the volume, such as cv/es",
                      cv_rel);
  }
  const std::string cv_in_volume = (fs::path(spec.mount) / cv_path).generic_string();

  std::vector<std::string> base = {"cv"};
  for (const std::string& s : setup.stores) {
    FXT_ASSIGN_OR_RETURN(std::string p, in_volume(s, root, spec.mount, "store"));
    base.push_back("--store");
    base.push_back(p);
  }
  base.push_back("--out");
  base.push_back(cv_in_volume);
  bool threads_given = false;
  for (std::string& a : given_options(cmd, &threads_given)) base.push_back(std::move(a));
  if (!threads_given) {
    base.push_back("--threads");
    base.push_back(std::to_string(spec.cpu));
  }
  std::vector<std::vector<std::string>> fold_args;
  for (const Fold& fold : setup.plan.folds) {
    fold_args.push_back(base);
    fold_args.back().push_back("--fold");
    fold_args.back().push_back(std::to_string(fold.index));
  }
  std::vector<std::string> gather_args = base;
  gather_args.push_back("--pool-only");
  FXT_ASSIGN_OR_RETURN(std::vector<SpecFile> files,
                       build_cluster_specs(spec, setup.plan, fold_args, gather_args));
  // Files of an earlier emission that this one would not replace (a fold-5.json of a 6-fold
  // CV) would be applied with the rest: refuse rather than leave them.
  std::set<std::string> names;
  for (const SpecFile& file : files) names.insert(file.name);
  std::error_code ec;
  if (fs::exists(out_dir)) {
    for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
      const std::string n = entry.path().filename().string();
      if (names.count(n) == 0) {
        return UsageError("{} holds {}, which this emission would not write: use an empty --out",
                          out_dir, n);
      }
    }
  }
  fs::create_directories(out_dir, ec);
  if (ec) return IoError("cannot create {}: {}", out_dir, ec.message());
  for (const SpecFile& file : files) {
    FXT_RETURN_IF_ERROR(write_file_atomic(out_dir + "/" + file.name, file.spec.dump(2) + "\n"));
  }

  std::printf("cv: %zu folds (%s by %s); volume %s = local %s, results in %s\n",
              setup.plan.folds.size(), cv_scheme_name(setup.plan.scheme),
              fold_unit_name(setup.plan.unit), spec.pvc.c_str(), root.string().c_str(),
              cv_in_volume.c_str());
  for (const SpecFile& file : files)
    std::printf("wrote %s/%s\n", out_dir.c_str(), file.name.c_str());
  if (spec.engine == ClusterEngine::kK8s) {
    std::string folds;
    for (const SpecFile& file : files) {
      if (file.name != "gather.json") folds += fmt::format(" -f {}/{}", out_dir, file.name);
    }
    std::printf(
        "run: kubectl apply%s && kubectl wait --for=condition=complete --timeout=-1s job -l "
        "foxhunt/cv=%s,app.kubernetes.io/component=cv-fold && kubectl apply -f %s/gather.json\n",
        folds.c_str(), spec.name.c_str(), out_dir.c_str());
  } else {
    std::printf("run: argo submit %s/workflow.json\n", out_dir.c_str());
  }
  return Status::Ok();
}

}  // namespace fxt::cli
