"""One aiosqlite connection per process, configured for a durable single writer.

WAL lets readers proceed while the writer commits; `synchronous=NORMAL` is durable
across application crashes in WAL mode; the busy timeout covers a second process
(e.g. `import-data`) touching the file. Writes go through `transaction()`, which
serialises them on one asyncio lock so that statements of different coroutines never
end up inside each other's transaction on the shared connection.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from storage.migrations import apply_migrations, check_supported_version

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000


class Database:
    """The open database: a connection for reads and a serialised path for writes."""

    def __init__(self, connection: aiosqlite.Connection, path: Path) -> None:
        self._conn = connection
        self._path = path
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True) -> Database:
        """Open (creating the parent folder), set the pragmas and apply migrations."""
        db_path = Path(path)
        if str(db_path) != ":memory:":
            db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(db_path, isolation_level=None)
        try:
            conn.row_factory = aiosqlite.Row
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if migrate:
                # before any pragma that writes the file: a newer database stays untouched
                await check_supported_version(conn)
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            if migrate:
                await apply_migrations(conn)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, db_path)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def conn(self) -> aiosqlite.Connection:
        """The connection for reads (and for single autocommit statements)."""
        return self._conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """Run the block as one write transaction; commit on success, roll back on error.

        Cancellation (a tool timeout, the turn deadline, shutdown) can arrive while BEGIN
        or COMMIT is awaited. aiosqlite still runs a statement once it is queued, so a
        cancelled BEGIN has opened the transaction all the same: it is rolled back here,
        or every later write on the shared connection would fail with "cannot start a
        transaction within a transaction". A failed COMMIT is rolled back for the same
        reason; a cancelled COMMIT still commits in the connection's thread.
        """
        async with self._write_lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
            except BaseException:
                await self._rollback()
                raise
            try:
                await self._conn.execute("COMMIT")
            except asyncio.CancelledError:
                raise
            except BaseException:
                await self._rollback()
                raise

    async def write(self, sql: str, params: tuple[object, ...] = ()) -> int:
        """One write statement on its own; returns how many rows it changed.

        A single statement is atomic in autocommit mode, so it needs no BEGIN/COMMIT:
        one round trip to aiosqlite's thread instead of three (the inbox makes several
        such updates per turn; see docs/benchmarks.md). It still takes the write lock,
        so it never lands inside another coroutine's open transaction.
        """
        async with self._write_lock:
            cursor = await self._conn.execute(sql, params)
            return int(cursor.rowcount)

    async def _rollback(self) -> None:
        """Roll back whatever is open; if nothing is (BEGIN itself failed), that is fine."""
        try:
            await self._conn.execute("ROLLBACK")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                log.exception("rollback failed; the connection is still in a transaction")

    async def fetch_one(self, sql: str, params: tuple[object, ...] = ()) -> aiosqlite.Row | None:
        async with self._conn.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def fetch_all(self, sql: str, params: tuple[object, ...] = ()) -> list[aiosqlite.Row]:
        async with self._conn.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def ping(self) -> bool:
        """True when the database answers a trivial query (used by /healthz)."""
        try:
            row = await self.fetch_one("SELECT 1")
        except Exception:  # the health check reports, it does not raise
            log.warning("database ping failed", exc_info=True)
            return False
        return row is not None

    async def close(self) -> None:
        await self._conn.close()
