"""PostgreSQL migrations: twins of SQLite's, the same schema, applied once, newer refused.

The SQL files of the two backends are written by hand (the types differ), so these tests
hold them together: every number has its twin with the same name, and the migrated
schemas have the same tables, columns, nullability and indexes, with each SQLite type
mapped to the PostgreSQL type that keeps its range (INTEGER → bigint, REAL → double
precision: PostgreSQL's `real` has 4 bytes, a unix time in it is off by minutes).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from storage import migrations as sqlite_migrations
from storage.database import open_database
from storage.migrations import Migration, MigrationError, load_migrations
from storage.postgres import MIGRATION_LOCK_KEY, PgDatabase, apply_migrations
from tests.pg import WAITING_ON_ADVISORY_LOCK, until_server_shows

PG_ONLY_TABLES = {"schema_version", "instances", "chat_claims"}
PG_ONLY_INDEXES = {
    ("chat_claims", "chat_claims_owner"),
    ("knowledge_passages", "knowledge_passages_lexemes"),  # its full-text index (GIN)
}
# the lexical index: SQLite's FTS5 table (and its shadow tables), PostgreSQL's tsvector
SQLITE_ONLY_TABLE_PREFIX = "knowledge_fts"
PG_ONLY_COLUMNS = {("knowledge_passages", "lexemes")}
PG_TYPE_OF = {"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text", "BLOB": "bytea"}

Columns = dict[str, dict[str, tuple[str, bool]]]  # table -> column -> (type, not null)
Indexes = set[tuple[str, str, bool, tuple[str, ...], bool]]  # table, name, unique, cols, partial


def test_every_migration_has_its_postgres_twin() -> None:
    sqlite = [(m.version, m.name) for m in load_migrations("sqlite")]
    postgres = [(m.version, m.name) for m in load_migrations("postgres")]
    assert sqlite == postgres
    assert sqlite[-1] == (27, "business_draft_cards")


def test_no_postgres_migration_uses_a_4_byte_real_or_sqlite_syntax() -> None:
    for migration in load_migrations("postgres"):
        code = "\n".join(line.split("--")[0] for line in migration.sql.splitlines()).upper()
        for sqlite_only in (" REAL", "INTEGER PRIMARY KEY", "IS NOT '", "CAST(", "AUTOINCREMENT"):
            assert sqlite_only not in code, (migration.name, sqlite_only)


async def sqlite_schema(path: Path) -> tuple[Columns, Indexes]:
    db = await open_database(path)
    try:
        tables = [
            r[0]
            for r in await db.fetch_all(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
            if not str(r[0]).startswith(SQLITE_ONLY_TABLE_PREFIX)
        ]
        columns: Columns = {}
        indexes: Indexes = set()
        for table in tables:
            columns[table] = {
                r["name"]: (PG_TYPE_OF[r["type"]], bool(r["notnull"] or r["pk"]))
                for r in await db.fetch_all(f"PRAGMA table_info({table})")
            }
            for index in await db.fetch_all(f"PRAGMA index_list({table})"):
                if index["origin"] != "c":  # made by a PRIMARY KEY / UNIQUE clause
                    continue
                cols = [
                    r["name"] for r in await db.fetch_all(f"PRAGMA index_info({index['name']})")
                ]
                indexes.add(
                    (
                        table,
                        index["name"],
                        bool(index["unique"]),
                        tuple(cols),
                        bool(index["partial"]),
                    )
                )
        return columns, indexes
    finally:
        await db.close()


async def postgres_schema(url: str) -> tuple[Columns, Indexes]:
    conn = await asyncpg.connect(url)
    try:
        columns: Columns = {}
        for r in await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
        ):
            if (r["table_name"], r["column_name"]) in PG_ONLY_COLUMNS:
                continue
            columns.setdefault(r["table_name"], {})[r["column_name"]] = (
                r["data_type"],
                r["is_nullable"] == "NO",
            )
        rows = await conn.fetch(
            """
            SELECT t.relname AS table_name, i.relname AS index_name, x.indisunique AS is_unique,
                   x.indpred IS NOT NULL AS partial,
                   array(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY k(attnum, n)
                         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                         ORDER BY k.n) AS cols
            FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid
            JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_namespace s ON s.oid = t.relnamespace
            WHERE s.nspname = current_schema() AND NOT x.indisprimary
            """
        )
        indexes: Indexes = {
            (r["table_name"], r["index_name"], r["is_unique"], tuple(r["cols"]), r["partial"])
            for r in rows
        }
        return columns, indexes
    finally:
        await conn.close()


@pytest.mark.postgres
async def test_both_backends_build_the_same_schema(tmp_path: Path, pg_url: str) -> None:
    lite_columns, lite_indexes = await sqlite_schema(tmp_path / "bot.sqlite3")
    pg_columns, pg_indexes = await postgres_schema(pg_url)
    assert set(pg_columns) - set(lite_columns) == PG_ONLY_TABLES
    for table, columns in lite_columns.items():
        assert pg_columns[table] == columns, table
    assert {i for i in pg_indexes if (i[0], i[1]) not in PG_ONLY_INDEXES} == lite_indexes
    assert {(i[0], i[1]) for i in pg_indexes} >= PG_ONLY_INDEXES


@pytest.mark.postgres
async def test_a_second_open_applies_nothing(
    pg_empty_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="storage.postgres")
    db = await PgDatabase.open(pg_empty_url)
    await db.write("INSERT INTO shop_texts(key, value) VALUES ('k', 'kept')")
    await db.close()
    assert caplog.text.count("applied migration") == len(load_migrations("postgres"))
    caplog.clear()
    db = await PgDatabase.open(pg_empty_url)
    try:
        row = await db.fetch_one("SELECT value FROM shop_texts WHERE key = 'k'")
        assert row is not None and row[0] == "kept"
    finally:
        await db.close()
    assert "applied migration" not in caplog.text


@pytest.mark.postgres
async def test_a_newer_database_is_refused_untouched(pg_empty_url: str) -> None:
    conn = await asyncpg.connect(pg_empty_url)
    try:
        await conn.execute(
            "CREATE TABLE schema_version (id BOOLEAN PRIMARY KEY, version INTEGER NOT NULL);"
            " INSERT INTO schema_version VALUES (TRUE, 999); CREATE TABLE marker (x TEXT)"
        )
        with pytest.raises(MigrationError, match="newer") as refused:
            await PgDatabase.open(pg_empty_url)
        assert "DATABASE_URL" in str(refused.value)
        tables = {
            r[0]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        assert tables == {"schema_version", "marker"}
        assert await conn.fetchval("SELECT version FROM schema_version") == 999
    finally:
        await conn.close()


@pytest.mark.postgres
async def test_instances_starting_together_migrate_once(
    pg_empty_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two opens wait for the migration lock; the first migrates, the second finds it done."""
    caplog.set_level(logging.INFO, logger="storage.postgres")
    holder = await asyncpg.connect(pg_empty_url)
    try:
        await holder.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", MIGRATION_LOCK_KEY)
        opening = [asyncio.create_task(PgDatabase.open(pg_empty_url)) for _ in range(2)]
        await until_server_shows(holder, f"SELECT ({WAITING_ON_ADVISORY_LOCK}) = 2")
        assert await holder.fetchval("SELECT to_regclass('orders')") is None
        await holder.execute(
            "SELECT pg_advisory_unlock(hashtextextended($1, 0))", MIGRATION_LOCK_KEY
        )
        opened = await asyncio.gather(*opening)
    finally:
        await holder.close()
    for db in opened:
        await db.close()
    for migration in load_migrations("postgres"):
        assert caplog.text.count(f"applied migration {migration.version:04d}_") == 1


