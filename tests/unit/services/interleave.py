"""Two callers of a repository interleaved inside the database, deterministically.

`asyncio.gather` of two presses does not make them interleave inside PostgreSQL: each
coroutine's statements usually run back to back. Here the first caller's database is
wrapped (`Interleaved`) so that it stops right after its k-th statement; the second caller
then runs until it has finished or is waiting for a lock the first one holds (PostgreSQL:
`pg_stat_activity`; SQLite: its one writer), and only then does the first go on. Trying
k = 1, 2, … until the first caller no longer reaches a k-th statement puts the second
caller's whole run at every gap of the first's; a check-then-act done in two statements
(a read, then a write that does not re-check) is caught at the gap between them.

No sleeps and no timings: each wait is for a condition, bounded by the one outer limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg

from storage.backend import Dialect, Row, Statement, Tx
from storage.database import Database
from tests.waits import OUTER_LIMIT_S

T = TypeVar("T")
POLL_S = 0.01  # how often the server's lock table is read again while waiting on it


class Interleaved:
    """`Database` over `inner`, counting this caller's statements (a transaction's included).

    With `pause_after`, it stops right after that statement (`paused` is set) until `go`.
    `writing` counts the calls waiting to get into a write (`write`, `write_all`,
    `transaction`), so a caller blocked behind SQLite's one writer can be seen;
    `in_transaction` says whether this caller is inside a transaction's block.
    """

    def __init__(self, inner: Database, *, pause_after: int | None = None) -> None:
        self.inner = inner
        self.pause_after = pause_after
        self.statements = 0
        self.writing = 0
        self.in_transaction = False
        self.paused = asyncio.Event()
        self.go = asyncio.Event()

    async def _after_statement(self) -> None:
        self.statements += 1
        if self.statements == self.pause_after:
            self.paused.set()
            await asyncio.wait_for(self.go.wait(), OUTER_LIMIT_S)

    @property
    def dialect(self) -> Dialect:
        return self.inner.dialect

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        self.writing += 1
        entered = False
        try:
            async with self.inner.transaction() as tx:
                self.writing -= 1
                entered = True
                self.in_transaction = True
                try:
                    yield _InterleavedTx(tx, self)
                finally:
                    self.in_transaction = False
        finally:
            if not entered:
                self.writing -= 1

    async def write(self, sql: str, params: Sequence[object] = ()) -> int:
        self.writing += 1
        try:
            changed = await self.inner.write(sql, params)
        finally:
            self.writing -= 1
        await self._after_statement()
        return changed

    async def write_all(
        self, statements: Sequence[Statement], *, lock: str | None = None
    ) -> list[int]:
        """Atomic, so the whole of it counts as one statement."""
        self.writing += 1
        try:
            changed = await self.inner.write_all(statements, lock=lock)
        finally:
            self.writing -= 1
        await self._after_statement()
        return changed

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        row = await self.inner.fetch_one(sql, params)
        await self._after_statement()
        return row

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        rows = await self.inner.fetch_all(sql, params)
        await self._after_statement()
        return rows

    @property
    def write_fault(self) -> str | None:
        return self.inner.write_fault

    @property
    def corruption(self) -> str | None:
        return self.inner.corruption

    def file_problem(self) -> str | None:
        return self.inner.file_problem()

    async def write_probe(self) -> str | None:
        return await self.inner.write_probe()

    async def close(self) -> None:
        await self.inner.close()


class _InterleavedTx:
    def __init__(self, tx: Tx, owner: Interleaved) -> None:
        self._tx = tx
        self._owner = owner

    async def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        changed = await self._tx.execute(sql, params)
        await self._owner._after_statement()
        return changed

    async def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        await self._tx.executemany(sql, rows)
        await self._owner._after_statement()

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        row = await self._tx.fetch_one(sql, params)
        await self._owner._after_statement()
        return row

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        rows = await self._tx.fetch_all(sql, params)
        await self._owner._after_statement()
        return rows

    async def lock(self, key: str) -> None:
        await self._tx.lock(key)
        await self._owner._after_statement()


Blocked = Callable[[], Awaitable[bool]]


def behind_the_one_writer(first: Interleaved, second: Interleaved) -> Blocked:
    """SQLite (one process, one writer): the second caller waits to write while the first
    is inside a transaction — it cannot get further until the first one's block ends."""

    async def blocked() -> bool:
        return first.in_transaction and second.writing > 0

    return blocked


@asynccontextmanager
async def waiting_on_a_lock(url: str) -> AsyncIterator[Blocked]:
    """PostgreSQL: whether a session of this database waits for a lock (a row's, an
    advisory one). The first caller is stopped between statements, never waiting, so
    the waiting session is the second caller's."""
    conn: asyncpg.Connection[Any] = await asyncpg.connect(url)

    async def blocked() -> bool:
        return bool(
            await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname ="
                " current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock')"
            )
        )

    try:
        yield blocked
    finally:
        await conn.close()


async def race(
    first: Callable[[], Awaitable[T]],
    second: Callable[[], Awaitable[T]],
    first_db: Interleaved,
    second_blocked: Blocked,
) -> tuple[T, T] | None:
    """Run `first` until `first_db` pauses, then `second` until it is done or blocked, then
    let `first` go on; both results. None when `first` ended before its pause: it makes
    fewer statements than `first_db.pause_after`, every gap has been tried."""
    one = asyncio.ensure_future(first())
    stopped = asyncio.ensure_future(first_db.paused.wait())
    two: asyncio.Future[T] | None = None
    try:
        await asyncio.wait({one, stopped}, timeout=OUTER_LIMIT_S, return_when="FIRST_COMPLETED")
        if not stopped.done():
            if not one.done():
                raise AssertionError("the first caller neither paused nor finished")
            await one
            return None
        two = asyncio.ensure_future(second())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + OUTER_LIMIT_S
        while not two.done() and not await second_blocked():
            if loop.time() > deadline:
                raise AssertionError("the second caller neither finished nor waited on a lock")
            await asyncio.wait({two}, timeout=POLL_S)
        first_db.go.set()
        a, b = await asyncio.gather(one, two)
        return a, b
    finally:
        stopped.cancel()
        first_db.go.set()  # never leave the first caller stopped (a failed wait above)
        for task in (one, two):
            if task is not None and not task.done():
                task.cancel()
