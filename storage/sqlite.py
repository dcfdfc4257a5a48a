"""The SQLite backend: one aiosqlite connection per process, a durable single writer.

WAL lets readers proceed while the writer commits; `synchronous=NORMAL` is durable
across application crashes in WAL mode; the busy timeout covers a second process
(e.g. `import-data`) touching the file. aiosqlite runs every call in one thread, in
the order they were queued. A write made in one call (`write`, `write_all`) is therefore
whole and alone; `transaction()`, whose statements are queued one by one, holds an
asyncio lock meanwhile so that no other coroutine's statements land inside it. That one
writer is also why `SqliteTx.lock` costs nothing: every write transaction runs alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import stat
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import aiosqlite

from storage.backend import SQLITE, Dialect, Row, Statement
from storage.database import INTEGRITY_CHECK_S, DatabaseOpenError, corruption, storage_fault
from storage.migrations import apply_migrations, check_supported_version

log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
# less free space than this next to the database is reported as a full filesystem
_LOW_SPACE_BYTES = 1024 * 1024


class SqliteTx:
    """`storage.backend.Tx` over the connection while this process's writer holds it."""

    __slots__ = ("_conn",)

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._conn = connection

    @property
    def conn(self) -> aiosqlite.Connection:
        """The raw connection (SQLite-only tests and tools)."""
        return self._conn

    async def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        cursor = await self._conn.execute(sql, tuple(params))
        return int(cursor.rowcount)

    async def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        await self._conn.executemany(sql, [tuple(row) for row in rows])

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        return await _fetch_one(self._conn, sql, params)

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return await _fetch_all(self._conn, sql, params)

    async def lock(self, key: str) -> None:
        """Nothing to do: this transaction holds the only write lock there is."""