@pytest.mark.postgres
async def test_a_failed_migration_keeps_the_previous_version(pg_empty_url: str) -> None:
    good = load_migrations("postgres")[0]
    broken = Migration(2, "broken", "CREATE TABLE half_done (x TEXT); SELECT no_such_column;")
    conn = await asyncpg.connect(pg_empty_url)
    try:
        with pytest.raises(MigrationError, match="0002_broken failed"):
            await apply_migrations(conn, [good, broken])
        assert await conn.fetchval("SELECT version FROM schema_version") == 1
        assert await conn.fetchval("SELECT to_regclass('half_done')") is None
        assert await conn.fetchval("SELECT to_regclass('orders')") is not None
    finally:
        await conn.close()


# Turns before 0009, as (started_at, model_steps, tool_calls, prompt, completion, cached):
# two days, one turn at 2.6 days (PostgreSQL's CAST would round it into day 3), unknown usage.
DAY = 86400.0
OLD_TURNS = [
    (0.5 * DAY, 2, 1, 100, 20, None),
    (0.9 * DAY, 5, 0, None, 30, None),
    (2.6 * DAY, 1, 3, 10, 5, None),
    (2.99 * DAY, 3, 2, 7, None, None),
]
BACKFILLED_DAYS = [
    # day, turns, model_steps, max_model_steps, tool_calls, prompt, completion, cached, unknown
    (0.0, 2, 7, 5, 1, 100, 20, 0, 1),
    (2 * DAY, 2, 4, 3, 5, 10, 5, 0, 1),
]
INSERT_OLD_TURN = (
    "INSERT INTO turns(id, session_id, chat_id, user_id, started_at, duration_ms, status,"
    " model_steps, tool_calls, prompt_tokens, completion_tokens, total_tokens, prompt)"
    " VALUES (?, 1, 1, 1, ?, 1.0, 'answered', ?, ?, ?, ?, NULL, 'p@1')"
)
SELECT_DAYS = (
    "SELECT day, turns, model_steps, max_model_steps, tool_calls, prompt_tokens,"
    " completion_tokens, cached_tokens, usage_unknown FROM turn_totals_daily ORDER BY day"
)


