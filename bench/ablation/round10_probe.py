"""Round 10 probe (docs/MODEL.md): how much is the momentum regime r of the default synthetic market
worth, and how much of it can a window of the last W events reveal, beyond what one snapshot gives
a linear model and gradient-boosted trees?

The window statistic s_W: each trade's side times the sign of the mid's recent move before it
(feature slot 21, the EMA of the one-snapshot return at h = 100), summed over the last W events
and divided by the square root of the number of trades among them. It is positive where the flow
has been following the moves (r = +1) and negative where it fades them (r = -1).

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/ablation/round10_probe.py STORE LATENT
(STORE: `fxt ingest` of `fxt synth --events 1000000 --seed S --latent`; LATENT: its .latent
sidecar, version 3). Training rows every 16th snapshot of the first 80 % (less the purge),
validation every 8th of the next 10 % (GBDT early stopping), test every snapshot of the last 10 %.
Prints test AUC per horizon. The GBDT is XGBoost's C API through ctypes (Debian's libxgboost),
hist method, eta 0.05, depth 6, early stopping on validation log loss (patience 30).
"""
import ctypes
import sys

import numpy as np

import foxhunt

# ---- XGBoost through its C API -------------------------------------------------------------
_xgb = ctypes.cdll.LoadLibrary('libxgboost.so.0')
_xgb.XGBGetLastError.restype = ctypes.c_char_p


def _check(rc):
    if rc != 0:
        raise RuntimeError(_xgb.XGBGetLastError().decode())


def _dmatrix(X, y=None):
    X = np.ascontiguousarray(X, dtype=np.float32)
    h = ctypes.c_void_p()
    _check(_xgb.XGDMatrixCreateFromMat(X.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                       ctypes.c_uint64(X.shape[0]), ctypes.c_uint64(X.shape[1]),
                                       ctypes.c_float(np.nan), ctypes.byref(h)))
    if y is not None:
        yy = np.ascontiguousarray(y, dtype=np.float32)
        _check(_xgb.XGDMatrixSetFloatInfo(h, b'label', yy.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                          ctypes.c_uint64(len(yy))))
    return h


def _predict(booster, d, trees=0):
    """Probabilities from the first `trees` trees (0: all)."""
    n = ctypes.c_uint64()
    out = ctypes.POINTER(ctypes.c_float)()
    _check(_xgb.XGBoosterPredict(booster, d, 0, trees, 0, ctypes.byref(n), ctypes.byref(out)))
    return np.ctypeslib.as_array(out, shape=(n.value,)).copy()


def gbdt_scores(Xtr, ytr, Xva, yva, Xte, rounds=1000, patience=30):
    params = {'objective': 'binary:logistic', 'tree_method': 'hist', 'eta': 0.05, 'max_depth': 6,
              'subsample': 0.8, 'colsample_bytree': 0.8, 'lambda': 1, 'seed': 1, 'nthread': 2}
    dtr, dva, dte = _dmatrix(Xtr, ytr), _dmatrix(Xva, yva), _dmatrix(Xte)
    booster = ctypes.c_void_p()
    _check(_xgb.XGBoosterCreate((ctypes.c_void_p * 1)(dtr), 1, ctypes.byref(booster)))
    for k, v in params.items():
        _check(_xgb.XGBoosterSetParam(booster, k.encode(), str(v).encode()))
    best, best_it = np.inf, -1
    for it in range(rounds):
        _check(_xgb.XGBoosterUpdateOneIter(booster, it, dtr))
        p = np.clip(_predict(booster, dva), 1e-7, 1 - 1e-7)
        loss = -np.mean(yva * np.log(p) + (1 - yva) * np.log(1 - p))
        if loss < best - 1e-6:
            best, best_it = loss, it
        elif it - best_it >= patience:
            break
    scores = _predict(booster, dte, best_it + 1)  # the trees up to the best validation round
    for h in (dtr, dva, dte):
        _xgb.XGDMatrixFree(h)
    _xgb.XGBoosterFree(booster)
    return scores


