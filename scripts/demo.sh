#!/usr/bin/env bash
# The main job on generated data: fxt quickstart (synth -> ingest -> train -> eval) and the
# per-horizon table of model vs logistic baseline vs base rate (docs/QUICKSTART.md).
# Usage: scripts/demo.sh [path/to/fxt] [extra quickstart flags...]
set -euo pipefail
FXT=${1:-build/bin/fxt}
shift || true
OUT=${FXT_DEMO_DIR:-out/demo}
"$FXT" quickstart --out "$OUT" "$@"
