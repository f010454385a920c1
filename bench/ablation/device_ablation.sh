#!/usr/bin/env bash
# One device call: build fxt, make the quickstart's market (seed 1, 1M events), run the variants of
# VARIANTS_FILE on the GPU PAR at a time, and copy the table and logs to $OUT.
# Usage (device): bash bench/ablation/device_ablation.sh VARIANTS_FILE [PAR]
set -uo pipefail
VARIANTS=$1
export PAR=${2:-6}
OUT=${OUT:-/tmp/out}
# XGBoost (Debian's, carried in .devdeps/lib by docs/DEVICE.md's recipe) for the GBDT baselines;
# the linker finds its libdmlc dependency through LD_LIBRARY_PATH too.
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.devdeps -DFXT_BENCH=OFF >"$OUT/cmake.log" 2>&1
grep -i "xgboost" "$OUT/cmake.log" | head -2
cmake --build build-dev -j16 --target fxt >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
FXT=$PWD/build-dev/bin/fxt
W=/tmp/abl
mkdir -p $W
[[ -d $W/store ]] || {
  $FXT synth -q --out $W/synth.dbn.zst --events 1000000 --seed 1 --latent &&
  $FXT ingest -q $W/synth.dbn.zst --out $W/store; } >"$OUT/data.log" 2>&1
bash bench/ablation/run.sh "$FXT" $W/runs "$VARIANTS" -- --store $W/store --split-train 0.8 \
  --split-val 0.1 --drop-features tod_sin,tod_cos --device cuda --threads 2 \
  ${EXTRA_FLAGS:-}
cp $W/runs/ablation.tsv "$OUT/" 2>/dev/null
tar czf "$OUT/ablation_logs.tgz" -C $W/runs . --exclude='*.ckpt' 2>/dev/null
