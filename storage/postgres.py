"""The PostgreSQL backend (DATABASE_URL): an asyncpg pool behind the `Database` protocol.

Several instances of the bot share one PostgreSQL database, so nothing here relies on
being the only writer: a transaction runs on a pooled connection (READ COMMITTED) and a
repository that must not interleave with another instance takes `Tx.lock(key)`.

The repositories write SQL once for both backends, with SQLite's `?` and `?N`
parameters; `postgres_sql` turns them into PostgreSQL's `$n` (once per SQL text).
PostgreSQL's TEXT cannot hold NUL, which SQLite stores: a NUL in a string parameter is
stored as U+FFFD (the replacement character) — the only place the backends' data differ.

The schema version is the one row of `schema_version` (SQLite: `PRAGMA user_version`).
Migrations run on a dedicated connection under a session advisory lock, so instances
that start together migrate once; a database newer than this code is refused untouched.

This is the only module that imports asyncpg (import-linter). Passwords in a
DATABASE_URL never reach a message or a log line: `redact_url` is what is shown.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import asyncpg

from storage.backend import POSTGRES, Dialect, Row, Statement
from storage.database import DatabaseOpenError, corruption, storage_fault
from storage.migrations import Migration, MigrationError, load_migrations

log = logging.getLogger(__name__)

URL_SCHEMES = ("postgresql", "postgres")

# Every pooled session: a lock wait or a statement that hangs becomes an error (a storage
# fault the callers retry) instead of a chat stalled forever; a transaction left open by
# a stuck client is ended by the server. Same order of magnitude as SQLite's busy timeout.
SERVER_SETTINGS = {
    "lock_timeout": "5s",
    "statement_timeout": "60s",
    "idle_in_transaction_session_timeout": "60s",
    "application_name": "shop-support-bot",
}
# The migrating session: a backfill may take minutes on a big database, and waiting for
# another instance that is migrating is the point of its lock.
MIGRATION_SETTINGS = {
    "lock_timeout": "60s",
    "statement_timeout": "0",
    "application_name": "shop-support-bot migrations",
}
CONNECT_TIMEOUT_S = 10.0
# client-side bound on one command, past the server's statement_timeout: a connection
# that silently died must not hold a chat's worker forever
COMMAND_TIMEOUT_S = 75.0
# /healthz must answer even while the server does not
PROBE_TIMEOUT_S = 5.0
MIGRATION_LOCK_KEY = "shop-support-bot:migrations"

_SCHEMA_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),"
    " version INTEGER NOT NULL)"
)

# one token of SQL that may hold a `?` which is not a parameter, or a parameter itself
_SQL_TOKEN = re.compile(
    r"""'(?:[^']|'')*'  # a string literal
      | "(?:[^"]|"")*"  # a quoted identifier
      | --[^\n]*        # a line comment
      | /\*.*?\*/       # a block comment
      | \?(\d*)         # a parameter: ? or ?N
    """,
    re.VERBOSE | re.DOTALL,
)


@functools.lru_cache(maxsize=2048)
def postgres_sql(sql: str) -> str:
    """`sql` with SQLite's parameters as PostgreSQL's: `?N` → `$N`, `?` → `$k`.

    A bare `?` gets the number after the largest one used so far (SQLite's own rule), so
    `? ?` is `$1 $2` and `?2 ?` is `$2 $3`. String literals, quoted identifiers and
    comments are left alone; dollar-quoted strings and the jsonb `?` operators are not
    understood (the repositories use neither).
    """
    largest = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal largest
        token = match[0]
        if not token.startswith("?"):
            return token
        number = int(match[1]) if match[1] else largest + 1
        largest = max(largest, number)
        return f"${number}"

    return _SQL_TOKEN.sub(replace, sql)


def postgres_params(params: Iterable[object]) -> list[object]:
    """The parameters as asyncpg takes them: a NUL in a string becomes U+FFFD.

    PostgreSQL's TEXT refuses NUL ("invalid byte sequence", SQLSTATE 22021) and SQLite
    keeps it; message text, a model's answer or a name may carry one. Storing the update
    must not fail on it, and U+FFFD says "a character was here" like a decoding error.
    """
    return [
        value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value
        for value in params
    ]


def rowcount(status: str) -> int:
    """Rows changed, from a command status ("UPDATE 3", "INSERT 0 1"); 0 for DDL."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def redact_url(url: str) -> str:
    """The URL without its password (in the user part or a `password=` query), for messages."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
        query = "&".join(
            "password=***" if piece.startswith("password=") else piece
            for piece in parts.query.split("&")
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return f"{url.split(':', 1)[0]}://(unparsable URL)"


def _secrets_of(url: str) -> list[str]:
    """Every spelling of the URL's password that a driver message could echo."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
        found += [v for k, v in parse_qsl(parts.query) if k == "password"]
    except ValueError:
        pass
    spellings = {s for raw in found if raw for s in (raw, unquote(raw), quote(unquote(raw)))}
    return sorted(spellings, key=len, reverse=True)


def _scrub(text: str, url: str) -> str:
    for secret in _secrets_of(url):
        text = text.replace(secret, "***")
    return text


def explain_open_error(exc: BaseException) -> str:
    """One line for what went wrong while connecting to / preparing the database."""
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return f"the database does not exist ({exc})"
    if isinstance(exc, asyncpg.InvalidAuthorizationSpecificationError):
        return f"the server refused the login ({exc})"
    if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
        return "cannot be written: the server is read-only (a standby?)"
    if isinstance(exc, TimeoutError):
        return "cannot connect: the server did not answer in time"
    if isinstance(exc, asyncpg.PostgresError):
        return f"cannot be used (PostgreSQL: {exc})"
    if isinstance(exc, OSError):
        return f"cannot connect: {exc.strerror or exc}"
    if isinstance(exc, (ValueError, asyncpg.InterfaceError)):
        return f"is not a usable PostgreSQL URL ({exc})"
    return f"cannot be used ({type(exc).__name__}: {exc})"


class PgTx:
    """The statements of one transaction, on the pooled connection it holds."""

    def __init__(self, conn: asyncpg.pool.PoolConnectionProxy[Any]) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        status = await self._conn.execute(postgres_sql(sql), *postgres_params(params))
        return rowcount(status)

    async def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        await self._conn.executemany(postgres_sql(sql), [postgres_params(r) for r in rows])

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        row: Row | None = await self._conn.fetchrow(postgres_sql(sql), *postgres_params(params))
        return row

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return list(await self._conn.fetch(postgres_sql(sql), *postgres_params(params)))

    async def lock(self, key: str) -> None:
        """A transaction-scoped advisory lock on the key's 64-bit hash (freed at the end)."""
        await self._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)


