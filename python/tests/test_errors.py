"""The CLI's one-line errors become foxhunt.InputError / foxhunt.Error with the same message."""

import pytest

import foxhunt
from conftest import fxt_error, shared_file


def test_hierarchy():
    assert issubclass(foxhunt.InputError, foxhunt.Error)
    assert issubclass(foxhunt.Error, Exception)


def test_missing_store_same_message(tmp_path):
    missing = str(tmp_path / "no-such-store")
    msg = fxt_error("features", "--store", missing, "--out", str(tmp_path / "f.csv"))
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.open_store(missing)
    assert str(e.value) == msg
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.features(missing)
    assert str(e.value) == msg


def test_bad_flags_same_message(synth_store, tmp_path):
    # (A flag's range, e.g. --stride 0, is checked by the CLI's parser with its own wording;
    # the library refuses the same value with an InputError of its own.)
    with pytest.raises(foxhunt.InputError):
        foxhunt.features(synth_store, stride=0)

    msg = fxt_error("features", "--store", synth_store, "--out", str(tmp_path / "f.csv"),
                    "--horizons", "1,2,3,4,5,6,7,8,9")
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.features(synth_store, horizons=range(1, 10))
    assert str(e.value) == msg

    msg = fxt_error("backtest", "--store", synth_store, "--strategy", "nope", "--out",
                    str(tmp_path / "bt"))
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.backtest(synth_store, "nope")
    assert str(e.value) == msg

    msg = fxt_error("backtest", "--store", synth_store, "--strategy", "mm", "--param", "bogus=1",
                    "--out", str(tmp_path / "bt"))
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.backtest(synth_store, "mm", {"bogus": 1})
    assert str(e.value) == msg

    # Out-of-range numbers: the CLI's parser words them its own way (flag ranges, docs/ROBUSTNESS.md).
    with pytest.raises(foxhunt.InputError):
        foxhunt.synth(str(tmp_path / "s.dbn"), events=0)


def test_bad_files_same_message(tmp_path):
    dbz = shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.dbz")
    msg = fxt_error("ingest", dbz, "--out", str(tmp_path / "s1"))
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.ingest([dbz], str(tmp_path / "s2"))
    assert str(e.value) == msg
    with pytest.raises(foxhunt.InputError, match="dbz"):
        foxhunt.read_dbn(dbz)

    cut = tmp_path / "cut.dbn"
    whole = open(shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.dbn"), "rb").read()
    cut.write_bytes(whole[:-100])
    msg = fxt_error("inspect", str(cut))
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.inspect(str(cut))
    assert str(e.value) == msg
    with pytest.raises(foxhunt.InputError) as e:
        foxhunt.read_dbn(cut)
    assert str(cut) in str(e.value)


def test_wrong_types_do_not_crash(synth_store):
    with pytest.raises(TypeError):
        foxhunt.features(synth_store, horizons=None)
    with pytest.raises(TypeError):
        foxhunt.open_store(42)
    with pytest.raises(foxhunt.InputError):
        foxhunt.backtest(synth_store, "mm", params=["a=1"])
