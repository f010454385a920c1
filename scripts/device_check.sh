#!/usr/bin/env bash
# One call on the GPU machine (docs/DEVICE.md): configure and build for sm_90, run the GPU
# tests one program at a time (logs and gtest XML into $OUT), optionally the whole suite, the
# GPU benchmark against the PyTorch peer, and compute-sanitizer over the GPU tests.
# Usage (device): bash scripts/device_check.sh [gpu] [all] [bench] [sanitize] [quick-bench] [ncu]
#   [ncu-detail] [ncu-source] [peer] [latency] [lanes] [lanes-ncu] [cpu-lanes-10m]
set -uo pipefail
OUT=${OUT:-out/device}
mkdir -p "$OUT"
export FXT_DATA_DIR=$PWD/.devdata
# XGBoost carried in .devdeps/lib (docs/DEVICE.md): its libdmlc is found at run time through this.
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
STEPS="$*"
has() { [[ " $STEPS " == *" $1 "* ]]; }
t0=$(date +%s)
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=$PWD/.devdeps ${FXT_DEVICE_CMAKE_FLAGS:-} > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
# FXT_BUILD_TARGETS: build only these targets (a shorter call when only some programs run).
# shellcheck disable=SC2086
cmake --build build-dev -j16 ${FXT_BUILD_TARGETS:+--target $FXT_BUILD_TARGETS} > "$OUT/build.log" 2>&1 || { grep -E 'error|Error' "$OUT/build.log" | head -40; exit 1; }
grep -c 'warning' "$OUT/build.log" | sed 's/^/build warnings: /'
echo "build: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
# Every program of tests/gpu/ that was built (one per source file).
GPU_TESTS=$(for f in tests/gpu/*.cc; do b=$(basename "$f" .cc); [ -x "build-dev/tests/$b" ] && echo "$b"; done)
[ -n "${FXT_GPU_TESTS:-}" ] && GPU_TESTS=$FXT_GPU_TESTS  # a subset, by program name
# One GPU test program: its log and gtest XML into $OUT, a summary line and its failures.
run_gpu_test() {
  timeout 300 build-dev/tests/$1 --gtest_output=xml:"$OUT/$1.xml" > "$OUT/$1.log" 2>&1
  echo "$1 rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$1.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Failure|error' "$OUT/$1.log" | head -12
}
if has gpu; then
  for t in $GPU_TESTS; do run_gpu_test $t; done
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
if has latency; then
  # B = 1 latency and the train step: this build; this build with every product on cuBLAS
  # (FXT_SMALL_GEMM=0); and, when FXT_BASE_FXT names another build's fxt (e.g. the previous
  # commit's, built beside this one), that build. Alternated twice in the same call (docs/GPU.md
  # "Small products").
  modes="new cublas"; [ -n "${FXT_BASE_FXT:-}" ] && modes="$modes base"
  for rep in 1 2; do
    for mode in $modes; do
      fxt=build-dev/bin/fxt; env=""
      [ $mode = cublas ] && env="FXT_SMALL_GEMM=0"
      [ $mode = base ] && fxt=$FXT_BASE_FXT
      env $env $fxt bench predict --device cuda --batch 4096 --fwd-steps 2000 \
        --out "$OUT/predict_${mode}_$rep.json" > "$OUT/predict_${mode}_$rep.log" 2>&1
      env $env $fxt bench train --device cuda --batch 32,256 --steps 300 --warmup 30 \
        --fwd-steps 2000 --profile 0 --out "$OUT/train_${mode}_$rep.json" > "$OUT/train_${mode}_$rep.log" 2>&1
      python3 - "$OUT" $mode $rep <<'PY'
import json, sys
out, mode, rep = sys.argv[1:]
p = json.load(open(f"{out}/predict_{mode}_{rep}.json"))
t = json.load(open(f"{out}/train_{mode}_{rep}.json"))
print(f"{mode} #{rep}: B=1 scoring {p['b1_host_ms'] * 1e3:.1f} us host to host ({p['b1_graph_nodes']} "
      f"nodes); B=1 forward graph {t['fwd_b1_ms'] * 1e3:.1f} us ({t['fwd_b1_graph_nodes']} nodes), "
      f"{t['fwd_b1_end_to_end_ms'] * 1e3:.1f} us host to host; predict "
      f"{p['results'][0]['snapshots_per_s']:.0f}/s; steps",
      [(r['B'], round(r['step_ms'], 4), r['graph_nodes']) for r in t['results']])
PY
    done
  done
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
if has ncu; then
  # Per-kernel times of one replayed training step (ncu profiles each graph node as a kernel):
  # the step's kernels are the launches from one sample_anchors kernel to the next.
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for b in ${FXT_NCU_BATCHES:-256 32}; do
    timeout 240 "$NCU" --metrics gpu__time_duration.sum --csv --print-units base -c 700 \
      build-dev/bin/fxt bench train --device cuda --batch $b --steps 2 --warmup 1 --profile 0 \
      --fwd-steps 1 > "$OUT/ncu_b$b.csv" 2> "$OUT/ncu_b$b.err"
    echo "== ncu B=$b rc=$? (ns per kernel of one step, grouped by name)"
    python3 - "$OUT/ncu_b$b.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("no ncu rows"); sys.exit()
hdr, rows = rows[0], rows[1:]
i_name, i_val = hdr.index('Kernel Name'), hdr.index('Metric Value')
seq = [(r[i_name], float(r[i_val].replace(',', ''))) for r in rows]
starts = [i for i, (n, _) in enumerate(seq) if 'sample_anchors' in n]
if len(starts) < 2: print("step boundaries not found", len(starts)); sys.exit()
step = seq[starts[1]:starts[2]] if len(starts) > 2 else seq[starts[1]:]
tot = sum(v for _, v in step)
print(f"kernels in one step: {len(step)}, sum {tot/1e3:.1f} us")
agg = collections.OrderedDict()
for n, v in step:
    k = n.split('(')[0][:80]
    c, t = agg.get(k, (0, 0.0)); agg[k] = (c + 1, t + v)
for k, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:30]:
    print(f"{t/1e3:9.1f} us {c:4d}x  {k}")
print("-- in order:")
for n, v in step: print(f"{v/1e3:8.1f}  {n.split('(')[0][:70]}")
# After the last training step: the B = 1 forward's first run (uncaptured, the same kernels
# as its graph), up to the first kernel of the next run (the first again).
end = max((i for i, (n, _) in enumerate(seq) if 'accumulate_kernel' in n), default=-1) + 1
fwd = seq[end:]
nxt = [i for i in range(1, len(fwd)) if fwd[i][0] == fwd[0][0]] if fwd else []
fwd = fwd[:nxt[0]] if nxt else fwd
print(f"-- B = 1 forward ({len(fwd)} kernels, sum {sum(v for _, v in fwd)/1e3:.1f} us):")
for n, v in fwd: print(f"{v/1e3:8.1f}  {n.split('(')[0][:70]}")
PY
  done
fi
if has ncu-detail; then
  # Stall reasons and throughput of the recurrent kernels (first launch of each, B = 32 and 256).
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for b in 32 256; do
    timeout 200 "$NCU" -k regex:"${FXT_NCU_KERNELS:-cfc_forward|cfc_backward|scan_forward|scan_backward}" \
      -c ${FXT_NCU_COUNT:-4} --section SpeedOfLight --section WarpStateStats --section Occupancy \
      --section LaunchStats build-dev/bin/fxt bench train --device cuda --batch $b --steps 1 \
      --warmup 0 --profile 0 --fwd-steps 1 > "$OUT/ncu_detail_b$b.txt" 2>&1
    echo "== ncu detail B=$b rc=$?"
    grep -E '^  [a-z_:<>0-9 ]+\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Stall|Warp Cycles Per Issued|Block Limit' "$OUT/ncu_detail_b$b.txt" | head -80
  done
fi
if has ncu-source; then
  # Full Nsight Compute sections plus per-SASS-line stall samples of chosen kernels (clocks left
  # alone): FXT_NCU_SRC_B batch, FXT_NCU_KERNELS regex, FXT_NCU_COUNT launches.
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  b=${FXT_NCU_SRC_B:-1}
  timeout 300 "$NCU" --clock-control none --set full --import-source no \
    -k regex:"${FXT_NCU_KERNELS:-scan_forward_reg|cfc_forward}" -c ${FXT_NCU_COUNT:-2} \
    -o "$OUT/src_b$b" build-dev/bin/fxt bench train --device cuda --batch $b --steps 1 \
    --warmup 0 --profile 0 --fwd-steps 1 > "$OUT/ncu_src_b$b.log" 2>&1
  echo "== ncu source B=$b rc=$?"
  "$NCU" -i "$OUT/src_b$b.ncu-rep" --page details > "$OUT/ncu_src_details_b$b.txt" 2>&1
  "$NCU" -i "$OUT/src_b$b.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/ncu_src_sass_b$b.csv" 2>&1
  echo "source page rc=$? $(wc -l < "$OUT/ncu_src_sass_b$b.csv") lines"
  grep -E '^  [a-z_:<>0-9 ]+\(|Duration|Warp Cycles Per Issued|Achieved Occupancy|Registers Per' \
    "$OUT/ncu_src_details_b$b.txt" | head -40
fi
if has peer; then
  # The PyTorch peer alone (quadratic SSD form, fp32), in the modes of FXT_PEER_MODES, same GPU
  # and call as quick-bench; `bench` runs every form, mode and precision.
  # shellcheck disable=SC2086
  timeout ${FXT_PEER_LIMIT:-300} python3 bench/peer/bench_peer.py --device cuda \
    --modes ${FXT_PEER_MODES:-eager graph compile compile+graph} --batch 32 256 \
    --steps ${FXT_PEER_STEPS:-50} --warmup 10 --fwd-steps 50 --out "$OUT/peer_gpu.json" 2>&1 | grep -E 'step|Error|error' | tail -12
fi
if has lanes; then
  # Sweep lanes (docs/PERFORMANCE.md "GPU sweep lanes"): the GPU lanes over N on the
  # FXT_LANES_EVENTS-record synthetic store (default 1 M; 1,024 lanes replay all of it, the other
  # N its first 1 M rows) with the device-vs-CPU equality tests first, then the CPU lanes on this
  # host's cores against one lane (200 k store, 3 interleaved repetitions).
  run_gpu_test lane_engine_gpu_test
  FXT_BENCH_EVENTS=${FXT_LANES_EVENTS:-1000000} timeout 400 build-dev/bench/sweep_bench \
    --benchmark_filter='BM_GpuLanes' --benchmark_out="$OUT/gpu_lanes.json" 2>&1 |
    grep -E '^BM_' | cut -c1-220
  FXT_BENCH_EVENTS=200000 timeout 300 build-dev/bench/sweep_bench \
    --benchmark_filter='BM_CpuLanes/(1/1/1|16/16/1|64/16/4|128/16/8)/' --benchmark_repetitions=3 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$OUT/cpu_lanes.json" 2>&1 | grep -E '_(mean|median|cv) ' | cut -c1-160
fi
if has lanes-ncu; then
  # Where the lane kernel's time goes: Nsight Compute's full set with per-line stall samples of
  # one advance_lanes_kernel launch, 1,024 lanes over the 100 k-record store (the source pages
  # as CSV, the SASS one compressed).
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  FXT_BENCH_EVENTS=100000 timeout 300 "$NCU" --set full --import-source yes -k regex:advance_lanes \
    -c 1 -o "$OUT/lanes" build-dev/bench/sweep_bench --benchmark_filter='BM_GpuLanes/1024/0/0' \
    > "$OUT/ncu_lanes.log" 2>&1
  echo "== ncu lanes rc=$?"
  "$NCU" -i "$OUT/lanes.ncu-rep" --page details > "$OUT/ncu_lanes_details.txt" 2>&1
  "$NCU" -i "$OUT/lanes.ncu-rep" --page source --csv --print-source cuda > "$OUT/ncu_lanes_cuda.csv" 2>&1
  "$NCU" -i "$OUT/lanes.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_lanes_sass.csv" 2>&1
  gzip -f "$OUT/ncu_lanes_sass.csv"
  grep -E 'Duration|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Hit Rate|Branch Efficiency|Executed Ipc|No Eligible' \
    "$OUT/ncu_lanes_details.txt" | head -30
fi
if has cpu-lanes-10m; then
  # The CPU lanes on the target's 10 M-record store (each lane streams 4.2 GB): one lane, one lane
  # per core, and groups of 8 (docs/PERFORMANCE.md "CPU lanes").
  FXT_BENCH_EVENTS=10000000 timeout 300 build-dev/bench/sweep_bench \
    --benchmark_filter='BM_CpuLanes/(1/1/1|16/16/1|128/16/8)/' --benchmark_out="$OUT/cpu_lanes_10m.json" \
    2>&1 | grep -E '^BM_' | cut -c1-200
fi
if has bench; then
  FXT_BENCH_DIR="$OUT" bash scripts/bench_train_gpu.sh build-dev 2>&1 | tail -30
fi
if has sanitize; then
  # compute-sanitizer memcheck and racecheck over the GPU test programs, all runs in parallel
  # (one GPU, many CPU cores), each bounded by FXT_SANITIZE_LIMIT seconds. Small and odd sizes
  # and the CUDA-graph paths are covered; the timing test is left out.
  SAN=/usr/local/cuda/bin/compute-sanitizer
  run_san() {  # tool program filter
    timeout ${FXT_SANITIZE_LIMIT:-200} $SAN --tool $1 --error-exitcode 9 build-dev/tests/$2 \
      --gtest_filter="$3" > "$OUT/san_$1_$2.log" 2>&1
    echo "sanitizer $1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/san_$1_$2.log" | tr '\n' ' ' | cut -c1-160)"
  }
  {
    for t in runtime_test ops_test gpu_loss_test adamw_train_test batch_train_test; do
      run_san memcheck $t '-*Timing*' &
    done
    run_san memcheck mamba2_test '*SmallOdd*:*RealSizesB4*:*Deterministic*:*LongSequences*' &
    run_san memcheck cfc_heads_test '*Odd*:*ModelSizeB4*:*Graph*:*Gather*:*Skips*' &
    run_san memcheck gpu_perception_test '*SmallOdd*:*BitReproducible*:*ReducedPrecision*' &
    run_san memcheck train_step_train_test '*GraphReplay*:*SameSeed*' &
    run_san memcheck window_scorer_train_test '*' &
    for t in ops_test gpu_loss_test runtime_test; do
      run_san racecheck $t '-*Timing*' &
    done
    run_san racecheck mamba2_test '*SmallOdd*:*RealSizesB4*:*LongSequences*' &
    run_san racecheck cfc_heads_test '*Odd*:*ModelSizeB4*' &
    run_san racecheck gpu_perception_test '*SmallOdd*' &
    run_san racecheck window_scorer_train_test '*StrideAndElapsed*' &
    wait
  } | sort
fi
# One archive of the logs comes back (the device returns a limited number of files).
(cd "$OUT" && tar czf ../device_logs.tgz . && rm -rf ./* && mv ../device_logs.tgz .)
echo "total: $(( $(date +%s) - t0 )) s"
