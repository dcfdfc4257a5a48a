"""The PostgreSQL adapter against a real server: what the repositories rely on from it."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
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

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@pytest.fixture
async def pg_db(pg_url: str) -> AsyncIterator[PgDatabase]:
    database = await PgDatabase.open(pg_url)
    try:
        yield database
    finally:
        await database.close()


async def add_update(db: PgDatabase, update_id: int, payload: object = None) -> None:
    await db.write(
        "INSERT INTO updates(update_id, chat_id, user_id, received_at, payload)"
        " VALUES (?, ?, ?, ?, ?)",
        (update_id, 7, 8, 1.0, json.dumps(payload or {"update_id": update_id})),
    )


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


async def test_ids_at_the_64_bit_bounds_round_trip(pg_db: PgDatabase) -> None:
    for update_id in (INT64_MAX, INT64_MIN, -INT64_MAX):
        await add_update(pg_db, update_id)
    rows = await pg_db.fetch_all("SELECT update_id FROM updates ORDER BY update_id")
    assert [r[0] for r in rows] == [INT64_MIN, -INT64_MAX, INT64_MAX]
    row = await pg_db.fetch_one("SELECT update_id FROM updates WHERE update_id = ?", (INT64_MAX,))
    assert row is not None and row["update_id"] == INT64_MAX
    # one beyond: refused before it reaches the server, as a data error the inbox can catch
    with pytest.raises(asyncpg.DataError):
        await add_update(pg_db, INT64_MAX + 1)


async def test_row_counts_of_inserts_updates_and_deletes(pg_db: PgDatabase) -> None:
    insert = "INSERT INTO shop_texts(key, value) VALUES (?, ?)"
    assert await pg_db.write(insert + " ON CONFLICT DO NOTHING", ("a", "1")) == 1
    assert await pg_db.write(insert + " ON CONFLICT DO NOTHING", ("a", "2")) == 0
    upsert = insert + " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    assert await pg_db.write(upsert, ("a", "3")) == 1
    async with pg_db.transaction() as tx:
        assert (
            await tx.execute(upsert + " WHERE shop_texts.value <> excluded.value", ("a", "3")) == 0
        )
        assert await tx.execute(insert, ("b", "1")) == 1
        assert await tx.execute(insert, ("c", "1")) == 1
        assert await tx.execute("UPDATE shop_texts SET value = ?", ("9",)) == 3
        assert await tx.execute("DELETE FROM shop_texts WHERE key IN (?, ?)", ("b", "zz")) == 1
    assert await pg_db.write("UPDATE shop_texts SET value = 'x' WHERE key = 'none'") == 0
    assert await pg_db.write("DELETE FROM shop_texts") == 2


async def test_insert_returning_gives_the_identity(pg_db: PgDatabase) -> None:
    async with pg_db.transaction() as tx:
        first = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id", (INT64_MIN, 1.5)
        )
        second = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id", (2, 2.5)
        )
    assert first is not None and second is not None and second["id"] > first["id"]
    row = await pg_db.fetch_one("SELECT chat_id, opened_at FROM sessions WHERE id = ?", (first[0],))
    assert row is not None and tuple(row) == (INT64_MIN, 1.5)


async def test_json_fragments_edit_the_stored_text(pg_db: PgDatabase) -> None:
    payload = {
        "update_id": 1,
        "message": {"text": "hi", "contact": {"phone_number": "+100"}, "chat": {"id": 7}},
    }
    await add_update(pg_db, 1, payload)
    dialect = pg_db.dialect
    changed = await pg_db.write(
        f"UPDATE updates SET payload = {dialect.json_drop_contact('payload')} WHERE update_id = ?",
        (1,),
    )
    assert changed == 1
    for message_id in (5, INT64_MAX):
        await pg_db.write(
            f"UPDATE updates SET message_ids = {dialect.json_append_id('message_ids')}"
            " WHERE update_id = ?",
            (message_id, 1),
        )
    row = await pg_db.fetch_one("SELECT payload, message_ids FROM updates WHERE update_id = 1")
    assert row is not None
    assert json.loads(row["payload"]) == {
        "update_id": 1,
        "message": {"text": "hi", "chat": {"id": 7}},
    }
    assert json.loads(row["message_ids"]) == [5, INT64_MAX]


async def test_scalar_fragments(pg_db: PgDatabase) -> None:
    d = pg_db.dialect
    row = await pg_db.fetch_one(
        f"SELECT {d.greatest}({d.float_param}, {d.float_param}),"
        f" {d.least}({d.float_param}, {d.float_param}),"
        f" NULL {d.is_distinct} 'completed', 'completed' {d.is_distinct} 'completed'",
        (1.5, 2, 1.5, 2),
    )
    assert row is not None and tuple(row) == (2.0, 1.5, True, False)
    for key in ("b", "B", "a", "_"):
        await pg_db.write("INSERT INTO shop_texts(key, value) VALUES (?, '')", (key,))
    rows = await pg_db.fetch_all(f"SELECT key FROM shop_texts ORDER BY key{d.collate_binary}")
    assert [r[0] for r in rows] == ["B", "_", "a", "b"]  # byte order, whatever the collation
    assert d.indexed_by("turns_started_at") == ""


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


async def test_a_failing_block_rolls_back(pg_db: PgDatabase) -> None:
    with pytest.raises(RuntimeError):
        async with pg_db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('x', 'y')")
            raise RuntimeError("boom")
    with pytest.raises(asyncpg.UniqueViolationError):
        async with pg_db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('z', 'y')")
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('z', 'y')")
    assert await pg_db.fetch_all("SELECT key FROM shop_texts") == []
    assert await pg_db.write("INSERT INTO shop_texts(key, value) VALUES ('x', 'y')") == 1


async def test_cancelled_between_statements_rolls_back(pg_db: PgDatabase) -> None:
    inserted = asyncio.Event()

    async def block() -> None:
        async with pg_db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('c', '')")
            inserted.set()
            await asyncio.Event().wait()  # e.g. a tool's timeout cancels the turn here

    task = asyncio.create_task(block())
    await inserted.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pg_db.fetch_one("SELECT 1 FROM shop_texts WHERE key = 'c'") is None
    async with pg_db.transaction() as tx:
        assert await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('c', '')") == 1


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
        assert await db.write_probe() is not None
    finally:
        await db.close()


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
