"""The daily roll-up of turn totals (`turn_totals_daily`) always equals `turns` itself.

It is written in each turn's own transaction, so a turn whose transaction fails leaves
neither; /stats reads whole days from it and the ragged ends from `turns`, and must give
exactly the figures of a scan of `turns`. A database migrated with turns already in it
gets the roll-up filled by the migration.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import storage.stats as stats_module
from storage.conversations import ConversationRepository
from storage.database import Database
from storage.migrations import apply_migrations, load_migrations
from storage.records import DAY_S, ModelCallRecord, TurnRecord, TurnRecorder
from storage.stats import StatsRepository

T0 = 1_700_000_000.0  # a real unix time, mid-day UTC

ROLLUP_VS_SCAN = """
SELECT COUNT(*), SUM(model_steps), MAX(model_steps), SUM(tool_calls),
       COALESCE(SUM(prompt_tokens) FILTER (WHERE completion_tokens IS NOT NULL), 0),
       COALESCE(SUM(completion_tokens) FILTER (WHERE prompt_tokens IS NOT NULL), 0),
       COALESCE(SUM(cached_tokens)
         FILTER (WHERE prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL), 0),
       COUNT(*) FILTER (WHERE prompt_tokens IS NULL OR completion_tokens IS NULL)
FROM turns
"""
ROLLUP_SUMS = """
SELECT SUM(turns), SUM(model_steps), MAX(max_model_steps), SUM(tool_calls),
       SUM(prompt_tokens), SUM(completion_tokens), SUM(cached_tokens), SUM(usage_unknown)
FROM turn_totals_daily
"""


def _turn(i: int, started_at: float, session_id: int, rng: random.Random) -> TurnRecord:
    known = rng.random() < 0.8
    prompt = rng.randrange(100, 2000)
    return TurnRecord(
        id=f"turn-{i}",
        session_id=session_id,
        chat_id=10 + i % 7,
        user_id=10 + i % 7,
        started_at=started_at,
        duration_ms=rng.uniform(100, 5000),
        status="answered" if rng.random() < 0.9 else "failed",
        stop_reason="completed",
        error_code=None,
        model_steps=rng.randrange(1, 4),
        tool_calls=rng.randrange(0, 3),
        prompt_tokens=prompt if known else None,
        completion_tokens=rng.randrange(10, 200) if known or rng.random() < 0.5 else None,
        total_tokens=None,
        prompt="support_chat@1",
        cached_tokens=rng.randrange(0, prompt) if rng.random() < 0.5 else None,
    )


async def _record_turns(db: Database, n: int, span_days: float) -> None:
    rng = random.Random(18)
    session = await ConversationRepository(db).open_session(10)
    recorder = TurnRecorder(db)
    for i in range(n):
        await recorder.save_turn(_turn(i, T0 + rng.uniform(0, span_days * DAY_S), session, rng))


async def test_every_recorded_turn_is_in_the_roll_up(db: Database) -> None:
    await _record_turns(db, 300, span_days=9)
    scan = tuple(await db.fetch_one(ROLLUP_VS_SCAN) or ())
    rolled = tuple(await db.fetch_one(ROLLUP_SUMS) or ())
    assert scan == rolled and scan[0] == 300
    days = await db.fetch_all("SELECT day FROM turn_totals_daily")
    assert len(days) >= 9 and all(row[0] % DAY_S == 0 for row in days)


async def test_a_turn_whose_transaction_fails_is_in_neither(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    rng = random.Random(1)
    bad_call = ModelCallRecord(
        purpose="not-a-purpose",
        requested_model="m",
        model="m",
        started_at=T0,
        latency_ms=1.0,
        status="ok",
    )
    with pytest.raises(Exception, match=r"(?i)check"):
        await TurnRecorder(db).save_turn(_turn(1, T0, session, rng), model_calls=[bad_call])
    assert (await db.fetch_one("SELECT COUNT(*) FROM turn_totals_daily"))[0] == 0  # type: ignore[index]


@pytest.mark.parametrize(
    ("since_days", "until_days"),
    [(None, 12.0), (0.3, 8.7), (1.0, 5.0), (2.5, 4.2), (3.9, 5.1), (-1.0, 30.0)],
)
async def test_figures_from_the_roll_up_equal_a_scan_of_the_turns(
    db: Database, monkeypatch: pytest.MonkeyPatch, since_days: float | None, until_days: float
) -> None:
    await _record_turns(db, 400, span_days=10)
    since = None if since_days is None else T0 + since_days * DAY_S
    until = T0 + until_days * DAY_S
    repo = StatsRepository(db)
    rolled = await repo.turn_figures(since, until)
    monkeypatch.setattr(stats_module, "ROLLUP_MIN_DAYS", 10**9)  # never use the roll-up
    scanned = await repo.turn_figures(since, until)
    assert rolled == scanned and scanned.count > 0


async def test_the_migration_fills_the_roll_up_from_existing_turns(tmp_path: Path) -> None:
    """A database with turns recorded before the roll-up existed (schema 8) is summed in."""
    import aiosqlite

    migrations = load_migrations()
    path = tmp_path / "old.sqlite3"
    async with aiosqlite.connect(path) as conn:
        await apply_migrations(conn, [m for m in migrations if m.version <= 8])
        await conn.execute("INSERT INTO sessions (id, chat_id, opened_at) VALUES (1, 10, 0)")
        await conn.executemany(
            "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
            " status, model_steps, tool_calls, prompt_tokens, completion_tokens, prompt)"
            " VALUES (?, 1, 10, 10, ?, 5.0, 'answered', ?, 1, ?, ?, 'p@1')",
            [
                ("a", T0, 2, 100, 10),
                ("b", T0 + 60, 3, None, 5),
                ("c", T0 + 2 * DAY_S, 1, 50, 7),
            ],
        )
        await conn.commit()
        await apply_migrations(conn, migrations)
        rows = await (
            await conn.execute(
                "SELECT day, turns, model_steps, max_model_steps, prompt_tokens, completion_tokens,"
                " usage_unknown FROM turn_totals_daily ORDER BY day"
            )
        ).fetchall()
    day = T0 // DAY_S * DAY_S
    assert [tuple(r) for r in rows] == [
        (day, 2, 5, 3, 100, 10, 1),
        (day + 2 * DAY_S, 1, 1, 1, 50, 7, 0),
    ]
