"""`StatsRepository` on a real SQLite file seeded with known rows.

The period under test is [1000, 2000): rows at 1000 count, rows at 2000 and at 999.5
do not. Both percentile strategies (sorting a short period, walking the ordered index
on a long one) must give the same nearest-rank values.
"""

from __future__ import annotations

import pytest

import storage.stats as stats_module
from storage.database import Database
from storage.stats import StatsRepository, nearest_rank

SINCE, UNTIL = 1000.0, 2000.0


async def _seed(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO sessions (id, chat_id, opened_at, closed_at, close_reason)"
            " VALUES (?, ?, ?, ?, ?)",
            [
                (1, 10, 0.0, 1000.0, "reset"),  # /new at the lower boundary: counted
                (2, 10, 1000.0, 2000.0, "reset"),  # at the upper boundary: not counted
                (3, 20, 0.0, 1500.0, "expired"),  # closed, but not by /new
                (4, 20, 1500.0, None, None),  # open
                (5, 30, 0.0, 1999.0, "reset"),  # counted
                (6, 40, 0.0, 999.5, "reset"),  # before the period
            ],
        )
        turns = [
            # id, chat, user, started, duration, status, stop, error, steps, tools, p, c
            ("t1", 10, 10, 1000.0, 1000.0, "answered", "completed", None, 2, 1, 100, 10),
            ("t2", 10, 10, 1500.0, 3000.0, "answered", "truncated", None, 1, 0, None, None),
            ("t3", 20, 21, 1999.5, 500.0, "failed", None, "unavailable", 3, 2, 300, 30),
            ("t4", 30, 31, 1200.0, 800.0, "answered", "completed", None, 1, 0, 7, None),
            ("t5", 30, 31, 1300.0, 2000.0, "failed", None, "turn_timeout", 2, 1, None, None),
            ("t6", 10, 10, 1400.0, 100.0, "answered", "refused", None, 1, 0, 50, 5),
            ("out1", 10, 10, 2000.0, 9999.0, "answered", "completed", None, 5, 5, 1, 1),
            ("out2", 50, 50, 999.5, 9999.0, "failed", None, "unavailable", 5, 5, 1, 1),
        ]
        await conn.executemany(
            "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
            " status, stop_reason, error_code, model_steps, tool_calls, prompt_tokens,"
            " completion_tokens, total_tokens, prompt)"
            " VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 'support_chat@1')",
            turns,
        )
        calls = [
            # tool, started, duration, status, code
            ("get_order_status", 1000.0, 10.0, "success", None),
            ("get_order_status", 1100.0, 20.0, "success", None),
            ("get_order_status", 1499.9, 30.0, "success", None),
            ("get_order_status", 1500.0, 40.0, "success", None),
            ("get_order_status", 1600.0, 50.0, "business_error", "rate_limited"),
            ("get_order_status", 1700.0, 60.0, "business_error", "rate_limited"),
            ("get_order_status", 1750.0, 65.0, "business_error", "not_found"),
            ("get_order_status", 1800.0, 0.5, "rejected", "invalid_arguments"),
            ("get_order_status", 1900.0, 5000.0, "timeout", "timeout"),
            ("get_order_status", 1999.9, 70.0, "technical_error", "unavailable"),
            ("get_order_status", 2000.0, 1.0, "success", None),  # excluded
            ("get_order_status", 999.5, 1.0, "success", None),  # excluded
            ("get_return_policy", 1200.0, 15.0, "success", None),
            ("search_web", 1300.0, 0.1, "rejected", "unknown_tool"),
            ("search_web", 1600.0, 0.1, "rejected", "unknown_tool"),
        ]
        await conn.executemany(
            "INSERT INTO tool_calls (turn_id, session_id, chat_id, user_id, call_id, tool_name,"
            " started_at, duration_ms, status, error_code)"
            " VALUES (NULL, 1, 10, 10, 'c', ?, ?, ?, ?, ?)",
            calls,
        )
        llm = [
            # purpose, fallback, started, status
            ("chat", 1, 1000.0, "ok"),
            ("chat", 1, 1999.0, "ok"),
            ("chat", 1, 2000.0, "ok"),  # excluded
            ("chat", 0, 1100.0, "ok"),
            ("chat", 0, 1200.0, "error"),
            ("summary", 0, 1300.0, "ok"),
            ("summary", 0, 1400.0, "ok"),
            ("summary", 0, 1500.0, "error"),
            ("summary", 0, 500.0, "ok"),  # excluded
        ]
        await conn.executemany(
            "INSERT INTO llm_calls (purpose, requested_model, model, fallback, started_at,"
            " latency_ms, status) VALUES (?, 'm', 'm', ?, ?, 100.0, ?)",
            llm,
        )