class SqliteDatabase:
    """The open SQLite database: a connection for reads and a serialised path for writes."""

    def __init__(self, connection: aiosqlite.Connection, path: Path) -> None:
        self._conn = connection
        self._path = path
        self._write_lock = asyncio.Lock()
        # set whenever no `transaction()` holds the write lock (`_one_call`)
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()
        try:
            self._identity = _file_identity(path)
        except OSError:
            self._identity = None
        # the fault of the last write that failed with one; a successful write clears it
        self._write_fault: str | None = None
        self._corruption: str | None = None

    @classmethod
    async def open(
        cls, path: Path | str, *, migrate: bool = True, integrity_check_s: float = INTEGRITY_CHECK_S
    ) -> SqliteDatabase:
        """Open (creating the parent folder), set the pragmas and apply migrations.

        A path that cannot be used raises `DatabaseOpenError` (a folder, a device, a file
        that is not SQLite or is corrupt, a read-only file or filesystem, a database
        locked beyond the busy timeout); a schema problem raises `MigrationError`. With
        `migrate`, a write is made and rolled back once, so that a database
        that can be read but not written is refused here, not at the first turn (see
        `_probe_write`), and the file's pages are checked (`_check_integrity`) for up to
        `integrity_check_s` seconds (0: not at all).
        """
        db_path = Path(path)
        if str(db_path) != ":memory:":
            _prepare_location(db_path)
        connecting = aiosqlite.connect(db_path, isolation_level=None)
        try:
            conn = await connecting
        except sqlite3.Error as exc:
            await _wait_for_worker(connecting)
            raise DatabaseOpenError(_explain(db_path, exc)) from exc
        try:
            conn.row_factory = aiosqlite.Row
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if migrate:
                # before any pragma that writes the file: a newer database stays untouched
                await check_supported_version(conn)
                await _check_integrity(db_path, integrity_check_s)
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            if migrate:
                version = await apply_migrations(conn)
                await _probe_write(conn, version)
        except sqlite3.Error as exc:
            await conn.close()
            raise DatabaseOpenError(_explain(db_path, exc)) from exc
        except BaseException:
            await conn.close()
            raise
        return cls(conn, db_path)

    @property
    def dialect(self) -> Dialect:
        return SQLITE

    @property
    def path(self) -> Path:
        return self._path

    @property
    def conn(self) -> aiosqlite.Connection:
        """The connection for reads (and for single autocommit statements)."""
        return self._conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        """Run the block as one write transaction; commit on success, roll back on error.

        Cancellation (a tool timeout, the turn deadline, shutdown) can arrive while BEGIN
        or COMMIT is awaited. aiosqlite still runs a statement once it is queued, so a
        cancelled BEGIN has opened the transaction all the same: it is rolled back here,
        or every later write on the shared connection would fail with "cannot start a
        transaction within a transaction". A failed COMMIT is rolled back for the same
        reason; a cancelled COMMIT still commits in the connection's thread.
        """
        async with self._write_lock, self._holding():
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                yield SqliteTx(self._conn)
            except BaseException as exc:
                self._note_failure(exc)
                await self._rollback()
                raise
            try:
                await self._conn.execute("COMMIT")
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self._note_failure(exc)
                await self._rollback()
                raise
            self._write_fault = None

    async def write(self, sql: str, params: Sequence[object] = ()) -> int:
        """One write statement on its own; returns how many rows it changed.

        A single statement is atomic in autocommit mode, so it needs no BEGIN/COMMIT:
        one round trip to aiosqlite's thread instead of three (the inbox makes several
        such updates per turn; see docs/benchmarks.md). Like `write_all` it never lands
        inside another coroutine's open transaction (`_one_call`).
        """
        async with self._one_call():
            try:
                cursor = await self._conn.execute(sql, tuple(params))
            except Exception as exc:
                self._note_failure(exc)
                raise
            self._write_fault = None
            return int(cursor.rowcount)

    async def write_all(
        self, statements: Sequence[Statement], *, lock: str | None = None
    ) -> list[int]:
        """The statements as one transaction, run whole in aiosqlite's thread.

        `transaction()` pays a round trip to that thread per statement, and between them
        the holder of the write lock waits for its turn on the busy event loop while
        every other writer waits for the lock; here the lock is held for one round trip.
        Once queued the call runs to its end even if the caller is cancelled (COMMIT or
        ROLLBACK included), and the thread runs calls in order, so the next writer's
        statements never land inside it. `lock` costs nothing here (`SqliteTx.lock`).
        """
        async with self._one_call():
            try:
                changed = await _in_thread(self._conn, partial(_run_all, statements=statements))
            except Exception as exc:
                self._note_failure(exc)
                raise
            self._write_fault = None
            return changed

    @asynccontextmanager
    async def _one_call(self) -> AsyncIterator[None]:
        """The way in for a write that is one call to aiosqlite's thread.

        The thread runs calls in the order they were queued, so such a write needs the
        write lock only to stay out of a `transaction()`, whose statements are queued one
        by one: while one holds the lock, it waits for that one to end; otherwise it is
        queued at once. Under load that skips a wait per write for the lock to be handed
        over on the busy event loop (docs/benchmarks.md), and the writes that waited for
        a transaction all go on when it ends, not one by one.
        """
        while self._write_lock.locked():
            await self._no_transaction.wait()
        yield

    @asynccontextmanager
    async def _holding(self) -> AsyncIterator[None]:
        """Marks the write lock held by a transaction, for the writes in `_one_call`."""
        self._no_transaction.clear()
        try:
            yield
        finally:
            self._no_transaction.set()

    def _note_failure(self, exc: BaseException) -> None:
        self._corruption = self._corruption or corruption(exc)
        kind = storage_fault(exc)
        if kind is not None:
            self._write_fault = kind

    async def _rollback(self) -> None:
        """Roll back whatever is open; if nothing is (BEGIN itself failed), that is fine."""
        try:
            await self._conn.execute("ROLLBACK")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                log.exception("rollback failed; the connection is still in a transaction")

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        try:
            return await _fetch_one(self._conn, sql, params)
        except sqlite3.Error as exc:
            self._corruption = self._corruption or corruption(exc)
            raise

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        try:
            return await _fetch_all(self._conn, sql, params)
        except sqlite3.Error as exc:
            self._corruption = self._corruption or corruption(exc)
            raise

    @property
    def corruption(self) -> str | None:
        """Damage a statement met in the file ("database disk image is malformed"), else
        None; it stays until a restart, whose integrity check then refuses the file."""
        return self._corruption

    @property
    def write_fault(self) -> str | None:
        """The fault kind of the last write if it failed with one (None after a success)."""
        return self._write_fault

    def file_problem(self) -> str | None:
        """ "missing" or "replaced" when the file at the path is not the one opened.

        A file deleted or replaced under the process still takes the bot's writes (into
        the old, unlinked inode) but nothing written there survives a restart.
        """
        if self._identity is None:
            return None
        try:
            current = _file_identity(self._path)
        except FileNotFoundError:
            return "missing"
        except OSError:
            return "inaccessible"
        return None if current == self._identity else "replaced"

    async def write_probe(self) -> str | None:
        """Can the file be written now? None if so, else the fault kind (for /healthz).

        Takes the write lock and gives it back (`BEGIN IMMEDIATE; ROLLBACK`) on a short-
        lived second connection, so nothing is written, the file does not grow and the
        bot's own connection is not held up; like the bot's writes it waits up to the
        busy timeout for a lock. The file is opened read-write without creating it.
        """
        if self._identity is None:
            return None
        return await asyncio.to_thread(_probe_store, self._path)

    async def close(self) -> None:
        await self._conn.close()


