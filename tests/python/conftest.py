"""The pytest suite of the fourfold Python package (ctest: python_pytest, label python).

Run from the build: PYTHONPATH=build/python FOURFOLD_BINARY=build/fourfold python3 -m pytest tests/python
(ctest sets both). Every test measures for real on the CPU with short time budgets.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# quick settings for the CPU: the engine's stopping rule with a small budget
QUICK = dict(min_time="0.05", timeout="2", warmup="0.01")


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "store.db")


@pytest.fixture(scope="session")
def binary():
    path = os.environ.get("FOURFOLD_BINARY", os.path.join(ROOT, "build", "fourfold"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the fourfold binary is not at {path}; set FOURFOLD_BINARY")
    return path


@pytest.fixture
def cli(binary):
    def run(*args, check=True):
        p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
        if check and p.returncode != 0:
            raise AssertionError(f"fourfold {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p
    return run
