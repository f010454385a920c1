// Kubernetes Job / Argo Workflow specs for a CV (see cluster_spec.h, docs/CLUSTER.md).
#include "train/cluster_spec.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace fxt {

namespace {

using json = nlohmann::json;

// The image's non-root user (docker/Dockerfile); the volume's files are group-owned by it.
constexpr int kUserId = 10001;
constexpr char kVolume[] = "data";

bool is_lower_alnum(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool is_alnum(char ch) {
  return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

bool only(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char ch) {
    return is_alnum(ch) || extra.find(ch) != std::string_view::npos;
  });
}

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool is_dns_label(std::string_view s) {
  return !s.empty() && s.size() <= 63 && is_lower_alnum(s.front()) && is_lower_alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [](char ch) { return is_lower_alnum(ch) || ch == '-'; });
}

// RFC 1123 subdomain: labels joined by '.', at most 253 characters.
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t begin = 0;;) {
    const size_t dot = s.find('.', begin);
    if (!is_dns_label(s.substr(begin, dot - begin))) return false;
    if (dot == std::string_view::npos) return true;
    begin = dot + 1;
  }
}

// An image reference: registry/name:tag or @digest characters, starting with a letter or digit.
bool is_image(std::string_view s) {
  return !s.empty() && is_alnum(s.front()) && only(s, "._/:@+-");
}

// An absolute path of non-empty [A-Za-z0-9._-] segments ("/" alone is not a mount point).
bool is_mount_path(std::string_view s) {
  if (s.size() < 2 || s.front() != '/' || s.back() == '/') return false;
  return only(s, "._-/") && s.find("//") == std::string_view::npos;
}

// A positive integer quantity with an optional binary or decimal suffix: 512Mi, 8Gi, 8G.
bool is_memory(std::string_view s) {
  const size_t digits = s.find_first_not_of("0123456789");
  if (s.empty() || digits == 0 || s.front() == '0') return false;
  const std::string_view suffix = digits == std::string_view::npos ? "" : s.substr(digits);
  for (std::string_view ok : {"", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"}) {
    if (suffix == ok) return true;
  }
  return false;
}

std::string fold_job_name(const ClusterSpecConfig& c, int fold) {
  return fmt::format("{}-fold-{}", c.name, fold);
}

json labels(const ClusterSpecConfig& c, const char* component, int fold) {
  json l = {{"app.kubernetes.io/name", "fxt"},
            {"app.kubernetes.io/component", component},
            {"foxhunt/cv", c.name}};
  if (fold >= 0) l["foxhunt/fold"] = std::to_string(fold);
  return l;
}

json range(const GlobalRange& r) {
  return json::array({r.begin, r.end});
}

json fold_annotations(const Fold& f) {
  const json ranges = {
      {"train", range(f.train)}, {"validation", range(f.validation)}, {"test", range(f.test)}};
  return {{"foxhunt/ranges", ranges.dump()}};
}

json resources(const ClusterSpecConfig& c, bool gpu) {
  json amounts = {{"cpu", std::to_string(c.cpu)}, {"memory", c.memory}};
  json r = {{"requests", amounts}, {"limits", amounts}};
  if (gpu) {
    r["requests"]["nvidia.com/gpu"] = "1";  // extended resources: request = limit
    r["limits"]["nvidia.com/gpu"] = "1";
  }
  return r;
}

// The fxt container: the image's entrypoint is fxt, so only the arguments are given.
json container(const ClusterSpecConfig& c, const std::vector<std::string>& args, bool gpu) {
  return {{"name", "fxt"},
          {"image", c.image},
          {"args", args},
          {"resources", resources(c, gpu)},
          {"volumeMounts", json::array({{{"name", kVolume}, {"mountPath", c.mount}}})}};
}

json volumes(const ClusterSpecConfig& c) {
  return json::array({{{"name", kVolume}, {"persistentVolumeClaim", {{"claimName", c.pvc}}}}});
}

json security_context() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kUserId},
          {"runAsGroup", kUserId},
          {"fsGroup", kUserId}};
}

json k8s_job(const ClusterSpecConfig& c, const std::string& name, const json& job_labels,
             const json& annotations, const std::vector<std::string>& args, bool gpu) {
  json meta = {{"name", name}, {"labels", job_labels}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", meta},
          {"spec",
           {{"backoffLimit", c.retries},
            {"completions", 1},
            {"parallelism", 1},
            {"template",
             {{"metadata", {{"labels", job_labels}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"securityContext", security_context()},
                {"containers", json::array({container(c, args, gpu)})},
                {"volumes", volumes(c)}}}}}}}};
}

