"""`python -m bench.receive_cpu` runs both modes to the end (it broke once unnoticed).

It measures CPU, but this test asserts only that the run completes and reports, never a
number, so it passes however loaded the machine is. The run is bounded by an outer limit
(below the per-test timeout); it runs in a process group of its own, which is killed
whatever the outcome, so no measuring child outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from bench.procs import REPO_ROOT

LIMIT_S = 240  # an outer limit: the run takes a fraction of it even on a loaded machine


def test_both_modes_report_their_cpu_per_update(clean_env: dict[str, str]) -> None:
    args = ["--rate", "2000", "--burst", "20", "--n", "60", "--warm", "20", "--rounds", "1"]
    with subprocess.Popen(
        [sys.executable, "-m", "bench.receive_cpu", *args],
        cwd=REPO_ROOT,
        env=clean_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as bench:
        try:
            stdout, stderr = bench.communicate(timeout=LIMIT_S)
        finally:  # the bench and its children, done or not (the limit, the per-test timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(bench.pid, signal.SIGKILL)
    assert bench.returncode == 0, stderr[-2000:]
    for mode in ("webhook", "polling"):
        assert f"{mode:8s} CPU per received update: median" in stdout
