"""foxhunt.open_store: zero-copy, read-only views of the mapped columns; to_pandas; inspect."""

import gc

import numpy as np
import pytest

import foxhunt
from conftest import fxt_json


def test_columns_view_the_mapping(synth_store):
    store = foxhunt.open_store(synth_store)
    n = len(store)
    assert n > 1000
    for name in ("ts_ns", "bid_px", "ask_sz", "bid_ct", "flags", "trade_count", "trade_px"):
        a = getattr(store, name)
        assert a.base is store, name                         # the Store owns the mapping
        assert a.ctypes.data == store._address(name), name   # no copy: the mapped bytes
        assert not a.flags.writeable and not a.flags.owndata
    assert store.bid_px.shape == (n, 10) and store.bid_px.dtype == np.int64
    assert store.bid_sz.dtype == np.float64 and store.bid_ct.dtype == np.uint32
    assert store.ts_ns.shape == (n,) and store.flags.dtype == np.uint8
    assert store.trade_px.shape == (store.trade_rows,) and store.trade_rows > 0
    assert store.event_order_id.shape == (0,)  # mbp-10 source: no order events


def test_writing_raises(synth_store):
    store = foxhunt.open_store(synth_store)
    a = store.bid_px
    with pytest.raises(ValueError):
        a[0, 0] = 1
    with pytest.raises(ValueError):
        a.flags.writeable = True  # the base is not a writable buffer


def test_arrays_keep_the_mapping_alive(synth_store):
    store = foxhunt.open_store(synth_store)
    ts = store.ts_ns
    first, last = int(ts[0]), int(ts[-1])
    del store
    gc.collect()
    assert int(ts[0]) == first and int(ts[-1]) == last
    assert np.all(np.diff(ts) >= 0)


def test_values_match_inspect(synth_store):
    store = foxhunt.open_store(synth_store, verify=True)
    j = fxt_json("inspect", "--json", synth_store)
    assert foxhunt.inspect(synth_store) == j
    assert len(store) == j["counts"]["snapshots"]
    assert store.trade_rows == j["counts"]["trades"]
    assert store.meta["counts"] == j["counts"]
    first = j["first_snapshot"]
    assert int(store.ts_ns[0]) == first["ts_ns"]


def test_mbp10_fixture_values(mbp10_store):
    # ../shared/data/README.md: record 1 level 0 = 3720.25 / 3720.50, sizes 24 / 10, counts 15 / 8.
    store = foxhunt.open_store(mbp10_store)
    assert len(store) == 2
    assert store.bid_px[0, :3].tolist() == [3720250000000, 3720000000000, 3719750000000]
    assert store.ask_px[0, :3].tolist() == [3720500000000, 3720750000000, 3721000000000]
    assert store.bid_sz[0, :2].tolist() == [24.0, 31.0]
    assert store.ask_ct[0, :2].tolist() == [8, 24]
    assert store.ts_ns[0] == 1609160400000704060  # ts_recv
    assert store.ts_alt_ns[0] == 1609160400000429831  # ts_event
    assert store.bid_sz[1, 1] == 30.0 and store.bid_ct[1, 1] == 17


def test_to_pandas(mbp10_store):
    store = foxhunt.open_store(mbp10_store)
    df = store.to_pandas()
    assert len(df) == 2
    assert df["bid_px_00"].tolist() == [3720250000000, 3720250000000]
    assert df["ask_sz_01"].iloc[0] == 34.0
    assert list(df.columns[:3]) == ["ts_ns", "ts_alt_ns", "bid_px_00"]
    assert len(store.to_pandas("trades")) == store.trade_rows
    with pytest.raises(foxhunt.InputError, match="expected snapshots, trades or events"):
        store.to_pandas("nope")


def test_inspect_real_dbn_equals_cli():
    from conftest import shared_file
    path = shared_file("nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231224.mbo.dbn.zst")
    assert foxhunt.inspect(path) == fxt_json("inspect", "--json", path)
