"""SQLite's plans for /stats: every figure is an index range or walk, never a table scan.

The SQL is shared with PostgreSQL; SQLite's text keeps its planner hints
through `Dialect` (`INDEXED BY`, and the condition of the partial index of unusual turns,
which SQLite uses only for a query that repeats it). This records every statement a whole
report runs — both percentile strategies, a short period and all time (the daily
roll-up) — and checks SQLite's EXPLAIN QUERY PLAN of each: no table is read whole, and
the statements with a hint or a partial index use theirs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

import storage.stats as stats_module
from services.stats import StatsService
from storage.backend import Database, Dialect, Row
from storage.database import open_database
from storage.stats import StatsRepository
from tests.unit.services.stats_history import NOW, seed_history

# the tables /stats reads; a plan line "SCAN <table>" without an index reads all of it
_TABLES = "turns|tool_calls|llm_calls|sessions|answer_feedback|messages|turn_totals_daily"
_FULL_SCAN = re.compile(rf"\bSCAN ({_TABLES})\b(?! USING)")
_EXPECTED_INDEXES = {
    "turns_stats_totals",  # a short period's totals
    "sqlite_autoindex_turn_totals_daily_1",  # whole days from the roll-up
    "turns_stats_unusual",  # partial: failed, refused, withheld, truncated, stopped turns
    "turns_started_at",
    "turns_stats_duration",  # the percentile walk
    "turns_stats_chat",  # the distinct-chats skip-scan
    "turns_stats_user",
    "tool_calls_stats_status",
    "tool_calls_stats_duration",
    "llm_calls_stats_fallback",  # partial
    "llm_calls_stats_summary",  # partial
    "sessions_stats_reset",  # partial
    "answer_feedback_stats",
    "messages_turn",
}

# statements (by a fragment of their text) and the index their plan must use: those SQLite
# is told to use (`INDEXED BY`) and the partial index it uses only for the exact condition
_INDEX_OF = (
    ("status <> 'rejected'", "tool_calls_stats_duration"),  # the tools' percentile walk
    ("'timeout', 'technical_error')", "tool_calls_stats_status"),  # the tools' sort
    ("WHERE +started_at >= ?", "turns_stats_duration"),  # the turns' percentile walk
    ("purpose = 'summary' AND started_at >= ? AND started_at < ? AND", "llm_calls_stats_summary"),
    ("'completed')", "turns_stats_unusual"),  # the unusual turns
    ("SELECT i, (SELECT COUNT(*) FROM turns AS t", "turns_started_at"),  # question buckets
)


class RecordingDatabase:
    """The real database, noting every statement /stats reads with."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.statements: dict[str, tuple[object, ...]] = {}

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    async def fetch_one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        self.statements.setdefault(sql, tuple(params))
        return await self._db.fetch_one(sql, params)

    async def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        self.statements.setdefault(sql, tuple(params))
        return await self._db.fetch_all(sql, params)


async def test_every_stats_query_reads_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = await open_database(tmp_path / "stats.sqlite3")
    try:
        await seed_history(db)
        recording = RecordingDatabase(db)
        service = StatsService(StatsRepository(recording), clock=lambda: NOW)  # type: ignore[arg-type]
        for sort_limit in (stats_module.SORT_LIMIT, 0):
            monkeypatch.setattr(stats_module, "SORT_LIMIT", sort_limit)
            for period in ("24h", "all"):
                await service.report(service.parse_period(period))

        used: set[str] = set()
        checked: set[str] = set()
        for sql, params in recording.statements.items():
            plan = [str(row[3]) for row in await db.fetch_all(f"EXPLAIN QUERY PLAN {sql}", params)]
            assert not [line for line in plan if _FULL_SCAN.search(line)], (sql, plan)
            used.update(m.group(1) for line in plan for m in re.finditer(r"INDEX (\w+)", line))
            for fragment, index in _INDEX_OF:
                if fragment in " ".join(sql.split()):
                    assert any(f"INDEX {index}" in line for line in plan), (index, sql, plan)
                    checked.add(fragment)
        assert _EXPECTED_INDEXES <= used, _EXPECTED_INDEXES - used
        assert checked == {fragment for fragment, _ in _INDEX_OF}
    finally:
        await db.close()