@pytest.fixture(params=["sort", "walk"])
def percentile_strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with short-period sorting and with the ordered-index walk."""
    if request.param == "walk":
        monkeypatch.setattr(stats_module, "SORT_LIMIT", 0)
    return str(request.param)


async def test_tool_figures_per_tool_over_the_period(db: Database, percentile_strategy: str):
    await _seed(db)
    usage = await StatsRepository(db).tool_usage(SINCE, UNTIL, bucket_s=500.0, bucket_start=SINCE)
    by_name = {t.tool_name: t for t in usage.tools}
    assert sorted(by_name) == ["get_order_status", "get_return_policy", "search_web"]

    orders = by_name["get_order_status"]
    assert orders.calls == 10
    assert orders.success == 4
    assert orders.business_errors == {"rate_limited": 2, "not_found": 1}
    assert orders.rejected == {"invalid_arguments": 1}
    assert orders.timeouts == 1
    assert orders.technical_errors == 1
    # calls that ran (rejected left out): 10 20 30 40 50 60 65 70 5000 -> n = 9
    assert orders.p50_ms == 50.0  # rank ceil(4.5) = 5
    assert orders.p95_ms == 5000.0  # rank ceil(8.55) = 9

    policy = by_name["get_return_policy"]
    assert (policy.calls, policy.success, policy.p50_ms, policy.p95_ms) == (1, 1, 15.0, 15.0)

    invented = by_name["search_web"]
    assert invented.rejected == {"unknown_tool": 2}
    assert invented.p50_ms is None and invented.p95_ms is None


async def test_tool_buckets_partition_the_period(db: Database):
    await _seed(db)
    usage = await StatsRepository(db).tool_usage(SINCE, UNTIL, bucket_s=500.0, bucket_start=SINCE)
    counts = {(b.tool_name, b.status, b.bucket): b.calls for b in usage.buckets}
    assert counts[("get_order_status", "success", 0)] == 3  # 1000, 1100, 1499.9
    assert counts[("get_order_status", "success", 1)] == 1  # 1500
    assert counts[("get_order_status", "business_error", 1)] == 3
    assert counts[("get_order_status", "technical_error", 1)] == 1  # 1999.9
    assert counts[("search_web", "rejected", 0)] == 1
    assert counts[("search_web", "rejected", 1)] == 1
    assert {b.bucket for b in usage.buckets} == {0, 1}
    assert sum(b.calls for b in usage.buckets) == 13


async def test_all_time_includes_everything_before_until(db: Database):
    await _seed(db)
    repo = StatsRepository(db)
    assert await repo.first_activity() == 999.5
    usage = await repo.tool_usage(None, UNTIL, bucket_s=400.0, bucket_start=999.5)
    orders = next(t for t in usage.tools if t.tool_name == "get_order_status")
    assert orders.calls == 11  # + the call at 999.5; the one at 2000 is still out
    turns = await repo.turn_figures(None, UNTIL)
    assert turns.count == 7
    assert await repo.resets(None, UNTIL) == 3


async def test_turn_figures(db: Database, percentile_strategy: str):
    await _seed(db)
    turns = await StatsRepository(db).turn_figures(SINCE, UNTIL)
    assert turns.count == 6
    assert turns.chats == 3  # 10, 20, 30
    assert turns.users == 3  # 10, 21, 31
    assert turns.answered == 4
    assert turns.answered_by_stop_reason == {"completed": 2, "truncated": 1, "refused": 1}
    assert turns.failed == 2
    assert turns.failed_by_error == {"unavailable": 1, "turn_timeout": 1}
    assert turns.model_steps_total == 10
    assert turns.model_steps_max == 3
    assert turns.tool_calls_total == 4
    # durations 100 500 800 1000 2000 3000: p50 rank 3, p95 rank 6
    assert turns.p50_ms == 800.0
    assert turns.p95_ms == 3000.0
    # known usage: t1, t3, t6; t2 and t5 unknown, t4 half-known -> unknown, never 0
    assert turns.usage_known == 3
    assert turns.usage_unknown == 3
    assert turns.prompt_tokens == 450
    assert turns.completion_tokens == 45


async def test_model_figures_and_resets(db: Database):
    await _seed(db)
    repo = StatsRepository(db)
    models = await repo.model_figures(SINCE, UNTIL)
    assert models.fallback_answers == 2
    assert models.summaries_ok == 2
    assert models.summaries_failed == 1
    assert await repo.resets(SINCE, UNTIL) == 2


async def test_empty_history(db: Database):
    repo = StatsRepository(db)
    assert await repo.first_activity() is None
    usage = await repo.tool_usage(SINCE, UNTIL, bucket_s=100.0, bucket_start=SINCE)
    assert usage.tools == [] and usage.buckets == []
    turns = await repo.turn_figures(SINCE, UNTIL)
    assert turns.count == 0 and turns.p50_ms is None
    models = await repo.model_figures(None, UNTIL)
    assert (models.fallback_answers, models.summaries_ok, models.summaries_failed) == (0, 0, 0)


@pytest.mark.parametrize(
    ("percent", "count", "rank"),
    [(50, 1, 1), (95, 1, 1), (50, 4, 2), (50, 5, 3), (95, 20, 19), (95, 21, 20), (95, 100, 95)],
)
def test_nearest_rank(percent: int, count: int, rank: int):
    assert nearest_rank(percent, count) == rank


async def _seed_owner_figures(db: Database) -> None:
    """Ratings, cached tokens and summary tokens on top of `_seed`."""
    async with db.transaction() as conn:
        await conn.execute("UPDATE turns SET cached_tokens = 40 WHERE id = 't1'")
        await conn.execute("UPDATE turns SET cached_tokens = 5 WHERE id = 't4'")  # usage unknown
        await conn.executemany(
            "INSERT INTO answer_feedback (turn_id, chat_id, user_id, rating, answered_at,"
            " rated_at) VALUES (?, ?, ?, ?, ?, 5000.0)",
            [
                ("t1", 10, 10, 1, 1000.0),
                ("t2", 10, 10, -1, 1500.0),
                ("t4", 30, 31, 1, 1200.0),
                ("out1", 10, 10, -1, 2000.0),  # an answer of the next period
            ],
        )
        await conn.execute(
            "UPDATE llm_calls SET prompt_tokens = 200, completion_tokens = 20, cached_tokens = 100"
            " WHERE purpose = 'summary' AND started_at = 1300.0"
        )
        await conn.execute(
            "UPDATE llm_calls SET prompt_tokens = 900, completion_tokens = 90"
            " WHERE purpose = 'summary' AND started_at = 500.0"  # before the period
        )


async def test_feedback_counts_the_ratings_of_the_periods_answers(db: Database):
    await _seed(db)
    await _seed_owner_figures(db)
    figures = await StatsRepository(db).feedback_figures(SINCE, UNTIL)
    assert (figures.up, figures.down, figures.rated) == (2, 1, 3)
    assert (await StatsRepository(db).feedback_figures(None, 3000.0)).down == 2


async def test_cached_tokens_are_summed_where_usage_is_known(db: Database):
    await _seed(db)
    await _seed_owner_figures(db)
    turns = await StatsRepository(db).turn_figures(SINCE, UNTIL)
    assert turns.cached_tokens == 40  # t4's usage is incomplete, so it is not counted
    summaries = await StatsRepository(db).summary_tokens(SINCE, UNTIL)
    assert (summaries.prompt, summaries.completion, summaries.cached) == (200, 20, 100)


async def test_question_buckets_count_turns_and_unanswered_ones(db: Database):
    await _seed(db)
    buckets = await StatsRepository(db).question_buckets(
        SINCE, UNTIL, bucket_s=500.0, bucket_start=SINCE
    )
    # [1000,1500): t1, t4, t5 (failed), t6 (refused); [1500,2000): t2, t3 (failed)
    assert [(b.bucket, b.turns, b.not_answered) for b in buckets] == [(0, 4, 2), (1, 2, 1)]
