"""The PostgreSQL adapter against a real server: what only PostgreSQL has (its settings, NUL,
advisory locks, cancellation mid-statement, read-only servers, passwords in URLs).

What both backends share is tested on both: test_backend_contract.py."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import asyncpg
import pytest

from storage.backend import POSTGRES
from storage.database import DatabaseOpenError
from storage.migrations import load_migrations
from storage.postgres import PgDatabase
from tests.e2e.harness import free_port
from tests.pg import WAITING_ON_ADVISORY_LOCK, until_server_shows

pytestmark = pytest.mark.postgres


async def test_open_migrates_an_empty_database(pg_empty_url: str) -> None:
    db = await PgDatabase.open(pg_empty_url)
    try:
        row = await db.fetch_one("SELECT version FROM schema_version")
        assert row is not None and row["version"] == load_migrations("postgres")[-1].version
        tables = {r[0] for r in await db.fetch_all("SELECT tablename FROM pg_tables")}
        assert {"orders", "sessions", "messages", "turns", "updates", "chat_claims"} <= tables
        assert db.dialect is POSTGRES
        assert db.file_problem() is None
        assert await db.write_probe() is None
    finally:
        await db.close()


async def test_sessions_get_the_server_settings(pg_db: PgDatabase) -> None:
    row = await pg_db.fetch_one(
        "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'),"
        " current_setting('idle_in_transaction_session_timeout')"
    )
    assert row is not None and tuple(row) == ("5s", "1min", "1min")


async def test_a_nul_in_text_is_stored_as_the_replacement_character(pg_db: PgDatabase) -> None:
    await pg_db.write("INSERT INTO shop_texts(key, value) VALUES (?, ?)", ("w", "a\x00b"))
    async with pg_db.transaction() as tx:
        await tx.execute("INSERT INTO shop_texts(key, value) VALUES (?, ?)", ("t", "\x00"))
        await tx.executemany(
            "INSERT INTO shop_texts(key, value) VALUES (?, ?)", [("m\x00", "x\x00y")]
        )
    rows = await pg_db.fetch_all("SELECT key, value FROM shop_texts ORDER BY key")
    assert [tuple(r) for r in rows] == [
        ("m\ufffd", "x\ufffdy"),
        ("t", "\ufffd"),
        ("w", "a\ufffdb"),
    ]


async def test_lock_serialises_transactions_on_the_same_key(pg_db: PgDatabase, pg_url: str) -> None:
    events: list[str] = []
    first_locked = asyncio.Event()
    let_first_commit = asyncio.Event()

    async def first() -> None:
        async with pg_db.transaction() as tx:
            await tx.lock("lookups:42")
            first_locked.set()
            await let_first_commit.wait()
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('first', '')")
            events.append("first commits")

    async def second() -> None:
        async with pg_db.transaction() as tx:
            await tx.lock("lookups:42")
            events.append("second locked")
            row = await tx.fetch_one("SELECT count(*) FROM shop_texts WHERE key = 'first'")
            assert row is not None and row[0] == 1  # it sees what the first committed

    async def other_key() -> None:
        async with pg_db.transaction() as tx:
            await tx.lock("lookups:43")
            events.append("other key locked")

    first_task = asyncio.create_task(first())
    await first_locked.wait()
    second_task = asyncio.create_task(second())
    watcher = await asyncpg.connect(pg_url)
    try:
        await until_server_shows(watcher, f"SELECT ({WAITING_ON_ADVISORY_LOCK}) = 1")
        await other_key()  # another key is not held up by the first transaction
        assert events == ["other key locked"]
        let_first_commit.set()
        await asyncio.gather(first_task, second_task)
    finally:
        await watcher.close()
    assert events == ["other key locked", "first commits", "second locked"]


async def test_cancelled_during_a_statement_rolls_back(pg_db: PgDatabase, pg_url: str) -> None:
    async def block() -> None:
        async with pg_db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('s', '')")
            await tx.execute("SELECT pg_sleep(30)")

    task = asyncio.create_task(block())
    watcher = await asyncpg.connect(pg_url)
    try:
        await until_server_shows(
            watcher,
            "SELECT count(*) = 1 FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'"
            " AND state = 'active'",
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the server ends the statement and the transaction: no session is left in it
        await until_server_shows(
            watcher,
            "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = current_database()"
            " AND (query LIKE 'SELECT pg_sleep%' AND state = 'active'"
            "      OR state LIKE 'idle in transaction%')",
        )
    finally:
        await watcher.close()
    assert await pg_db.fetch_one("SELECT 1 FROM shop_texts WHERE key = 's'") is None
    for _ in range(3):  # every pooled connection is usable again
        async with pg_db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('s', '')")
            await tx.execute("DELETE FROM shop_texts WHERE key = 's'")


async def test_a_read_only_database_is_refused_at_open(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        name = await conn.fetchval("SELECT current_database()")
        await conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    finally:
        await conn.close()
    with pytest.raises(DatabaseOpenError, match="read-only"):
        await PgDatabase.open(pg_url)
    db = await PgDatabase.open(pg_url, migrate=False)
    try:
        assert await db.write_probe() == "read_only"
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await db.write("INSERT INTO shop_texts(key, value) VALUES ('k', 'v')")
        assert db.write_fault == "read_only"
    finally:
        await db.close()


async def test_a_lock_timeout_is_a_write_fault_until_a_write_succeeds(
    pg_db: PgDatabase, pg_url: str
) -> None:
    holder = await asyncpg.connect(pg_url)
    try:
        async with holder.transaction():
            await holder.execute("LOCK TABLE shop_texts IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(asyncpg.LockNotAvailableError):
                async with pg_db.transaction() as tx:
                    await tx.execute("SET LOCAL lock_timeout = '20ms'")
                    await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('k', 'v')")
            assert pg_db.write_fault == "locked"
    finally:
        await holder.close()
    assert await pg_db.write("INSERT INTO shop_texts(key, value) VALUES ('k', 'v')") == 1
    assert pg_db.write_fault is None


SECRET = "Sup3r-Secret_pw"


def with_password(url: str, database: str | None = None) -> str:
    """The session server's URL (for `database`) with SECRET as the password."""
    parts = urlsplit(url)
    path = f"/{database}" if database else parts.path
    return f"postgresql://postgres:{SECRET}@{path}?{parts.query}"


async def test_open_errors_never_show_the_password(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    port = free_port()
    urls = [
        with_password(pg_url, "no_such_database"),
        f"postgresql://bot:{SECRET}@127.0.0.1:{port}/shop",
        f"postgresql://bot@127.0.0.1:{port}/shop?password={SECRET}",
        f"postgresql://bot:{SECRET}@127.0.0.1:notaport/shop",
        f"postgresql://bot:{SECRET}@[::1/shop",
    ]
    messages = []
    for url in urls:
        with pytest.raises(DatabaseOpenError) as raised:
            await PgDatabase.open(url)
        messages.append(str(raised.value))
    assert "does not exist" in messages[0]
    assert "cannot connect" in messages[1] and "cannot connect" in messages[2]
    for message in messages:
        assert SECRET not in message
    assert SECRET not in caplog.text


async def test_the_url_it_shows_has_no_password(pg_url: str) -> None:
    db = await PgDatabase.open(with_password(pg_url))
    try:
        assert SECRET not in db.url and "***" in db.url
    finally:
        await db.close()


def test_a_url_of_another_kind_is_refused() -> None:
    with pytest.raises(DatabaseOpenError, match="not a PostgreSQL URL"):
        asyncio.run(PgDatabase.open(f"mysql://bot:{SECRET}@db/shop"))
