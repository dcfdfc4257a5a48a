"""What a database error means, on either backend (storage/database.py).

`storage_fault` decides whether a failed write is retried (the store's fault) or raised
(a bug); `is_unique_violation` lets a repository tell "already stored" from a failure.
SQLite's errors come from a real file; PostgreSQL's from asyncpg's own exception classes
(which carry the server's SQLSTATE) and from real refused and silent connections. The
faults of a real server (stopped, a lock wait beyond lock_timeout) are in
test_storage_errors_postgres.py.
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import asyncpg.exceptions as pg
import pytest

from storage.database import (
    StorageDataError,
    is_data_error,
    is_database_error,
    is_unique_violation,
    open_database,
    storage_fault,
)
from storage.sqlite import SqliteDatabase


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (pg.LockNotAvailableError, "locked"),  # lock_timeout
        (pg.SerializationError, "locked"),
        (pg.DeadlockDetectedError, "locked"),
        (pg.DiskFullError, "full"),
        (pg.TooManyConnectionsError, "resources"),
        (pg.OutOfMemoryError, "resources"),
        (pg.InsufficientResourcesError, "resources"),
        (pg.PostgresIOError, "io_error"),
        (pg.ReadOnlySQLTransactionError, "read_only"),
        (pg.AdminShutdownError, "unavailable"),
        (pg.CrashShutdownError, "unavailable"),
        (pg.CannotConnectNowError, "unavailable"),
        (pg.ConnectionDoesNotExistError, "unavailable"),
        (pg.ConnectionFailureError, "unavailable"),
        # the statement's own fault: retrying repeats it
        (pg.UniqueViolationError, None),
        (pg.ForeignKeyViolationError, None),
        (pg.UndefinedColumnError, None),
        (pg.CharacterNotInRepertoireError, None),
        (pg.QueryCanceledError, None),
    ],
)
def test_postgresql_errors_by_sqlstate(error: type[Exception], kind: str | None) -> None:
    assert storage_fault(error("message")) == kind


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("connection is closed", "unavailable"),
        ("pool is closed", "unavailable"),
        ("pool is closing", "unavailable"),
        ("cannot perform operation: another operation is in progress", None),
    ],
)
def test_asyncpg_interface_errors(message: str, kind: str | None) -> None:
    assert storage_fault(pg.InterfaceError(message)) == kind


def test_a_connection_caught_reconnecting_is_unavailable() -> None:
    """What asyncpg's pool raised for the second write after the server stopped."""
    error = pg.InternalClientError(
        "cannot switch to state 15; another operation (2) is in progress"
    )
    assert storage_fault(error) == "unavailable"


def test_asyncpg_client_side_data_error_is_a_data_error() -> None:
    """asyncpg refuses a value before sending it (an int beyond 64 bits, a lone surrogate)
    with the server's class 22 DataError: one update's data, not the store's fault."""
    error = pg.DataError("invalid input for query argument $1")
    assert storage_fault(error) is None
    assert is_data_error(error)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_refused_connection_from_asyncpg_is_unavailable() -> None:
    port = _closed_port()
    with pytest.raises(OSError) as raised:
        await asyncpg.connect(host="127.0.0.1", port=port, user="u", database="d")
    assert storage_fault(raised.value) == "unavailable"


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A port that accepts connections and never says a word (a hung server)."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()


async def test_a_connect_timeout_from_asyncpg_is_unavailable(silent_server: int) -> None:
    with pytest.raises(TimeoutError) as raised:
        await asyncpg.connect(
            host="127.0.0.1", port=silent_server, user="u", database="d", timeout=0.2
        )
    assert storage_fault(raised.value) == "unavailable"


async def test_the_same_errors_from_elsewhere_are_not_the_databases() -> None:
    """Telegram or the model endpoint refusing a connection, or a tool timing out, must
    not be taken for a storage fault (it would be retried as one, for minutes)."""
    port = _closed_port()
    with pytest.raises(OSError) as refused:
        await asyncio.open_connection("127.0.0.1", port)
    assert storage_fault(refused.value) is None
    with pytest.raises(TimeoutError) as timed_out:
        await asyncio.wait_for(asyncio.Event().wait(), 0.01)
    assert storage_fault(timed_out.value) is None


async def _sqlite_error(tmp_path: Path, sql: str) -> sqlite3.Error:
    db = await SqliteDatabase.open(tmp_path / "bot.sqlite3")
    try:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO sessions (chat_id, opened_at) VALUES (1, 0)")
        with pytest.raises(sqlite3.Error) as raised:
            async with db.transaction() as tx:
                await tx.execute(sql)
        return raised.value
    finally:
        await db.close()


@pytest.mark.parametrize(
    ("sql", "unique"),
    [
        ("INSERT INTO sessions (chat_id, opened_at) VALUES (1, 0)", True),  # one open per chat
        ("INSERT INTO sessions (id, chat_id, opened_at) SELECT id, 2, 0 FROM sessions", True),
        ("INSERT INTO sessions (chat_id, opened_at) VALUES (3, NULL)", False),  # NOT NULL
    ],
)
async def test_unique_violations_on_sqlite(tmp_path: Path, sql: str, unique: bool) -> None:
    error = await _sqlite_error(tmp_path, sql)
    assert is_unique_violation(error) is unique
    assert storage_fault(error) is None
    assert is_database_error(error)


def test_unique_violations_on_postgresql() -> None:
    assert is_unique_violation(pg.UniqueViolationError("duplicate key"))
    assert not is_unique_violation(pg.ForeignKeyViolationError("no parent"))
    assert not is_unique_violation(pg.NotNullViolationError("null"))
    assert not is_unique_violation(ValueError("duplicate"))


def test_data_errors_are_postgresqls_classes_22_and_23() -> None:
    assert is_data_error(pg.CharacterNotInRepertoireError("NUL"))
    assert is_data_error(pg.NotNullViolationError("null"))
    assert not is_data_error(pg.LockNotAvailableError("lock"))
    assert not is_data_error(sqlite3.IntegrityError("sqlite has no sqlstate"))
    assert issubclass(StorageDataError, ValueError)  # the inbox's DATA_ERRORS catch it


def test_driver_errors_are_recognised_and_nothing_else() -> None:
    assert is_database_error(pg.UndefinedColumnError("x"))
    assert is_database_error(pg.InterfaceError("connection is closed"))
    assert not is_database_error(OSError("disk"))
    assert not is_database_error(ValueError("x"))


async def test_a_path_opens_sqlite(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "a" / "bot.sqlite3")
    try:
        assert isinstance(db, SqliteDatabase)
        assert db.dialect.name == "sqlite"
    finally:
        await db.close()
    text_path = await open_database(str(tmp_path / "b.sqlite3"))
    try:
        assert isinstance(text_path, SqliteDatabase)
    finally:
        await text_path.close()
