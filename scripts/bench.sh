#!/usr/bin/env bash
# The data-layer performance protocol (docs/PERFORMANCE.md): every benchmark next to its
# ceiling, measured in the same run on the same files. Usage: scripts/bench.sh [build-dir]
set -euo pipefail
BUILD=${1:-build}
OUT=${FXT_BENCH_DIR:-out/bench}
FXT=$BUILD/bin/fxt
mkdir -p "$OUT"
export TMPDIR=${TMPDIR:-/tmp}

ns_now() { date +%s%N; }
# Best wall time of 5 runs of a shell command, in seconds.
best_of_5() {
  local best=""
  for _ in 1 2 3 4 5; do
    local t0 t1
    t0=$(ns_now)
    bash -c "$1" >/dev/null
    t1=$(ns_now)
    local dt=$((t1 - t0))
    if [[ -z "$best" || $dt -lt $best ]]; then best=$dt; fi
  done
  awk -v ns="$best" 'BEGIN { printf "%.6f", ns / 1e9 }'
}

echo "== machine"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "zstd: $(zstd --version)"
} | tee "$OUT/machine.txt"

echo "== synth (generator alone and writing .dbn.zst)"
"$BUILD/bench/synth_bench" --benchmark_out="$OUT/synth.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true

echo "== DBN decode vs memcpy and libzstd (random-walk MBP-10, 2M records)"
"$BUILD/bench/dbn_bench" --benchmark_out="$OUT/dbn.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true

echo "== DBN decode of a synthetic market vs 'zstd -dc' on the same file"
SYN="$TMPDIR/fxt-bench-synth.dbn.zst"
[[ -f "$SYN" ]] || "$FXT" -q synth --out "$SYN" --events 2000000 --seed 1 >/dev/null
FXT_BENCH_FILE="$SYN" "$BUILD/bench/dbn_bench" --benchmark_filter=BM_DecodeFile \
  --benchmark_out="$OUT/dbn_synth.json" --benchmark_out_format=json --benchmark_counters_tabular=true
zstd_s=$(best_of_5 "zstd -dc '$SYN' > /dev/null")
raw_bytes=$(zstd -dc "$SYN" | wc -c)
decode_s=$(python3 -c "import json; b=[x for x in json.load(open('$OUT/dbn_synth.json'))['benchmarks'] if x['name'].startswith('BM_DecodeFile')][0]; print(b['real_time']/1e3 if b['time_unit']=='ms' else b['real_time']/1e9)" 2>/dev/null || echo "")
echo "zstd -dc: ${zstd_s}s for $raw_bytes bytes" | tee "$OUT/zstd_cli.txt"
if [[ -n "$decode_s" ]]; then
  echo "fxt decode: ${decode_s}s; ratio fxt/zstd-dc throughput: $(awk -v a="$zstd_s" -v b="$decode_s" 'BEGIN{printf "%.2f", a/b}')" | tee -a "$OUT/zstd_cli.txt"
fi

echo "== MBO replay"
"$BUILD/bench/mbo_bench" --benchmark_out="$OUT/mbo.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true

echo "== store write / open / scan"
"$BUILD/bench/store_bench" --benchmark_out="$OUT/store.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true

echo "== end to end: synth 2M -> ingest -> inspect"
rm -rf "$OUT/e2e" && mkdir -p "$OUT/e2e"
synth_s=$(best_of_5 "rm -f '$OUT/e2e/s.dbn.zst'; '$FXT' -q synth --out '$OUT/e2e/s.dbn.zst' --events 2000000 --seed 1")
ingest_s=$(best_of_5 "rm -rf '$OUT/e2e/store'; '$FXT' -q ingest '$OUT/e2e/s.dbn.zst' --out '$OUT/e2e/store'")
echo "fxt synth 2M events: ${synth_s}s; fxt ingest 2M events: ${ingest_s}s" | tee "$OUT/e2e.txt"
echo "results in $OUT/"
