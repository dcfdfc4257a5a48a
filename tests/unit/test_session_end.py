"""A process a test leaves running fails the session and is killed (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import STUCK_THREAD_GRACE_ENV
from tests.e2e.launch import REPO_ROOT
from tests.processes import alive as _alive

LEAVES_PROCESSES = '''
import subprocess

def test_leaves_a_child_and_an_orphan(tmp_path):
    child = subprocess.Popen(["sleep", "600"])
    # an orphan: its parent exits at once, so only the subreaper can still see it
    subprocess.run(["sh", "-c", "sleep 601 & echo $! > orphan.pid"], cwd=tmp_path, check=True)
    (tmp_path.parent / "child.pid").write_text(str(child.pid))
    (tmp_path.parent / "orphan.pid").write_text((tmp_path / "orphan.pid").read_text())
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist workers"])
def test_a_session_whose_test_left_processes_fails_and_ends_them(
    tmp_path: Path, workers: list[str]
) -> None:
    """Also under pytest-xdist (`pytest -n 2`): the worker that ran the test finds the
    processes, and the controller fails the run with its list."""
    (tmp_path / "test_inner.py").write_text(LEAVES_PROCESSES)
    base = tmp_path / "base"
    options = ["-q", "-p", "tests.conftest", "-p", "no:cacheprovider", "--basetemp", str(base)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *workers, "test_inner.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output  # the test passed; the session did not
    assert "1 passed" in output and "processes left running by the tests" in output
    pids = [int(next(base.rglob(name)).read_text()) for name in ("child.pid", "orphan.pid")]
    assert all(f"pid {pid}:" in output for pid in pids), output
    assert not any(_alive(pid) for pid in pids)


LEAVES_A_CONNECTION_OPEN = """
import aiosqlite

KEPT = []

async def test_leaves_a_connection_open(tmp_path):
    connection = aiosqlite.connect(tmp_path / "left.sqlite3")
    await connection
    KEPT.append(connection)  # never closed: its worker thread would outlive the run
"""


def test_a_session_whose_test_left_a_connection_open_fails_instead_of_hanging(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_inner.py").write_text(LEAVES_A_CONNECTION_OPEN)
    options = ["-q", "-p", "tests.conftest", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto"]
    options += ["-o", "asyncio_default_fixture_loop_scope=function"]
    # the thread never ends, so the session's end would wait out its whole grace
    grace = {STUCK_THREAD_GRACE_ENV: "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "test_inner.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **grace},
        capture_output=True,
        text=True,
        timeout=240,  # an outer bound: before the check, this run never ended
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output  # the test passed; the session did not
    assert "1 passed" in output and "threads left running by the tests" in output
