"""Where PostgreSQL cannot start, its tests are skipped and the run says why.

A real pytest run in a subprocess, with a stand-in `pgserver` module first on the path
that fails the way a locked-down machine does. The inner run is one process (`-n 0`):
started in the project's folder it would otherwise read pyproject's `-n auto` and start
its own pytest-xdist workers inside this test's worker, which on a busy machine outlasts
any limit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import OUTER_LIMIT_S

ROOT = Path(__file__).resolve().parents[2]

FAILING_PGSERVER = {
    "cannot start": (
        "def get_server(*args, **kwargs):\n"
        "    raise RuntimeError('useradd: cannot lock /etc/passwd')\n",
        "PostgreSQL tests skipped: the server cannot start here "
        "(RuntimeError: useradd: cannot lock /etc/passwd)",
    ),
    "not installed": (
        "raise ImportError('No module named pgserver')\n",
        "PostgreSQL tests skipped: pgserver is not installed",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILING_PGSERVER))
def test_postgres_tests_are_skipped_with_the_reason(
    case: str, tmp_path: Path, clean_env: dict[str, str]
) -> None:
    module, reason = FAILING_PGSERVER[case]
    (tmp_path / "pgserver.py").write_text(module, encoding="utf-8")
    env = {
        **{k: v for k, v in clean_env.items() if not k.startswith("PYTEST_")},
        "PYTHONPATH": f"{tmp_path}:{ROOT}",
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "--basetemp",
            str(tmp_path / "inner"),
            "tests/unit/storage/test_postgres.py::test_sessions_get_the_server_settings",
            "tests/unit/storage/test_voice.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=OUTER_LIMIT_S,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert reason in run.stdout
    assert "passed" in run.stdout and "failed" not in run.stdout  # SQLite still runs
