"""Opening the configured database, and what its errors mean, for either backend.

`open_database` picks the backend from the setting: a `postgresql://` URL opens
PostgreSQL (`storage/postgres.py`), anything else is an SQLite file
(`storage/sqlite.py`). The repositories only ever see the `Database` protocol
(`storage/backend.py`). Errors are classified here, in one place, so the retry policy
(`StorageRetry`), the intake and the errors router treat a locked SQLite file and a
PostgreSQL server that went away the same way: as the store's fault, worth waiting for,
never as a bug in the statement.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from storage.backend import Database, Row, Tx

__all__ = [
    "INTEGRITY_CHECK_S",
    "Database",
    "DatabaseOpenError",
    "Row",
    "StorageDataError",
    "StorageRetry",
    "StorageUnavailable",
    "Tx",
    "corruption",
    "is_data_error",
    "is_database_error",
    "is_unique_violation",
    "open_database",
    "storage_fault",
]

log = logging.getLogger(__name__)

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# SQLite: seconds the integrity check at start may read the file (a big one is let
# through after that; damage met later still turns /healthz to 503)
INTEGRITY_CHECK_S = 10.0


class DatabaseOpenError(Exception):
    """The database cannot be used; the message says why, in one line.

    It does not name the path or the URL: the caller knows which setting it came from
    (and a URL may carry a password).
    """


T = TypeVar("T")

# SQLite result codes (by name prefix) that describe the store, not the statement: the
# same write may well succeed later (a lock released, space freed, the disk back).
_FAULT_KINDS = (
    ("SQLITE_BUSY", "locked"),
    ("SQLITE_LOCKED", "locked"),
    ("SQLITE_FULL", "full"),
    ("SQLITE_IOERR", "io_error"),
    ("SQLITE_READONLY", "read_only"),
    ("SQLITE_CANTOPEN", "cannot_open"),
    ("SQLITE_PROTOCOL", "locked"),
)


# PostgreSQL SQLSTATE codes (exact, then by class) that describe the server, not the
# statement: the same write may well succeed later.
_SQLSTATE_KINDS = {
    "55P03": "locked",  # lock_not_available (lock_timeout)
    "40001": "locked",  # serialization_failure
    "40P01": "locked",  # deadlock_detected
    "53100": "full",  # disk_full
    "58030": "io_error",
    "25006": "read_only",  # read_only_sql_transaction: a replica, or a read-only server
    "57P01": "unavailable",  # admin_shutdown
    "57P02": "unavailable",  # crash_shutdown
    "57P03": "unavailable",  # cannot_connect_now (starting up, recovering)
}
_SQLSTATE_CLASS_KINDS = {
    "53": "resources",  # insufficient resources: memory, too many connections
    "08": "unavailable",  # connection exceptions (asyncpg: the connection was lost)
}
# asyncpg's InterfaceError messages when the connection or the pool is gone
_GONE_MESSAGES = ("connection is closed", "pool is closed", "pool is closing")


def storage_fault(exc: BaseException) -> str | None:
    """The kind of storage fault `exc` is ("locked", "full", "io_error", "unavailable", …),
    else None.

    Only errors of the store itself count; a constraint violation or an SQL mistake is a
    bug that retrying would only repeat.
    """
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", None) or ""
        for prefix, kind in _FAULT_KINDS:
            if name.startswith(prefix):
                return kind
        return None
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str):
        return _SQLSTATE_KINDS.get(sqlstate) or _SQLSTATE_CLASS_KINDS.get(sqlstate[:2])
    if _from_postgres_driver(exc):
        return "unavailable"
    return None


# Errors that say the stored data itself is damaged: no retry or restart helps, only a
# backup does. SQLite by result-code name prefix, PostgreSQL by SQLSTATE.
_CORRUPTION_NAMES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_CORRUPTION_SQLSTATES = {"XX001": "data corrupted", "XX002": "index corrupted"}


def corruption(exc: BaseException) -> str | None:
    """What `exc` says is damaged in the stored data (one short line), else None."""
    if isinstance(exc, sqlite3.Error):
        name = str(getattr(exc, "sqlite_errorname", None) or "")
        if name.startswith(_CORRUPTION_NAMES):
            return f"SQLite: {' '.join(str(exc).split())[:120]}"
        return None
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate in _CORRUPTION_SQLSTATES:
        return f"PostgreSQL: {_CORRUPTION_SQLSTATES[sqlstate]}"
    return None


def _from_postgres_driver(exc: BaseException) -> bool:
    """Whether `exc` says the PostgreSQL server cannot be reached (or the pool is gone).

    An `OSError` or `TimeoutError` counts only when asyncpg raised it (a refused or
    timed-out connect, an acquire that timed out): the same classes from Telegram or
    the model endpoint are not the database's fault.
    """
    if type(exc).__module__.startswith("asyncpg"):
        names = {cls.__name__ for cls in type(exc).__mro__}
        # InternalClientError: a pooled connection caught mid-reconnect while the server
        # is down ("cannot switch to state …; another operation is in progress"), seen
        # with a stopped server; it clears once the server is back
        return "InternalClientError" in names or (
            type(exc).__name__ == "InterfaceError" and str(exc).startswith(_GONE_MESSAGES)
        )
    if not isinstance(exc, (OSError, TimeoutError)):
        return False
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("asyncpg"):
            return True
        tb = tb.tb_next
    return False


def is_unique_violation(exc: BaseException) -> bool:
    """Whether `exc` is a UNIQUE or PRIMARY KEY violation, on either backend."""
    if isinstance(exc, sqlite3.IntegrityError):
        name = getattr(exc, "sqlite_errorname", None) or ""
        return name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")
    return getattr(exc, "sqlstate", None) == "23505"


def is_database_error(exc: BaseException) -> bool:
    """Whether the database driver raised `exc` (SQLite's or asyncpg's), whatever it means."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("asyncpg")


