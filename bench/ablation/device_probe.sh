#!/usr/bin/env bash
# One device call (docs/MODEL.md, round 7): build fxt, make the markets of MARKETS_FILE (as
# device_markets.sh: 1M events, seed 1), write their features and run the one-snapshot probe
# (one_snapshot_probe.py, PyTorch on the GPU) for every encoding and model, all at once.
# Usage (device): bash bench/ablation/device_probe.sh MARKETS_FILE [HORIZONS]
set -uo pipefail
MARKETS=$1 HORIZONS=${2:-h30,h100,h300,h1000}
# shellcheck source=bench/ablation/device_common.sh
source "$(dirname "$0")/device_common.sh"
build_fxt || exit 1
probe_market() {
  local name=$1 flags=$2 w=/tmp/probe/$1
  make_market "$name" "$flags" "$w" &&
    $FXT features --store $w/store --out $w/features.csv >>"$OUT/$name.data.log" 2>&1 || return 0
  for enc in std ple; do
    for model in linear mlp; do
      python3 bench/ablation/one_snapshot_probe.py $w/features.csv --encoding $enc --model $model \
        --horizons "$HORIZONS" --device cuda --threads 2 >"$OUT/$name.$enc.$model.txt" 2>&1 &
    done
  done
  wait
}
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  probe_market "$name" "${flags:-}" &
done <"$MARKETS"
wait
for f in "$OUT"/*.txt; do echo "== $(basename "$f" .txt)"; cat "$f"; done
