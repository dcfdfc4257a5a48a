"""The suite runs on pytest-xdist workers (pyproject's addopts, docs/testing.md); the tests
on the one Medusa engine must still share one worker, or each worker boots an engine of
its own (a minute of Node.js and PostgreSQL each). That rests on `--dist loadgroup`, which
pytest 9.2 broke silently (pytest-dev/pytest-xdist#1386): this fails if an upgrade does so
again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.launch import REPO_ROOT

CONFTEST = """
import os
import pytest
from tests.shop_engine.medusa_engine import BootPlugin

def pytest_configure(config):
    config.pluginmanager.register(BootPlugin(), "medusa-engine-boot")

@pytest.fixture
def medusa_engine():
    return "the engine"  # a stand-in: only where the tests run is checked
"""

# each test notes which worker ran it
TESTS = """
import os
from pathlib import Path

def _note(kind):
    with open(Path(os.environ["RAN_ON"]), "a") as out:
        out.write(f"{kind} {os.environ['PYTEST_XDIST_WORKER']}\\n")

def test_engine_1(medusa_engine): _note("engine")
def test_engine_2(medusa_engine): _note("engine")
def test_engine_3(medusa_engine): _note("engine")
def test_other_1(): _note("other")
def test_other_2(): _note("other")
def test_other_3(): _note("other")
"""


def test_the_tests_on_the_engine_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_first.py", "test_second.py", "test_third.py"):
        (tmp_path / name).write_text(TESTS)
    ran_on = tmp_path / "ran_on.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "RAN_ON": str(ran_on),
        # the boot's own wait is skipped: no engine is started
        "MEDUSA_TEST_ENGINE": str(tmp_path / "unused.json"),
    }
    options = ["-q", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "."],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line.split() for line in ran_on.read_text().splitlines()]
    engine_workers = {worker for kind, worker in lines if kind == "engine"}
    assert len(lines) == 18
    assert len(engine_workers) == 1, lines
