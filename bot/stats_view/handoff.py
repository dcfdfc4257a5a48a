"""The /stats section about handoffs to a person (issue 16), under the main table.

Kept apart from `table.py` on purpose: it is drawn only when OPERATOR_CHAT_ID is set, and
the owner's view of /stats is being rewritten in parallel (issue 18) — this is one block
to fold into it.
"""

from __future__ import annotations

from bot.stats_view.wording import format_decimal, format_int
from bot.texts import Language
from services.stats import HandoffStats

_WIDTH = 34  # as bot/stats_view/table.py
_MESSAGE_LIMIT = 4000  # as bot/stats_view/table.py

_WORDS: dict[Language, dict[str, str]] = {
    "ru": {
        "title": "Передано сотрудникам",
        "command": "командой /operator",
        "button": "кнопкой",
        "model": "по решению ИИ",
        "open": "открыто сейчас",
        "first_reply": "первый ответ, медиана",
        "closed": "завершено",
        "min": "мин",
        "s": "с",
    },
    "en": {
        "title": "Handed to a person",
        "command": "by /operator",
        "button": "by the button",
        "model": "by the AI",
        "open": "open now",
        "first_reply": "first reply, median",
        "closed": "closed",
        "min": "min",
        "s": "s",
    },
}


def _line(label: str, value: str, indent: int = 1) -> str:
    left = " " * indent + label
    gap = _WIDTH - len(left) - len(value)
    return left + " " * max(gap, 1) + value


def _duration(seconds: float | None, w: dict[str, str], language: Language) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{round(seconds)} {w['s']}"
    return f"{format_decimal(seconds / 60, language, 1)} {w['min']}"


def render_handoff_section(stats: HandoffStats, language: Language) -> str:
    """Plain monospace lines, the width of the main table."""
    w = _WORDS[language]
    return "\n".join(
        [
            _line(w["title"], format_int(stats.started, language), indent=0),
            _line(w["command"], format_int(stats.by_command, language)),
            _line(w["button"], format_int(stats.by_button, language)),
            _line(w["model"], format_int(stats.by_model, language)),
            _line(w["open"], format_int(stats.open_now, language)),
            _line(w["first_reply"], _duration(stats.first_reply_median_s, w, language)),
            _line(w["closed"], format_int(stats.closed, language)),
        ]
    )


def add_handoff_section(chunks: list[str], stats: HandoffStats, language: Language) -> list[str]:
    """The table's messages with the section under the last one (or in its own)."""
    section = render_handoff_section(stats, language)
    if chunks and len(chunks[-1]) + 2 + len(section) <= _MESSAGE_LIMIT:
        return [*chunks[:-1], f"{chunks[-1]}\n\n{section}"]
    return [*chunks, section]
