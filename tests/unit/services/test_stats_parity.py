"""/stats gives the same report on SQLite and PostgreSQL from the same history.

The same forty days (tests/unit/services/stats_history.py, written through the bot's own
repositories) go into a fresh SQLite file and a fresh PostgreSQL database; then every
period the owner can ask for, in UTC and in a time zone with a different midnight, must
give an equal `StatsReport` (every figure and its type, the chart's buckets, dict orders),
the same owner's table text and the same handoff figures. Both percentile strategies
(sorting a short period, walking the ordered index) are covered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import storage.stats as stats_module
from bot.telegram.stats_view.handoff import handoff_block
from bot.telegram.stats_view.table import render_table
from services.stats import PERIOD_SECONDS, Prices, StatsReport, StatsService, handoff_stats
from storage.backend import Database
from storage.database import open_database
from storage.handoffs import HandoffRepository
from storage.stats import StatsRepository
from storage.voice import VoiceNoteRepository
from tests.unit.services.stats_history import NOW, Seeded, seed_history

pytestmark = pytest.mark.postgres

ZONES: tuple[tzinfo, ...] = (UTC, ZoneInfo("America/New_York"), ZoneInfo("Asia/Kolkata"))
PRICES = Prices(input_per_1m=2.5, output_per_1m=10.0, cached_input_per_1m=1.25, currency="EUR")


@pytest.fixture
async def both(tmp_path: Path, pg_url: str) -> AsyncIterator[tuple[Database, Database, Seeded]]:
    """A fresh SQLite file and a fresh PostgreSQL database, the same history in each."""
    sqlite = await open_database(tmp_path / "stats.sqlite3")
    postgres = await open_database(pg_url)
    try:
        seeded = await seed_history(sqlite)
        assert await seed_history(postgres) == seeded
        yield sqlite, postgres, seeded
    finally:
        await sqlite.close()
        await postgres.close()


async def _report(db: Database, period: str, zone: tzinfo) -> StatsReport:
    service = StatsService(
        StatsRepository(db),
        clock=lambda: NOW,
        voice=VoiceNoteRepository(db),
        timezone=zone,
        prices=PRICES,
    )
    return await service.report(service.parse_period(period))


async def _owner_view(db: Database, report: StatsReport) -> list[str]:
    """The table the owner reads, in both languages, with the handoff section."""
    handoffs = handoff_stats(await HandoffRepository(db).counts(report.period.since, NOW))
    return [
        text
        for language in ("en", "ru")
        for text in render_table(
            report, language, sections=[lambda lang: handoff_block(handoffs, lang)]
        )
    ]


def _ordered(value: Any) -> Any:
    """`value` with every dict as its list of items and every number with its type, so
    equal means equal in order too, and a PostgreSQL Decimal (its SUM of integers) is not
    equal to SQLite's int."""
    if isinstance(value, dict):
        return [(_ordered(k), _ordered(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [_ordered(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return (
            type(value).__name__,
            [_ordered(getattr(value, f)) for f in value.__dataclass_fields__],
        )
    return (type(value).__name__, value)


@pytest.mark.parametrize("strategy", ["sort", "walk"])
async def test_every_period_and_zone_gives_the_same_report(
    both: tuple[Database, Database, Seeded], strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if strategy == "walk":
        monkeypatch.setattr(stats_module, "SORT_LIMIT", 0)
    sqlite, postgres, _ = both
    for zone in ZONES:
        for period in PERIOD_SECONDS:
            on_sqlite = await _report(sqlite, period, zone)
            on_postgres = await _report(postgres, period, zone)
            assert on_postgres == on_sqlite, (period, zone)
            assert _ordered(on_postgres) == _ordered(on_sqlite), (period, zone)
            assert await _owner_view(postgres, on_postgres) == await _owner_view(
                sqlite, on_sqlite
            ), (period, zone)


async def test_the_compared_reports_are_not_trivially_equal(
    both: tuple[Database, Database, Seeded],
) -> None:
    """Equal empty reports would prove nothing: every section has figures to compare."""
    _, postgres, seeded = both
    everything = await _report(postgres, "all", ZoneInfo("America/New_York"))
    assert everything.turns.count == seeded.turns
    assert everything.tool_calls_total == seeded.tool_calls
    turns = everything.turns
    assert set(turns.answered_by_stop_reason) == {
        "completed",
        "truncated",
        "refused",
        "withheld",
        "stopped",
    }
    assert set(turns.failed_by_error) == {"unavailable", "turn_timeout", "internal_error"}
    assert turns.usage_unknown and turns.usage_known and turns.cached_tokens
    assert everything.questions.not_answered.keys() == {
        "unavailable",
        "declined",
        "withheld",
        "failure",
    }
    assert {t.tool_name for t in everything.tools} == {
        "get_order_status",
        "get_return_policy",
        "get_shop_info",
        "request_human",
    }
    assert everything.unknown_tool_names == 2
    tools = everything.tools
    assert {code for t in tools for code in t.business_errors} == {
        "not_found",
        "rate_limited",
        "unknown",  # stored without a code
    }
    assert {code for t in tools for code in t.rejected} == {"invalid_arguments"}
    assert sum(t.timeouts for t in tools) and sum(t.technical_errors for t in tools)
    assert all(t.p50_ms is not None and t.p95_ms is not None for t in tools)
    assert everything.models.fallback_answers and everything.models.summaries_failed
    assert everything.resets and everything.feedback.up and everything.feedback.down
    assert everything.stopped.stopped == 2 * everything.stopped.with_text
    assert everything.voice.received == seeded.voice_notes
    assert everything.cost is not None and everything.cost.amount
    assert everything.chart is not None and sum(everything.chart.not_answered)
    day = await _report(postgres, "24h", UTC)
    month = await _report(postgres, "30d", UTC)
    assert 0 < day.turns.count < month.turns.count < everything.turns.count
    handoffs = await HandoffRepository(postgres).counts(None, NOW)
    assert handoffs.open_now and handoffs.closed and len(handoffs.first_reply_delays_s) == 3