async def test_0009_backfills_the_daily_totals_on_sqlite(tmp_path: Path) -> None:
    migrations = load_migrations("sqlite")
    async with aiosqlite.connect(tmp_path / "old.sqlite3", isolation_level=None) as conn:
        await sqlite_migrations.apply_migrations(conn, migrations[:8])
        await conn.execute("INSERT INTO sessions(id, chat_id, opened_at) VALUES (1, 1, 0)")
        for i, (started, steps, tools, prompt, completion, _) in enumerate(OLD_TURNS):
            await conn.execute(
                INSERT_OLD_TURN, (f"t{i}", started, steps, tools, prompt, completion)
            )
        await sqlite_migrations.apply_migrations(conn, migrations)
        async with conn.execute(SELECT_DAYS) as cursor:
            assert [tuple(r) for r in await cursor.fetchall()] == BACKFILLED_DAYS


@pytest.mark.postgres
async def test_0009_backfills_the_daily_totals_on_postgres(pg_empty_url: str) -> None:
    migrations = load_migrations("postgres")
    conn = await asyncpg.connect(pg_empty_url)
    try:
        await apply_migrations(conn, migrations[:8])
        await conn.execute("INSERT INTO sessions(id, chat_id, opened_at) VALUES (1, 1, 0)")
        for i, (started, steps, tools, prompt, completion, _) in enumerate(OLD_TURNS):
            await conn.execute(
                INSERT_OLD_TURN.replace("?", "${}").format(*range(1, 7)),
                f"t{i}",
                started,
                steps,
                tools,
                prompt,
                completion,
            )
        await apply_migrations(conn, migrations)
        assert [tuple(r) for r in await conn.fetch(SELECT_DAYS)] == BACKFILLED_DAYS
    finally:
        await conn.close()
