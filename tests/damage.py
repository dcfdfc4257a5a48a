"""Real page-level damage in an SQLite file, as a failing disk or a bad copy leaves it:
bytes written over a table's root page, the rest of the file untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def corrupt_table(path: Path, table: str) -> None:
    """Overwrite the b-tree header of `table`'s root page with garbage (the file must not
    be open for writing elsewhere). Reading the table then fails with "database disk
    image is malformed" (SQLITE_CORRUPT); other tables still read."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        found = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
    finally:
        conn.close()
    assert found is not None, f"no table {table}"
    root = int(found[0])
    assert root > 1  # page 1 holds the file header
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xee" * 64)


def corrupt_last_page(path: Path) -> None:
    """Overwrite the file's last page (after `fill_table`: a leaf of `ballast`, the page
    an integrity check reaches last)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        conn.close()
    with path.open("r+b") as file:
        file.seek((pages - 1) * page_size)
        file.write(b"\xee" * 64)


def fill_table(path: Path, rows: int) -> None:
    """Grow the file with a throwaway table `ballast` of `rows` rows (a big database)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS ballast(id INTEGER PRIMARY KEY, pad TEXT)")
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO ballast(pad) VALUES (?)", ((f"{i:08d}" * 8,) for i in range(rows))
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
