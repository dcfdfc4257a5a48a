"""What a repository may rely on from a storage backend, whichever one is configured.

The repositories are written once, against these protocols, with `?` / `?N` parameters
and standard SQL; SQLite (`storage/sqlite.py`) and PostgreSQL (`storage/postgres.py`)
implement them. Where the two dialects cannot share one text, a repository asks its
backend's `Dialect` for the fragment instead of branching on the backend's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol


class Row(Protocol):
    """One result row: by column name or position, and unpackable (sqlite3.Row, asyncpg.Record)."""

    def __getitem__(self, key: Any, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


# one statement and its parameters, for `Database.write_all`
Statement = tuple[str, Sequence[object]]


class Tx(Protocol):
    """The statements of one open write transaction (committed when its block ends)."""

    async def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None: ...

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]: ...

    async def lock(self, key: str) -> None:
        """Serialise with every other transaction taking the same key until this one ends.

        SQLite has one writer, so this is free there; PostgreSQL takes a transaction-scoped
        advisory lock. Use it where a read-then-write must not interleave with another
        instance's (a rate count, seeding an empty table).
        """
        ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """The SQL fragments that differ between the backends (everything else is one text)."""

    name: str  # "sqlite" | "postgres"
    # JSON kept in TEXT columns
    json_drop_contact: Callable[[str], str]  # column -> expression without message.contact
    json_append_id: Callable[[str], str]  # column -> expression with one `?` id appended
    # scalar two-argument max/min
    greatest: str  # "MAX" | "GREATEST"
    least: str  # "MIN" | "LEAST"
    float_param: str  # a float parameter whose type the planner cannot infer
    indexed_by: Callable[[str], str]  # index name -> planner hint ("" on PostgreSQL)
    is_distinct: str  # "IS NOT" | "IS DISTINCT FROM"
    collate_binary: str  # ORDER BY suffix for byte order ("" | ' COLLATE "C"')


SQLITE = Dialect(
    name="sqlite",
    json_drop_contact=lambda col: f"json_remove({col}, '$.message.contact')",
    json_append_id=lambda col: f"json_insert({col}, '$[#]', ?)",
    greatest="MAX",
    least="MIN",
    float_param="CAST(? AS REAL)",
    indexed_by=lambda index: f"INDEXED BY {index}",
    is_distinct="IS NOT",
    collate_binary="",
)

POSTGRES = Dialect(
    name="postgres",
    json_drop_contact=lambda col: f"(({col})::jsonb #- '{{message,contact}}')::text",
    json_append_id=lambda col: f"(({col})::jsonb || to_jsonb(?::bigint))::text",
    greatest="GREATEST",
    least="LEAST",
    float_param="CAST(? AS DOUBLE PRECISION)",
    indexed_by=lambda index: "",
    is_distinct="IS DISTINCT FROM",
    collate_binary=' COLLATE "C"',
)


class Database(Protocol):
    """An open database: reads, single-statement writes and write transactions."""

    @property
    def dialect(self) -> Dialect: ...

    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """One write transaction: commit when the block ends, roll back on an error."""
        ...

    async def write(self, sql: str, params: Sequence[object] = ()) -> int:
        """One write statement on its own (autocommit); return how many rows it changed."""
        ...

    async def write_all(
        self, statements: Sequence[Statement], *, lock: str | None = None
    ) -> list[int]:
        """The statements, in order, as one write transaction; how many rows each changed.

        For the hot writes made on every turn: SQLite runs BEGIN, the statements and
        COMMIT in one call in its database thread, so the one writer is held for one
        round trip instead of one per statement (docs/benchmarks.md). `lock` is taken
        first, as `Tx.lock` would.
        """
        ...

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]: ...

    @property
    def write_fault(self) -> str | None:
        """The fault kind of the last write if it failed with one (None after a success)."""
        ...

    @property
    def corruption(self) -> str | None:
        """What a statement found damaged in the stored data (`storage.database.corruption`)
        since the database was opened, else None; it stays until a restart."""
        ...

    def file_problem(self) -> str | None:
        """SQLite: the file at the path is not the one opened. PostgreSQL: always None."""
        ...

    async def write_probe(self) -> str | None:
        """Can the database be written now? None if so, else the fault kind (/healthz)."""
        ...

    async def close(self) -> None: ...
