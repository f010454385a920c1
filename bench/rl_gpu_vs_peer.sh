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
# 4. the peer, seed 1, without evaluations, in every formulation and mode (PEER_RUNS: CleanRL's
#    own code with its per-row projection loop; the vectorised projection eager, with
#    torch.compile, with torch.compile mode="reduce-overhead" and captured as CUDA graphs by
#    hand; on the CPU eager), each stopped after PEER_SECONDS (default 45) of wall time. Its
#    rate over the steps after 20k (updates running, compilation and capture done) gives a
#    LOWER bound of its 500k-step time: 490k steps at that rate, its first 10k steps (no
#    updates) and its compile time counted as free. The best (smallest) bound is "the peer".
# FXT_RL_SEEDS (default "1 2 3") and FXT_RL_CPU (default 1) trim steps 1 and 3.
# Writes OUT_DIR/summary.json and the runs' directories and logs.
set -euo pipefail
BUILD=${1:?build dir}
OUT=${2:?out dir}
PEER_SECONDS=${3:-45}
SEEDS=${FXT_RL_SEEDS-1 2 3}
PEER_RUNS=${PEER_RUNS:-"cuda:eager:loop cuda:eager:vector cuda:compile:vector cuda:compile-graph:vector cuda:graph:vector cpu:eager:vector"}
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
for s in $SEEDS; do
  run_timed "gpu_s$s" "$FXT" rl train "${FLAGS[@]}" --device cuda --seed "$s" --eval-every 10000 \
    --eval-episodes 100 --stop-return 475 --out "$OUT/gpu_s$s"
done
run_timed gpu_full_s1 "$FXT" rl train "${FLAGS[@]}" --device cuda --seed 1 --eval-every 0 \
  --eval-episodes 100 --out "$OUT/gpu_full_s1"
if [ "${FXT_RL_CPU:-1}" = 1 ]; then
  run_timed cpu_full_s1 "$FXT" rl train "${FLAGS[@]}" --device cpu --seed 1 --eval-every 0 \
    --eval-episodes 100 --out "$OUT/cpu_full_s1"
fi
for run in $PEER_RUNS; do
  IFS=: read -r dev mode proj <<< "$run"
  secs=$PEER_SECONDS
  [[ $mode == compile* ]] && secs=$(( PEER_SECONDS * 5 / 3 ))  # compilation comes first
  timeout "$secs" python3 "$HERE/peer/c51_cartpole.py" --seed 1 --device "$dev" \
    --mode "$mode" --projection "$proj" --total-timesteps 500000 --eval-every 0 \
    --progress-every 2500 > "$OUT/peer_$dev-$mode-$proj.log" 2> "$OUT/peer_$dev-$mode-$proj.progress" || true
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
for path in sorted(glob.glob(f"{out}/peer_*.progress")):
    name = os.path.basename(path)[: -len(".progress")]
    lines = [json.loads(l) for l in open(path) if l.startswith("{")]
    steady = [l for l in lines if l["step"] >= 20000]
    entry = {"steps": lines[-1]["step"] if lines else 0,
             "seconds": lines[-1]["seconds"] if lines else 0}
    if len(steady) >= 2:
        rate = (steady[-1]["step"] - steady[0]["step"]) / (steady[-1]["seconds"] - steady[0]["seconds"])
        entry.update(steps_per_second_with_updates=rate,
                     projected_500k_seconds_lower_bound=490000 / rate)
    else:
        entry["error"] = "too few steps after 20k for a rate: " + open(path).read()[-300:]
    res[name] = entry
peers = {k: v["projected_500k_seconds_lower_bound"] for k, v in res.items()
         if k.startswith("peer_") and "projected_500k_seconds_lower_bound" in v}
if peers and "gpu_full_s1" in res["runs"]:
    best = min(peers, key=peers.get)
    g = res["runs"]["gpu_full_s1"]["wall_seconds"]
    res["best_peer"] = best
    res["ratio_best_peer_over_gpu_500k_lower_bound"] = peers[best] / g
    if "cpu_full_s1" in res["runs"]:
        res["ratio_cpu_over_gpu_500k"] = res["runs"]["cpu_full_s1"]["wall_seconds"] / g
print(json.dumps(res, indent=2))
json.dump(res, open(f"{out}/summary.json", "w"), indent=2)
PY
