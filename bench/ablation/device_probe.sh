#!/usr/bin/env bash
# One device call (docs/MODEL.md, round 7): build fxt, make the markets of MARKETS_FILE (as
# device_markets.sh: 1M events, seed 1), write their features and run the one-snapshot probe
# (one_snapshot_probe.py, PyTorch on the GPU) for every encoding and model, all at once.
# Usage (device): bash bench/ablation/device_probe.sh MARKETS_FILE [HORIZONS]
set -uo pipefail
MARKETS=$1 HORIZONS=${2:-h30,h100,h300,h1000}
OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.devdeps -DFXT_BENCH=OFF >"$OUT/cmake.log" 2>&1
cmake --build build-dev -j16 --target fxt >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
FXT=$PWD/build-dev/bin/fxt
probe_market() {
  local name=$1 flags=$2 w=/tmp/probe/$1
  mkdir -p "$w"
  # shellcheck disable=SC2086
  { $FXT synth -q --out $w/synth.dbn.zst --events ${EVENTS:-1000000} --seed ${SEED:-1} $flags &&
    $FXT ingest -q $w/synth.dbn.zst --out $w/store &&
    $FXT features --store $w/store --out $w/features.csv; } >"$OUT/$name.data.log" 2>&1 || return 0
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
