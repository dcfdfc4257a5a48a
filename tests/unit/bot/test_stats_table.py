"""The `/stats` words and the phone-sized owner's table, drawn from real reports on real
SQLite: golden text in English and Russian."""

from __future__ import annotations

import dataclasses
import re
from zoneinfo import ZoneInfo

import pytest

from bot.telegram.stats_view.table import MESSAGE_LIMIT, TABLE_WIDTH, kv, render_table, share
from bot.telegram.stats_view.wording import EN, RU, chart_caption, plural, usage_hint
from bot.telegram.texts import LANGUAGES, Language
from services.stats import (
    NOT_ANSWERED_REASONS,
    PERIOD_SECONDS,
    Period,
    Prices,
    StatsReport,
    StatsService,
)
from storage.database import Database
from storage.stats import StatsRepository, ToolFigures
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed, _seed_owner_figures

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
        assert set(words.reasons) == set(NOT_ANSWERED_REASONS)
        for field in dataclasses.fields(words):
            assert getattr(words, field.name), field.name


GOLDEN_EN = """\
/stats · last 24 hours
01.01 00:16 – 01.01 00:33 UTC

QUESTIONS                        6
 answered                   3  50%
 not answered                    3
   AI service was down           2
   declined, off-topic           1
 customers                       3
 typical reply time         800 ms
 5% of replies over          3.0 s

SATISFACTION                   67%
 helpful                         2
 not helpful                     1
 rated answers              3 of 3

MODEL COST              ≈ 0.13 USD
 input tokens                  650
   from cache                  140
 output tokens                  65
 not counted           3 questions

TOOLS, for the curious
 calls of all tools             13

Order status
 calls                          10
 done                       4  40%
 said no                         3
 failed                          3
 typical / slow      50 ms / 5.0 s

Return policy
 calls                           1
 done                      1  100%
 said no                         0
 failed                          0
 typical / slow         15 / 15 ms

made-up tool names: 1            2"""

GOLDEN_RU = """\
/stats · за 7 дней
01.01 03:16 – 01.01 03:33 MSK

ВОПРОСЫ                          6
 с ответом                  3  50%
 без ответа                      3
   ИИ-сервис недоступен          2
   отказ, не по теме             1
 покупателей                     3
 обычное время ответа       800 мс
 5% ответов дольше           3,0 с

ОЦЕНКИ                         67%
 полезно                         2
 не помогло                      1
 оценено ответов            3 из 3

СТОИМОСТЬ МОДЕЛИ        ≈ 0,14 RUB
 токены запросов               650
   из кэша                     140
 токены ответов                 65
 не учтено               3 вопроса

ИНСТРУМЕНТЫ, подробности
 вызовов всех инструментов      13

Статус заказа
 вызовов                        10
 выполнено                  4  40%
 отказ                           3
 сбой                            3
 обычно / долго      50 мс / 5,0 с

Условия возврата
 вызовов                         1
 выполнено                 1  100%
 отказ                           0
 сбой                            0
 обычно / долго         15 / 15 мс

выдуманные названия: 1           2"""


async def test_golden_table_in_english(db: Database):
    """Owner's view first (questions, reasons, satisfaction, cost with cached input), then
    the tools; prices per 1M tokens 150 in / 75 cached in / 600 out."""
    await _seed(db)
    await _seed_owner_figures(db)
    service = StatsService(
        StatsRepository(db), clock=lambda: UNTIL, prices=Prices(150.0, 600.0, 75.0)
    )
    report = await service.report(Period("24h", SINCE, UNTIL))
    assert render_table(report, "en") == [GOLDEN_EN]
    assert max(len(line) for line in GOLDEN_EN.splitlines()) <= TABLE_WIDTH


async def test_golden_table_in_russian_in_the_stats_timezone(db: Database):
    """Times in STATS_TIMEZONE (Moscow, UTC+3); cached input at the input price when no
    cached price is set; the currency as configured."""
    await _seed(db)
    await _seed_owner_figures(db)
    service = StatsService(
        StatsRepository(db),
        clock=lambda: UNTIL,
        timezone=ZoneInfo("Europe/Moscow"),
        prices=Prices(150.0, 600.0, None, "RUB"),
    )
    report = await service.report(Period("7d", SINCE, UNTIL))
    assert render_table(report, "ru") == [GOLDEN_RU]
    assert max(len(line) for line in GOLDEN_RU.splitlines()) <= TABLE_WIDTH


