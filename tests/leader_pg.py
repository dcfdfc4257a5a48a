"""A PostgreSQL server for the leader-lock tests (a stand-in until tests/pg.py lands).

The lock needs a server, not a schema: one pgserver per session, skipped with the reason
when it cannot start on the machine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def leader_pg_url() -> Iterator[str]:
    try:
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="pgtest-leader-"), cleanup_mode="stop")
    except Exception as exc:
        pytest.skip(f"PostgreSQL tests skipped: pgserver cannot start here ({exc})")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
