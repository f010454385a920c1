"""Round 9 probe (docs/MODEL.md): how much is the response regime worth, and how much of it can a
window of the last W events reveal? Exact L2 logistic fits (Newton, numpy) on the 38 standardised
features, alone, times the true regime b of the latent sidecar, and times a window statistic.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/ablation/round9_probe.py STORE LATENT
(STORE: `fxt ingest` of a `fxt synth --latent --response-regime-life ...` market; LATENT: its
.latent sidecar, version 3). Prints test AUC per horizon (rows 10%-from-the-end onwards).
"""
import struct
import sys

import numpy as np

import foxhunt

store, latent = sys.argv[1], sys.argv[2]
ts, X, y, m = foxhunt.features(store, standardised=True)
Xr = foxhunt.features(store, standardised=False)[1]
n = X.shape[0]
keep = [i for i in range(40) if i not in (26, 27)]
X = X[:, keep].astype(np.float64)
raw = open(latent, 'rb').read()
ver, rb = struct.unpack('<II', raw[8:16])
if raw[:8] != b'FXTLATNT' or (ver, rb) != (3, 20):
    sys.exit(f'{latent}: expected a version-3 latent sidecar (20-byte records)')
lat = np.frombuffer(raw[24:], dtype=np.dtype([('d', '<f4'), ('m', '<f4'), ('r', '<i4'), ('a', '<i4'), ('b', '<i4')]))
b = lat['b'].astype(np.float64)
imb_prev = np.concatenate([[0.0], Xr[:-1, 2]])
trade = np.nan_to_num(Xr[:, 12])
ev = np.sign(trade) * np.sign(imb_prev)  # +1 trade followed the imbalance before it
def window_sum(v, w):
    c = np.concatenate([[0.0], np.cumsum(v)])
    i = np.arange(n)
    return c[i + 1] - c[np.maximum(i + 1 - w, 0)]
def fit(Z, yy, lam=1e-3, iters=25):
    Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
    w = np.zeros(Z.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Z @ w))
        g = Z.T @ (p - yy) / len(yy) + lam * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z / len(yy) + lam * np.eye(Z.shape[1])
        w -= np.linalg.solve(H, g)
    return w
def auc(s, yy):
    o = np.argsort(s); r = np.empty(len(s)); r[o] = np.arange(1, len(s) + 1)
    npos = yy.sum(); nneg = len(yy) - npos
    return (r[yy == 1].sum() - npos * (npos + 1) / 2) / (npos * nneg)
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
        w = fit(Z[mk_tr], y[mk_tr, h].astype(float))
        zt = np.hstack([Z[mk_te], np.ones((len(mk_te), 1))]) @ w
        row.append(f'{auc(zt, y[mk_te, h]):.4f}')
    print(h, *row, sep='\t')
