"""The Medusa engine boots in the background from the end of collection, and whatever
happens the session's end stops it and everything it started (tests/shop_engine/
medusa_engine.py, `EngineBoot`). An inner pytest session runs with a stand-in `node` and
`npm` first on PATH (the install cache stamped, so npm never runs) and pgserver's real
PostgreSQL; the stand-in's `medusa db:migrate` hangs or fails, as told."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.launch import REPO_ROOT
from tests.processes import alive as _alive
from tests.shop_engine import medusa_engine

# Records every call; `db:migrate` then runs a child and waits (its pids recorded) or fails.
FAKE_NODE = """#!/bin/sh
echo "$*" >> "{calls}"
case "$*" in
  --version) echo "v${{NODE_VERSION:-20.11.0}}" ;;
  *db:migrate*)
    if [ -n "$FAIL_MIGRATE" ]; then
      sleep "${{MIGRATE_TAKES_S:-0}}"  # a slow step, simulated: how long it takes, not a sync
      echo "migration exploded" >&2; exit 3
    fi
    sleep 600 & echo $! >> "{pids}"; echo $$ >> "{pids}"; wait ;;
  *) exit 1 ;;
esac
"""

INNER = """
import os, time
import pytest

def test_unit_first():
    if os.environ.get("INTERRUPT"):
        # the boot has reached `medusa db:migrate` (an outer limit, not a timing)
        deadline = time.monotonic() + 120
        while not os.path.exists(os.environ["PIDS"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        raise KeyboardInterrupt

@pytest.mark.medusa
def test_uses_the_engine(medusa_engine):
    pass
"""


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _alive(int(entry)):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in command:
                found.append(f"{entry}: {command}")
    return found


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The inner session's TMPDIR, where the engine's folder goes: outside tmp_path, whose
    parents PostgreSQL's `pgserver` user (we may be root) cannot enter."""
    folder = Path(tempfile.mkdtemp(prefix="medusa-boot-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _engine_folders(scratch: Path) -> list[Path]:
    return list(scratch.glob("medusa-engine-*"))


def _inner_session(tmp: Path, scratch: Path, *args: str, **env: str) -> tuple[int, str]:
    folder = tmp / "bin"
    folder.mkdir()
    for name, text in (
        ("node", FAKE_NODE.format(calls=tmp / "calls", pids=tmp / "pids")),
        ("npm", "#!/bin/sh\nexit 1\n"),
    ):
        (folder / name).write_text(text)
        (folder / name).chmod((folder / name).stat().st_mode | stat.S_IEXEC)
    lock = (medusa_engine.SOURCE / "package-lock.json").read_bytes()
    cache = tmp / "cache" / "shop-support-bot" / f"medusa-{hashlib.sha256(lock).hexdigest()[:16]}"
    cache.mkdir(parents=True)
    (cache / ".installed").write_text("ok\n")
    (tmp / "test_inner.py").write_text(INNER)
    options = ["-q", "-p", "tests.conftest", "-p", "no:cacheprovider", "--basetemp", "base"]
    options += [
        "-o",
        "markers=medusa: the engine",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
    ]
    environment = {
        **{k: v for k, v in os.environ.items() if k != "MEDUSA_TEST_ENGINE"},
        "PYTHONPATH": str(REPO_ROOT),
        "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "TMPDIR": str(scratch),
        "PIDS": str(tmp / "pids"),
        **env,
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *args, "test_inner.py"],
        cwd=tmp,
        env=environment,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    return run.returncode, run.stdout + run.stderr


@pytest.mark.timeout(600)
def test_an_interrupted_run_ends_the_boot_and_everything_it_started(
    tmp_path: Path, scratch: Path
) -> None:
    """The boot began at collection (its migrate step runs while the first test does);
    Ctrl-C in that test: the migrate step's process group and the PostgreSQL are ended,
    the folder deleted, and nothing is left for the leftover check to find."""
    code, output = _inner_session(tmp_path, scratch, INTERRUPT="1")
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert "processes left running" not in output and "threads left" not in output, output
    pids = [int(line) for line in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids), output
    assert _processes_mentioning(str(tmp_path)) == [], output
    assert _processes_mentioning(str(scratch)) == [], output
    assert _engine_folders(scratch) == [], output


@pytest.mark.timeout(600)
def test_a_run_without_medusa_tests_boots_nothing(tmp_path: Path, scratch: Path) -> None:
    code, output = _inner_session(tmp_path, scratch, "-m", "not medusa")
    assert code == 0 and "1 passed, 1 deselected" in output, output
    assert not (tmp_path / "calls").exists(), output  # node never ran, not even --version
    assert _engine_folders(scratch) == [], output


@pytest.mark.timeout(600)
def test_a_failed_boot_is_the_tests_error_not_its_timeout(tmp_path: Path, scratch: Path) -> None:
    """The wait for the boot is outside the test's pytest-timeout budget: the migrate step
    alone takes longer (20 s) than the budget (10 s), yet the test fails with the boot's
    own error. (The budget is not smaller: on a loaded machine the test's own setup and
    report, which it does cover, once took more than 1 s.)"""
    code, output = _inner_session(
        tmp_path, scratch, "-o", "timeout=10", FAIL_MIGRATE="1", MIGRATE_TAKES_S="20"
    )
    assert code == pytest.ExitCode.TESTS_FAILED, output
    assert "1 passed, 1 error" in output, output
    assert "medusa db:migrate failed (3)" in output and "migration exploded" in output, output
    assert "Timeout" not in output, output
    assert _processes_mentioning(str(tmp_path)) == [], output
    assert _processes_mentioning(str(scratch)) == [], output
    assert _engine_folders(scratch) == [], output


@pytest.mark.timeout(600)
def test_without_node_20_the_test_is_skipped_with_the_same_line(
    tmp_path: Path, scratch: Path
) -> None:
    """The boot's skip (raised in its thread) is the test's skip, worded as before."""
    code, output = _inner_session(tmp_path, scratch, "-rs", NODE_VERSION="18.19.0")
    assert code == 0 and "1 passed, 1 skipped" in output, output
    assert "Medusa engine tests skipped: Node.js 20+ not found (v18.19.0)" in output, output
    assert _engine_folders(scratch) == [], output
