#!/usr/bin/env bash
# Round 12 on the GPU (docs/MODEL.md): the causal trunk against DESIGN's pool start on market C
# (the meta-order market), at a GPU budget. Run on the device after scripts/device_check.sh has
# built build-dev (or alone: it builds fxt). Per trunk: fxt train --device cuda, then fxt eval;
# the verdict lines go to stdout, the runs under $OUT/c_<trunk>.
# Usage (device): OUT=$OUT/m EVENTS=5000000 bash bench/ablation/device_causal.sh
set -uo pipefail
source "$(dirname "$0")/device_common.sh"
mkdir -p "$OUT"
[ -x build-dev/bin/fxt ] && FXT=$PWD/build-dev/bin/fxt || build_fxt || exit 1
W=${W:-/tmp/market_c}
EVENTS=${EVENTS:-5000000} make_market market_c \
  "--meta-gap 3 --meta-clip-rate 20 --meta-skew 1.2 --drift-skew 0.15" "$W" || exit 1
for trunk in causal no-causal; do
  timeout ${FXT_RUN_LIMIT:-200} $FXT train --store "$W/store" --stride 4 --epochs ${EPOCHS:-12} \
    --steps-per-epoch ${STEPS:-300} --batch ${BATCH:-256} --horizons 30,100,300,1000 \
    --drop-features tod_sin,tod_cos --ple-bins 8 --gam-bins 8 --input-skip gam \
    --baselines logreg,gbdt,gam --early-stop mean_auc --$trunk --device cuda --threads 16 \
    --out "$OUT/c_$trunk" > "$OUT/c_$trunk.train.log" 2>&1
  echo "== $trunk train rc=$? $(grep -E 'trained' "$OUT/c_$trunk.train.log")"
  timeout ${FXT_RUN_LIMIT:-200} $FXT eval --checkpoint "$OUT/c_$trunk/best.ckpt" --device cuda \
    --threads 16 --out "$OUT/c_$trunk/eval.json" > "$OUT/c_$trunk.eval.log" 2>&1
  grep -E '^mean AUC|^h[0-9]+:' "$OUT/c_$trunk.eval.log"
done
