"""The `/stats` words and the phone-sized table, drawn from real reports on real SQLite."""

from __future__ import annotations

import dataclasses

import pytest

from bot.stats_view.table import MESSAGE_LIMIT, TABLE_WIDTH, render_table
from bot.stats_view.wording import EN, RU, chart_caption, usage_hint
from bot.texts import LANGUAGES, Language
from services.stats import PERIOD_SECONDS, Period, StatsReport, StatsService
from storage.database import Database
from storage.stats import StatsRepository, ToolFigures
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed

NOW = 1_800_000_000.0


def _service(db: Database, now: float = NOW) -> StatsService:
    return StatsService(StatsRepository(db), clock=lambda: now)


def test_usage_hint_names_every_period():
    for lang in LANGUAGES:
        hint = usage_hint(lang)
        assert "/stats" in hint and all(p in hint for p in PERIOD_SECONDS)
        assert "\n" not in hint


def test_every_period_has_a_title_in_every_language():
    for words in (EN, RU):
        assert set(words.periods) == set(PERIOD_SECONDS)
        for field in dataclasses.fields(words):
            value = getattr(words, field.name)
            assert value or field.name == "stop_reasons", field.name


async def test_table_in_english(db: Database):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))
    chunks = render_table(report, "en")
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
    report = await _service(db).report(Period("7d", SINCE, UNTIL))
    text = "\n".join(render_table(report, "ru"))
    assert text.startswith("/stats · за 7 дней")
    assert "ВЫЗОВЫ ИНСТРУМЕНТОВ" in text and "ХОДЫ ДИАЛОГА" in text
    assert "сбросы /new" in text
    assert max(len(line) for line in text.splitlines()) <= TABLE_WIDTH


async def test_caption_is_one_line_with_the_period_title(db: Database):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))
    assert chart_caption(report, "en") == "Tool calls by status, last 24 hours: 13"
    assert chart_caption(report, "ru") == "Вызовы инструментов по статусам за 24 часа: 13"


@pytest.mark.parametrize(
    ("lang", "phrase"),
    [("en", "No data for this period yet."), ("ru", "Пока нет данных за этот период.")],
)
async def test_empty_period_says_no_data(db: Database, lang: Language, phrase: str):
    service = _service(db)
    for arg in ("24h", "all"):
        report = await service.report(service.parse_period(arg))
        assert report.is_empty
        [text] = render_table(report, lang)
        assert text.splitlines()[-1] == phrase


def test_long_tables_are_split_under_the_message_limit():
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
    chunks = render_table(report, "en")
    assert len(chunks) > 1
    assert all(len(chunk) <= MESSAGE_LIMIT for chunk in chunks)
    joined = "\n".join(chunks)
    for tool in tools:
        assert joined.count(tool.tool_name) == 1
    # a tool's block is never cut in half between two messages
    for chunk in chunks:
        assert chunk.count("p50 / p95") == chunk.count("tool_number_")


async def test_a_period_with_only_resets_shows_them(db: Database):
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO sessions (chat_id, opened_at, closed_at, close_reason)"
            " VALUES (5, 10.0, 20.0, 'reset')"
        )
    service = _service(db, now=100.0)
    report = await service.report(service.parse_period("all"))
    text = "\n".join(render_table(report, "en"))
    assert "/new resets" in text and "No data" not in text


def test_numbers_follow_the_language():
    tools = (
        ToolFigures(
            tool_name="get_order_status",
            calls=12345,
            success=12000,
            business_errors={},
            rejected={},
            timeouts=0,
            technical_errors=0,
            p50_ms=850.0,
            p95_ms=1200.0,
        ),
    )
    report = StatsReport(period=Period("all", None, NOW), since=0.0, until=NOW, tools=tools)
    english = "\n".join(render_table(report, "en"))
    russian = "\n".join(render_table(report, "ru"))
    assert "12,345" in english and "97.2%" in english and "850 ms / 1.2 s" in english
    assert "12 345" in russian and "97,2%" in russian and "850 мс / 1,2 с" in russian
