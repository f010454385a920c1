#!/usr/bin/env python3
"""A research session in one script: synthesise a market, load the store as numpy, build the
40 features and labels, fit a scikit-learn logistic regression (a numpy one when scikit-learn
is absent) on the first 60% and compare its test AUC with a foxhunt checkpoint's predictions;
plot both when matplotlib is present.

    PYTHONPATH=build/python /usr/bin/python3 examples/research.py --events 200000
"""

import argparse
import os
import shutil
import tempfile

import numpy as np

import foxhunt


def auc(score: np.ndarray, label: np.ndarray) -> float:
    """ROC AUC by ranks (ties get their average rank)."""
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = label == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def fit_logistic(x: np.ndarray, y: np.ndarray):
    """scikit-learn's LogisticRegression, or Newton's method on the L2-penalised log loss."""
    try:
        from sklearn.linear_model import LogisticRegression
        m = LogisticRegression(C=1.0, max_iter=500).fit(x, y)
        return lambda z: m.predict_proba(z)[:, 1], "scikit-learn LogisticRegression"
    except ImportError:
        a = np.hstack([x, np.ones((len(x), 1))])
        w = np.zeros(a.shape[1])
        for _ in range(25):
            p = 1 / (1 + np.exp(-a @ w))
            grad = a.T @ (p - y) + 1e-3 * w
            hess = (a * (p * (1 - p))[:, None]).T @ a + 1e-3 * np.eye(len(w))
            w -= np.linalg.solve(hess, grad)
        return lambda z: 1 / (1 + np.exp(-np.hstack([z, np.ones((len(z), 1))]) @ w)), \
            "numpy logistic regression (scikit-learn not installed)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200000)
    ap.add_argument("--work", default=None, help="working folder (default: a temporary one)")
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--steps", type=int, default=40, help="training steps of the checkpoint")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="foxhunt-research-")
    os.makedirs(work, exist_ok=True)

    dbn = os.path.join(work, "market.dbn.zst")
    store_dir = os.path.join(work, "market")
    if not os.path.exists(store_dir):
        print(foxhunt.synth(dbn, events=args.events, seed=11))
        foxhunt.ingest([dbn], store_dir)
    store = foxhunt.open_store(store_dir)  # zero copy: columns view the mapped files
    print(store, "mean spread (ticks):",
          float(np.mean((store.ask_px[:, 0] - store.bid_px[:, 0]) / store.tick_px)))

    h = args.horizon
    ts, x, y, mask = foxhunt.features(store, horizons=[h])  # raw: NaN where undefined
    n = len(ts)
    cut = int(n * 0.6)
    # Standardise with the training rows' statistics only (as the trainer does), clip to +-10,
    # undefined -> 0 (the training mean).
    mean = np.nanmean(x[:cut], axis=0)
    std = np.nanstd(x[:cut], axis=0)
    std[~(std > 0)] = 1
    x = np.nan_to_num(np.clip((x - np.nan_to_num(mean)) / std, -10, 10), nan=0.0)
    train_rows = np.flatnonzero(mask[:cut, 0])
    test_rows = cut + np.flatnonzero(mask[cut:, 0])
    predict, name = fit_logistic(x[train_rows], y[train_rows, 0].astype(float))
    p_lr = predict(x[test_rows])
    auc_lr = auc(p_lr, y[test_rows, 0])

    run = os.path.join(work, "run")
    shutil.rmtree(run, ignore_errors=True)  # this script's own run directory: start afresh
    foxhunt.train([store_dir], run, device="cpu", config={
        "horizons": [h], "epochs": 1, "steps_per_epoch": args.steps, "batch": 16, "window": 32,
        "d_model": 32, "head_dim": 32, "head_mid": 32, "split_train": 0.6, "split_validation": 0.2})
    preds = foxhunt.Checkpoint(os.path.join(run, "best.ckpt")).predict(store, device="cpu")
    p_model = preds[f"p_h{h}"].to_numpy()[test_rows]
    ok = np.isfinite(p_model)
    auc_model = auc(p_model[ok], y[test_rows[ok], 0])

    print(f"horizon {h}: {len(test_rows)} labelled test rows")
    print(f"  {name:55s} AUC {auc_lr:.4f}")
    print(f"  {'foxhunt checkpoint (' + str(args.steps) + ' steps)':55s} AUC {auc_model:.4f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.plot(ts[test_rows], p_lr, lw=0.5, label=f"logistic (AUC {auc_lr:.3f})")
        ax.plot(ts[test_rows], p_model, lw=0.5, label=f"checkpoint (AUC {auc_model:.3f})")
        ax.legend()
        fig.savefig(os.path.join(work, "research.png"), dpi=100)
        print("plot:", os.path.join(work, "research.png"))
    except ImportError:
        print("matplotlib not installed: no plot")


if __name__ == "__main__":
    main()
