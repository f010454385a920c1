// Validates cluster specs written by `fxt cv --emit k8s|argo` (docs/CLUSTER.md) against the
// published schemas, without a cluster: batch/v1 Job with kubernetes-models (its JSON schema is
// generated from Kubernetes' OpenAPI spec) and argoproj.io/v1alpha1 Workflow with
// @kubernetes-models/argo-workflows (generated from Argo's CRD schema); versions are pinned in
// package.json / package-lock.json (`npm ci` here).
//
// Usage: node validate.mjs FILE.json...   Prints one line per file; exit 0 when every file is
// valid, 1 when any is not, 2 on bad usage. Besides the schema, every container must name an
// image: the schema leaves `image` optional (for higher-level tools that fill it in), but the
// API server refuses a Job or Workflow pod without one.
import { readFileSync } from "node:fs";
import { Job } from "kubernetes-models/batch/v1";
import { Workflow } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";

const kinds = {
  "batch/v1 Job": { model: Job, containers: (s) => s.spec?.template?.spec?.containers ?? [] },
  "argoproj.io/v1alpha1 Workflow": {
    model: Workflow,
    containers: (s) => (s.spec?.templates ?? []).filter((t) => t.container).map((t) => t.container),
  },
};

function check(path) {
  let spec;
  try {
    spec = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    return `not a JSON file: ${e.message}`;
  }
  const kind = kinds[`${spec.apiVersion} ${spec.kind}`];
  if (!kind) return `unexpected apiVersion/kind ${spec.apiVersion} ${spec.kind}`;
  try {
    new kind.model(spec).validate();
  } catch (e) {
    return `schema: ${e.message}`;
  }
  const containers = kind.containers(spec);
  if (containers.length === 0) return "no container";
  for (const c of containers) {
    if (typeof c.image !== "string" || c.image.length === 0) {
      return `container ${c.name ?? "(unnamed)"} has no image`;
    }
  }
  return null;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs FILE.json...");
  process.exit(2);
}
let bad = 0;
for (const f of files) {
  const err = check(f);
  if (err) {
    ++bad;
    console.log(`${f}: invalid: ${err}`);
  } else {
    console.log(`${f}: valid`);
  }
}
process.exit(bad === 0 ? 0 : 1);
