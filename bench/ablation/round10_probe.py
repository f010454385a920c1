"""Round 10 probe (docs/MODEL.md): how much is the momentum regime r of the default synthetic market
worth, and how much of it can a window of the last W events reveal, beyond what one snapshot gives
a linear model and gradient-boosted trees?

The window statistic s_W: each trade's side times the sign of the mid's recent move before it
(feature slot 21, the EMA of the one-snapshot return at h = 100), summed over the last W events
and divided by the square root of the number of trades among them. It is positive where the flow
has been following the moves (r = +1) and negative where it fades them (r = -1).

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/ablation/round10_probe.py STORE LATENT
(STORE: `fxt ingest` of `fxt synth --events 1000000 --seed S --latent`; LATENT: its .latent
sidecar, version 3 or 4). Training rows every 16th snapshot of the first 80 % (less the purge),
validation every 8th of the next 10 % (GBDT early stopping), test every snapshot of the last 10 %.
Prints test AUC per horizon. The GBDT is XGBoost's C API through ctypes (Debian's libxgboost),
hist method, eta 0.05, depth 6, early stopping on validation log loss (patience 30).
"""
import sys

import numpy as np

import foxhunt
from probe_lib import print_table, read_latent, window_sum

store, latent = sys.argv[1], sys.argv[2]
_, X, y, m = foxhunt.features(store, standardised=True)
raw_features = foxhunt.features(store, standardised=False)[1]
n = X.shape[0]
X = X[:, [i for i in range(40) if i not in (26, 27)]].astype(np.float64)  # time of day dropped
lat = read_latent(latent)
r = lat['r'].astype(np.float64)[:n]
trade = np.nan_to_num(raw_features[:, 12])
move_before = np.concatenate([[0.0], np.nan_to_num(raw_features[:-1, 21])])
follows = np.sign(trade) * np.sign(move_before)


def window_statistic(w):
    return window_sum(follows, w) / np.sqrt(np.maximum(window_sum(np.abs(follows), w), 1))


stats = {w: window_statistic(w) for w in (64, 256, 1024, 4096)}
for w, s in stats.items():
    print(f'corr(r, s_{w}) = {np.corrcoef(r, s)[0, 1]:.3f}')
logistic = {'logistic': X, 'x*r': np.hstack([X, X * r[:, None], r[:, None]])}
logistic.update({f'x*s_{w}': np.hstack([X, X * s[:, None], s[:, None]]) for w, s in stats.items()})
trees = {'gbdt': X, 'gbdt+s_64': np.hstack([X, stats[64][:, None]]),
         'gbdt+s_256': np.hstack([X, stats[256][:, None]]),
         'gbdt+r': np.hstack([X, r[:, None]])}
print_table(logistic, trees, y, m)
