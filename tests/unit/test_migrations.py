"""Migrations: fresh database, idempotent re-run, refusal of a newer schema, pragmas."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from storage.database import Database, open_database
from storage.migrations import MigrationError, load_migrations


async def test_fresh_database_gets_every_migration(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "nested" / "bot.sqlite3")
    try:
        row = await db.fetch_one("PRAGMA user_version")
        assert row is not None and row[0] == len(load_migrations())
        tables = {r[0] for r in await db.fetch_all("SELECT name FROM sqlite_master")}
        assert {"orders", "sessions", "messages", "turns", "tool_calls", "llm_calls"} <= tables
    finally:
        await db.close()
    assert (tmp_path / "nested" / "bot.sqlite3").exists()


@pytest.mark.sqlite_only
async def test_pragmas(db: Database) -> None:
    assert (await db.fetch_one("PRAGMA journal_mode"))[0] == "wal"
    assert (await db.fetch_one("PRAGMA foreign_keys"))[0] == 1
    assert (await db.fetch_one("PRAGMA synchronous"))[0] == 1  # NORMAL
    assert (await db.fetch_one("PRAGMA busy_timeout"))[0] > 0


async def test_rerun_is_a_noop(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    db = await open_database(path)
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO shop_texts(key, value) VALUES ('k', 'kept')")
    await db.close()
    db = await open_database(path)
    try:
        row = await db.fetch_one("SELECT value FROM shop_texts WHERE key = 'k'")
        assert row is not None and row[0] == "kept"
        assert (await db.fetch_one("PRAGMA user_version"))[0] == len(load_migrations())
    finally:
        await db.close()


async def test_newer_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE marker (x)")
        conn.execute("PRAGMA user_version = 999")
    before = path.read_bytes()
    with pytest.raises(MigrationError, match="newer"):
        await open_database(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 999
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert names == {"marker"}
    assert path.read_bytes()[:100] == before[:100]


async def test_failed_transaction_rolls_back(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO shop_texts(key, value) VALUES ('x', 'y')")
            raise RuntimeError("boom")
    assert await db.fetch_one("SELECT 1 FROM shop_texts WHERE key = 'x'") is None
