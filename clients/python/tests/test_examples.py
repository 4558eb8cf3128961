"""The two quickstart examples against the live server: the client one and the standard-library one reach within
0.05 of Branin's minimum in 30 rounds, and print every round."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("script", ["quickstart.py", "quickstart_stdlib.py"])
def test_quickstart_reaches_the_branin_optimum(server, script):
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--url", server.url, "--rounds", "30"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("round ")) == 30, out.stdout
    best = float(next(line for line in lines if line.startswith("best value ")).split()[2])
    assert abs(best - 0.397887) <= 0.05, out.stdout
