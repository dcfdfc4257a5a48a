"""Storage faults of a real PostgreSQL: the bot waits for the server, it does not fail.

A lock held beyond `lock_timeout` and a server that stops (a restart, a failover) must be
storage faults (`storage_fault`), so that `StorageRetry` tries the write again and the
update is answered once the server is back — the same promise the SQLite backend makes
for a locked file or a full disk. The stopped server is a private one started for the
test (the session's server stays up for the other tests).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from storage.database import StorageRetry, open_database, storage_fault
from tests.pg import SKIP_PREFIX

pytestmark = pytest.mark.postgres

UPDATE_TEXT = "UPDATE shop_texts SET value = 'new' WHERE key = 'greeting'"


async def test_a_lock_held_beyond_lock_timeout_is_locked_and_retried(pg_url: str) -> None:
    db = await open_database(pg_url)
    holder: Any = await asyncpg.connect(pg_url)
    try:
        await db.write("INSERT INTO shop_texts(key, value) VALUES ('greeting', 'old')")
        await holder.execute("BEGIN")
        await holder.execute("SELECT 1 FROM shop_texts WHERE key = 'greeting' FOR UPDATE")
        attempts: list[str | None] = []

        async def write() -> int:
            if attempts:  # the first attempt failed: the other session lets go now
                await holder.execute("ROLLBACK")
            try:
                async with db.transaction() as tx:
                    await tx.execute("SET LOCAL lock_timeout = '50ms'")  # not the 5 s default
                    return await tx.execute(UPDATE_TEXT)
            except Exception as exc:
                attempts.append(storage_fault(exc))
                assert db.write_fault == "locked"  # what /healthz reports meanwhile
                raise

        changed = await StorageRetry(first_delay_s=0.01).run("updating a text", write)

        assert (changed, attempts) == (1, ["locked"])
        assert db.write_fault is None  # the success cleared it
    finally:
        await holder.close()
        await db.close()


class PrivateServer:
    """A PostgreSQL server of the test's own, which it may stop and start again."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self._server: Any = None

    def start(self) -> str:
        import pgserver

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            self._server = pgserver.get_server(self.data, cleanup_mode="stop")
        return str(self._server.get_uri("postgres"))

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


@pytest.fixture
def private_server() -> Iterator[tuple[PrivateServer, str]]:
    data = Path(tempfile.mkdtemp(prefix="pgstop-")) / "data"
    server = PrivateServer(data)
    try:
        url = server.start()
    except Exception as exc:  # ImportError included: the same reasons as tests/pg.py
        shutil.rmtree(data.parent, ignore_errors=True)
        pytest.skip(f"{SKIP_PREFIX}: a private server cannot start here ({type(exc).__name__})")
    try:
        yield server, url
    finally:
        server.stop()
        shutil.rmtree(data.parent, ignore_errors=True)


async def test_a_stopped_server_is_unavailable_until_it_is_back(
    private_server: tuple[PrivateServer, str],
) -> None:
    server, url = private_server
    db = await open_database(url, pool_size=2)
    try:
        await db.write("CREATE TABLE notes (id INTEGER)")
        server.stop()

        faults: list[str | None] = []

        async def write() -> int:
            try:
                return await db.write("INSERT INTO notes VALUES (1)")
            except Exception as exc:
                faults.append(storage_fault(exc))
                if len(faults) == 3:  # a few failed writes later the server is back
                    assert await db.write_probe() == "unavailable"
                    assert db.write_fault == "unavailable"
                    await asyncio.to_thread(server.start)
                raise

        changed = await StorageRetry(first_delay_s=0.01, max_delay_s=0.05).run("a note", write)

        assert changed == 1
        assert faults == ["unavailable"] * 3  # each failure a storage fault, none raised
        assert db.write_fault is None
        assert await db.write_probe() is None
        row = await db.fetch_one("SELECT count(*) FROM notes")
        assert row is not None and row[0] == 1  # written once
    finally:
        await db.close()
