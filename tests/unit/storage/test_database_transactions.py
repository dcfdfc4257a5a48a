"""A cancelled or failed write must not leave the shared connection inside a transaction.

Under load a tool's timeout (or the turn deadline) can cancel a write while its BEGIN
is queued; the statement still runs in aiosqlite's thread. Found by the benchmark
(docs/benchmarks.md): before the fix, every later write failed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from storage.database import Database, is_unique_violation


# aiosqlite queues BEGIN in its thread; PostgreSQL: tests/unit/storage/test_postgres.py
@pytest.mark.sqlite_only
async def test_write_cancelled_during_begin_leaves_no_open_transaction(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = db.conn.execute
    begin_queued = asyncio.Event()

    def spy(sql: str, *args: Any) -> Any:
        call = original(sql, *args)
        if sql.startswith("BEGIN"):
            begin_queued.set()
        return call

    monkeypatch.setattr(db.conn, "execute", spy)

    async def write() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (1, 0)")

    task = asyncio.create_task(write())
    await begin_queued.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.undo()

    async with db.transaction() as conn:
        await conn.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (2, 0)")
    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] == [2]
    assert not db.conn.in_transaction


async def test_write_cancelled_inside_the_block_is_rolled_back(db: Database) -> None:
    inside = asyncio.Event()
    never = asyncio.Event()

    async def write() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (1, 0)")
            inside.set()
            await never.wait()

    task = asyncio.create_task(write())
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async with db.transaction() as conn:
        await conn.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (3, 0)")
    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] == [3]


async def test_single_statement_write_never_joins_an_open_transaction(db: Database) -> None:
    inside = asyncio.Event()
    release = asyncio.Event()

    async def rolled_back() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (1, 0)")
            inside.set()
            await release.wait()
            raise RuntimeError("roll this transaction back")

    holder = asyncio.create_task(rolled_back())
    await inside.wait()
    writer = asyncio.create_task(
        db.write("INSERT INTO sessions (chat_id, opened_at) VALUES (?, ?)", (2, 0))
    )
    release.set()
    with pytest.raises(RuntimeError):
        await holder
    assert await writer == 1

    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] == [2]  # the write survived the other's rollback
    assert await db.write("UPDATE sessions SET closed_at = 1 WHERE chat_id = 99") == 0


SESSION = "INSERT INTO sessions (chat_id, opened_at) VALUES (?, ?)"


async def test_write_all_is_all_or_nothing(db: Database) -> None:
    await db.write(SESSION, (1, 0))
    with pytest.raises(Exception) as failed:
        # the second statement breaks the primary key: the first must not stay either
        await db.write_all(
            [
                (SESSION, (2, 0)),
                (
                    "INSERT INTO sessions (id, chat_id, opened_at) "
                    "SELECT id, 3, 0 FROM sessions WHERE chat_id = 1",
                    (),
                ),
            ]
        )
    assert is_unique_violation(failed.value)

    await db.write_all([(SESSION, (4, 0)), (SESSION, (5, 0))])
    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] == [1, 4, 5]


@pytest.mark.parametrize("yields", range(6))
async def test_write_all_cancelled_at_any_moment_stores_all_or_nothing(
    db: Database, yields: int
) -> None:
    task = asyncio.create_task(db.write_all([(SESSION, (1, 0)), (SESSION, (2, 0))]))
    for _ in range(yields):
        await asyncio.sleep(0)  # lets the write get further before it is cancelled
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    await db.write(SESSION, (3, 0))  # the next write is not inside a leftover transaction
    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] in ([3], [1, 2, 3])


async def test_writes_waiting_for_a_transaction_survive_its_rollback(db: Database) -> None:
    inside = asyncio.Event()
    release = asyncio.Event()

    async def rolled_back() -> None:
        async with db.transaction() as tx:
            await tx.execute(SESSION, (1, 0))
            inside.set()
            await release.wait()
            raise RuntimeError("roll this transaction back")

    holder = asyncio.create_task(rolled_back())
    await inside.wait()
    writers = [
        asyncio.create_task(db.write_all([(SESSION, (2, 0)), (SESSION, (3, 0))])),
        asyncio.create_task(db.write(SESSION, (4, 0))),
        asyncio.create_task(db.write_all([(SESSION, (5, 0))])),
    ]
    release.set()
    with pytest.raises(RuntimeError):
        await holder
    assert await asyncio.gather(*writers) == [[1, 1], 1, [1]]

    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY chat_id")
    assert [r["chat_id"] for r in rows] == [2, 3, 4, 5]
