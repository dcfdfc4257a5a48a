"""`python -m bench.receive_cpu` runs both modes to the end (it broke once unnoticed)."""

from __future__ import annotations

import subprocess
import sys

from bench.procs import REPO_ROOT


def test_both_modes_report_their_cpu_per_update(clean_env: dict[str, str]) -> None:
    args = ["--rate", "2000", "--burst", "20", "--n", "60", "--warm", "20", "--rounds", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.receive_cpu", *args],
        cwd=REPO_ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for mode in ("webhook", "polling"):
        assert f"{mode:8s} CPU per received update: median" in done.stdout