# ---- the exact L2 logistic (Newton) ------------------------------------------------------
def logistic_scores(Ztr, ytr, Zte, lam=1e-3, iters=25):
    Ztr = np.hstack([Ztr, np.ones((Ztr.shape[0], 1))])
    w = np.zeros(Ztr.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Ztr @ w))
        g = Ztr.T @ (p - ytr) / len(ytr) + lam * w
        H = (Ztr * (p * (1 - p))[:, None]).T @ Ztr / len(ytr) + lam * np.eye(Ztr.shape[1])
        w -= np.linalg.solve(H, g)
    return np.hstack([Zte, np.ones((Zte.shape[0], 1))]) @ w


def auc(s, y):
    order = np.argsort(s)
    rank = np.empty(len(s))
    rank[order] = np.arange(1, len(s) + 1)
    npos = y.sum()
    return (rank[y == 1].sum() - npos * (npos + 1) / 2) / (npos * (len(y) - npos))


store, latent = sys.argv[1], sys.argv[2]
_, X, y, m = foxhunt.features(store, standardised=True)
raw_features = foxhunt.features(store, standardised=False)[1]
n = X.shape[0]
X = X[:, [i for i in range(40) if i not in (26, 27)]].astype(np.float64)  # time of day dropped
raw = open(latent, 'rb').read()
if raw[:8] != b'FXTLATNT' or raw[8:12] != (3).to_bytes(4, 'little'):
    sys.exit(f'{latent}: expected a version-3 latent sidecar')
lat = np.frombuffer(raw[24:], dtype=np.dtype([('d', '<f4'), ('m', '<f4'), ('r', '<i4'),
                                               ('a', '<i4'), ('b', '<i4')]))
r = lat['r'].astype(np.float64)[:n]
trade = np.nan_to_num(raw_features[:, 12])
move_before = np.concatenate([[0.0], np.nan_to_num(raw_features[:-1, 21])])
follows = np.sign(trade) * np.sign(move_before)


def window_sum(v, w):
    c = np.concatenate([[0.0], np.cumsum(v)])
    i = np.arange(n)
    return c[i + 1] - c[np.maximum(i + 1 - w, 0)]


def window_statistic(w):
    return window_sum(follows, w) / np.sqrt(np.maximum(window_sum(np.abs(follows), w), 1))


tr = np.arange(2000, int(0.8 * n) - 6000, 16)
va = np.arange(int(0.8 * n), int(0.9 * n) - 6000, 8)
te = np.arange(int(0.9 * n), n - 6000)
stats = {w: window_statistic(w) for w in (64, 256, 1024, 4096)}
for w, s in stats.items():
    print(f'corr(r, s_{w}) = {np.corrcoef(r, s)[0, 1]:.3f}')
logistic = {'logistic': X, 'x*r': np.hstack([X, X * r[:, None], r[:, None]])}
logistic.update({f'x*s_{w}': np.hstack([X, X * s[:, None], s[:, None]]) for w, s in stats.items()})
trees = {'gbdt': X, 'gbdt+s_64': np.hstack([X, stats[64][:, None]]),
         'gbdt+s_256': np.hstack([X, stats[256][:, None]]),
         'gbdt+r': np.hstack([X, r[:, None]])}
print('h', *logistic.keys(), *trees.keys(), sep='\t')
for h in range(min(y.shape[1], 4)):  # horizons 30, 100, 300, 1000
    a, b, c = (idx[m[idx, h] == 1] for idx in (tr, va, te))
    row = [auc(logistic_scores(Z[a], y[a, h].astype(float), Z[c]), y[c, h]) for Z in logistic.values()]
    row += [auc(gbdt_scores(Z[a], y[a, h], Z[b], y[b, h], Z[c]), y[c, h]) for Z in trees.values()]
    print(h, *(f'{v:.4f}' for v in row), sep='\t', flush=True)
