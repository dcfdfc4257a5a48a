"""`StatsService`: periods, the typed report and the phone-sized table, on real SQLite."""

from __future__ import annotations

import pytest

from services.stats import (
    MESSAGE_LIMIT,
    TABLE_WIDTH,
    Period,
    StatsReport,
    StatsService,
    StatsUsageError,
    choose_bucket,
)
from storage.database import Database
from storage.stats import StatsRepository, ToolFigures
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


def test_usage_hint_names_every_period(db: Database):
    for lang in ("en", "ru"):
        hint = _service(db).usage_hint(lang)
        assert "/stats" in hint and all(p in hint for p in ("24h", "7d", "30d", "all"))
        assert "\n" not in hint


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
    assert chart.tools == ("get_order_status", "get_return_policy", "(unknown tools)")
    assert chart.bucket_start <= SINCE  # the bars end exactly at the end of the period
    assert chart.bucket_start + chart.bucket_count * chart.bucket_s == UNTIL
    assert sum(sum(v) for v in chart.counts.values()) == 13
    assert sum(chart.series("get_order_status", "success")) == 4


async def test_all_time_starts_at_the_first_activity(db: Database):
    await _seed(db)
    report = await _service(db, now=UNTIL).report(_service(db, now=UNTIL).parse_period("all"))
    assert report.since == 999.5
    assert report.tool_calls_total == 14
    assert report.turns.count == 7


async def test_table_in_english(db: Database):
    await _seed(db)
    service = _service(db)
    report = await service.report(Period("24h", SINCE, UNTIL))
    chunks = service.render_table(report, "en")
    assert len(chunks) == 1
    text = chunks[0]
    lines = text.splitlines()
    assert lines[0] == "/stats · last 24 hours"
    assert max(len(line) for line in lines) <= TABLE_WIDTH
    assert "get_order_status" in lines
    row = {line.split("  ")[0].strip(): line.split()[-1] for line in lines if "  " in line}
    assert row["TOOL CALLS"] == "13"
    assert "rate_limited" in text and "invalid_arguments" in text
    assert "50 ms / 5.0 s" in text  # p50 / p95 of get_order_status
    assert "unknown tool names: 1" in text
    assert "TURNS" in text and "turn_timeout" in text
    assert "3 turns" in text  # usage unknown, never counted as zero tokens
    assert "2 ok, 1 failed" in text


async def test_table_in_russian(db: Database):
    await _seed(db)
    service = _service(db)
    report = await service.report(Period("7d", SINCE, UNTIL))
    text = "\n".join(service.render_table(report, "ru"))
    assert text.startswith("/stats · за 7 дней")
    assert "ВЫЗОВЫ ИНСТРУМЕНТОВ" in text and "ХОДЫ ДИАЛОГА" in text
    assert "сбросы /new" in text
    assert max(len(line) for line in text.splitlines()) <= TABLE_WIDTH


@pytest.mark.parametrize(
    ("lang", "phrase"),
    [("en", "No data for this period yet."), ("ru", "Пока нет данных за этот период.")],
)
async def test_empty_period_says_no_data(db: Database, lang: str, phrase: str):
    service = _service(db)
    for arg in ("24h", "all"):
        report = await service.report(service.parse_period(arg))
        assert report.is_empty
        [text] = service.render_table(report, lang)
        assert text.splitlines()[-1] == phrase


def test_long_tables_are_split_under_the_message_limit(db: Database):
    tools = tuple(
        ToolFigures(
            tool_name=f"tool_number_{i:03d}",
            calls=100,
            success=90,
            business_errors={"rate_limited": 5, "not_found": 5},
            rejected={},
            timeouts=0,
            technical_errors=0,
            p50_ms=12.0,
            p95_ms=40.0,
        )
        for i in range(120)
    )
    report = StatsReport(period=Period("all", None, NOW), since=0.0, until=NOW, tools=tools)
    chunks = _service(db).render_table(report, "en")
    assert len(chunks) > 1
    assert all(len(chunk) <= MESSAGE_LIMIT for chunk in chunks)
    joined = "\n".join(chunks)
    for tool in tools:
        assert joined.count(tool.tool_name) == 1
    # a tool's block is never cut in half between two messages
    for chunk in chunks:
        assert chunk.count("p50 / p95") == chunk.count("tool_number_")


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
    text = "\n".join(service.render_table(report, "en"))
    assert "/new resets" in text and "No data" not in text


@pytest.mark.parametrize(("arg", "bars"), [("24h", 24), ("7d", 28), ("30d", 30)])
async def test_fixed_periods_draw_whole_bars(db: Database, arg: str, bars: int):
    await _seed(db)
    service = _service(db, now=UNTIL)
    period = service.parse_period(arg)
    report = await service.report(period)
    assert report.chart is not None
    assert report.chart.bucket_start == period.since
    assert report.chart.bucket_count == bars
