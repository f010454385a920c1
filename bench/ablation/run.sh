#!/usr/bin/env bash
# Model ablation (docs/MODEL.md): train each variant on the same stores and split, score its best
# checkpoint on the test split, and tabulate per-horizon AUC beside the baselines of a reference run.
# Usage: bench/ablation/run.sh FXT OUTDIR VARIANTS_FILE -- COMMON_TRAIN_FLAGS...
#   VARIANTS_FILE: one variant per line, "name<TAB>extra train flags" ('#' comments).
#   PAR=n runs n variants at once (a GPU has room for several of these small models).
# Writes OUTDIR/<name>/{run,eval.json} and OUTDIR/ablation.tsv; prints the table.
set -euo pipefail
FXT=$1 OUT=$2 VARIANTS=$3
shift 3
[[ ${1:-} == -- ]] && shift
PAR=${PAR:-1}
mkdir -p "$OUT"
run_variant() {
  local name=$1 flags=$2
  shift 2
  local dir=$OUT/$name
  rm -rf "$dir" && mkdir -p "$dir"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  "$FXT" train -q "$@" $flags --out "$dir/run" >"$dir/train.log" 2>&1 || { echo "$name: train failed" >&2; tail -3 "$dir/train.log" >&2; return 0; }
  "$FXT" eval -q --checkpoint "$dir/run/best.ckpt" --bootstrap 0 --out "$dir/eval.json" \
    >"$dir/eval.log" 2>&1 || { echo "$name: eval failed" >&2; tail -3 "$dir/eval.log" >&2; return 0; }
  echo $((SECONDS - t0)) >"$dir/seconds"
}
n=0
while IFS=$'\t' read -r name flags; do
  [[ -z $name || $name == \#* ]] && continue
  run_variant "$name" "${flags:-}" "$@" &
  n=$((n + 1))
  if ((n % PAR == 0)); then wait; fi
done <"$VARIANTS"
wait
python3 - "$OUT" "$VARIANTS" <<'PY'
import json, os, sys
out, variants = sys.argv[1], sys.argv[2]
def num(v):
    return v if isinstance(v, (int, float)) else float("nan")
def fmt_row(name, hs, mean, secs=""):
    return "\t".join([name] + [f"{num(h['auc']):.4f}" for h in hs] + [f"{num(mean):.4f}", secs])
header, rows = None, []
for line in open(variants):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    name = line.split("\t")[0]
    p = os.path.join(out, name, "eval.json")
    if not os.path.exists(p):
        rows.append(f"{name}\tfailed")
        continue
    ev = json.load(open(p))
    if header is None:
        header = "\t".join(["variant"] + [f"h{h}" for h in ev["horizons"]] + ["mean", "seconds"])
    secs = open(os.path.join(out, name, "seconds")).read().strip()
    rows.append(fmt_row(name, ev["model"]["horizons"], ev["model"]["mean_auc"], secs))
    # Each variant's own baselines (fit on its rows; the lag variants depend on the stride).
    for b, bj in sorted(ev.get("baselines", {}).items()):
        rows.append(fmt_row("  " + b, bj["horizons"], bj["mean_auc"]))
table = "\n".join([header or "variant"] + rows) + "\n"
open(os.path.join(out, "ablation.tsv"), "w").write(table)
print(table, end="")
PY
