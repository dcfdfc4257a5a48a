"""Numbered schema migrations tracked with `PRAGMA user_version`.

Each file `storage/migrations/NNNN_name.sql` moves the schema from version NNNN-1 to
NNNN. At start-up the missing ones run in order, each inside its own transaction
together with the version bump, so a failed migration leaves the previous version
intact. A database newer than this code is refused untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import aiosqlite

_NAME_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(Exception):
    """The schema cannot be brought to the version this code expects."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(backend: str = "sqlite") -> list[Migration]:
    """All migrations shipped for a backend, ordered and checked to be gap-free.

    SQLite's are `storage/migrations/NNNN_name.sql`; PostgreSQL's are twins with the same
    numbers and names in `storage/migrations/postgres/` (the DDL differs in types).
    """
    folder = resources.files("storage") / "migrations"
    if backend == "postgres":
        folder = folder / "postgres"
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME_RE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(f"migration numbering has a gap or duplicate at {migration}")
    return found


async def schema_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def check_supported_version(
    conn: aiosqlite.Connection, migrations: list[Migration] | None = None
) -> None:
    """Raise `MigrationError` if the database was written by a newer version of the bot."""
    known = load_migrations() if migrations is None else migrations
    latest = known[-1].version if known else 0
    current = await schema_version(conn)
    if current > latest:
        raise MigrationError(
            f"database schema version {current} is newer than this program supports "
            f"({latest}); upgrade the bot or use another DATABASE_PATH"
        )


async def apply_migrations(
    conn: aiosqlite.Connection, migrations: list[Migration] | None = None
) -> int:
    """Apply what is missing; return the resulting schema version."""
    known = load_migrations() if migrations is None else migrations
    await check_supported_version(conn, known)
    current = await schema_version(conn)
    for migration in known:
        if migration.version <= current:
            continue
        script = (
            "BEGIN IMMEDIATE;\n"
            f"{migration.sql}\n;\n"
            f"PRAGMA user_version = {migration.version:d};\n"
            "COMMIT;"
        )
        try:
            await conn.executescript(script)
        except Exception as exc:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} failed: {exc}"
            ) from exc
    return await schema_version(conn)
