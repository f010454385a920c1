#!/usr/bin/env bash
# One call on the GPU machine (docs/DEVICE.md): configure and build for sm_90, run the GPU
# tests one program at a time (logs and gtest XML into $OUT), optionally the whole suite, the
# GPU benchmark against the PyTorch peer, and compute-sanitizer over the GPU tests.
# Usage (device): bash scripts/device_check.sh [gpu] [all] [bench] [sanitize] [quick-bench]
set -uo pipefail
OUT=${OUT:-out/device}
mkdir -p "$OUT"
export FXT_DATA_DIR=$PWD/.devdata
STEPS="$*"
has() { [[ " $STEPS " == *" $1 "* ]]; }
t0=$(date +%s)
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.devdeps ${FXT_DEVICE_CMAKE_FLAGS:-} > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-dev -j16 > "$OUT/build.log" 2>&1 || { grep -E 'error|Error' "$OUT/build.log" | head -40; exit 1; }
grep -c 'warning' "$OUT/build.log" | sed 's/^/build warnings: /'
echo "build: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
GPU_TESTS=$(ls build-dev/tests | grep -vE '\.cmake$' | grep -E '^(gpu_|ops_test|runtime_test|batch_train_test|mamba2_test|cfc_heads_test|adamw_train_test|train_step_train_test|es_mbo_train_test)' || true)
if has gpu; then
  for t in $GPU_TESTS; do
    timeout 300 build-dev/tests/$t --gtest_output=xml:"$OUT/$t.xml" > "$OUT/$t.log" 2>&1
    echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$t.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]|Failure|error' "$OUT/$t.log" | head -12
  done
fi
if has all; then
  # Every test, each with a time limit, the whole bounded too (logs even when cut short).
  (cd build-dev && timeout ${FXT_CTEST_LIMIT:-900} ctest -j16 --timeout 150 --output-on-failure \
     > "$OUT/ctest.log" 2>&1)
  echo "ctest rc=$?"
  grep -E 'tests passed|tests failed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Not Run' "$OUT/ctest.log" | head -40
fi
if has quick-bench; then
  build-dev/bin/fxt bench train --device cuda --batch 32,256 --steps 200 --warmup 20 --out "$OUT/fxt_train_gpu.json"
  python3 -c "import json,sys; d=json.load(open('$OUT/fxt_train_gpu.json')); [print(r['B'], json.dumps(r.get('uncaptured_phase_ms'))) for r in d['results']]"
fi
if has nsys; then
  NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  if [ -n "$NSYS" ]; then
    for b in 32 256; do
      "$NSYS" profile -o "$OUT/nsys_b$b" -t cuda --force-overwrite true build-dev/bin/fxt bench train \
        --device cuda --batch $b --steps 100 --warmup 10 --profile 0 --fwd-steps 10 > /dev/null 2>&1
      "$NSYS" stats -r cuda_gpu_kern_sum -f csv "$OUT/nsys_b$b.nsys-rep" 2>/dev/null > "$OUT/kern_b$b.csv"
      echo "== kernels B=$b (total ns, instances, avg ns, name)"
      python3 - "$OUT/kern_b$b.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 8]
hdr, rows = rows[0], rows[1:]
i_tot, i_n, i_avg, i_name = hdr.index('Total Time (ns)'), hdr.index('Instances'), hdr.index('Avg (ns)'), hdr.index('Name')
for r in rows[:22]:
    print(f"{int(float(r[i_tot])):>12} {r[i_n]:>6} {float(r[i_avg]):>10.0f}  {r[i_name][:90]}")
PY
    done
  else
    echo "nsys not found"; ls /usr/local/cuda/bin | head -50 | tr '\n' ' '
  fi
fi
if has peer; then
  # The PyTorch peer alone, in the modes of FXT_PEER_MODES, same GPU and call as quick-bench.
  # shellcheck disable=SC2086
  timeout ${FXT_PEER_LIMIT:-300} python3 bench/peer/bench_peer.py --device cuda \
    --modes ${FXT_PEER_MODES:-eager graph compile compile+graph} --batch 32 256 \
    --steps ${FXT_PEER_STEPS:-50} --warmup 10 --fwd-steps 50 --out "$OUT/peer_gpu.json" 2>&1 | grep -E 'step|Error|error' | tail -12
fi
if has bench; then
  FXT_BENCH_DIR="$OUT" bash scripts/bench_train_gpu.sh build-dev 2>&1 | tail -30
fi
if has sanitize; then
  for tool in memcheck racecheck; do
    for t in runtime_test ops_test mamba2_test cfc_heads_test gpu_loss_test gpu_perception_test; do
      [ -x build-dev/tests/$t ] || continue
      timeout 240 /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 9 \
        build-dev/tests/$t --gtest_filter='-*Timing*' > "$OUT/san_${tool}_$t.log" 2>&1
      echo "sanitizer $tool $t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_$t.log" | tail -1)"
    done
  done
fi
# One archive of the logs comes back (the device returns a limited number of files).
(cd "$OUT" && tar czf ../device_logs.tgz . && rm -rf ./* && mv ../device_logs.tgz .)
echo "total: $(( $(date +%s) - t0 )) s"
