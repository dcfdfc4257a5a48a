"""Every word of `/stats` in Russian and English, and how numbers are written in each.

One typed table per language, like `bot.texts`: a missing word is an error at import
time. The period titles live here once; the table header, the photo caption and the
chart title all take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.texts import Language
from services.stats import StatsReport


@dataclass(frozen=True, slots=True)
class StatsWords:
    periods: dict[str, str]  # period key ("24h", "7d", "30d", "all") -> its title
    no_data: str
    usage: str
    chart_caption: str  # {period} {calls}
    tool_calls: str
    calls: str
    success: str
    business: str
    rejected: str
    timeouts: str
    technical: str
    duration: str
    unknown_tools: str  # {n}
    turns_title: str
    turns: str
    chats_users: str
    answered: str
    failed: str
    steps: str
    steps_value: str  # {mean} {max}
    tools_per_turn: str
    latency: str
    prompt_tokens: str
    completion_tokens: str
    usage_unknown: str
    usage_unknown_value: str  # {n}
    fallback: str
    summaries: str
    summaries_value: str  # {ok} {failed}
    resets: str
    ms: str
    s: str
    stop_reasons: dict[str, str]


EN = StatsWords(
    periods={"24h": "last 24 hours", "7d": "last 7 days", "30d": "last 30 days", "all": "all time"},
    no_data="No data for this period yet.",
    usage="Usage: /stats [24h|7d|30d|all] (default 24h)",
    chart_caption="Tool calls by status, {period}: {calls}",
    tool_calls="TOOL CALLS",
    calls="calls",
    success="success",
    business="business errors",
    rejected="rejected",
    timeouts="timeouts",
    technical="technical errors",
    duration="p50 / p95",
    unknown_tools="unknown tool names: {n}",
    turns_title="TURNS",
    turns="turns",
    chats_users="chats / users",
    answered="answered",
    failed="failed",
    steps="model steps",
    steps_value="{mean} avg, max {max}",
    tools_per_turn="tool calls / turn",
    latency="latency p50/p95",
    prompt_tokens="prompt tokens",
    completion_tokens="completion tokens",
    usage_unknown="usage unknown",
    usage_unknown_value="{n} turns",
    fallback="fallback answers",
    summaries="summaries",
    summaries_value="{ok} ok, {failed} failed",
    resets="/new resets",
    ms="ms",
    s="s",
    stop_reasons={},
)

RU = StatsWords(
    periods={"24h": "за 24 часа", "7d": "за 7 дней", "30d": "за 30 дней", "all": "за всё время"},
    no_data="Пока нет данных за этот период.",
    usage="Использование: /stats [24h|7d|30d|all] (по умолчанию 24h)",
    chart_caption="Вызовы инструментов по статусам {period}: {calls}",
    tool_calls="ВЫЗОВЫ ИНСТРУМЕНТОВ",
    calls="вызовов",
    success="успешно",
    business="бизнес-ошибки",
    rejected="отклонено",
    timeouts="таймауты",
    technical="тех. сбои",
    duration="p50 / p95",
    unknown_tools="неизвестные названия: {n}",
    turns_title="ХОДЫ ДИАЛОГА",
    turns="ходов",
    chats_users="чатов / польз.",
    answered="с ответом",
    failed="сбои",
    steps="шаги модели",
    steps_value="{mean} ср., макс {max}",
    tools_per_turn="инструм. на ход",
    latency="время p50/p95",
    prompt_tokens="токены запроса",
    completion_tokens="токены ответа",
    usage_unknown="токены неизвестны",
    usage_unknown_value="{n} ход.",
    fallback="ответы резервной",
    summaries="сводки",
    summaries_value="{ok} ок, {failed} сбой",
    resets="сбросы /new",
    ms="мс",
    s="с",
    stop_reasons={
        "completed": "завершён",
        "truncated": "обрезан",
        "refused": "отказ",
        "stopped": "остановлен",
    },
)

_BY_LANGUAGE: dict[Language, StatsWords] = {"ru": RU, "en": EN}


def words_for(language: Language) -> StatsWords:
    return _BY_LANGUAGE[language]


def usage_hint(language: Language) -> str:
    """The one-line reply to `/stats` with an argument that is not a period."""
    return words_for(language).usage


def chart_caption(report: StatsReport, language: Language) -> str:
    """One line under the chart photo; the chart's own title is the English caption."""
    words = words_for(language)
    return words.chart_caption.format(
        period=words.periods[report.period.key],
        calls=format_int(report.tool_calls_total, language),
    )


def format_int(value: int, language: Language) -> str:
    """`12,345` in English, `12 345` in Russian."""
    text = f"{value:,}"
    return text.replace(",", " ") if language == "ru" else text


def format_decimal(value: float, language: Language, digits: int = 2) -> str:
    """`1.67` in English, `1,67` in Russian."""
    text = f"{value:.{digits}f}"
    return text.replace(".", ",") if language == "ru" else text
