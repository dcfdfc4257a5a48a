"""The owner's way to run the bot's commands: `make run` installs only what the bot needs,
ends on the bot's own one-line error without make's `*** Error` line, and `./support-bot`
runs every command from the project folder with the command's own exit status.

Each test works in a copy of the Makefile and the wrapper whose `.venv` is already
"installed" (a stamp newer than the lock, and a `python` that is this test run's), so
nothing is installed and the real `.venv` is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.runtime.exit_codes import ExitCode
from tests.waits import OUTER_LIMIT_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The Makefile, the wrapper and the locks, with a ready runtime `.venv`."""
    for name in ("Makefile", "support-bot", "pyproject.toml", "requirements.lock"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copy2(ROOT / "requirements-dev.lock", tmp_path / "requirements-dev.lock")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (tmp_path / ".venv" / ".installed-runtime").touch()
    return tmp_path


def run(args: list[str], cwd: Path, clean_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """With no settings at all (no `.env` in `cwd`): the bot's first set-up mistake."""
    env = {**clean_env, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT_S, check=False
    )


def test_make_run_installs_only_the_runtime_lock(checkout: Path) -> None:
    (checkout / ".venv" / ".installed-runtime").unlink()
    planned = subprocess.run(
        ["make", "-n", "run"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout
    assert "-r requirements.lock" in planned
    assert "requirements-dev.lock" not in planned and " -e ." not in planned
    tests = subprocess.run(
        ["make", "-n", "test"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout
    assert "-r requirements-dev.lock" in tests  # the tests' tools come with `make test`


def test_make_run_ends_on_the_bots_one_line(checkout: Path, clean_env: dict[str, str]) -> None:
    done = run(["make", "run"], checkout, clean_env)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid settings: BOT_TOKEN"), lines
    assert "***" not in done.stdout + done.stderr  # no make noise after it


def test_the_wrapper_runs_each_command_with_its_status(
    checkout: Path, clean_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # called by path from another folder
    shown = run([str(checkout / "support-bot"), "--help"], elsewhere, clean_env)
    assert shown.returncode == 0, shown.stderr
    for command in ("run", "import-data", "remove-demo", "texts", "simulate"):
        assert command in shown.stdout
    failed = run(["./support-bot"], checkout, clean_env)
    assert failed.returncode == ExitCode.CANNOT_START
    assert failed.stderr.strip().startswith("error: invalid settings: BOT_TOKEN")
    assert "***" not in failed.stderr


def test_the_wrapper_is_executable_and_posix_sh() -> None:
    wrapper = ROOT / "support-bot"
    assert os.access(wrapper, os.X_OK)
    assert wrapper.read_text().startswith("#!/bin/sh\n")