json argo_workflow(const ClusterSpecConfig& c, const FoldPlan& plan,
                   const std::vector<std::vector<std::string>>& fold_args,
                   const std::vector<std::string>& gather_args) {
  json tasks = json::array(), deps = json::array();
  json templates = json::array({json{{"name", "cv"}}});  // the DAG, filled in below
  const json retry = {{"limit", std::to_string(c.retries)}, {"retryPolicy", "OnFailure"}};
  for (const Fold& f : plan.folds) {
    const std::string name = fmt::format("fold-{}", f.index);
    tasks.push_back({{"name", name}, {"template", name}});
    deps.push_back(name);
    templates.push_back(
        {{"name", name},
         {"metadata",
          {{"labels", labels(c, "cv-fold", f.index)}, {"annotations", fold_annotations(f)}}},
         {"retryStrategy", retry},
         {"container", container(c, fold_args[static_cast<size_t>(f.index)], c.gpu)}});
  }
  tasks.push_back({{"name", "gather"}, {"template", "gather"}, {"dependencies", deps}});
  templates[0]["dag"] = {{"tasks", tasks}};
  templates.push_back({{"name", "gather"},
                       {"metadata", {{"labels", labels(c, "cv-gather", -1)}}},
                       {"retryStrategy", retry},
                       {"container", container(c, gather_args, false)}});
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Workflow"},
          {"metadata", {{"name", c.name}, {"labels", labels(c, "cv", -1)}}},
          {"spec",
           {{"entrypoint", "cv"},
            {"securityContext", security_context()},
            {"volumes", volumes(c)},
            {"templates", templates}}}};
}

}  // namespace

Result<ClusterEngine> parse_cluster_engine(const std::string& name) {
  if (name == "k8s") return ClusterEngine::kK8s;
  if (name == "argo") return ClusterEngine::kArgo;
  return UsageError("--emit must be k8s or argo (got '{}')", name);
}

Status validate_cluster_spec_config(const ClusterSpecConfig& c) {
  // "-fold-<i>" (up to 4 digits) must still fit a 63-character DNS label.
  if (!is_dns_label(c.name) || c.name.size() > 52) {
    return UsageError(
        "--name '{}': expected 1-52 lowercase letters, digits or '-', starting and ending with a "
        "letter or digit (a Kubernetes name)",
        c.name);
  }
  if (!is_image(c.image)) {
    return UsageError("--image '{}': expected an image reference such as registry/fxt:1.0",
                      c.image);
  }
  if (!is_dns_subdomain(c.pvc)) {
    return UsageError(
        "--pvc '{}': expected a PersistentVolumeClaim name (lowercase letters, digits, '-', '.')",
        c.pvc);
  }
  if (!is_mount_path(c.mount)) {
    return UsageError("--mount '{}': expected an absolute path such as /data", c.mount);
  }
  if (c.cpu < 1) return UsageError("--cpu must be >= 1 (got {})", c.cpu);
  if (!is_memory(c.memory)) {
    return UsageError("--memory '{}': expected a Kubernetes quantity such as 8Gi or 512Mi",
                      c.memory);
  }
  if (c.retries < 0) return UsageError("--retries must be >= 0 (got {})", c.retries);
  return Status::Ok();
}

Result<std::vector<SpecFile>> build_cluster_specs(
    const ClusterSpecConfig& c, const FoldPlan& plan,
    const std::vector<std::vector<std::string>>& fold_args,
    const std::vector<std::string>& gather_args) {
  FXT_RETURN_IF_ERROR(validate_cluster_spec_config(c));
  if (fold_args.size() != plan.folds.size()) {
    return InternalError("build_cluster_specs: {} fold commands for {} folds", fold_args.size(),
                         plan.folds.size());
  }
  std::vector<SpecFile> files;
  if (c.engine == ClusterEngine::kArgo) {
    files.push_back({"workflow.json", argo_workflow(c, plan, fold_args, gather_args)});
    return files;
  }
  for (const Fold& f : plan.folds) {
    files.push_back({fmt::format("fold-{}.json", f.index),
                     k8s_job(c, fold_job_name(c, f.index), labels(c, "cv-fold", f.index),
                             fold_annotations(f), fold_args[static_cast<size_t>(f.index)], c.gpu)});
  }
  files.push_back({"gather.json", k8s_job(c, c.name + "-gather", labels(c, "cv-gather", -1),
                                          json::object(), gather_args, false)});
  return files;
}

}  // namespace fxt
