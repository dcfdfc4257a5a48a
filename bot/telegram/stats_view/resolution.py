"""The `/stats` lines about questions resolved, with the definition next to the figure.

"Answered" says only that the customer got words back; "resolved" is what a shop owner
means (services/outcomes.py): answered with facts from the shop's data or an action the
shop carried out, and not followed by a handoff, a 👎 or the same question again within
24 hours. The lines under it say what the other questions became, so a period of
greetings and "I don't know" reads as what it was. Placed in the questions block
(`render_table`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import Language
from services.stats import StatsReport

_WIDTH = 34


@dataclass(frozen=True, slots=True)
class _Words:
    resolved: str
    definition: tuple[str, ...]  # lines of at most _WIDTH - 3 characters
    outcomes: dict[str, str]  # outcome key -> words, in the order shown
    then: dict[str, str]  # what cost an answered question its resolution


_EN = _Words(
    resolved="resolved",
    definition=(
        "answered with facts or an action,",
        "no handoff, 👎 or repeat in 24 h",
    ),
    outcomes={
        "facts": "with facts",
        "no_facts": "without facts",
        "dont_know": "did not know (/gaps)",
        "handoff": "handed to a person",
        "action": "action proposed",
    },
    then={
        "disliked": "then 👎",
        "handed_off_later": "then a handoff",
        "repeated": "then asked again",
        "action_not_done": "action not done",
    },
)
_RU = _Words(
    resolved="решено",
    definition=(
        "ответ по данным или действие;",
        "без оператора, 👎 и повтора за 24 ч",
    ),
    outcomes={
        "facts": "по данным",
        "no_facts": "без данных",
        "dont_know": "не знал (/gaps)",
        "handoff": "передано человеку",
        "action": "предложено действие",
    },
    then={
        "disliked": "потом 👎",
        "handed_off_later": "потом оператор",
        "repeated": "потом спросили снова",
        "action_not_done": "действие не выполнено",
    },
)
WORDS: dict[Language, _Words] = {"en": _EN, "ru": _RU}


def resolution_block(report: StatsReport, language: Language) -> list[str]:
    """The resolved figure with its definition and what the questions became; none
    when no question of the period has a recorded outcome."""
    figures = report.outcomes
    recorded = sum(n for key, n in figures.by_outcome.items() if key)
    if not recorded:
        return []
    w = WORDS[language]
    asked = report.questions.asked
    pct = _share(figures.resolved, asked)
    lines = [_line(w.resolved, f"{format_int(figures.resolved, language)}  {pct}", 1)]
    lines.extend(f"   {text}" for text in w.definition)
    for key, words in w.outcomes.items():
        n = figures.by_outcome.get(key, 0)
        if n:
            lines.append(_line(words, format_int(n, language), 3))
    for key, words in w.then.items():
        n = int(getattr(figures, key))
        if n:
            lines.append(_line(words, format_int(n, language), 3))
    return lines


def _share(part: int, whole: int) -> str:
    """`25%`; never 0% or 100% for a share that is not."""
    if not whole:
        return ""
    if part in (0, whole):
        return f"{round(100 * part / whole)}%"
    return f"{min(max(round(100 * part / whole), 1), 99)}%"


def _line(label: str, value: str, indent: int) -> str:
    left = " " * indent + label
    gap = max(1, _WIDTH - len(left) - len(value))
    return f"{left}{' ' * gap}{value}"
