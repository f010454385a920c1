"""The two examples run (small sizes) and print what they promise."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR


def run_example(name, *args):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", name), *args],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_research_example(tmp_path):
    out = run_example("research.py", "--events", "12000", "--steps", "2", "--work", str(tmp_path))
    assert "AUC" in out and "foxhunt checkpoint" in out


def test_custom_strategy_example(tmp_path):
    out = run_example("custom_strategy.py", "--events", "12000", "--work", str(tmp_path))
    assert "events/s" in out and "built-in mm" in out
