"""The polling leader lock on a real PostgreSQL: one holder, and a dead holder frees it.

Each way a leader can die is produced for real — a process killed with SIGKILL, its
session ended by the server, its backend frozen (SIGSTOP), a leader that goes silent —
and the test waits for the condition itself (a blocking `pg_advisory_lock` with a
`lock_timeout`), never for a fixed time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path

import asyncpg
import pytest

from storage.leader import LeaderLock, polling_lock_name
from tests.pg import PgCluster
from tests.waits import OUTER_LIMIT_S

pytestmark = pytest.mark.postgres  # the lock lives in PostgreSQL
REPO_ROOT = Path(__file__).resolve().parents[3]
_names = count(1)


@pytest.fixture
def leader_pg_url(pg_cluster: PgCluster) -> str:
    """The session's PostgreSQL server: the lock needs a server, not a schema."""
    return pg_cluster.admin_url


@pytest.fixture
def name() -> str:
    """A lock name of its own per test (the server is shared by the session)."""
    return polling_lock_name(900_000 + next(_names))


@pytest.fixture
async def admin(leader_pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(leader_pg_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def locks(leader_pg_url: str, name: str) -> AsyncIterator[list[LeaderLock]]:
    made: list[LeaderLock] = []
    yield made
    for lock in made:
        await lock.release()


def new_lock(locks: list[LeaderLock], url: str, name: str, **kwargs: float) -> LeaderLock:
    lock = LeaderLock(url, name, **kwargs)
    locks.append(lock)
    return lock


async def wait_until_free(
    admin: asyncpg.Connection, name: str, within_s: float = OUTER_LIMIT_S
) -> None:
    """Block until nobody holds `name`, then let go of it (LockNotAvailable after
    `within_s`)."""
    async with admin.transaction():
        await admin.execute(f"SET LOCAL lock_timeout = '{int(within_s * 1000)}ms'")
        await admin.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", name)


async def backend_pids(admin: asyncpg.Connection) -> list[int]:
    rows = await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'shop-support-bot leader'"
    )
    return [row["pid"] for row in rows]


async def holder_pid(admin: asyncpg.Connection, name: str) -> int:
    pid = await admin.fetchval(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)",
        name,
    )
    assert pid is not None, "nobody holds the lock"
    return int(pid)


async def test_one_of_two_wins_and_a_release_hands_it_over(
    leader_pg_url: str, name: str, locks: list[LeaderLock]
) -> None:
    first = new_lock(locks, leader_pg_url, name)
    second = new_lock(locks, leader_pg_url, name)
    assert await first.try_acquire() is True
    assert await second.try_acquire() is False
    assert await first.ping(2.0) is True and first.held
    assert await second.ping(2.0) is False  # a standby holds nothing
    assert await second.try_acquire() is False  # asking again changes nothing

    await first.release()
    assert not first.held
    assert await second.try_acquire() is True
    assert await first.try_acquire() is False


async def test_two_bots_sharing_a_database_each_have_a_leader(
    leader_pg_url: str, locks: list[LeaderLock]
) -> None:
    shop_a = new_lock(locks, leader_pg_url, polling_lock_name(1))
    shop_b = new_lock(locks, leader_pg_url, polling_lock_name(2))
    assert await shop_a.try_acquire() and await shop_b.try_acquire()


async def test_a_leader_killed_with_sigkill_frees_the_lock_at_once(
    leader_pg_url: str, name: str, locks: list[LeaderLock], admin: asyncpg.Connection
) -> None:
    script = (
        "import asyncio, sys\n"
        "from storage.leader import LeaderLock\n"
        "async def main():\n"
        "    lock = LeaderLock(sys.argv[1], sys.argv[2])\n"
        "    print('held' if await lock.try_acquire() else 'not held', flush=True)\n"
        "    await asyncio.Event().wait()\n"
        "asyncio.run(main())\n"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        leader_pg_url,
        name,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), OUTER_LIMIT_S)
        assert line.strip() == b"held"
        standby = new_lock(locks, leader_pg_url, name)
        assert await standby.try_acquire() is False
        child.send_signal(signal.SIGKILL)
        await child.wait()
        # within less than the session timeouts: freed as the socket closed
        await wait_until_free(admin, name)
        assert await standby.try_acquire() is True
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


async def test_a_session_ended_by_the_server_fails_the_ping_and_frees_the_lock(
    leader_pg_url: str, name: str, locks: list[LeaderLock], admin: asyncpg.Connection
) -> None:
    leader = new_lock(locks, leader_pg_url, name)
    standby = new_lock(locks, leader_pg_url, name)
    assert await leader.try_acquire()
    pid = await holder_pid(admin, name)
    assert await admin.fetchval("SELECT pg_terminate_backend($1, 5000)", pid)

    assert await leader.ping(2.0) is False
    assert not leader.held
    assert await standby.try_acquire() is True
    # the old leader reconnects afresh on its next try, and stays a standby
    assert await leader.try_acquire() is False


async def test_a_frozen_database_session_fails_the_ping_within_its_timeout(
    leader_pg_url: str, name: str, locks: list[LeaderLock], admin: asyncpg.Connection
) -> None:
    """The leader's backend stops answering (SIGSTOP): the ping gives up after its
    timeout and drops the connection; the lock is free once the backend runs again."""
    leader = new_lock(locks, leader_pg_url, name)
    assert await leader.try_acquire()
    pid = await holder_pid(admin, name)
    os.kill(pid, signal.SIGSTOP)
    try:
        # without its own timeout the ping would wait for the stopped backend forever
        assert await asyncio.wait_for(leader.ping(0.5), OUTER_LIMIT_S) is False
    finally:
        os.kill(pid, signal.SIGCONT)
    assert not leader.held
    await wait_until_free(admin, name)
    assert await new_lock(locks, leader_pg_url, name).try_acquire() is True


async def test_the_server_ends_the_session_of_a_leader_that_went_silent(
    leader_pg_url: str, name: str, locks: list[LeaderLock], admin: asyncpg.Connection
) -> None:
    """A leader that stops pinging (a paused VM, a stuck event loop) loses the lock after
    `idle_session_timeout` even though its socket stays open."""
    silent = new_lock(locks, leader_pg_url, name, idle_session_timeout_s=0.5)
    assert await silent.try_acquire()
    assert await new_lock(locks, leader_pg_url, name).try_acquire() is False
    await wait_until_free(admin, name)  # the silent one did nothing
    assert await new_lock(locks, leader_pg_url, name).try_acquire() is True
    assert await silent.ping(2.0) is False


async def test_an_unreachable_database_raises_and_the_next_try_connects_afresh(
    tmp_path: Path, leader_pg_url: str, name: str, locks: list[LeaderLock]
) -> None:
    nowhere = f"postgresql://postgres:@/postgres?host={tmp_path}"  # no server socket here
    lock = new_lock(locks, nowhere, name, connect_timeout_s=2.0)
    with pytest.raises(OSError):
        await lock.try_acquire()
    assert not lock.held
    assert await lock.ping(1.0) is False
    # the same object works once the database is there (the URL is fixed here)
    lock._url = leader_pg_url  # the database "comes back"
    assert await lock.try_acquire() is True
