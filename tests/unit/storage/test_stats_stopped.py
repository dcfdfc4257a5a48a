"""Stopped streamed answers in /stats: the query, the report and the lines."""

from __future__ import annotations

from bot.telegram.stats_view.table import render_table
from services.stats import StatsService
from storage.database import Database
from storage.stats import StatsRepository


async def _seed(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO sessions (id, chat_id, opened_at) VALUES (1, 10, 0.0)")
        turns = [
            ("s1", 1000.0, "stopped"),  # with a partial answer (below)
            ("s2", 1500.0, "stopped"),  # stopped before any text
            ("c1", 1600.0, "completed"),
            ("s3", 2000.0, "stopped"),  # outside [1000, 2000)
        ]
        await conn.executemany(
            "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
            " status, stop_reason, model_steps, tool_calls, prompt)"
            " VALUES (?, 1, 10, 10, ?, 10.0, 'answered', ?, 1, 0, 'support_chat@2')",
            turns,
        )
        await conn.executemany(
            "INSERT INTO messages (session_id, role, content, turn_id, created_at)"
            " VALUES (1, ?, ?, ?, 1000.0)",
            [
                ("user", "q", "s1"),
                ("assistant", "Первая часть", "s1"),
                ("user", "q", "c1"),
                ("assistant", "ответ", "c1"),
            ],
        )


async def test_stopped_turns_and_those_with_a_partial_answer(db: Database) -> None:
    await _seed(db)
    repo = StatsRepository(db)
    assert await repo.stopped_turns(1000.0, 2000.0) == (2, 1)
    assert await repo.stopped_turns(None, 3000.0) == (3, 1)
    assert await repo.stopped_turns(1700.0, 1900.0) == (0, 0)


async def test_the_stats_table_shows_them_in_both_languages(db: Database) -> None:
    await _seed(db)
    stats = StatsService(StatsRepository(db), clock=lambda: 2000.0)
    report = await stats.report(stats.parse_period("24h"))
    assert (report.stopped.stopped, report.stopped.with_text) == (2, 1)
    english = "\n".join(render_table(report, "en"))
    assert "stopped by the customer" in english and "with a partial answer" in english
    russian = "\n".join(render_table(report, "ru"))
    assert "остановлено покупателем" in russian and "с частью ответа" in russian
    quiet = StatsService(StatsRepository(db), clock=lambda: 500.0)
    assert "stopped" not in "\n".join(
        render_table(await quiet.report(quiet.parse_period("24h")), "en")
    )
