"""The /stats block about handoffs to a person, shown when OPERATOR_CHAT_ID
is set: the admin router passes it to `render_table` as an extra section."""

from __future__ import annotations

from bot.telegram.stats_view.table import kv
from bot.telegram.stats_view.wording import format_decimal, format_int
from bot.telegram.texts import Language
from services.stats import HandoffStats

_WORDS: dict[Language, dict[str, str]] = {
    "ru": {
        "title": "ПЕРЕДАНО СОТРУДНИКАМ",
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
        "title": "HANDED TO A PERSON",
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


def _duration(seconds: float | None, w: dict[str, str], language: Language) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{round(seconds)} {w['s']}"
    return f"{format_decimal(seconds / 60, language, 1)} {w['min']}"


def handoff_block(stats: HandoffStats, language: Language) -> list[str]:
    """The block's monospace lines, laid out like the rest of the owner's table."""
    w = _WORDS[language]
    return [
        kv(w["title"], format_int(stats.started, language), indent=0),
        kv(w["command"], format_int(stats.by_command, language)),
        kv(w["button"], format_int(stats.by_button, language)),
        kv(w["model"], format_int(stats.by_model, language)),
        kv(w["open"], format_int(stats.open_now, language)),
        kv(w["first_reply"], _duration(stats.first_reply_median_s, w, language)),
        kv(w["closed"], format_int(stats.closed, language)),
    ]
