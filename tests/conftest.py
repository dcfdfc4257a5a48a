"""Project-wide test fixtures: isolated environment, a fresh database per test.

`db` is parametrised over the backends: every test that takes it runs on SQLite (a file in
`tmp_path`) and on PostgreSQL (a fresh database on the session's server, tests/pg.py),
with ids `[sqlite]` and `[postgres]`. The PostgreSQL run carries the `postgres` marker
(`-m "not postgres"` for a quick SQLite-only run); a test of SQLite itself (its file,
pragmas, aiosqlite) is marked `sqlite_only` and runs only on SQLite.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.runtime.config import Settings
from bot.telegram.features.gaps import GapsSettings
from bot.telegram.features.knowledge import KnowledgeSettings
from storage.database import Database, open_database
from tests.failure_reports import pytest_runtest_makereport  # noqa: F401 (a hook)
from tests.pg import pg_cluster, pg_db, pg_empty_url, pg_url  # noqa: F401 (fixtures)
from tests.shop_engine.medusa_engine import (  # noqa: F401 (a fixture)
    BootPlugin,
    medusa_engine,
    stop_engine_boot,
)

# every setting the bot reads (the features' groups too), so a developer's environment
# never leaks into a test
SETTING_NAMES = tuple(
    name.upper()
    for fields in (
        Settings.model_fields,
        KnowledgeSettings.model_fields,
        GapsSettings.model_fields,
    )
    for name in fields
)


@pytest.fixture(autouse=True)
def _isolated_settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's environment or `.env`."""
    for name in SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def clean_env() -> dict[str, str]:
    """An environment for subprocesses with none of the bot's settings in it."""
    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that takes `db` once per backend (SQLite only if `sqlite_only`)."""
    if "db_backend" not in metafunc.fixturenames:
        return
    backends: list[object] = ["sqlite"]
    if metafunc.definition.get_closest_marker("sqlite_only") is None:
        backends.append(pytest.param("postgres", marks=pytest.mark.postgres))
    metafunc.parametrize("db_backend", backends)


@pytest.fixture
async def db(
    db_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Database]:
    """A fresh, migrated database of the test's backend (see the module docstring)."""
    if db_backend == "postgres":
        database = await open_database(request.getfixturevalue("pg_url"))
    else:
        database = await open_database(tmp_path / "test.sqlite3")
    try:
        yield database
    finally:
        await database.close()


# The fake OpenAI server as a fixture for every test package (tests/fakes/openai_server.py).
from tests.fakes.help_site import help_site  # noqa: E402, F401
from tests.fakes.openai_server import fake_openai  # noqa: E402, F401
from tests.fakes.shop_api import fake_shop_api  # noqa: E402, F401
from tests.fakes.shopify import fake_shopify  # noqa: E402, F401
from tests.fakes.woocommerce import fake_woo  # noqa: E402, F401

PR_SET_CHILD_SUBREAPER = 36


def pytest_configure(config: pytest.Config) -> None:
    """Become the reaper of every orphaned descendant (Linux): a process a test started
    that outlives its own parent is then still ours to see, and to end, at the session's
    end, instead of running on under init."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # the Medusa engine boots in the background once collection shows a test needs it
    config.pluginmanager.register(BootPlugin(), "medusa-engine-boot")


def _children_of(pid: int) -> list[tuple[int, str, bool]]:
    """The processes whose parent is `pid` (Linux /proc): pid, command line, whether alive."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        found.append((int(entry), command or "(exited)", fields[0] != b"Z"))
    return found


