#!/usr/bin/env python3
"""One-snapshot probe (docs/MODEL.md, round 7): how far a plain PyTorch model on ONE snapshot's
features gets, by input encoding, on the rows of an 80 / 10 / 10 time split.

Not part of foxhunt's evaluation: a diagnostic that says whether the GBDT's lead comes from
the input encoding (trees are invariant to monotone transforms; an MLP on standardised features
is not) or from something else. Reads `fxt features --store S --out F.csv` (raw features and
labels); time of day is dropped as the quickstart does.

  /usr/bin/python3 bench/ablation/one_snapshot_probe.py F.csv --encoding std|ple --model linear|mlp
      [--horizons h30,h300] [--bins 16] [--threads 2] [--device cpu|cuda]

Encodings: std = (x - mean) / std on the training rows, clipped to +-10 (foxhunt's model input);
ple = piecewise-linear encoding (Gorishniy et al. 2022): per feature, `bins` quantile intervals
of the training rows, x -> [clip((x - lo_t) / (hi_t - lo_t), 0, 1)]_t. Training: AdamW, batch
1024, early stopping on validation log loss (patience 3), the best epoch's test AUC is printed.
Test rows: the last 10 % minus the last 6,000 snapshots (every horizon labelled), as fxt eval.
"""
import argparse
import time

import numpy as np
import torch


def auc(y, s):
    order = np.argsort(s)
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    pos = y.sum()
    neg = len(y) - pos
    return (ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--encoding", choices=["std", "ple"], default="std")
    ap.add_argument("--model", choices=["linear", "mlp"], default="mlp")
    ap.add_argument("--horizons", default="h30,h300")
    ap.add_argument("--bins", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-epochs", type=int, default=40)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(a.threads)
    hdr = open(a.csv).readline().strip().split(",")
    try:
        import pandas
        d = pandas.read_csv(a.csv).to_numpy(dtype=np.float64)
    except ImportError:
        d = np.loadtxt(a.csv, delimiter=",", skiprows=1)
    cols = [i for i, h in enumerate(hdr) if h not in ("ts_ns", "tod_sin", "tod_cos")
            and not h.startswith(("y_", "mask_"))]
    x = np.nan_to_num(d[:, cols])
    n = len(x)
    ntr, nva = int(0.8 * n), int(0.1 * n)
    if a.encoding == "std":
        mu, sd = x[:ntr].mean(0), x[:ntr].std(0) + 1e-12
        enc = np.clip((x - mu) / sd, -10, 10).astype(np.float32)
    else:
        parts = []
        for j in range(x.shape[1]):
            e = np.unique(np.quantile(x[:ntr:7, j], np.linspace(0, 1, a.bins + 1)))
            lo, hi = e[:-1], e[1:]
            parts.append(np.clip((x[:, j:j + 1] - lo) / np.maximum(hi - lo, 1e-12), 0, 1))
        enc = np.concatenate(parts, 1).astype(np.float32)
    dev = torch.device(a.device)
    xt = torch.tensor(enc, device=dev)
    for h in a.horizons.split(","):
        y = d[:, hdr.index("y_" + h)]
        m = d[:, hdr.index("mask_" + h)] > 0
        tr = np.where(m[:ntr])[0]
        va = ntr + np.where(m[ntr:ntr + nva])[0]
        te = ntr + nva + np.where(m[ntr + nva:n - 6000])[0]
        yt = torch.tensor(y, dtype=torch.float32, device=dev)
        torch.manual_seed(1)
        f = enc.shape[1]
        if a.model == "linear":
            net = torch.nn.Linear(f, 1)
        else:
            net = torch.nn.Sequential(torch.nn.Linear(f, 128), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                      torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                      torch.nn.Linear(128, 1))
        net = net.to(dev)
        opt = torch.optim.AdamW(net.parameters(), lr=3e-4 if a.encoding == "ple" else 1e-3,
                                weight_decay=1e-4)
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        best, bad, t0, score = float("inf"), 0, time.time(), None
        for ep in range(a.max_epochs):
            net.train()
            perm = tr[np.random.permutation(len(tr))]
            for b in range(0, len(perm), 1024):
                bi = torch.tensor(perm[b:b + 1024], device=dev)
                loss = bce(net(xt[bi]).squeeze(1), yt[bi])
                opt.zero_grad()
                loss.backward()
                opt.step()
            net.eval()
            with torch.no_grad():
                vl = bce(net(xt[va]).squeeze(1), yt[va]).item()
                if vl < best - 1e-5:
                    best, bad, score = vl, 0, net(xt[te]).squeeze(1).cpu().numpy()
                else:
                    bad += 1
            if bad >= 3:
                break
        print(f"{a.encoding} {a.model} {h}: best val loss {best:.4f}, test AUC "
              f"{auc(y[te], score):.4f} on {len(te)} rows ({ep + 1} epochs, "
              f"{time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
