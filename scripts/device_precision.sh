#!/usr/bin/env bash
# Issue 15's precision call on the GPU machine (docs/PERFORMANCE.md "Mixed precision"), one
# device call with carry [".devdeps", ".devdata"]:
#   1. the PyTorch peer's compile+graph rows (quadratic SSD form; TF32, BF16 autocast, FP32;
#      B = 32 and 256) while foxhunt builds at nice 19 (compilation is CPU work; the peer's
#      timed replays were measured equal within 0.3 % with and without the build beside them);
#   2. the GPU test programs (every precision's parity tests among them);
#   3. `fxt bench train` and `fxt bench predict` at FP32, TF32 and BF16, and the ratios against
#      the best peer row per precision (scripts/bench_train_gpu.sh).
# Usage (device): bash scripts/device_precision.sh   Env: OUT, FXT_PEER_LIMIT (300 s),
#   FXT_PEER_PLAN (bench_train_gpu.sh's), FXT_SCALING_BATCHES (32,256).
set -uo pipefail
OUT=${OUT:-out/device}
mkdir -p "$OUT/bench"
export FXT_DATA_DIR=$PWD/.devdata
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
FXT_SKIP_FXT=1 FXT_BENCH_DIR="$OUT/bench" FXT_PEER_LIMIT=${FXT_PEER_LIMIT:-300} \
  FXT_PEER_PLAN="${FXT_PEER_PLAN:-compile+graph|quadratic|tf32 bf16;compile+graph|quadratic|fp32}" \
  bash scripts/bench_train_gpu.sh build-dev > "$OUT/peer.log" 2>&1 &
peer=$!
OUT="$OUT/build" nice -n 19 bash scripts/device_check.sh
echo "built at $(( $(date +%s) - t0 )) s; waiting for the peer"
wait $peer
echo "peer done at $(( $(date +%s) - t0 )) s"
OUT="$OUT/gpu" bash scripts/device_check.sh gpu
echo "tests done at $(( $(date +%s) - t0 )) s"
FXT_BENCH_DIR="$OUT/bench" FXT_PEER_PLAN="" FXT_SCALING_BATCHES=${FXT_SCALING_BATCHES:-32,256} \
  bash scripts/bench_train_gpu.sh build-dev 2>&1 | tee "$OUT/bench.log" | tail -40
echo "total: $(( $(date +%s) - t0 )) s"
