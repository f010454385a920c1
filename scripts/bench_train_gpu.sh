#!/usr/bin/env bash
# GPU training-step comparison (DESIGN §11, issue 4), one run on one machine: `fxt bench train`
# (the captured CUDA Graph step at B = 32 and 256, K = 64, and B = 1 forward latency), then the
# PyTorch peer in its four modes (eager, graph, compile, compile+graph) on the same GPU; prints
# foxhunt's step time against the best peer mode at each batch size.
# Usage: scripts/bench_train_gpu.sh [build-dir]   (env: FXT_BENCH_DIR, FXT_PEER_PYTHON,
#        FXT_PEER_MODES (run in that order), FXT_PEER_STEPS, FXT_PEER_ARGS (more peer flags, e.g.
#        --no-fwd), FXT_PEER_LIMIT (seconds for the whole peer run; what it measured by then is
#        kept: the peer rewrites its JSON after every row))
set -euo pipefail
BUILD=${1:-build}
OUT=${FXT_BENCH_DIR:-out/bench}
PY=${FXT_PEER_PYTHON:-python3}
MODES=${FXT_PEER_MODES:-eager graph compile compile+graph}
PEER_STEPS=${FXT_PEER_STEPS:-100}
PEER_ARGS=${FXT_PEER_ARGS:-}
PEER_LIMIT=${FXT_PEER_LIMIT:-3600}
mkdir -p "$OUT"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv || true
"$BUILD/bin/fxt" bench train --device cuda --batch 32,256 --steps 500 --warmup 50 \
  --out "$OUT/fxt_train_gpu.json"
# shellcheck disable=SC2086
timeout "$PEER_LIMIT" "$PY" bench/peer/bench_peer.py --device cuda --modes $MODES --batch 32 256 \
  --steps "$PEER_STEPS" $PEER_ARGS --out "$OUT/peer_gpu.json" || echo "peer stopped (rc $?)"
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
ours = json.load(open(f"{out}/fxt_train_gpu.json"))
peer = json.load(open(f"{out}/peer_gpu.json"))["results"]
print(f"\n{ours['device'].get('name')}  (foxhunt step: captured CUDA Graph; peer: median of per-step CUDA events)")
print("   B   foxhunt ms   best peer mode          peer ms   ratio")
for r in ours["results"]:
    rows = [p for p in peer if p["B"] == r["B"]]
    if not rows:
        print(f"{r['B']:>4}   {r['step_ms']:10.4f}   (no peer result)")
        continue
    best = min(rows, key=lambda p: p["step_ms"])
    print(f"{r['B']:>4}   {r['step_ms']:10.4f}   {best['mode']:<20} {best['step_ms']:9.3f}   {best['step_ms']/r['step_ms']:5.1f}x")
for p in peer:
    print(f"  peer {p['mode']:<14} B={p['B']:<4} {p['step_ms']:9.3f} ms")
fwd = [p for p in peer if p.get("fwd_b1_ms")]
if fwd:
    best = min(fwd, key=lambda p: p["fwd_b1_ms"])
    print(f"B=1 forward: foxhunt {ours['fwd_b1_ms']*1e3:.1f} us (graph replay), "
          f"{ours['fwd_b1_end_to_end_ms']*1e3:.1f} us host to host; best peer {best['mode']} "
          f"{best['fwd_b1_ms']*1e3:.1f} us -> {best['fwd_b1_ms']/ours['fwd_b1_ms']:.1f}x")
PYEOF