async def _in_thread(connection: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run `fn` with the raw connection in the connection's own thread, one round trip.

    aiosqlite 0.22 has no public call for this; its own methods queue their work with
    `_execute`, as this does (the version is bounded in pyproject.toml, and the tests of
    `write_all` run through here).
    """
    raw = connection._conn
    result: T = await connection._execute(fn, raw)  # type: ignore[no-untyped-call]
    return result


def _run_all(conn: sqlite3.Connection, *, statements: Sequence[Statement]) -> list[int]:
    """BEGIN, the statements and COMMIT; ROLLBACK if any of them fails (in the thread)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        changed = [int(conn.execute(sql, tuple(params)).rowcount) for sql, params in statements]
        conn.execute("COMMIT")
        return changed
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                log.exception("rollback failed; the connection is still in a transaction")
        raise


def _file_identity(path: Path) -> tuple[int, int] | None:
    if str(path) == ":memory:":
        return None
    found = os.stat(path)
    return (found.st_dev, found.st_ino)


def _probe_store(path: Path) -> str | None:
    """The fault a write would meet now (None: writable), from a second connection."""
    uri = f"{path.resolve().as_uri()}?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        return storage_fault(exc) or "cannot_open"
    try:
        # a write, not just BEGIN IMMEDIATE: in WAL mode a read-only file lets BEGIN
        # through; the rolled-back change never reaches the disk
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"PRAGMA user_version = {version:d}")
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        return storage_fault(exc) or "error"
    finally:
        conn.close()
    return None


async def _check_integrity(path: Path, budget_s: float) -> None:
    """`PRAGMA quick_check` on a second connection (it only reads), waited for `budget_s`
    at most: a damaged page is refused at start (one line) instead of failing order
    lookups or losing history later. A check still running then is interrupted and the
    file let through (damage met later still turns /healthz to 503)."""
    if budget_s <= 0 or str(path) == ":memory:":
        return
    conn = await asyncio.to_thread(_check_connection, path)
    if conn is None:
        return
    check = asyncio.ensure_future(asyncio.to_thread(_quick_check, conn))
    try:
        async with asyncio.timeout(budget_s):
            found = await asyncio.shield(check)
    except TimeoutError:
        if check.done():  # finished as the time ran out
            found = check.result()
        else:
            with contextlib.suppress(sqlite3.ProgrammingError):  # closed as it finished
                conn.interrupt()  # the thread stops at SQLite's next check and closes it
            check.add_done_callback(lambda done: done.cancelled() or done.exception())
            _let_through_unchecked(budget_s)
            return
    if found is not None:
        raise DatabaseOpenError(f"is corrupt ({found}); restore a backup")


def _let_through_unchecked(budget_s: float) -> None:
    log.warning(
        "database integrity check not finished within %g s (DATABASE_INTEGRITY_CHECK_S); "
        "starting without it",
        budget_s,
    )


def _check_connection(path: Path) -> sqlite3.Connection | None:
    """A connection for the check, None for a new, empty file (nothing to check)."""
    if path.stat().st_size == 0:
        return None
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=rw",
        uri=True,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
    )


