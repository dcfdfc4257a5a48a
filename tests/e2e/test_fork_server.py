"""The fork server (tests/e2e/forkserver.py) hands each test a process equal to a fresh
`python -m bot`: nothing inherited from the warm process (no event loop, thread, file or
signal handler), the requested environment, folder and argv, and the same exit statuses
and deaths by signal as a spawned process. A run whose test went away is killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.harness import BotProcess, free_port
from tests.e2e.launch import (
    PIPE,
    REPO_ROOT,
    fork_bot,
    fork_server,
    forking,
    run_bot_command,
    stop_fork_server,
)
from tests.processes import alive

pytestmark = pytest.mark.skipif(not forking(), reason="bot starts are spawned (E2E_START=spawn)")

LAUNCHERS = [pytest.param(False, id="forked"), pytest.param(True, id="spawned")]


async def test_a_forked_child_inherits_no_loop_thread_file_or_signal_handler(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**clean_env, "SOMETHING_ONLY_THIS_RUN_HAS": "1"}
    child = await fork_bot(["texts"], env=env, cwd=tmp_path, stdout=PIPE, op="probe")
    out, err = await child.communicate()
    child.close()
    assert child.returncode == 0, err.decode()
    state = json.loads(out)
    # what a fresh interpreter has, for comparison
    fresh = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from tests.e2e.forkserver import probe; probe()",
        cwd=REPO_ROOT,
        env=clean_env,
        stdout=PIPE,
    )
    fresh_out, _ = await fresh.communicate()
    assert state["threads"] == state["tasks"] == 1
    assert not state["running_loop"] and not state["policy_loop"]
    assert state["fds"] == [0, 1, 2]  # no socket, pipe, selector or database of the server
    assert state["signals"] == json.loads(fresh_out)["signals"]
    assert state["wakeup_fd"] == -1
    assert state["env"] == env and state["cwd"] == str(tmp_path)
    assert state["argv"][1:] == ["texts"] and state["argv"][0].endswith("__main__.py")
    assert state["ppid"] == fork_server().proc.pid


def test_the_warm_process_holds_one_thread_and_no_file(clean_env: dict[str, str]) -> None:
    server = fork_server().proc.pid
    assert len(os.listdir(f"/proc/{server}/task")) == 1
    targets = [os.readlink(f"/proc/{server}/fd/{fd}") for fd in os.listdir(f"/proc/{server}/fd")]
    files = [t for t in targets if t.startswith("/") and t not in (os.devnull,)]
    assert [t for t in files if not t.endswith("server.log")] == [], targets


def test_a_refused_start_has_the_same_status_and_line(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    """The `.env` of the run's folder is read, validated and refused as in a fresh process."""
    (tmp_path / ".env").write_text("BOT_TOKEN=not-a-token\nOPENAI_API_KEY=sk-x\n")
    forked = run_bot_command([], env=clean_env, cwd=tmp_path)
    spawned = run_bot_command([], env=clean_env, cwd=tmp_path, spawn=True)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        spawned.returncode,
        spawned.stdout,
        spawned.stderr,
    )
    assert forked.returncode == 2 and len(forked.stderr.splitlines()) == 1
    assert "BOT_TOKEN" in forked.stderr and "not-a-token" not in forked.stderr


@pytest.mark.parametrize("spawn", LAUNCHERS)
@pytest.mark.parametrize(
    ("sig", "status"),
    [(signal.SIGTERM, 0), (signal.SIGINT, 0), (signal.SIGKILL, -signal.SIGKILL)],
    ids=["SIGTERM", "SIGINT", "SIGKILL"],
)
async def test_a_signal_ends_the_bot_with_the_status_a_spawned_bot_has(
    bot_base_env: dict[str, str], tmp_path: Path, spawn: bool, sig: int, status: int
) -> None:
    bot = await BotProcess(bot_base_env, tmp_path, spawn=spawn).start()
    await bot.wait_ready()
    bot.proc.send_signal(sig)
    assert await bot.wait_exit() == status
    assert "Traceback" not in bot.output


