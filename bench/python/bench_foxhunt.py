#!/usr/bin/env python3
"""The Python module's performance targets (docs/PYTHON.md, issue 18), measured in one run:

- open_store on a store of ~N snapshots: wall time (median of repeats) and resident memory
  before opening, after opening and after touching one column (zero copy: memory grows only
  as pages are touched);
- features(): snapshots/s against `fxt features` on the same store (the CLI also writes CSV);
- Python strategies: events/s of a strategy with no on_event (the engine loop alone), of one
  whose on_event does nothing, and of the built-in replay through `fxt backtest`'s library call.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_foxhunt.py --events 1000000 \
        --fxt build/bin/fxt --work /tmp/fxbench
"""

import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

import foxhunt


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn, repeat=1):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--work", default="/tmp/foxhunt-bench")
    ap.add_argument("--fxt", default="build/bin/fxt")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    foxhunt.set_quiet(True)
    os.makedirs(args.work, exist_ok=True)
    store_dir = os.path.join(args.work, f"syn{args.events}")
    if not os.path.exists(store_dir):
        dbn = store_dir + ".dbn.zst"
        foxhunt.synth(dbn, events=args.events, seed=1)
        foxhunt.ingest([dbn], store_dir)
    res = {"events_arg": args.events}

    # open_store: cold-ish (first) and warm (median) opens; memory as pages are touched.
    rss0 = rss_mb()
    store, t = timed(lambda: foxhunt.open_store(store_dir), args.repeat * 5)
    rss1 = rss_mb()
    n = len(store)
    total = float(store.bid_sz.sum())  # touches every page of one column (80 bytes a row)
    rss2 = rss_mb()
    res.update(snapshots=n, open_ms_first=t[0] * 1e3, open_ms_median=statistics.median(t) * 1e3,
               rss_before_mb=rss0, rss_after_open_mb=rss1, rss_after_touch_bid_sz_mb=rss2,
               bid_sz_column_mb=store.bid_sz.nbytes / 2**20, checksum=total)

    # features(): Python vs the CLI (same store, same flags).
    (_, x, _, _), t = timed(lambda: foxhunt.features(store), args.repeat)
    res["features_py_s"] = statistics.median(t)
    res["features_py_rate"] = n / statistics.median(t)
    out_csv = os.path.join(args.work, "features.csv")
    _, t = timed(lambda: subprocess.run([args.fxt, "-q", "features", "--store", store_dir,
                                         "--out", out_csv], check=True), args.repeat)
    res["features_cli_s"] = statistics.median(t)
    res["features_cli_rate"] = n / statistics.median(t)
    res["features_py_over_cli"] = res["features_py_rate"] / res["features_cli_rate"]

    class Pass(foxhunt.Strategy):
        def on_event(self, ctx, event):
            pass

    for name, strategy in (("no_hooks", foxhunt.Strategy()), ("on_event_pass", Pass())):
        r, t = timed(lambda: foxhunt.backtest(store_dir, strategy), args.repeat)
        res[f"strategy_{name}_events"] = r.events
        res[f"strategy_{name}_events_per_s"] = r.events / statistics.median(
            [r.wall_seconds] if args.repeat == 1 else t)
        res[f"strategy_{name}_replay_only_events_per_s"] = r.events_per_second
    r, t = timed(lambda: foxhunt.backtest(store_dir, "twap", {"qty": 1}), args.repeat)
    res["builtin_twap_replay_events_per_s"] = r.events / r.wall_seconds
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