def _quick_check(conn: sqlite3.Connection) -> str | None:
    """The first problem `PRAGMA quick_check` reports; None when it finds none or is
    interrupted. Closes `conn`."""
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.Error as exc:
        damage = corruption(exc)
        if damage is not None:
            return damage
        if str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_INTERRUPT"):
            return None
        raise
    finally:
        conn.close()
    first = str(rows[0][0]) if rows else "ok"
    return None if first == "ok" else "SQLite quick_check: " + " ".join(first.split())[:160]


def _prepare_location(path: Path) -> None:
    """Refuse a path that is not a regular file; create the folder of a new one."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as exc:
        raise DatabaseOpenError(f"cannot be read: {exc.strerror or exc}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise DatabaseOpenError("is a folder, not a database file")
        if not stat.S_ISREG(mode):
            raise DatabaseOpenError("is not a regular file (a device, pipe or socket)")
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DatabaseOpenError(
            f"its folder {path.parent} cannot be created: a file is in the way"
        ) from None
    except OSError as exc:
        raise DatabaseOpenError(
            f"its folder {path.parent} cannot be created: {exc.strerror or exc}"
        ) from None


async def _probe_write(conn: aiosqlite.Connection, version: int) -> None:
    """Write the schema version unchanged in a transaction that is rolled back.

    In WAL mode a read-only file still lets BEGIN IMMEDIATE through, so the probe must
    write; the change stays in SQLite's page cache and never reaches the disk.
    """
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute(f"PRAGMA user_version = {version:d}")
    finally:
        await conn.execute("ROLLBACK")


async def _wait_for_worker(connection: aiosqlite.Connection) -> None:
    """Wait for the worker thread of a connection that failed to open.

    aiosqlite then stops its thread without waiting for it, and the thread reports back
    to the event loop: if the process ends first, that is a traceback from a thread
    ("Event loop is closed") after the one-line error.
    """
    thread = getattr(connection, "_thread", None)
    if isinstance(thread, threading.Thread) and thread.is_alive():
        await asyncio.to_thread(thread.join, 5.0)


def _explain(path: Path, exc: sqlite3.Error) -> str:
    """One line for an SQLite error met while opening `path`."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    if name.startswith("SQLITE_NOTADB"):
        return "is not an SQLite database (another kind of file, or overwritten)"
    if name.startswith("SQLITE_CORRUPT"):
        return "is corrupt (SQLite: database disk image is malformed); restore a backup"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return f"is locked by another process (waited {BUSY_TIMEOUT_MS // 1000} s)"
    if name.startswith("SQLITE_FULL"):
        return "cannot be written: the disk is full"
    cause = _os_problem(path)
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM")):
        return f"cannot be written: {cause or exc}"
    return f"cannot be used (SQLite: {exc})" + (f"; {cause}" if cause else "")


def _os_problem(path: Path) -> str | None:
    """Why the operating system refuses to let us write the file or its folder, if it does.

    SQLite says only "unable to open database file" or "attempt to write a readonly
    database"; this repeats the open (and a file creation in the folder, where SQLite puts
    its -wal and -shm files) to get the system's reason, e.g. "Read-only file system".
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        os.close(fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not path.parent.is_dir():
        return f"its folder {path.parent} does not exist"
    try:
        with tempfile.TemporaryFile(dir=path.parent):
            pass
        space = os.statvfs(path.parent)
    except OSError as exc:
        return f"its folder {path.parent} cannot be written: {exc.strerror or exc}"
    free = space.f_bavail * space.f_frsize
    if free < _LOW_SPACE_BYTES:
        return f"its filesystem is full ({free} bytes free)"
    return None


async def _fetch_one(conn: aiosqlite.Connection, sql: str, params: Sequence[object]) -> Row | None:
    """One row of a read (inside a transaction or on its own: the same connection)."""
    async with conn.execute(sql, tuple(params)) as cursor:
        row: Row | None = await cursor.fetchone()
        return row


async def _fetch_all(conn: aiosqlite.Connection, sql: str, params: Sequence[object]) -> list[Row]:
    async with conn.execute(sql, tuple(params)) as cursor:
        return list(await cursor.fetchall())
