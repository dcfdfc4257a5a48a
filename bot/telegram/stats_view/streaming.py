"""The `/stats` lines about streamed answers: how many the customers stopped.

Lines under the questions block of the owner's view (`render_table` adds them).
"""

from __future__ import annotations

from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import Language
from services.stats import StatsReport

_WORDS: dict[Language, tuple[str, str]] = {
    "ru": ("остановлено покупателем", "с частью ответа"),
    "en": ("stopped by the customer", "with a partial answer"),
}
_WIDTH = 34


def stopped_block(report: StatsReport, language: Language) -> list[str]:
    """Two lines when customers stopped answers in the period, else none."""
    figures = report.stopped
    if not figures.stopped:
        return []
    title, partial = _WORDS[language]
    return [
        _line(title, format_int(figures.stopped, language), 1),
        _line(partial, format_int(figures.with_text, language), 3),
    ]


def _line(label: str, value: str, indent: int) -> str:
    left = " " * indent + label
    gap = max(1, _WIDTH - len(left) - len(value))
    return f"{left}{' ' * gap}{value}"