async def test_without_prices_the_cost_says_so_and_still_counts_tokens(db: Database):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))
    text = "\n".join(render_table(report, "en"))
    assert kv("MODEL COST", "prices not set", indent=0) in text.splitlines()
    assert kv("input tokens", "450") in text.splitlines()
    assert "SATISFACTION" in text and " no ratings yet" in text.splitlines()


async def test_extra_sections_come_after_satisfaction_and_empty_ones_show_nothing(
    db: Database,
):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))

    def handoffs(language: Language) -> list[str]:
        return ["HANDOFFS" if language == "en" else "ПЕРЕДАНО ЛЮДЯМ", " to a person    2"]

    text = "\n".join(render_table(report, "en", sections=[handoffs, lambda _lang: []]))
    assert text.index("SATISFACTION") < text.index("HANDOFFS") < text.index("MODEL COST")
    assert "\n\n\n" not in text


async def test_caption_is_one_line_with_the_period_title(db: Database):
    await _seed(db)
    report = await _service(db).report(Period("24h", SINCE, UNTIL))
    assert chart_caption(report, "en") == "Questions, last 24 hours: 6, answered 3"
    assert chart_caption(report, "ru") == "Вопросы за 24 часа: 6, с ответом 3"


def test_no_raw_codes_in_the_owners_words():
    for words in (EN, RU):
        for field in dataclasses.fields(words):
            value = getattr(words, field.name)
            texts = value.values() if isinstance(value, dict) else [value]
            for text in texts:
                assert "_" not in text, (field.name, text)


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
        assert chunk.count("typical / slow") == chunk.count("tool_number_")


async def test_a_period_with_only_resets_has_nothing_for_the_owner(db: Database):
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO sessions (chat_id, opened_at, closed_at, close_reason)"
            " VALUES (5, 10.0, 20.0, 'reset')"
        )
    service = _service(db, now=100.0)
    report = await service.report(service.parse_period("all"))
    assert report.is_empty
    assert render_table(report, "en")[0].endswith("No data for this period yet.")


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
    assert "12,345" in english and "97%" in english and "850 ms / 1.2 s" in english
    assert "12 345" in russian and "97%" in russian and "850 мс / 1,2 с" in russian


def test_shares_near_the_ends_keep_a_decimal():
    assert share(999, 1000, "en") == "99.9%" and share(1, 1000, "ru") == "0,1%"
    assert share(1000, 1000, "en") == "100%" and share(0, 5, "en") == "0%"
    assert share(1, 3, "en") == "33%"


def test_counts_take_their_plural_forms_in_both_languages() -> None:
    forms_en, forms_ru = EN.questions_count, RU.questions_count
    assert [plural(n, forms_en, "en") for n in (1, 2, 21)] == [
        "1 question",
        "2 questions",
        "21 questions",
    ]
    assert [plural(n, forms_ru, "ru") for n in (1, 2, 5, 11, 12, 21, 22, 25, 111, 1001)] == [
        "1 вопрос",
        "2 вопроса",
        "5 вопросов",
        "11 вопросов",
        "12 вопросов",
        "21 вопрос",
        "22 вопроса",
        "25 вопросов",
        "111 вопросов",
        "1 001 вопрос",
    ]


def test_lookups_the_shop_could_not_answer_are_their_own_line_not_said_no() -> None:
    tools = (
        ToolFigures(
            tool_name="get_order_status",
            calls=10,
            success=5,
            business_errors={"not_found": 2, "unavailable": 3},
            rejected={},
            timeouts=0,
            technical_errors=0,
            p50_ms=20.0,
            p95_ms=40.0,
        ),
    )
    report = StatsReport(period=Period("all", None, NOW), since=0.0, until=NOW, tools=tools)
    english = "\n".join(render_table(report, "en"))
    russian = "\n".join(render_table(report, "ru"))
    assert re.search(r"said no\s+2\b", english), english
    assert re.search(r"shop unavailable\s+3\b", english), english
    assert re.search(r"магазин недоступен\s+3\b", russian), russian
