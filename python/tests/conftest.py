"""Shared fixtures of the foxhunt pytest suite (run by ctest as python_pytest, or by hand:
PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests). Small sizes: the whole suite
stays within a few seconds of CPU. Real-market fixtures come from ../shared/data and are
skipped with a message when that folder is absent."""

import json
import os
import subprocess

import pytest

import foxhunt

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FXT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
FXT = os.environ.get("FXT_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "fxt"))
SHARED = os.environ.get("FXT_DATA_DIR") or os.environ.get(
    "FXT_SHARED_DATA", os.path.join(SOURCE_DIR, "..", "shared", "data"))

foxhunt.set_quiet(True)


def shared_file(relative: str) -> str:
    """The path of a shared real-data file; skips the test when it is absent."""
    path = os.path.join(SHARED, relative)
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent: real-data test skipped")
    return path


def fxt(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the fxt binary as a user would."""
    if not os.path.exists(FXT):
        pytest.skip(f"the fxt binary {FXT} is absent (set FXT_BINARY)")
    r = subprocess.run([FXT, "-q", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"fxt {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def fxt_error(*args: str) -> str:
    """The one-line message of a failing fxt command (without the 'fxt: error: ' prefix)."""
    r = fxt(*args, check=False)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("fxt: error: "), line
    return line[len("fxt: error: "):]


def fxt_json(*args: str):
    return json.loads(fxt(*args).stdout)


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("foxhunt")


@pytest.fixture(scope="session")
def synth_store(work) -> str:
    """A synthetic market: 20,000 events through synth and ingest (both from Python)."""
    dbn = str(work / "syn.dbn.zst")
    foxhunt.synth(dbn, events=20000, seed=7)
    foxhunt.ingest([dbn], str(work / "syn"))
    return str(work / "syn")


@pytest.fixture(scope="session")
def mbp10_store(work) -> str:
    """databento's two-record ES mbp-10 fixture as a store (README ground truth)."""
    path = shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.v3.dbn.zst")
    foxhunt.ingest([path], str(work / "mbp10"))
    return str(work / "mbp10")


@pytest.fixture(scope="session")
def es_mbo_store(work) -> str:
    """Real CME ES MBO (2023-12-24, 8,725 records) as an L3 store."""
    src = shared_file("nautilus_trader/tests/test_data/databento/esh4-glbx-mdp3-20231224.mbo.dbn.zst")
    foxhunt.ingest([src], str(work / "es-mbo"))
    return str(work / "es-mbo")


@pytest.fixture(scope="session")
def checkpoint(synth_store, work) -> str:
    """A small perception model trained for one short epoch (seconds on a CPU)."""
    run = str(work / "run")
    foxhunt.train([synth_store], run, config={
        "epochs": 1, "steps_per_epoch": 4, "batch": 4, "window": 16, "horizons": [10, 50],
        "d_model": 16, "d_state": 8, "head_dim": 16, "head_mid": 16, "eval_batch": 256},
        device="cpu")
    return os.path.join(run, "best.ckpt")
