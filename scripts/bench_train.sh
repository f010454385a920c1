#!/usr/bin/env bash
# CPU training-step comparison (DESIGN §11, issue 3): foxhunt's train step at B = 32, K = 64 and
# B = 1 forward latency, then the PyTorch peer (eager, Debian's python3-torch) on the same
# machine in the same run; prints the ratios. Usage: scripts/bench_train.sh [build-dir]
set -euo pipefail
BUILD=${1:-build}
OUT=${FXT_BENCH_DIR:-out/bench}
PY=${FXT_PEER_PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
"$BUILD/bench/train_bench" --benchmark_out="$OUT/train_cpu.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "PyTorch not importable by $PY: apt-get install python3-torch (peer skipped)"
  exit 0
fi
peer_rows() {  # threads -> JSON file
  "$PY" bench/peer/bench_peer.py --device cpu --modes eager --batch 32 --steps 5 \
    --threads "$1" --out "$OUT/peer_cpu_${1}thr.json" >/dev/null
}
peer_rows 1
peer_rows 2
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
ours = {}
for b in json.load(open(f"{out}/train_cpu.json"))["benchmarks"]:
    scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6}[b["time_unit"]]
    ours[b["name"].split("/min_time")[0]] = b["real_time"] * scale
def peer(threads):
    rows = json.load(open(f"{out}/peer_cpu_{threads}thr.json"))
    rows = rows.get("results", rows) if isinstance(rows, dict) else rows
    return rows
print("\nthreads  foxhunt step   peer step   ratio   foxhunt B=1 fwd   peer B=1 fwd   ratio")
for t in (1, 2):
    rows = peer(t)
    row = [r for r in rows if r.get("B") == 32][0]
    fx_step = ours[f"BM_TrainStep/threads:{t}/B:32"]
    fx_fwd = ours[f"BM_ForwardB1/threads:{t}"]
    print(f"{t:>7}  {fx_step:9.1f} ms  {row['step_ms']:8.1f} ms  {row['step_ms']/fx_step:5.1f}x"
          f"  {fx_fwd:12.3f} ms  {row['fwd_b1_ms']:10.2f} ms  {row['fwd_b1_ms']/fx_fwd:5.1f}x")
PYEOF
