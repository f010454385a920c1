#!/usr/bin/env bash
# One device call: build fxt, then for every market of MARKETS_FILE ("name<TAB>fxt synth flags")
# make it (1M events, seed 1), ingest it and run the variants of VARIANTS_FILE on it (run.sh), all
# markets at once, PAR variants at a time within each. Tables and logs go to $OUT/<market>/.
# Usage (device): bash bench/ablation/device_markets.sh MARKETS_FILE VARIANTS_FILE [PAR]
set -uo pipefail
MARKETS=$1 VARIANTS=$2
export PAR=${3:-3}
OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.devdeps -DFXT_BENCH=OFF >"$OUT/cmake.log" 2>&1
cmake --build build-dev -j16 --target fxt >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
FXT=$PWD/build-dev/bin/fxt
run_market() {
  local name=$1 flags=$2 w=/tmp/mkt/$1
  mkdir -p "$w" "$OUT/$name"
  # shellcheck disable=SC2086
  { $FXT synth -q --out $w/synth.dbn.zst --events ${EVENTS:-1000000} --seed ${SEED:-1} --latent $flags &&
    $FXT ingest -q $w/synth.dbn.zst --out $w/store; } >"$OUT/$name/data.log" 2>&1 || return 0
  bash bench/ablation/run.sh "$FXT" $w/runs "$VARIANTS" -- --store $w/store --split-train 0.8 \
    --split-val 0.1 --drop-features tod_sin,tod_cos --device cuda --threads 2 \
    ${EXTRA_FLAGS:-} >"$OUT/$name/table.txt" 2>&1
  cp $w/runs/ablation.tsv "$OUT/$name/" 2>/dev/null
  tar czf "$OUT/$name/logs.tgz" -C $w/runs . --exclude='*.ckpt' 2>/dev/null
}
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  run_market "$name" "${flags:-}" &
done <"$MARKETS"
wait
for f in "$OUT"/*/ablation.tsv; do echo "== $f"; cat "$f"; done