def _end(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# Two workers per core, at most eight: most of an e2e test's time is waiting on a real bot
# process, so two workers a core overlap the waits; more only contend for the cores
# (measured on two cores: docs/testing.md, "Parallel runs").
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """(xdist) The workers `-n auto` (pyproject's addopts) starts: two per usable core,
    unless PYTEST_XDIST_AUTO_NUM_WORKERS says otherwise (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_AUTO_WORKERS, 2 * (cores or 1)))


# pytest-xdist: each worker checks its own processes and
# threads at its session's end and sends what it found to the controller, which fails the
# run; the controller itself runs no test and checks only for orphans of a dead worker.
_WORKERS = pytest.StashKey[set[int]]()  # the controller's worker processes
_FOUND_BY_WORKERS = pytest.StashKey[list[str]]()
_SESSION_END_PROBLEMS = "session_end_problems"  # the key in a worker's workeroutput


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(xdist controller) A worker ended: note its pid and what its session end found."""
    output = getattr(node, "workeroutput", None) or {}
    if "pid" in output:
        node.config.stash.setdefault(_WORKERS, set()).add(int(output["pid"]))
    found = node.config.stash.setdefault(_FOUND_BY_WORKERS, [])
    worker = getattr(getattr(node, "gateway", None), "id", "?")
    found.extend(f"[{worker}] {line}" for line in output.get(_SESSION_END_PROBLEMS, []))


@pytest.hookimpl(trylast=True)  # after xdist has stopped its workers (controller)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Nothing a test started outlives the session: the fork server's children and this
    process's own (orphans included, see pytest_configure) are listed, killed and reaped,
    and the run fails if one was still running. Exited ones are only reaped. Threads that
    would keep the interpreter from exiting fail the run too (`_stuck_threads`)."""
    from tests.e2e.launch import stop_fork_server

    config = session.config
    workers = config.stash.get(_WORKERS, set())
    # a boot no test used (deselected, an interrupted run) is ended like any other
    not_stopped = stop_engine_boot(config)
    left = [(pid, "a child of the fork server", True) for pid in stop_fork_server()]
    left += _children_of(os.getpid()) if os.path.isdir("/proc") else []
    left = [entry for entry in left if entry[0] not in workers]
    for pid, _, _ in left:
        _end(pid)
    problems = list(config.stash.get(_FOUND_BY_WORKERS, []))
    if not_stopped:
        problems.append(not_stopped)
    running = [(pid, command) for pid, command, alive in left if alive]
    if running:
        lines = "\n".join(f"  pid {pid}: {command}" for pid, command in running)
        problems.append(f"processes left running by the tests (now killed):\n{lines}")
    stuck = _stuck_threads(float(os.environ.get(STUCK_THREAD_GRACE_ENV, "30")))
    if stuck:
        problems.append(
            "threads left running by the tests (the run would never exit): "
            + ", ".join(stuck)
            + " — a database connection a test did not close?"
        )
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports and fails
        workeroutput["pid"] = os.getpid()
        workeroutput[_SESSION_END_PROBLEMS] = problems
    writer = config.get_terminal_writer()
    for problem in problems:
        writer.line(f"\n{problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if stuck:
        config.stash[_EXIT_NOW] = int(session.exitstatus)


# Set when threads a test left would keep the interpreter alive after pytest ends.
_EXIT_NOW = pytest.StashKey[int]()
# How long the session's end waits for threads to end (30 s); tests/unit/test_session_end.py
# shortens it for an inner run whose thread never ends.
STUCK_THREAD_GRACE_ENV = "TESTS_STUCK_THREAD_GRACE_S"


def _stuck_threads(grace_s: float) -> list[str]:
    """Non-daemon threads still alive after a grace (a closing connection's worker ends
    on its own within it): names, for the report. Thread-pool workers are left out: the
    interpreter ends them itself at exit."""
    main = threading.main_thread()
    others = [
        t
        for t in threading.enumerate()
        if t is not main and not t.daemon and not t.name.startswith("ThreadPoolExecutor")
    ]
    deadline = time.monotonic() + grace_s
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in others if t.is_alive()]


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A run whose tests left a non-daemon thread (an unclosed aiosqlite connection's
    worker) ends here with its status, instead of hanging in the interpreter's shutdown."""
    status = config.stash.get(_EXIT_NOW, None)
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