class PgDatabase:
    """An open PostgreSQL database: a pool of connections, no single-writer lock."""

    def __init__(self, pool: asyncpg.Pool[Any], url: str) -> None:
        self._pool = pool
        self._url = redact_url(url)
        # the fault of the last write that failed with one; a successful write clears it
        self._write_fault: str | None = None
        self._corruption: str | None = None

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True, pool_size: int = 10) -> PgDatabase:
        """Connect, apply the missing migrations and check that the database takes writes.

        Anything that makes the database unusable raises `DatabaseOpenError` (never with
        the password in its message); a schema problem raises `MigrationError`.
        """
        if url.split("://", 1)[0] not in URL_SCHEMES:
            raise DatabaseOpenError("is not a PostgreSQL URL (postgresql://user:password@host/db)")
        try:
            if migrate:
                await _migrate(url)
            pool = await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                timeout=CONNECT_TIMEOUT_S,
                command_timeout=COMMAND_TIMEOUT_S,
                server_settings=SERVER_SETTINGS,
            )
        except MigrationError as exc:
            raise MigrationError(_scrub(str(exc), url)) from None
        except Exception as exc:
            raise DatabaseOpenError(_scrub(explain_open_error(exc), url)) from None
        database = cls(pool, url)
        if migrate:
            try:
                await database._probe()
            except Exception as exc:
                await pool.close()
                raise DatabaseOpenError(_scrub(explain_open_error(exc), url)) from None
        return database

    @property
    def dialect(self) -> Dialect:
        return POSTGRES

    @property
    def url(self) -> str:
        """The URL without its password: what messages and logs may show."""
        return self._url

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PgTx]:
        """One transaction on a pooled connection; commit at the end, roll back on error.

        On cancellation asyncpg rolls back, or, if the connection is mid-statement, the
        pool closes it and the server rolls back: either way nothing of the block stays.
        """
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                yield PgTx(conn)
        except BaseException as exc:
            self._note_failure(exc)
            raise
        self._write_fault = None

    async def write(self, sql: str, params: Sequence[object] = ()) -> int:
        """One statement in its own (implicit) transaction; how many rows it changed."""
        try:
            status = await self._pool.execute(postgres_sql(sql), *postgres_params(params))
        except Exception as exc:
            self._note_failure(exc)
            raise
        self._write_fault = None
        return rowcount(status)

    async def write_all(
        self, statements: Sequence[Statement], *, lock: str | None = None
    ) -> list[int]:
        """The statements in one transaction (a pool holds many connections, so holding
        one for a few round trips keeps no other writer waiting)."""
        async with self.transaction() as tx:
            if lock is not None:
                await tx.lock(lock)
            return [await tx.execute(sql, params) for sql, params in statements]

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        try:
            row: Row | None = await self._pool.fetchrow(postgres_sql(sql), *postgres_params(params))
        except Exception as exc:
            self._corruption = self._corruption or corruption(exc)
            raise
        return row

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        try:
            return list(await self._pool.fetch(postgres_sql(sql), *postgres_params(params)))
        except Exception as exc:
            self._corruption = self._corruption or corruption(exc)
            raise

    def _note_failure(self, exc: BaseException) -> None:
        self._corruption = self._corruption or corruption(exc)
        kind = storage_fault(exc)
        if kind is not None:
            self._write_fault = kind

    @property
    def corruption(self) -> str | None:
        """Damage a statement reported (data or index corrupted), else None."""
        return self._corruption

    @property
    def write_fault(self) -> str | None:
        """The fault kind of the last write if it failed with one (None after a success)."""
        return self._write_fault

    def file_problem(self) -> str | None:
        """No file to lose under the process: the server owns the storage."""
        return None

    async def write_probe(self) -> str | None:
        """Can the database be written now? None if so, else the fault kind (for /healthz).

        Rewrites the schema version unchanged and rolls back: a read-only standby, a full
        disk or a lock held too long answer as the bot's own writes would.
        """
        try:
            await self._probe()
        except TimeoutError:
            return "unavailable"
        except Exception as exc:
            return storage_fault(exc) or "error"
        return None

    async def _probe(self) -> None:
        async with asyncio.timeout(PROBE_TIMEOUT_S), self._pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            try:
                await conn.execute("UPDATE schema_version SET version = version")
            finally:
                await tx.rollback()

    async def close(self) -> None:
        await self._pool.close()


