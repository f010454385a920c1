#!/usr/bin/env bash
# The main job on generated data: fxt quickstart (synth -> ingest -> train -> eval -> predict ->
# backtest signal and mm -> report). Prints the per-horizon table of model vs logistic baseline
# vs base rate, the backtests' PnL and the path of the self-contained HTML report
# (OUT/report.html; docs/QUICKSTART.md, docs/REPORT.md).
# Usage: scripts/demo.sh [path/to/fxt] [extra quickstart flags...]
set -euo pipefail
FXT=${1:-build/bin/fxt}
shift || true
OUT=${FXT_DEMO_DIR:-out/demo}
"$FXT" quickstart --out "$OUT" "$@"
echo "open $OUT/report.html in a browser (it needs no network)"
