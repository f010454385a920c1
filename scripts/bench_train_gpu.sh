#!/usr/bin/env bash
# GPU speed against the strongest PyTorch peer (DESIGN §11, issue 15), in one device call:
#   1. `fxt bench train` FP32 at FXT_SCALING_BATCHES (step time, sequences/s, device memory per
#      sequence, B = 1 forward), and with --precision tf32 and bf16 at B = 32 and 256;
#   2. `fxt bench predict` (scored snapshots/s per pass size, one snapshot's latency), FP32, TF32
#      and BF16;
#   3. the PyTorch peer (bench/peer) in every form (loop, quadratic SSD, chunked SSD), mode
#      (eager, graph, compile, compile+graph) and precision (fp32, tf32, bf16 autocast) that
#      fits in FXT_PEER_LIMIT seconds, run as separate invocations in FXT_PEER_PLAN's order
#      (each rewrites its JSON after every row, so a cut-short run keeps what it measured);
#   4. the ratios against the best peer per precision and batch size.
# Usage: scripts/bench_train_gpu.sh [build-dir]
# Env: FXT_BENCH_DIR (out/bench), FXT_PEER_PYTHON (python3), FXT_PEER_LIMIT (900 s in all),
#      FXT_PEER_STEPS (40), FXT_PEER_ARGS (more peer flags), FXT_SCALING_BATCHES,
#      FXT_PEER_PLAN ("modes|forms|precisions;..." invocations, in order; empty = no peer run),
#      FXT_SKIP_FXT=1 (peer only).
set -uo pipefail
BUILD=${1:-build}
OUT=${FXT_BENCH_DIR:-out/bench}
PY=${FXT_PEER_PYTHON:-python3}
PEER_STEPS=${FXT_PEER_STEPS:-40}
PEER_ARGS=${FXT_PEER_ARGS:-}
PEER_LIMIT=${FXT_PEER_LIMIT:-900}
SCALING=${FXT_SCALING_BATCHES:-32,256,1024,4096}
# Cheap, decisive rows first: the graph modes (no compilation), then compile+graph of the SSD
# forms, then the slow modes and the loop form's compilation.
PLAN=${FXT_PEER_PLAN-"graph|quadratic chunked loop|fp32 tf32 bf16;compile+graph|quadratic chunked|fp32 tf32 bf16;eager compile|quadratic chunked loop|fp32 tf32 bf16;compile+graph|loop|fp32 tf32 bf16"}
mkdir -p "$OUT"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv || true
if [ "${FXT_SKIP_FXT:-0}" != 1 ]; then
  "$BUILD/bin/fxt" bench train --device cuda --batch "$SCALING" --steps 300 --warmup 30 \
    --profile 10 --out "$OUT/fxt_train_fp32.json"
  "$BUILD/bin/fxt" bench train --device cuda --batch 32,256 --steps 300 --warmup 30 --profile 0 \
    --precision tf32 --out "$OUT/fxt_train_tf32.json"
  "$BUILD/bin/fxt" bench train --device cuda --batch 32,256 --steps 300 --warmup 30 --profile 0 \
    --precision bf16 --out "$OUT/fxt_train_bf16.json"
  "$BUILD/bin/fxt" bench predict --device cuda --out "$OUT/fxt_predict_fp32.json"
  "$BUILD/bin/fxt" bench predict --device cuda --precision tf32 --batch 4096,16384 \
    --out "$OUT/fxt_predict_tf32.json"
  "$BUILD/bin/fxt" bench predict --device cuda --precision bf16 --batch 4096,16384 \
    --out "$OUT/fxt_predict_bf16.json"
fi
deadline=$(( $(date +%s) + PEER_LIMIT ))
i=0
IFS=';' read -ra RUNS <<< "$PLAN"
for run in "${RUNS[@]}"; do
  IFS='|' read -r modes forms precisions <<< "$run"
  left=$(( deadline - $(date +%s) ))
  [ "$left" -le 5 ] && { echo "peer: no time left for '$run'"; continue; }
  i=$((i + 1))
  echo "== peer run $i ($left s left): modes [$modes] forms [$forms] precisions [$precisions]"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "$left" "$PY" bench/peer/bench_peer.py --device cuda --modes $modes \
    --forms $forms --precisions $precisions --batch 32 256 --steps "$PEER_STEPS" --warmup 5 \
    --no-fwd $PEER_ARGS --out "$OUT/peer_$i.json" || echo "peer run $i stopped (rc $?)"
done
"$PY" - "$OUT" <<'PYEOF'
import glob, json, os, sys
out = sys.argv[1]
peer = []
for f in sorted(glob.glob(f"{out}/peer_*.json")):
    peer += json.load(open(f))["results"]
def load(name):
    p = f"{out}/{name}"
    return json.load(open(p)) if os.path.exists(p) else None
fp32, tf32, bf16 = (load(f"fxt_train_{p}.json") for p in ("fp32", "tf32", "bf16"))
print("\npeer rows:")
for p in sorted(peer, key=lambda p: (p["precision"], p["B"], p["step_ms"])):
    print(f"  {p['precision']:>4} B={p['B']:<4} {p['form']:>9} {p['mode']:<14} {p['step_ms']:9.3f} ms")
print("\nprecision  B     foxhunt ms (its precision)   best peer (form, mode)            peer ms   ratio")
# Each precision against the peer at the same precision (foxhunt's bf16: BF16 operands converted
# per product, docs/GPU.md "Precision"; the peer's: torch.autocast).
for prec, ours in (("fp32", fp32), ("tf32", tf32), ("bf16", bf16)):
    if ours is None:
        continue
    for r in ours["results"]:
        if r["B"] not in (32, 256):
            continue
        rows = [p for p in peer if p["B"] == r["B"] and p["precision"] == prec]
        label = prec
        if not rows:
            print(f"{prec:>9} {r['B']:>4}   {r['step_ms']:9.4f} ({label})   (no peer result)")
            continue
        best = min(rows, key=lambda p: p["step_ms"])
        # Without a compile+graph row (the fastest mode wherever both ran) the ratio only bounds.
        bound = "" if any(p["mode"] == "compile+graph" for p in rows) else "  upper bound: no compile+graph row"
        print(f"{prec:>9} {r['B']:>4}   {r['step_ms']:9.4f} ({label})        "
              f"{best['form']+', '+best['mode']:<32} {best['step_ms']:9.3f}   {best['step_ms']/r['step_ms']:5.2f}x{bound}")
if fp32:
    print("\nscaling (FP32):")
    for r in fp32["results"]:
        print(f"  B={r['B']:<5} {r['step_ms']:8.3f} ms  {r['sequences_per_s']:10.0f} seq/s  "
              f"{r.get('device_bytes_per_sequence', 0)/1024:8.0f} KiB/seq "
              f"(marginal {r.get('device_bytes_per_sequence_marginal', 0)/1024:.0f} KiB)")
    print(f"B=1 forward (all positions): {fp32['fwd_b1_ms']*1e3:.1f} us graph, "
          f"{fp32['fwd_b1_end_to_end_ms']*1e3:.1f} us host to host")
for name in ("fxt_predict_fp32.json", "fxt_predict_tf32.json", "fxt_predict_bf16.json"):
    p = load(name)
    if p is None:
        continue
    print(f"{name}:")
    for r in p["results"]:
        print(f"  batch {r['batch']:<6} {r['snapshots_per_s']:12.0f} snapshots/s  {r['ms_per_pass']:8.3f} ms/pass")
    print(f"  B=1 scoring: {p['b1_host_ms']*1e3:.1f} us host to host")
PYEOF
