"""What became of a question: the honest outcome stored with its turn.

A turn that got an answer is not a question resolved. This module decides, from what the
turn did (its tool calls' audit, the facts its tools noted, the answer's words), which of
these it was — keys, not wording (the /stats view says them):

- `facts`: the answer stood on a tool's result (`fact_tools` names which);
- `no_facts`: an answer from no tool at all (a greeting, small talk, general words);
- `dont_know`: the shop's knowledge had nothing (a FAQ or knowledge search that found
  nothing, and no other fact), or the answer itself says the bot does not know;
- `handoff`: the model handed the customer to a person in this turn;
- `action`: the model proposed an action (resolved only when the shop carried it out);
- `declined`: refused, or withheld by the output guard;
- `failed`: the turn failed (the customer got an apology).

What happens later — a 👎 on the answer, a handoff within a day, the same question asked
again (`repeat_of`, decided here by `same_question` when the next turn is stored) — is
read at report time (storage/outcomes.py), so a stored turn is never rewritten.

The resolution rate of /stats counts a question as resolved only when it was answered
with facts (or an action the shop carried out) and was not followed by a handoff, a 👎
or a repeat within `FOLLOW_UP_S`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from storage.records import AuditRecord, AuditStatus
from tools.base import ActionProposed, ErrorCode, HandoffRequested, TurnNote
from tools.request_human import REQUEST_HUMAN

# how long after a question a handoff, a 👎 or the same question again still counts
# against it (the resolution rate's window)
FOLLOW_UP_S = 24 * 3600.0
# tools that answer from the shop's written knowledge: a "found nothing" from them is a
# gap in what the bot knows (an order lookup that finds nothing is the shop's data saying
# no, an answer with facts)
KNOWLEDGE_TOOLS = frozenset({"get_shop_info", "get_return_policy", "search_knowledge"})
# tools whose success is not a fact the answer stands on
_NOT_FACTS = frozenset({REQUEST_HUMAN})
_ACTION_PREFIX = "propose_"


class Outcome(StrEnum):
    FACTS = "facts"
    NO_FACTS = "no_facts"
    DONT_KNOW = "dont_know"
    HANDOFF = "handoff"
    ACTION = "action"
    DECLINED = "declined"
    FAILED = "failed"


# The outcomes that count as "the bot could not answer" (/gaps)
GAP_OUTCOMES = (Outcome.DONT_KNOW,)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    outcome: Outcome
    fact_tools: tuple[str, ...] = ()

    @property
    def fact_tools_text(self) -> str | None:
        return ",".join(self.fact_tools) or None


# An answer that says the bot does not know: the model's honest "no" without a tool's
# miss (e.g. it did not look anything up). Whole phrases only, Russian and English.
_DONT_KNOW = re.compile(
    r"\b(?:"
    r"i\s+(?:do\s*n[o']?t|don['’]t|really\s+don['’]t)\s+(?:know|have\s+(?:any\s+|that\s+)?"
    r"(?:information|details|data))"
    r"|i(?:['’]m|\s+am)\s+not\s+sure"
    r"|i\s+(?:can(?:not|['’]t)|could\s*n['’]t|am\s+unable\s+to)\s+"
    r"(?:find|answer|help\s+with\s+(?:that|this))"
    r"|(?:there\s+is\s+)?no\s+information\s+(?:about|on)"
    r"|(?:у\s+меня\s+)?нет\s+(?:никакой\s+)?(?:информации|данных|сведений)"
    r"|не\s+(?:знаю|располагаю|могу\s+(?:ответить|подсказать|сказать|найти))"
    r"|не\s+наш(?:ёл|ел|ла|лось|лись)"
    r"|затрудняюсь\s+ответить"
    r")",
    re.IGNORECASE,
)


def says_dont_know(answer: str | None) -> bool:
    """Whether the answer's words say the bot does not know."""
    return bool(answer) and _DONT_KNOW.search(answer or "") is not None


def classify(
    *,
    audits: Sequence[AuditRecord],
    notes: Iterable[TurnNote],
    answer: str | None,
    stop_reason: str | None,
    failed: bool = False,
) -> TurnOutcome:
    """The outcome of one turn (see the module notes); the first that applies wins:
    failed, declined, handoff, action, facts, don't know, no facts."""
    if failed:
        return TurnOutcome(Outcome.FAILED)
    if stop_reason in ("refused", "withheld"):
        return TurnOutcome(Outcome.DECLINED)
    noted = list(notes)
    if any(isinstance(n, HandoffRequested) for n in noted):
        return TurnOutcome(Outcome.HANDOFF)
    if any(isinstance(n, ActionProposed) for n in noted):
        return TurnOutcome(Outcome.ACTION)
    facts, knowledge_miss = _facts_of(audits)
    if facts and not (knowledge_miss and says_dont_know(answer)):
        return TurnOutcome(Outcome.FACTS, tuple(dict.fromkeys(facts)))
    if knowledge_miss or says_dont_know(answer):
        return TurnOutcome(Outcome.DONT_KNOW)
    return TurnOutcome(Outcome.NO_FACTS)


def _facts_of(audits: Sequence[AuditRecord]) -> tuple[list[str], bool]:
    """The tools whose results the answer could stand on, and whether the shop's
    knowledge was searched and had nothing."""
    facts: list[str] = []
    knowledge_miss = False
    for audit in audits:
        name = audit.tool_name
        if name in _NOT_FACTS or name.startswith(_ACTION_PREFIX):
            continue
        not_found = audit.status is AuditStatus.BUSINESS_ERROR and (
            audit.error_code == ErrorCode.NOT_FOUND
        )
        if not_found and name in KNOWLEDGE_TOOLS:
            knowledge_miss = True
        elif audit.status is AuditStatus.SUCCESS or not_found:
            facts.append(name)  # a "no such order" is the shop's data saying no: a fact
    return facts, knowledge_miss
