#!/usr/bin/env bash
# One device call: build fxt, then for every market of MARKETS_FILE ("name<TAB>fxt synth flags")
# make it (1M events, seed 1) and run `fxt cv` on it with the train flags FLAGS (env), every fold
# of every market at once (--fold i), then pool each market's folds. cv.json and the logs go to
# $OUT/<market>/.
# Usage (device): FLAGS="..." bash bench/ablation/device_cv.sh MARKETS_FILE [FOLDS]
set -uo pipefail
MARKETS=$1 FOLDS=${2:-3}
# shellcheck source=bench/ablation/device_common.sh
source "$(dirname "$0")/device_common.sh"
build_fxt || exit 1
COMMON="--folds $FOLDS --by block --drop-features tod_sin,tod_cos --device cuda --threads 2"
cv_market() {
  local name=$1 flags=$2 w=/tmp/cv/$1
  mkdir -p "$OUT/$name"
  make_market "$name" "$flags" "$w" || return 0
  for ((i = 0; i < FOLDS; i++)); do
    # shellcheck disable=SC2086
    $FXT cv -q --store $w/store --out $w/cv $COMMON $FLAGS --fold $i >"$OUT/$name/fold_$i.log" 2>&1 &
  done
  wait
  # shellcheck disable=SC2086
  $FXT cv --store $w/store --out $w/cv $COMMON $FLAGS --pool-only >"$OUT/$name/pool.log" 2>&1
  cp $w/cv/cv.json "$OUT/$name/" 2>/dev/null
}
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  cv_market "$name" "${flags:-}" &
done <"$MARKETS"
wait
for f in "$OUT"/*/pool.log; do echo "== $f"; tail -30 "$f"; done