def test_a_usage_error_ends_as_in_a_fresh_process(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    """The interpreter ends the child (SystemExit from argparse), not the server's code."""
    result = run_bot_command(["import-data"], env=clean_env, cwd=tmp_path)
    spawned = run_bot_command(["import-data"], env=clean_env, cwd=tmp_path, spawn=True)
    assert (result.returncode, result.stderr) == (spawned.returncode, spawned.stderr)
    assert result.returncode == 2  # argparse: the file argument is missing


async def test_a_run_whose_test_went_away_is_killed(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    child = await fork_bot([], env=bot_base_env, cwd=tmp_path)
    assert child.stderr is not None
    await child.stderr.readline()  # it runs
    ours = os.pidfd_open(child.pid)  # readable once the process has ended
    ended = asyncio.Event()
    asyncio.get_running_loop().add_reader(ours, ended.set)
    try:
        child._status.cancel()  # the test process "dies": its connection closes
        child._sock.close()
        child.close()
        await asyncio.wait_for(ended.wait(), 60)
    finally:
        asyncio.get_running_loop().remove_reader(ours)
        os.close(ours)


def _children_of_the_server() -> list[int]:
    server = fork_server().proc.pid
    with open(f"/proc/{server}/task/{server}/children") as children:
        return [int(pid) for pid in children.read().split()]


def test_a_command_that_runs_past_its_limit_is_killed(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    """The limit (or the per-test timeout's signal) never leaves the command running."""
    port = free_port()  # nobody listens: the bot retries Telegram for as long as it runs
    env = {
        **clean_env,
        "BOT_TOKEN": "123456:limit-test-token",
        "OPENAI_API_KEY": "sk-test",
        "TELEGRAM_API_URL": f"http://127.0.0.1:{port}",
        "DATABASE_PATH": str(tmp_path / "bot.sqlite3"),
    }
    before = set(_children_of_the_server())  # an earlier test's child may still be ending
    with pytest.raises(subprocess.TimeoutExpired):
        run_bot_command([], env=env, cwd=tmp_path, timeout=1.0)
    deadline_polls = 1200  # 60 s of 50 ms polls: an outer limit only
    for _ in range(deadline_polls):
        if not set(_children_of_the_server()) - before:
            break
        time.sleep(0.05)  # the server's children are read, never pushed
    assert not set(_children_of_the_server()) - before


async def test_the_server_and_its_bots_outlive_the_thread_that_started_it(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    """A command run from a worker thread (`asyncio.to_thread(run_bot_command, …)`) may be
    the first start of a session, and so start the server; that thread ends with its
    test's event loop, at a moment the garbage collector picks. The server, and the bots a
    later test runs on it, must not end with the thread (they once did: a parent-death
    signal is tied to the thread that started a process, not to the process)."""
    stop_fork_server()
    threads_before = len(os.listdir("/proc/self/task"))
    starter = threading.Thread(target=fork_server)
    starter.start()
    starter.join()
    for _ in range(1200):  # until the OS thread has gone (60 s of 50 ms polls: a limit only)
        if len(os.listdir("/proc/self/task")) <= threads_before:
            break
        await asyncio.sleep(0.05)  # /proc is read, never pushed
    child = await fork_bot([], env=bot_base_env, cwd=tmp_path)
    try:
        assert child.stderr is not None
        assert await child.stderr.readline()  # it runs, on the server the thread started
        assert fork_server().proc.poll() is None
    finally:
        child.kill()
        await child.wait()
        child.close()


def _running(pid: int) -> bool:
    """Whether `pid` runs; reaps it once it has ended, if it became ours (pytest is the
    subreaper of its orphans, tests/conftest.py)."""
    running = alive(pid)
    if not running:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return running


def test_the_server_ends_with_the_process_that_started_it(clean_env: dict[str, str]) -> None:
    """Killed outright, a test process leaves no fork server behind."""
    starts_a_server = (
        "import os, sys\n"
        "from tests.e2e.launch import fork_server\n"
        "print(fork_server().proc.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", starts_a_server],
        cwd=REPO_ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    server = int(run.stdout.split()[0])
    for _ in range(1200):  # 60 s of 50 ms polls: an outer limit only
        if not _running(server):
            break
        time.sleep(0.05)  # /proc is read, never pushed
    assert not _running(server)
