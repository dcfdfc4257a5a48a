"""The `/stats` lines about streamed answers: how many the customers stopped (issue 17).

Its own small section so the owner's view can place it; `render_table` appends it.
"""

from __future__ import annotations

from bot.stats_view.wording import format_int
from bot.texts import Language
from services.stats import StatsReport

_WORDS: dict[Language, tuple[str, str]] = {
    "ru": ("Остановлено клиентом", "с частью ответа"),
    "en": ("Stopped by customer", "with partial answer"),
}
_WIDTH = 34


def stopped_block(report: StatsReport, language: Language) -> list[str]:
    """Two lines when customers stopped answers in the period, else none."""
    figures = report.stopped
    if not figures.stopped:
        return []
    title, partial = _WORDS[language]
    return [
        _line(title, format_int(figures.stopped, language), 0),
        _line(partial, format_int(figures.with_text, language), 3),
    ]


def _line(label: str, value: str, indent: int) -> str:
    left = " " * indent + label
    gap = max(1, _WIDTH - len(left) - len(value))
    return f"{left}{' ' * gap}{value}"
