"""Equal counts in /stats are listed in one order on every backend: code-point order.

PostgreSQL groups rows in no particular order and sorts text by the server's collation
(which differs between servers, e.g. `en_US` puts "ä" next to "a" and ignores case),
SQLite by bytes. The report's dicts (error codes, stop reasons, failure codes) are shown
in their order, so `storage/stats.py` orders them itself: most first, then by code point.
"""

from __future__ import annotations

from storage.backend import Database
from storage.stats import StatsRepository

SINCE, UNTIL = 1000.0, 2000.0
# codes whose code-point order ("Zeta" < "alpha" < "beta" < "ä") no natural language uses
_CODES = ("ä", "beta", "Zeta", "alpha")


async def _seed(db: Database) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO sessions (id, chat_id, opened_at) VALUES (1, 10, 0.0)")
        calls = [("most", 1100.0)] * 3 + [(code, 1200.0 + i) for i, code in enumerate(_CODES)]
        await tx.executemany(
            "INSERT INTO tool_calls (turn_id, session_id, chat_id, user_id, call_id, tool_name,"
            " started_at, duration_ms, status, error_code)"
            " VALUES (NULL, 1, 10, 10, 'c', 'get_order_status', ?, 10.0, 'business_error', ?)",
            [(started, code) for code, started in calls],
        )
        turns = [("most", 1100.0 + i) for i in range(2)] + [
            (code, 1300.0 + i) for i, code in enumerate(_CODES)
        ]
        await tx.executemany(
            "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
            " status, stop_reason, error_code, model_steps, tool_calls, prompt)"
            " VALUES (?, 1, 10, 10, ?, 10.0, 'failed', 'error', ?, 1, 0, 'p')",
            [(f"t{i}", started, code) for i, (code, started) in enumerate(turns)],
        )


async def test_equal_counts_are_listed_in_code_point_order(db: Database) -> None:
    await _seed(db)
    repo = StatsRepository(db)
    usage = await repo.tool_usage(SINCE, UNTIL, bucket_s=500.0, bucket_start=SINCE)
    (tool,) = usage.tools
    expected = [("most", 3), ("Zeta", 1), ("alpha", 1), ("beta", 1), ("ä", 1)]
    assert list(tool.business_errors.items()) == expected
    turns = await repo.turn_figures(SINCE, UNTIL)
    assert list(turns.failed_by_error.items()) == [("most", 2), *expected[1:]]
