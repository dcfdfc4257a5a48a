"""`StatsService`: periods, the typed report and the chart buckets, on real SQLite.

The words and the table drawn from the report are tested in tests/unit/bot/test_stats_table.py.
"""

from __future__ import annotations

import pytest

from services.stats import (
    PERIOD_SECONDS,
    UNKNOWN_TOOLS,
    Period,
    StatsService,
    StatsUsageError,
    choose_bucket,
)
from storage.database import Database
from storage.stats import StatsRepository
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed

NOW = 1_800_000_000.0


def _service(db: Database, now: float = NOW) -> StatsService:
    return StatsService(StatsRepository(db), clock=lambda: now)


@pytest.mark.parametrize(
    ("arg", "key", "length"),
    [
        (None, "24h", 86400.0),
        ("", "24h", 86400.0),
        ("  24h ", "24h", 86400.0),
        ("7d", "7d", 7 * 86400.0),
        ("30D", "30d", 30 * 86400.0),
        ("all", "all", None),
    ],
)
def test_parse_period(db: Database, arg: str | None, key: str, length: float | None):
    period = _service(db).parse_period(arg)
    assert period.key == key
    assert period.until == NOW
    assert period.since == (None if length is None else NOW - length)


@pytest.mark.parametrize("arg", ["week", "1h", "24h 7d", "-1", "all please"])
def test_parse_period_rejects_anything_else(db: Database, arg: str):
    with pytest.raises(StatsUsageError):
        _service(db).parse_period(arg)


async def test_report_over_a_seeded_period(db: Database):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))
    assert [t.tool_name for t in report.tools] == ["get_order_status", "get_return_policy"]
    assert report.unknown_tools is not None
    assert report.unknown_tools.calls == 2 and report.unknown_tool_names == 1
    assert report.tool_calls_total == 13
    assert report.turns.count == 6
    assert report.model_steps_mean == pytest.approx(10 / 6)
    assert report.tool_calls_per_turn == pytest.approx(4 / 6)
    assert report.models.fallback_answers == 2
    assert report.resets == 2
    assert not report.is_empty
    chart = report.chart
    assert chart is not None
    assert chart.tools == ("get_order_status", "get_return_policy", UNKNOWN_TOOLS)
    assert chart.bucket_start <= SINCE  # the bars end exactly at the end of the period
    assert chart.bucket_start + chart.bucket_count * chart.bucket_s == UNTIL
    assert sum(sum(v) for v in chart.counts.values()) == 13
    assert sum(chart.series("get_order_status", "success")) == 4


async def test_an_empty_period_is_empty(db: Database):
    service = _service(db)
    for arg in PERIOD_SECONDS:
        report = await service.report(service.parse_period(arg))
        assert report.is_empty and report.tool_calls_total == 0
        assert report.chart is None or report.chart.tools == ()


async def test_all_time_starts_at_the_first_activity(db: Database):
    await _seed(db)
    report = await _service(db, now=UNTIL).report(_service(db, now=UNTIL).parse_period("all"))
    assert report.since == 999.5
    assert report.tool_calls_total == 14
    assert report.turns.count == 7


@pytest.mark.parametrize(
    ("span", "bucket"),
    [(86400.0, 3600.0), (7 * 86400.0, 6 * 3600.0), (30 * 86400.0, 86400.0), (60.0, 3600.0)],
)
def test_chart_buckets_fit_a_phone(span: float, bucket: float):
    assert choose_bucket(span) == bucket


async def test_a_period_with_only_resets_is_not_empty(db: Database):
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO sessions (chat_id, opened_at, closed_at, close_reason)"
            " VALUES (5, 10.0, 20.0, 'reset')"
        )
    service = _service(db, now=100.0)
    report = await service.report(service.parse_period("all"))
    assert not report.is_empty and report.resets == 1 and report.tool_calls_total == 0


@pytest.mark.parametrize(("arg", "bars"), [("24h", 24), ("7d", 28), ("30d", 30)])
async def test_fixed_periods_draw_whole_bars(db: Database, arg: str, bars: int):
    await _seed(db)
    service = _service(db, now=UNTIL)
    period = service.parse_period(arg)
    report = await service.report(period)
    assert report.chart is not None
    assert report.chart.bucket_start == period.since
    assert report.chart.bucket_count == bars
