"""foxhunt.read_dbn against the DBN fixtures' ground truth (../shared/data/README.md)."""

import numpy as np
import pytest

import foxhunt
from conftest import shared_file

FIX = "dbn-fixtures/databento-dbn/tests/data/"


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_mbp10_records(version):
    f = foxhunt.read_dbn(shared_file(f"{FIX}test_data.mbp-10.{version}.dbn.zst"))
    md = f.metadata
    assert md["version"] == int(version[1])
    assert md["dataset"] == "GLBX.MDP3" and md["schema"] == "mbp-10"
    assert md["start"] == 1609160400000000000 and md["end"] == 1609200000000000000
    assert md["limit"] == 2 and md["symbols"] == ["ESH1"]
    assert md["mappings"][0]["raw_symbol"] == "ESH1"
    assert md["mappings"][0]["intervals"][0]["symbol"] == "5482"
    r = f["mbp-10"]
    assert r.dtype.itemsize == 368 and len(r) == 2
    assert r["publisher_id"][0] == 1 and r["instrument_id"][0] == 5482
    assert r["ts_event"][0] == 1609160400000429831 and r["ts_recv"][0] == 1609160400000704060
    assert r["price"][0] == 3722750000000 and r["size"][0] == 1
    assert r["action"][0] == b"C" and r["side"][0] == b"A"
    assert r["flags"][0] == 128 and r["depth"][0] == 9
    assert r["ts_in_delta"][0] == 22993 and r["sequence"][0] == 1170352
    assert (r["bid_px_00"][0], r["ask_px_00"][0]) == (3720250000000, 3720500000000)
    assert (r["bid_sz_00"][0], r["ask_sz_00"][0], r["bid_ct_00"][0], r["ask_ct_00"][0]) == (24, 10, 15, 8)
    assert (r["bid_px_02"][0], r["ask_px_02"][0]) == (3719750000000, 3721000000000)
    assert r["ts_event"][1] == 1609160400000435673 and r["sequence"][1] == 1170356
    assert (r["bid_sz_01"][1], r["ask_sz_01"][1], r["bid_ct_01"][1], r["ask_ct_01"][1]) == (30, 34, 17, 24)


def test_mbp1_tbbo_trades():
    m1 = foxhunt.read_dbn(shared_file(FIX + "test_data.mbp-1.v3.dbn.zst"))["mbp-1"]
    assert m1["ts_event"][0] == 1609160400006001487 and m1["price"][0] == 3720500000000
    assert (m1["bid_px_00"][0], m1["ask_px_00"][0], m1["bid_sz_00"][0], m1["ask_sz_00"][0]) == (
        3720250000000, 3720500000000, 24, 11)
    tb = foxhunt.read_dbn(shared_file(FIX + "test_data.tbbo.v2.dbn.zst"))
    assert tb.metadata["schema"] == "tbbo" and set(tb.records) == {"tbbo"}
    tr = foxhunt.read_dbn(shared_file(FIX + "test_data.trades.v1.dbn.zst"))["trades"]
    assert tr.dtype.itemsize == 48
    assert (tr["ts_event"][0], tr["price"][0], tr["size"][0], tr["flags"][0]) == (
        1609160400098821953, 3720250000000, 5, 129)
    assert tr["action"][0] == b"T" and tr["side"][0] == b"A"


def test_fragment_needs_version_and_definitions():
    frag = shared_file(FIX + "test_data.definition.v3.dbn.frag")
    with pytest.raises(foxhunt.InputError):
        foxhunt.read_dbn(frag)  # records only: the version must be given
    d = foxhunt.read_dbn(frag, dbn_version=3)["definition"]
    assert d["instrument_id"].tolist() == [31778, 688141]
    assert d["raw_symbol"].tolist() == ["GEM3 P9812", "ESH1 P2250"]
    assert d["min_price_increment"][0] == 500000000 and d["currency"][0] == "USD"
    assert d["instrument_class"].tolist() == ["P", "P"] and d["exchange"][0] == "XCME"
    # The MSFT definitions decode the same from every DBN version's layout.
    per_version = [foxhunt.read_dbn(shared_file(f"{FIX}test_data.definition.{v}.dbn.zst"))["definition"]
                   for v in ("v1", "v2", "v3")]
    for v in per_version:
        assert v["instrument_id"].tolist() == [6819, 6830]
        assert v["raw_symbol"].tolist() == ["MSFT", "MSFT"] and v["exchange"][0] == "XNAS"
        assert v["instrument_class"].tolist() == ["K", "K"]


def test_mbo_real_file():
    path = shared_file("nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231224.mbo.dbn.zst")
    f = foxhunt.read_dbn(path)
    mbo = f["mbo"]
    assert mbo.dtype.itemsize == 56
    total = len(mbo) + sum(f.skipped.values())
    assert total == 8725  # the README's record count
    assert set(np.unique(mbo["action"])) <= {b"A", b"C", b"M", b"R", b"T", b"F", b"N"}
    assert np.all(np.diff(mbo["ts_recv"].astype(np.int64)) >= 0)


@pytest.mark.parametrize("name,key", [("test_data.mbp-10.v2.dbn.zst", "mbp-10"),
                                      ("test_data.trades.v3.dbn.zst", "trades")])
def test_first_and_last_records_equal_inspect(name, key):
    from conftest import fxt_json
    path = shared_file(FIX + name)
    j = fxt_json("inspect", "--json", path)
    r = foxhunt.read_dbn(path)[key]
    assert len(r) == j["counts"][key]
    for rec, want in ((r[0], j["first_record"]), (r[-1], j["last_record"])):
        assert rec["ts_event"] == want["ts_event"] and rec["ts_recv"] == want["ts_recv"]
        assert rec["price"] == round(want["price"] * 1e9)
        assert rec["size"] == want["size"] and rec["sequence"] == want["sequence"]
        assert rec["action"].decode() == want["action"] and rec["side"].decode() == want["side"]
        assert rec["flags"] == want["flags"] and rec["instrument_id"] == want["instrument_id"]
        if "level0" in want:
            assert rec["bid_px_00"] == round(want["level0"]["bid_px"] * 1e9)
            assert rec["ask_sz_00"] == want["level0"]["ask_sz"]
