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
    assert chart.bucket_start <= SINCE  # the bars cover the period, on whole hours
    assert chart.bucket_start + chart.bucket_count * chart.bucket_s >= UNTIL
    assert chart.bucket_start % chart.bucket_s == 0
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


async def test_a_period_with_only_resets_is_empty_for_the_owner(db: Database):
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO sessions (chat_id, opened_at, closed_at, close_reason)"
            " VALUES (5, 10.0, 20.0, 'reset')"
        )
    service = _service(db, now=100.0)
    report = await service.report(service.parse_period("all"))
    assert report.is_empty and report.resets == 1 and report.tool_calls_total == 0


@pytest.mark.parametrize(("arg", "bars"), [("24h", 24), ("7d", 28), ("30d", 30)])
async def test_fixed_periods_draw_bars_on_whole_hours_and_days(db: Database, arg: str, bars: int):
    await _seed(db)
    service = _service(db, now=UNTIL)
    period = service.parse_period(arg)
    report = await service.report(period)
    chart = report.chart
    assert chart is not None and period.since is not None
    # bars start on a whole hour (a midnight for daily bars) at or before the period's
    # start and end with the bar holding "now", so one more bar than whole ones
    assert chart.bucket_start <= period.since < chart.bucket_start + chart.bucket_s
    assert chart.bucket_start % chart.bucket_s == 0
    assert chart.bucket_count == bars + 1
    assert chart.bucket_start + chart.bucket_count * chart.bucket_s > UNTIL


async def test_daily_bars_start_at_midnight_of_stats_timezone(db: Database):
    from zoneinfo import ZoneInfo

    moscow = ZoneInfo("Europe/Moscow")  # UTC+3 all year
    service = StatsService(StatsRepository(db), clock=lambda: NOW, timezone=moscow)
    await _seed(db)
    report = await service.report(service.parse_period("30d"))
    chart = report.chart
    assert chart is not None and chart.bucket_s == 86400.0 and chart.timezone is moscow
    # every bar begins at 00:00 Moscow time, which is 21:00 UTC
    assert (chart.bucket_start + 3 * 3600) % 86400 == 0
    assert report.timezone is moscow


def test_questions_answered_and_not_by_plain_reason():
    from services.stats import questions_of
    from storage.stats import TurnFigures

    turns = TurnFigures(
        count=11,
        users=4,
        answered=8,
        failed=3,
        answered_by_stop_reason={"completed": 5, "truncated": 1, "refused": 1, "withheld": 1},
        failed_by_error={"rate_limited": 1, "turn_timeout": 1, "protocol_error": 1},
    )
    q = questions_of(turns)
    assert (q.asked, q.answered, q.customers) == (11, 6, 4)  # a cut-short answer is one
    # a withheld answer has its own line: the owner sees why the answers were held back
    assert q.not_answered == {"unavailable": 2, "declined": 1, "withheld": 1, "failure": 1}
    assert q.not_answered_total == 5


def test_cost_prices_cached_input_apart_and_defaults_it_to_the_input_price():
    from services.stats import Prices
    from storage.stats import TokenFigures

    tokens = TokenFigures(prompt=1_000_000, completion=500_000, cached=400_000)
    assert Prices(1.0, 4.0, 0.25).cost(tokens) == pytest.approx(0.6 + 0.1 + 2.0)
    assert Prices(1.0, 4.0).cost(tokens) == pytest.approx(1.0 + 2.0)


async def test_report_carries_feedback_and_cost(db: Database):
    from services.stats import Prices
    from tests.unit.storage.test_stats import _seed_owner_figures

    await _seed(db)
    await _seed_owner_figures(db)
    service = StatsService(
        StatsRepository(db), clock=lambda: UNTIL, prices=Prices(1.0, 2.0, currency="EUR")
    )
    report = await service.report(Period("24h", SINCE, UNTIL))
    assert (report.feedback.up, report.feedback.down) == (2, 1)
    assert report.cost is not None and report.cost.currency == "EUR"
    assert (report.cost.tokens.prompt, report.cost.tokens.completion) == (650, 65)
    assert report.cost.amount == pytest.approx((650 * 1.0 + 65 * 2.0) / 1_000_000)
    assert report.cost.uncounted_turns == 3
    chart = report.chart
    assert chart is not None
    assert (sum(chart.answered), sum(chart.not_answered)) == (3, 3)
