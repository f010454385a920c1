#!/usr/bin/env bash
# The main job on generated data: synth -> ingest -> inspect.
# Usage: scripts/demo.sh [path/to/fxt] [events]
set -euo pipefail
FXT=${1:-build/bin/fxt}
EVENTS=${2:-1000000}
OUT=${FXT_DEMO_DIR:-out/demo}

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== fxt synth: $EVENTS events of a queue-reactive market"
"$FXT" synth --out "$OUT/synth.dbn.zst" --events "$EVENTS" --seed 1
echo "== fxt ingest: DBN mbp-10 -> snapshot store"
"$FXT" ingest "$OUT/synth.dbn.zst" --out "$OUT/store"
echo "== fxt inspect"
"$FXT" inspect "$OUT/store"
echo "demo outputs are in $OUT/"