def is_data_error(exc: BaseException) -> bool:
    """Whether PostgreSQL refused a statement for the values in it (SQLSTATE classes 22,
    data exception, and 23, integrity constraint violation) — not for the store's state."""
    sqlstate = getattr(exc, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate[:2] in ("22", "23")


class StorageDataError(ValueError):
    """The database refused one row's values (PostgreSQL's data exceptions, re-raised as a
    `ValueError` so that callers catching bad data catch it on both backends)."""


class StorageUnavailable(Exception):
    """A write kept failing with a storage fault for longer than the retry bound."""

    def __init__(self, what: str, kind: str, waited_s: float) -> None:
        super().__init__(f"{what}: database {kind} for {waited_s:.0f} s")
        self.what = what
        self.kind = kind
        self.waited_s = waited_s


@dataclass(frozen=True, slots=True)
class StorageRetry:
    """Retry a write while the store has a fault: exponential backoff, bounded in total.

    A write that fails with a storage fault (`storage_fault`) is tried again after
    `first_delay_s`, doubling up to `max_delay_s`, until it succeeds or `give_up_after_s`
    have passed since the first try; then `StorageUnavailable` is raised (the caller
    leaves the work for the next start). Any other error is raised at once. Each attempt
    itself may wait up to the busy timeout for a lock, which counts towards the bound.
    """

    first_delay_s: float = 0.5
    max_delay_s: float = 30.0
    give_up_after_s: float = 600.0

    async def run(self, what: str, write: Callable[[], Awaitable[T]]) -> T:
        """`await write()`, retried as above; `what` names it in the log (no personal data)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        delay = self.first_delay_s
        attempt = 0
        while True:
            try:
                return await write()
            except Exception as exc:
                kind = storage_fault(exc)
                if kind is None:
                    raise
                attempt += 1
                waited = loop.time() - started
                remaining = self.give_up_after_s - waited
                if remaining <= 0:
                    raise StorageUnavailable(what, kind, waited) from exc
                log.warning(
                    "%s: database %s (attempt %d, %.0f s so far); retrying in %.1f s",
                    what,
                    kind,
                    attempt,
                    waited,
                    min(delay, remaining),
                )
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, self.max_delay_s)


def is_postgres_url(target: str | Path) -> bool:
    """Whether `target` names a PostgreSQL database (a URL), not an SQLite file."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


async def open_database(
    target: str | Path,
    *,
    migrate: bool = True,
    pool_size: int = 10,
    integrity_check_s: float = INTEGRITY_CHECK_S,
) -> Database:
    """Open the database `target` names: a `postgresql://` / `postgres://` URL, else a path
    to an SQLite file. `pool_size` is PostgreSQL's connection pool (SQLite has one
    connection); `integrity_check_s` bounds SQLite's page check at start (PostgreSQL
    checks its own pages). Raises `DatabaseOpenError` or `MigrationError`, as the
    backends do.
    """
    if is_postgres_url(target):
        # imported here: only a PostgreSQL user loads asyncpg (storage.postgres imports
        # this module too)
        from storage.postgres import PgDatabase

        return await PgDatabase.open(str(target), migrate=migrate, pool_size=pool_size)
    from storage.sqlite import SqliteDatabase  # storage.sqlite imports this module

    return await SqliteDatabase.open(target, migrate=migrate, integrity_check_s=integrity_check_s)
