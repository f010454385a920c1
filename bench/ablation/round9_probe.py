"""Round 9 probe (docs/MODEL.md): how much is the response regime worth, and how much of it can a
window of the last W events reveal? Exact L2 logistic fits (Newton, numpy) on the 38 standardised
features, alone, times the true regime b of the latent sidecar, and times a window statistic.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/ablation/round9_probe.py STORE LATENT
(STORE: `fxt ingest` of a `fxt synth --latent --response-regime-life ...` market; LATENT: its
.latent sidecar, version 3 or 4). Prints test AUC per horizon (rows 10%-from-the-end onwards).
"""
import sys

import numpy as np

import foxhunt
from probe_lib import auc, logistic_scores, read_latent, window_sum

store, latent = sys.argv[1], sys.argv[2]
ts, X, y, m = foxhunt.features(store, standardised=True)
Xr = foxhunt.features(store, standardised=False)[1]
n = X.shape[0]
keep = [i for i in range(40) if i not in (26, 27)]
X = X[:, keep].astype(np.float64)
b = read_latent(latent)['b'].astype(np.float64)
imb_prev = np.concatenate([[0.0], Xr[:-1, 2]])
trade = np.nan_to_num(Xr[:, 12])
ev = np.sign(trade) * np.sign(imb_prev)  # +1 trade followed the imbalance before it
tr = np.arange(2000, int(0.8 * n) - 6000, 16)
te = np.arange(int(0.9 * n), n - 6000)
variants = {'linear': X}
variants['x*b (true regime)'] = np.hstack([X, X * b[:, None]])
for w in (64, 256, 1024):
    s = window_sum(ev, w) / np.sqrt(np.maximum(window_sum(np.abs(ev), w), 1))
    variants[f'x*s{w}'] = np.hstack([X, X * s[:, None], s[:, None]])
print('horizon', *variants.keys(), sep='\t')
for h in range(5):
    mk_tr = tr[m[tr, h] == 1]; mk_te = te[m[te, h] == 1]
    row = []
    for name, Z in variants.items():
        zt = logistic_scores(Z[mk_tr], y[mk_tr, h].astype(float), Z[mk_te])
        row.append(f'{auc(zt, y[mk_te, h]):.4f}')
    print(h, *row, sep='\t')
