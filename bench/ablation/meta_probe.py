"""Meta-order probe (docs/MODEL.md round 12): how much is the latent meta-order d of `fxt synth
--meta-gap ...` worth beyond one snapshot, and how much of it does a window of the last W events
reveal?

The window statistic c_W: the signed count of clip-sized trades (|signed volume| == the clip's
lots; buys +1, sells -1) among the last W events. Noise market orders have that size too, so it is
a noisy count; a sequence model can form it, one snapshot shows at most one such trade.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/ablation/meta_probe.py STORE LATENT [CLIP_LOTS]
(STORE: `fxt ingest` of `fxt synth --events 1000000 --seed S --latent --meta-gap ...`; LATENT its
.latent sidecar, version 4). Rows as in round10_probe.py: training every 16th snapshot of the first
80 % less the purge, validation every 8th of the next 10 %, test every snapshot of the last 10 %.
Prints corr(d, c_W) and test AUC per horizon for the logistic and the GBDT with one snapshot, with
c_W and with the true d.
"""
import os
import sys

import numpy as np

import foxhunt
from probe_lib import print_table, read_latent, window_sum

store, latent = sys.argv[1], sys.argv[2]
clip = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
_, X, y, m = foxhunt.features(store, standardised=True)
n = X.shape[0]
X = X[:, [i for i in range(40) if i not in (26, 27)]].astype(np.float64)  # time of day dropped
meta = read_latent(latent)['meta'].astype(np.float64)[:n]
d = np.sign(meta) * (np.abs(meta) == 1)  # accumulating: +1 / -1
# signed_volume.bin is cumulative (buys +, sells -): one event per snapshot, so its steps are trades.
signed_volume = np.diff(np.fromfile(os.path.join(store, 'signed_volume.bin'), dtype='<f8')[:n], prepend=0.0)
clip_trade = np.sign(signed_volume) * (np.abs(signed_volume) == clip)


print(f'meta-order accumulating {np.mean(d != 0):.3f}, revealing {np.mean(np.abs(meta) == 2):.3f} of events; clip-sized trades {np.mean(clip_trade != 0):.4f}')
stats = {w: window_sum(clip_trade, w) for w in (64, 256, 1024)}
for w, s in stats.items():
    print(f'corr(d, c_{w}) = {np.corrcoef(d, s)[0, 1]:.3f}')
onehot = np.stack([meta == v for v in (1, -1, 2, -2)], axis=1).astype(np.float64)
logistic = {'logistic': X, '+d': np.hstack([X, onehot]),
            '+c_256': np.hstack([X, stats[256][:, None] / 4])}
trees = {'gbdt': X, 'gbdt+c_64': np.hstack([X, stats[64][:, None]]),
         'gbdt+c_256': np.hstack([X, stats[256][:, None]]),
         'gbdt+c_1024': np.hstack([X, stats[1024][:, None]]), 'gbdt+d': np.hstack([X, onehot])}
print_table(logistic, trees, y, m)
