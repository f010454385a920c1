#!/usr/bin/env bash
# CartPole C51 with CleanRL's c51.py settings (docs/RL.md "Measured"): `fxt rl train --device
# cuda` against the CleanRL-style PyTorch peer (bench/peer/c51_cartpole.py) and the CPU path, in
# one run on one machine (DESIGN §11: ratios from one run only).
#
#   bench/rl_gpu_vs_peer.sh BUILD_DIR OUT_DIR [PEER_SECONDS]
#
# 1. the GPU learner, seeds 1-3, the docs' protocol: greedy 100-episode evaluation every 10k
#    steps, stop at >= 475 (wall time to the target);
# 2. the GPU learner, seed 1, all 500k steps with one final evaluation (wall time per 500k);
# 3. the CPU path, seed 1, the same 500k steps;
# 4. the peer, seed 1, on CUDA and on the CPU, without evaluations, stopped after PEER_SECONDS
#    (default 90) of wall time: its env steps/s over the run so far give a LOWER bound of its
#    500k-step time (its first 10k steps do no updates and act mostly at random, so they are
#    its cheapest; a run to 500k would take longer).
# Writes OUT_DIR/summary.json and the runs' directories and logs.
set -euo pipefail
BUILD=${1:?build dir}
OUT=${2:?out dir}
PEER_SECONDS=${3:-90}
FXT="$BUILD/bin/fxt"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
FLAGS=(--env cartpole --steps 500000 --atoms 101 --learning-starts 10000 --train-frequency 10
       --target-update 500 --exploration-fraction 0.5 --lr 2.5e-4 --no-double)
now() { date +%s.%N; }
run_timed() {  # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(now)
  "$@" > "$OUT/$name.log" 2>&1
  t1=$(now)
  echo "{\"run\": \"$name\", \"wall_seconds\": $(python3 -c "print($t1 - $t0)")}" >> "$OUT/walls.jsonl"
  tail -1 "$OUT/$name.log"
}
: > "$OUT/walls.jsonl"
for s in 1 2 3; do
  run_timed "gpu_s$s" "$FXT" rl train "${FLAGS[@]}" --device cuda --seed "$s" --eval-every 10000 \
    --eval-episodes 100 --stop-return 475 --out "$OUT/gpu_s$s"
done
run_timed gpu_full_s1 "$FXT" rl train "${FLAGS[@]}" --device cuda --seed 1 --eval-every 0 \
  --eval-episodes 100 --out "$OUT/gpu_full_s1"
run_timed cpu_full_s1 "$FXT" rl train "${FLAGS[@]}" --device cpu --seed 1 --eval-every 0 \
  --eval-episodes 100 --out "$OUT/cpu_full_s1"
for dev in cuda cpu; do
  secs=$PEER_SECONDS
  [ "$dev" = cpu ] && secs=$(( PEER_SECONDS / 2 ))
  timeout "$secs" python3 "$HERE/peer/c51_cartpole.py" --seed 1 --device "$dev" \
    --total-timesteps 500000 --eval-every 0 --progress-every 5000 \
    > "$OUT/peer_$dev.log" 2> "$OUT/peer_$dev.progress" || true
done
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
walls = {j["run"]: j["wall_seconds"] for j in map(json.loads, open(f"{out}/walls.jsonl"))}
res = {"runs": {}}
for name, wall in walls.items():
    rj = json.load(open(f"{out}/{name}/run.json"))
    m = rj.get("metrics", rj)
    res["runs"][name] = {"wall_seconds": wall, **{k: m.get(k) for k in
        ("env_steps", "updates", "train_seconds", "eval_return", "reached_stop_return_at")}}
for dev in ("cuda", "cpu"):
    lines = [json.loads(l) for l in open(f"{out}/peer_{dev}.progress") if l.startswith("{")]
    if lines:
        last = lines[-1]
        rate = last["step"] / last["seconds"]
        res[f"peer_{dev}"] = {"steps": last["step"], "seconds": last["seconds"],
                              "steps_per_second": rate,
                              "projected_500k_seconds_lower_bound": 500000 / rate}
peers = [v["projected_500k_seconds_lower_bound"] for k, v in res.items() if k.startswith("peer_")]
if peers and "gpu_full_s1" in res["runs"]:
    best = min(peers)
    g = res["runs"]["gpu_full_s1"]["wall_seconds"]
    c = res["runs"]["cpu_full_s1"]["wall_seconds"]
    res["ratio_peer_over_gpu_500k_lower_bound"] = best / g
    res["ratio_cpu_over_gpu_500k"] = c / g
print(json.dumps(res, indent=2))
json.dump(res, open(f"{out}/summary.json", "w"), indent=2)
PY
