"""The pieces the ablation probes share (round9_probe.py, round10_probe.py, meta_probe.py; docs/MODEL.md): XGBoost
through its C API (ctypes on Debian's libxgboost), the exact L2 logistic by Newton, and the AUC.
"""
import ctypes

import numpy as np

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


def read_latent(path):
    """The latent sidecar (src/data/synth.h), version 3 or 4, as a structured array with fields
    d (drift), m, r, a, b and meta (0 in version 3)."""
    raw = open(path, 'rb').read()
    version = int.from_bytes(raw[8:12], 'little')
    if raw[:8] != b'FXTLATNT' or version not in (3, 4):
        raise SystemExit(f'{path}: expected a version-3 or -4 latent sidecar')
    fields = [('d', '<f4'), ('m', '<f4'), ('r', '<i4'), ('a', '<i4'), ('b', '<i4'), ('meta', '<i4')]
    stored = np.frombuffer(raw[24:], dtype=np.dtype(fields[:version + 2]))  # v3: no meta
    lat = np.zeros(len(stored), dtype=np.dtype(fields))
    for name in stored.dtype.names:
        lat[name] = stored[name]
    return lat


def window_sum(v, w):
    """Per row i, the sum of v over rows (i - w, i]."""
    c = np.concatenate([[0.0], np.cumsum(v)])
    i = np.arange(len(v))
    return c[i + 1] - c[np.maximum(i + 1 - w, 0)]


def print_table(logistic, trees, y, m):
    """Test AUC per horizon (30, 100, 300, 1000) of the exact logistic on each matrix of
    `logistic` and the GBDT on each of `trees` (name -> rows x columns). Rows: training every 16th
    snapshot of the first 80 % less the purge, validation (GBDT early stopping) every 8th of the
    next 10 %, test every snapshot of the last 10 %, each less the 6,000-snapshot label horizon."""
    n = y.shape[0]
    tr = np.arange(2000, int(0.8 * n) - 6000, 16)
    va = np.arange(int(0.8 * n), int(0.9 * n) - 6000, 8)
    te = np.arange(int(0.9 * n), n - 6000)
    print('h', *logistic.keys(), *trees.keys(), sep='\t')
    for h in range(min(y.shape[1], 4)):
        a, b, c = (idx[m[idx, h] == 1] for idx in (tr, va, te))
        row = [auc(logistic_scores(Z[a], y[a, h].astype(float), Z[c]), y[c, h])
               for Z in logistic.values()]
        row += [auc(gbdt_scores(Z[a], y[a, h], Z[b], y[b, h], Z[c]), y[c, h]) for Z in trees.values()]
        print(h, *(f'{v:.4f}' for v in row), sep='\t', flush=True)
