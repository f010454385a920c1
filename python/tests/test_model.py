"""Training, prediction and evaluation: the same outputs as fxt predict / fxt eval."""

import json
import logging
import os

import numpy as np
import pandas as pd
import pytest

import foxhunt
from conftest import fxt, fxt_error


def test_train_summary_and_files(checkpoint):
    run = os.path.dirname(checkpoint)
    assert os.path.exists(os.path.join(run, "last.ckpt"))
    lines = open(os.path.join(run, "metrics.jsonl")).read().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["epoch"] == 1


def test_train_reports_epochs(synth_store, tmp_path, caplog):
    seen = []
    with caplog.at_level(logging.INFO, logger="foxhunt"):
        s = foxhunt.train([synth_store], tmp_path / "run", callback=seen.append, device="cpu",
                          config={"model": "logreg", "epochs": 2, "steps_per_epoch": 2,
                                  "batch": 2, "window": 8, "horizons": [10]})
    # A baseline-only run (docs/BASELINES.md) is one "epoch": the exact fit, then validation.
    assert s["epochs_run"] == 1 and s["steps"] == 0
    assert [r["epoch"] for r in seen] == [1]
    assert sum("epoch 1:" in r.getMessage() for r in caplog.records) == 1


def test_checkpoint_predict_equals_cli(checkpoint, synth_store, tmp_path):
    ck = foxhunt.Checkpoint(checkpoint)
    assert ck.horizons == [10, 50]
    df = ck.predict(synth_store, device="cpu")
    out = str(tmp_path / "p.csv")
    fxt("predict", "--checkpoint", checkpoint, "--store", synth_store, "--out", out,
        "--device", "cpu")
    cli = pd.read_csv(out, float_precision="round_trip")
    assert list(df.columns) == ["ts_ns", "p_h10", "p_h50"]
    pd.testing.assert_frame_equal(df, cli)
    p = df["p_h10"].to_numpy()
    assert len(df) == len(foxhunt.open_store(synth_store))
    assert np.nanmin(p) > 0 and np.nanmax(p) < 1


def test_evaluate_equals_cli(checkpoint, synth_store, tmp_path):
    out = str(tmp_path / "eval.json")
    fxt("eval", "--checkpoint", checkpoint, "--store", synth_store, "--out", out,
        "--bootstrap", "20", "--device", "cpu")
    cli = json.load(open(out))
    py = foxhunt.Checkpoint(checkpoint).evaluate([synth_store], bootstrap=20, device="cpu")
    for j in (cli, py):
        j.pop("seconds", None)
        j.pop("timing", None)
    assert py == cli
    assert py["horizons"] == [10, 50]


def test_bad_checkpoint_raises_cli_message(tmp_path, synth_store):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"not a checkpoint at all")
    msg = fxt_error("predict", "--checkpoint", str(bad), "--store", synth_store, "--out",
                    str(tmp_path / "x.csv"))
    with pytest.raises(foxhunt.Error) as e:
        foxhunt.Checkpoint(bad).predict(synth_store)
    assert str(e.value) == msg


def test_train_config_errors(synth_store, tmp_path):
    with pytest.raises(foxhunt.InputError, match="unknown key 'epochz'"):
        foxhunt.train([synth_store], tmp_path / "r", config={"epochz": 1})
    with pytest.raises(foxhunt.InputError):
        foxhunt.train([synth_store], tmp_path / "r2", config={"batch": 0})


def test_reduced_precision_is_a_gpu_precision(checkpoint, synth_store, tmp_path):
    # The CLI's message, word for word, for each entry point; an unknown name is refused too.
    says = "--precision tf32: the CPU backend computes in FP32 only (it needs --device cuda)"
    with pytest.raises(foxhunt.Error, match=says.replace("(", r"\(").replace(")", r"\)")):
        foxhunt.train([synth_store], tmp_path / "r", device="cpu", precision="tf32")
    assert not (tmp_path / "r").exists()
    with pytest.raises(foxhunt.Error, match="--precision tf32: the CPU backend"):
        foxhunt.Checkpoint(checkpoint).predict(synth_store, device="cpu", precision="tf32")
    with pytest.raises(foxhunt.Error, match="--precision tf32: the CPU backend"):
        foxhunt.evaluate(checkpoint, [synth_store], device="cpu", precision="tf32")
    with pytest.raises(foxhunt.Error, match="--precision bf16: the CPU backend"):
        foxhunt.train([synth_store], tmp_path / "r3", device="cpu", precision="bf16")
    assert not (tmp_path / "r3").exists()
    with pytest.raises(foxhunt.Error, match="precision must be fp32, tf32 or bf16 .got 'fp16'."):
        foxhunt.train([synth_store], tmp_path / "r4", device="cpu", precision="fp16")
