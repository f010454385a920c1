"""foxhunt.features: the same numbers as `fxt features` (its CSV, read back exactly)."""

import numpy as np
import pandas as pd
import pytest

import foxhunt
from conftest import fxt


def cli_features(store, tmp_path, *flags):
    out = str(tmp_path / "features.csv")
    fxt("features", "--store", store, "--out", out, *flags)
    return pd.read_csv(out, float_precision="round_trip")


def compare(store, tmp_path, stride, standardised, horizons):
    flags = ["--stride", str(stride), "--horizons", ",".join(map(str, horizons))]
    if standardised:
        flags.append("--standardised")
    df = cli_features(store, tmp_path, *flags)
    ts, x, y, mask = foxhunt.features(store, stride=stride, standardised=standardised,
                                      horizons=horizons)
    n = len(df)
    assert x.shape == (n, 40) and x.dtype == np.float32
    assert y.shape == (n, len(horizons)) and mask.dtype == np.uint8
    np.testing.assert_array_equal(ts, df["ts_ns"].to_numpy())
    cli_x = df[foxhunt.feature_names()].to_numpy(dtype=np.float32)  # empty field = NaN
    np.testing.assert_array_equal(x, cli_x)  # NaN positions equal too
    for i, h in enumerate(horizons):
        np.testing.assert_array_equal(y[:, i], df[f"y_h{h}"].to_numpy())
        np.testing.assert_array_equal(mask[:, i], df[f"mask_h{h}"].to_numpy())
    return x


def test_raw_features_equal_cli(synth_store, tmp_path):
    x = compare(synth_store, tmp_path, 1, False, [30, 100, 300, 1000, 6000])
    assert np.isfinite(x[1:, 1]).all()  # the spread is defined on a two-sided book


def test_standardised_stride_equal_cli(synth_store, tmp_path):
    x = compare(synth_store, tmp_path, 4, True, [10, 50])
    assert np.isfinite(x).all() and np.abs(x).max() <= 10


def test_real_mbo_store_equal_cli(es_mbo_store, tmp_path):
    compare(es_mbo_store, tmp_path, 1, False, [30, 100])


def test_hand_computed_row(mbp10_store):
    # Record 1 of the README: bid 3720.25 x 24, ask 3720.50 x 10, tick 0.25 (inferred).
    _, x, _, _ = foxhunt.features(mbp10_store)
    spread_ticks = (3720.50 - 3720.25) / 0.25
    imbalance = (24 - 10) / (24 + 10)
    microprice = (3720.50 * 24 + 3720.25 * 10) / 34
    assert x[0, 1] == pytest.approx(spread_ticks)
    assert x[0, 2] == pytest.approx(imbalance, rel=1e-6)
    assert x[0, 6] == pytest.approx((microprice - 3720.375) / 0.25, rel=1e-5)
