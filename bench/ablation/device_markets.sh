#!/usr/bin/env bash
# One device call: build fxt, then for every market of MARKETS_FILE ("name<TAB>fxt synth flags")
# make it (1M events, seed 1), ingest it and run the variants of VARIANTS_FILE on it (run.sh), all
# markets at once, PAR variants at a time within each. Tables and logs go to $OUT/<market>/.
# Usage (device): bash bench/ablation/device_markets.sh MARKETS_FILE VARIANTS_FILE [PAR]
set -uo pipefail
MARKETS=$1 VARIANTS=$2
export PAR=${3:-3}
# shellcheck source=bench/ablation/device_common.sh
source "$(dirname "$0")/device_common.sh"
build_fxt || exit 1
run_market() {
  local name=$1 flags=$2 w=/tmp/mkt/$1
  mkdir -p "$OUT/$name"
  make_market "$name" "$flags" "$w" || return 0
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
