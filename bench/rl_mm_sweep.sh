#!/usr/bin/env bash
# Market-making C51 settings, trained on the CPU at once (one process per line) and each scored
# against the Cartea-Jaimungal agent on the same 1000 seeded paths (docs/RL.md "Market making").
# Usage: bench/rl_mm_sweep.sh FXT CONFIGS_FILE OUTDIR
#   CONFIGS_FILE: "name<TAB>fxt rl train flags" per line ('#' comments); the common flags
#   (--env mm, the CJ criterion's defaults) come first, a line's flags override them.
set -uo pipefail
FXT=$1 CONFIGS=$2 OUT=$3
mkdir -p "$OUT"
run_one() {
  local name=$1 flags=$2 dir=$OUT/$1
  rm -rf "$dir"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  "$FXT" rl train --env mm --log-every 50000 $flags --out "$dir" >"$OUT/$name.train.log" 2>&1 ||
    { echo "$name: train failed" >&2; return 0; }
  echo $((SECONDS - t0)) >"$OUT/$name.seconds"
  "$FXT" rl eval --checkpoint "$dir/checkpoint.fxt" --episodes 1000 --seed 2024 \
    --out "$OUT/$name.eval.json" >"$OUT/$name.eval.log" 2>&1 || echo "$name: eval failed" >&2
}
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  run_one "$name" "${flags:-}" &
done <"$CONFIGS"
wait
printf 'config\tpolicy\tcj\tdiff\tse\tgap%%\tmax_inv_gap\tseconds\n' | tee "$OUT/table.tsv"
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  python3 - "$OUT/$name.eval.json" "$name" "$(cat "$OUT/$name.seconds" 2>/dev/null)" <<'PY' | tee -a "$OUT/table.tsv"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print(f"{sys.argv[2]}\tfailed"); sys.exit()
c = j["comparison"]
pol, ref = c["policy_mean"], c["reference_mean"]
print(f"{sys.argv[2]}\t{pol:.2f}\t{ref:.2f}\t{c['paired_diff_mean']:+.2f}\t{c['paired_diff_se']:.2f}"
      f"\t{100 * (pol - ref) / abs(ref):+.1f}\t{c['max_inventory_gap']:.3f}\t{sys.argv[3]}")
PY
done <"$CONFIGS"
