"""A real PostgreSQL for the tests: one private server per pytest session, from PyPI.

`pgserver` bundles the PostgreSQL binaries; the server listens only on a unix socket in
a fresh temporary folder and is stopped and deleted at the end of the session. It starts
only when a test asks for it (`pg_cluster`, and through it `pg_url` and the `postgres`
parameter of `db`). Where it cannot start (pgserver missing, as root `useradd` refused,
initdb failing), the PostgreSQL tests are skipped with the reason
"PostgreSQL tests skipped: …" — never silently passed.

Each test gets its own database, copied from a template to which the migrations were
applied once (`CREATE DATABASE … TEMPLATE …`, some 30 ms instead of migrating anew), and
dropped when the test ends (`DROP DATABASE … WITH (FORCE)`: a session a test left open does
not keep it), so the server holds only the databases of the running test and the session's
teardown is seconds, not minutes of deleting hundreds of databases.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg
import pytest

from storage.postgres import PgDatabase, postgres_sql

TEMPLATE = "bot_template"
SKIP_PREFIX = "PostgreSQL tests skipped"

T = TypeVar("T")
_names = itertools.count(1)


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to the end from sync code, whether or not an event loop is running."""

    async def main() -> T:
        return await make()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


class PgCluster:
    """The session's server: URLs for its databases, and fresh databases on demand."""

    def __init__(self, server: Any, runtime_dir: str) -> None:
        self._server = server
        self._runtime_dir = runtime_dir

    def url(self, database: str) -> str:
        return str(self._server.get_uri(database=database))

    @property
    def admin_url(self) -> str:
        return self.url("postgres")

    def create_database(self, *, template: str | None = TEMPLATE) -> str:
        """A new database (the migrated template's copy, or empty); its URL.
        The caller drops it (`drop_database`); the fixtures below do."""
        name = f"t{os.getpid()}_{next(_names)}"
        source = f" TEMPLATE {template}" if template else ""

        async def create() -> None:
            conn = await asyncpg.connect(self.admin_url)
            try:
                await conn.execute(f"CREATE DATABASE {name}{source}")
            finally:
                await conn.close()

        run_sync(create)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database of `create_database`, ending any session still connected to it."""
        name = urlsplit(url).path.lstrip("/")

        async def drop() -> None:
            conn = await asyncpg.connect(self.admin_url)
            try:
                await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            finally:
                await conn.close()

        run_sync(drop)

    def make_template(self) -> None:
        """The template every test's database is copied from: migrated once, no session left."""

        async def build() -> None:
            conn = await asyncpg.connect(self.admin_url)
            try:
                await conn.execute(f"CREATE DATABASE {TEMPLATE}")
            finally:
                await conn.close()
            database = await PgDatabase.open(self.url(TEMPLATE))
            await database.close()

        run_sync(build)

    def stop(self) -> None:
        """Stop the server; its data folder goes with it (cleanup_mode="delete")."""
        self._server.cleanup()
        shutil.rmtree(self._runtime_dir, ignore_errors=True)


def start_server() -> PgCluster:
    """Start the session's server, or skip with the reason it cannot start here."""
    try:
        runtime_dir = tempfile.mkdtemp(prefix="pgtest-run-")
        with warnings.catch_warnings(), _private_runtime_dir(runtime_dir):
            # platformdirs, imported by pgserver: "XDG_RUNTIME_DIR is not set" (harmless)
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR", category=UserWarning)
            import pgserver

            data_dir = tempfile.mkdtemp(prefix="pgtest-")
            server = pgserver.get_server(data_dir, cleanup_mode="delete")
    except ImportError as exc:
        pytest.skip(f"{SKIP_PREFIX}: pgserver is not installed ({exc})")
    except Exception as exc:
        pytest.skip(f"{SKIP_PREFIX}: the server cannot start here ({_first_line(exc)})")
    return PgCluster(server, runtime_dir)


@contextlib.contextmanager
def _private_runtime_dir(folder: str) -> Iterator[None]:
    """pgserver takes a machine-wide file lock (in the user's runtime folder, fixed when it is
    imported) around every server's start and stop; a private folder per test session keeps
    parallel sessions (several worktrees, e2e runs) from queueing on it. Our data folders
    are unique, which is all that lock protects."""
    previous = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = folder
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's PostgreSQL server with the migrated template (started on first use).

    The template is built here, not skipped on failure: a migration that PostgreSQL
    refuses is a failing test, not a missing server.
    """
    cluster = start_server()
    try:
        cluster.make_template()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh, migrated database of its own for this test (its URL); dropped after it."""
    url = pg_cluster.create_database()
    yield url
    pg_cluster.drop_database(url)


@pytest.fixture
def pg_empty_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh database without any table (for the migration tests); dropped after it."""
    url = pg_cluster.create_database(template="template0")
    yield url
    pg_cluster.drop_database(url)


@pytest.fixture
async def pg_db(pg_url: str) -> AsyncIterator[PgDatabase]:
    """A fresh, migrated PostgreSQL database of its own, open (for PostgreSQL-only tests)."""
    database = await PgDatabase.open(pg_url)
    try:
        yield database
    finally:
        await database.close()


def pg_query(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of `sql`, written with SQLite's `?` parameters, from a PostgreSQL database."""

    async def fetch() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(row) for row in await conn.fetch(postgres_sql(sql), *params)]
        finally:
            await conn.close()

    return run_sync(fetch)


async def until_server_shows(
    conn: asyncpg.Connection[Any], sql: str, *args: object, within: float = 10.0
) -> None:
    """Wait (bounded) until `sql` returns true on the server, e.g. "two sessions wait on a lock".

    The server's state is not pushed to us, so it is re-read every 10 ms; the caller
    proceeds as soon as the state is there, never after a guessed time.
    """

    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await conn.fetchval(sql, *args):
        if loop.time() > deadline:
            raise AssertionError(f"the server never showed: {sql}")
        await asyncio.sleep(0.01)


# sessions of this database waiting for an advisory lock that another session holds
WAITING_ON_ADVISORY_LOCK = (
    "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
    " WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()"
)