async def _migrate(url: str) -> int:
    """Bring the schema up to date on a dedicated connection, holding the migration lock.

    The session advisory lock makes instances that start together take turns: the first
    migrates, the others then find nothing to do. It is freed with the connection, also
    when this process dies.
    """
    conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT_S, server_settings=MIGRATION_SETTINGS)
    try:
        await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", MIGRATION_LOCK_KEY)
        return await apply_migrations(conn, load_migrations("postgres"))
    finally:
        await conn.close()


async def schema_version(conn: asyncpg.Connection[Any]) -> int:
    """The version recorded in `schema_version`; 0 for a database without the table."""
    if await conn.fetchval("SELECT to_regclass('schema_version')") is None:
        return 0
    version = await conn.fetchval("SELECT version FROM schema_version")
    return int(version or 0)


async def apply_migrations(conn: asyncpg.Connection[Any], migrations: list[Migration]) -> int:
    """Apply the missing migrations in order, each with its version bump in one transaction.

    A database newer than `migrations` is refused before anything is written.
    """
    latest = migrations[-1].version if migrations else 0
    current = await schema_version(conn)
    if current > latest:
        raise MigrationError(
            f"database schema version {current} is newer than this program supports "
            f"({latest}); upgrade the bot or use another DATABASE_URL"
        )
    for migration in migrations:
        if migration.version <= current:
            continue
        try:
            async with conn.transaction():
                await conn.execute(_SCHEMA_VERSION_TABLE)
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_version (id, version) VALUES (TRUE, $1)"
                    " ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                    migration.version,
                )
        except asyncpg.PostgresError as exc:
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} failed: {exc}"
            ) from exc
        log.info("applied migration %04d_%s", migration.version, migration.name)
        current = migration.version
    return current
