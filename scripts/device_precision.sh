#!/usr/bin/env bash
# Issue 15's precision call on the GPU machine (docs/PERFORMANCE.md "Mixed precision"), one
# device call with carry [".devdeps", ".devdata"]:
#   1. the PyTorch peer's compile+graph rows (quadratic SSD form; BF16 autocast, TF32, FP32;
#      B = 32 and 256) while foxhunt builds at nice 19 (compilation is CPU work; the peer's
#      timed replays were measured equal within 0.3 % with and without the build beside them);
#   2. the GPU test programs (every precision's parity tests among them);
#   3. `fxt bench train` and `fxt bench predict` at FP32, TF32 and BF16, the peer's graph rows, and the
#      ratios against the best peer row per precision (scripts/bench_train_gpu.sh);
#   quality: `fxt quickstart --device cuda` at each precision side by side (4 threads each),
#      then every horizon's model AUC and verdict against the baselines next to FP32's;
#   sanitize: compute-sanitizer over the GPU tests (device_check.sh's set plus the precision
#      tests).
# Usage (device): bash scripts/device_precision.sh [bench] [quality] [sanitize] (default bench).
# Env: OUT, FXT_PEER_LIMIT (300 s), FXT_PEER_PLAN (bench_train_gpu.sh's), FXT_SCALING_BATCHES
#   (32,256).
set -uo pipefail
OUT=${OUT:-out/device}
mkdir -p "$OUT/bench"
export FXT_DATA_DIR=$PWD/.devdata
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STEPS="${*:-bench}"
has() { [[ " $STEPS " == *" $1 "* ]]; }
t0=$(date +%s)
if ! has bench; then
  OUT="$OUT/build" bash scripts/device_check.sh
  echo "built at $(( $(date +%s) - t0 )) s"
fi
if has bench; then
FXT_SKIP_FXT=1 FXT_BENCH_DIR="$OUT/bench" FXT_PEER_LIMIT=${FXT_PEER_LIMIT:-300} \
  FXT_PEER_PLAN="${FXT_PEER_PLAN:-compile+graph|quadratic|bf16 tf32;compile+graph|quadratic|fp32}" \
  bash scripts/bench_train_gpu.sh build-dev > "$OUT/peer.log" 2>&1 &
peer=$!
OUT="$OUT/build" nice -n 19 bash scripts/device_check.sh
echo "built at $(( $(date +%s) - t0 )) s; waiting for the peer"
wait $peer
echo "peer done at $(( $(date +%s) - t0 )) s"
OUT="$OUT/gpu" bash scripts/device_check.sh gpu
echo "tests done at $(( $(date +%s) - t0 )) s"
FXT_BENCH_DIR="$OUT/bench" FXT_PEER_PLAN="graph|quadratic chunked|fp32 tf32 bf16" \
  FXT_PEER_LIMIT=120 FXT_SCALING_BATCHES=${FXT_SCALING_BATCHES:-32,256} \
  bash scripts/bench_train_gpu.sh build-dev 2>&1 | tee "$OUT/bench.log" | tail -40
fi
if has quality; then
  for p in fp32 tf32 bf16; do
    # Outside $OUT (stores and market files are hundreds of MB); eval.json is copied back.
    (build-dev/bin/fxt quickstart --device cuda --precision $p --threads 4 --out "/tmp/qs_$p" \
       > "$OUT/qs_$p.log" 2>&1
     mkdir -p "$OUT/qs_$p" && cp /tmp/qs_$p/eval.json /tmp/qs_$p/run.json "$OUT/qs_$p/") &
  done
  wait
  echo "quickstarts done at $(( $(date +%s) - t0 )) s"
  python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
ev = {}
for p in ("fp32", "tf32", "bf16"):
    f = f"{out}/qs_{p}/eval.json"
    if os.path.exists(f):
        ev[p] = json.load(open(f))
    else:
        print(p, "no eval.json:", open(f"{out}/qs_{p}.log").read()[-800:])
if "fp32" not in ev:
    sys.exit()
ref = {h["horizon"]: h for h in ev["fp32"]["vs_best_baseline"]["horizons"]}
for p, j in ev.items():
    print(f"{p}: model mean AUC {j['model']['mean_auc']:.4f} (fp32 {ev['fp32']['model']['mean_auc']:.4f})")
    for h in j["vs_best_baseline"]["horizons"]:
        r = ref[h["horizon"]]
        same = "same verdict" if h["verdict"] == r["verdict"] else "VERDICT DIFFERS"
        print(f"  h{h['horizon']}: model {h['model_auc']:.4f} (fp32 {r['model_auc']:.4f}, "
              f"diff {h['model_auc'] - r['model_auc']:+.4f}); {same}: {h['line']}")
PY
  grep -h "quickstart finished" "$OUT"/qs_*.log
fi
if has sanitize; then
  OUT="$OUT/sanitize" bash scripts/device_check.sh sanitize
fi
echo "total: $(( $(date +%s) - t0 )) s"
