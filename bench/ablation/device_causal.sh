#!/usr/bin/env bash
# Rounds 12-13 on the GPU (docs/MODEL.md): variants of the model on market C (the meta-order
# market) at a GPU budget, each scored with the oracle. Run on the device after
# scripts/device_check.sh has built build-dev (or alone: it builds fxt). Per variant: fxt train
# --device cuda, then fxt eval with --oracle on ORACLE_ROWS rows; the verdict and oracle lines go
# to stdout, the runs under $OUT/c_<name>.
# VARIANTS: ';'-separated "name:flags" (default: the causal trunk against DESIGN's pool start).
# Usage (device): OUT=$OUT/m EVENTS=5000000 bash bench/ablation/device_causal.sh
set -uo pipefail
source "$(dirname "$0")/device_common.sh"
mkdir -p "$OUT"
[ -x build-dev/bin/fxt ] && FXT=$PWD/build-dev/bin/fxt || build_fxt || exit 1
W=${W:-/tmp/market_c}
EVENTS=${EVENTS:-5000000} make_market market_c \
  "--meta-gap 3 --meta-clip-rate 20 --meta-skew 1.2 --drift-skew 0.15" "$W" || exit 1
VARIANTS=${VARIANTS:-"causal:--causal;no-causal:--no-causal"}
IFS=';' read -ra list <<< "$VARIANTS"
for v in "${list[@]}"; do
  name=${v%%:*}; flags=${v#*:}
  # shellcheck disable=SC2086
  timeout ${FXT_RUN_LIMIT:-200} $FXT train --store "$W/store" --stride 4 --epochs ${EPOCHS:-12} \
    --steps-per-epoch ${STEPS:-300} --batch ${BATCH:-256} --horizons 30,100,300,1000 \
    --drop-features tod_sin,tod_cos --ple-bins 8 --gam-bins 8 --input-skip gam \
    --baselines logreg,gbdt,gam --early-stop mean_auc --device cuda --threads 16 $flags \
    --out "$OUT/c_$name" > "$OUT/c_$name.train.log" 2>&1
  echo "== $name ($flags) train rc=$? $(grep -E 'trained' "$OUT/c_$name.train.log")"
  timeout ${FXT_RUN_LIMIT:-200} $FXT eval --checkpoint "$OUT/c_$name/best.ckpt" --device cuda \
    --threads 16 --oracle "$W/synth.dbn.zst.synth.json" --oracle-rows ${ORACLE_ROWS:-3000} \
    --out "$OUT/c_$name/eval.json" > "$OUT/c_$name.eval.log" 2>&1
  grep -E '^mean AUC|^h[0-9]+:|recovers' "$OUT/c_$name.eval.log"
done
