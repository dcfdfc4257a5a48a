"""What the bot could not answer, grouped by meaning; and a conversation as an admin reads it.

The gaps report (`GapsService.report`) takes the questions of a period whose outcome is
"don't know" (services/outcomes.py: a FAQ or knowledge search that found nothing, or the
answer said so), groups those about the same thing (services/similar.py; an embedder's
similarity when one is given, the lexical one otherwise), largest group first, and keeps
two real wordings of each — masked (services/masking.py), since an owner reads them and
may forward them. A group is named by the turn of its first question, so a button can
say which group it is about in a few bytes.

Reading a conversation (`ConversationReader`) returns the last messages of one chat,
paged, with the tool calls of each turn as short lines; every read is recorded (who,
whose, when, from where) before anything is shown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from services.masking import mask
from services.outcomes import GAP_OUTCOMES
from services.similar import SAME_GROUP, group_questions, similarity
from storage.outcomes import ConversationLine, MissedQuestion, OutcomeRepository

log = logging.getLogger(__name__)

GAP_PERIODS: dict[str, float | None] = {
    "24h": 24 * 3600.0,
    "7d": 7 * 86400.0,
    "30d": 30 * 86400.0,
    "all": None,
}
DEFAULT_GAP_PERIOD = "7d"
MAX_GROUPS = 10  # shown in one report; the rest are counted
WORDINGS = 2
PAGE = 12  # messages per page of a conversation


class GapsUsageError(ValueError):
    """The argument is not a known period."""


@dataclass(frozen=True, slots=True)
class GapGroup:
    """Questions about the same thing: how many, two masked wordings, the lead's turn."""

    key: str  # the turn id of its first question
    count: int
    chats: int
    wordings: tuple[str, ...]
    lead_chat_id: int


@dataclass(frozen=True, slots=True)
class GapsReport:
    period: str
    total: int  # questions not answered in the period
    groups: tuple[GapGroup, ...]  # largest first, at most MAX_GROUPS
    more_groups: int  # groups not shown


class QuestionEmbedder(Protocol):
    """The knowledge search's embedder (tools/knowledge/embedder.py), as far as grouping
    questions needs it: unit vectors, and the cosine below which texts are unrelated."""

    @property
    def min_similarity(self) -> float: ...

    async def embed_query(self, text: str) -> Any: ...


# a report of more questions is grouped by words: each takes the model ~20 ms idle,
# ~110 ms on this machine under load (query vectors: they tell paraphrases apart far
# better than passage vectors, measured)
MAX_EMBEDDED = 100
# where between the embedder's "unrelated" floor and 1 two questions count as one: for
# the bundled model (floor 0.84) 0.87, measured on paraphrases in Russian and English
# (same-meaning pairs 0.87-0.94, unrelated 0.72-0.86)
GROUP_BETWEEN = 0.19


class GapsService:
    """The gaps report; `embedder` groups questions by meaning (its cosine), else (None,
    or it fails) by their words."""

    def __init__(
        self,
        repository: OutcomeRepository,
        *,
        clock: Callable[[], float] = time.time,
        embedder: Callable[[], QuestionEmbedder | None] = lambda: None,
    ) -> None:
        self._repo = repository
        self._clock = clock
        self._embedder = embedder

    def parse_period(self, arg: str | None) -> str:
        key = (arg or "").strip().lower() or DEFAULT_GAP_PERIOD
        if key not in GAP_PERIODS:
            raise GapsUsageError(key)
        return key

    async def report(self, period: str, language: str) -> GapsReport:
        until = self._clock()
        length = GAP_PERIODS[period]
        since = None if length is None else until - length
        missed = await self._repo.missed(since, until, outcomes=[str(o) for o in GAP_OUTCOMES])
        # grouped on the masked words: a name or a phone says nothing about the question
        masked = [(m, " ".join(mask(m.text, language).split())) for m in missed]
        alike = await self._alike([text for _, text in masked])
        groups = group_questions(masked, _text, alike=alike)
        shown = tuple(_group(g.members) for g in groups[:MAX_GROUPS])
        return GapsReport(
            period=period,
            total=len(missed),
            groups=shown,
            more_groups=max(0, len(groups) - MAX_GROUPS),
        )

    async def _alike(self, texts: list[str]) -> Callable[[str, str], float]:
        """The similarity to group by: the embedder's cosine (rescaled so the group
        threshold means the same) where it answers, else the words' overlap."""
        embedder = self._embedder()
        if embedder is None or not texts or len(texts) > MAX_EMBEDDED:
            return similarity
        row: dict[str, Any] = {}
        try:
            for text in dict.fromkeys(texts):
                row[text] = await embedder.embed_query(text)
        except Exception as exc:
            log.warning("gaps grouped by words: the embedder failed (%s)", type(exc).__name__)
            return similarity
        floor = embedder.min_similarity
        cut = floor + (1 - floor) * GROUP_BETWEEN

        def alike(a: str, b: str) -> float:
            cosine = float(row[a] @ row[b]) if a in row and b in row else 0.0
            meaning = SAME_GROUP if cosine >= cut else 0.0
            return max(meaning + (cosine - cut), similarity(a, b))

        return alike

    async def question_of(self, turn_id: str) -> MissedQuestion | None:
        """A group's lead question (for "answer this"), unmasked: the admin answers it."""
        return await self._repo.question(turn_id)


def _text(question: tuple[MissedQuestion, str]) -> str:
    return question[1]


def _group(members: list[tuple[MissedQuestion, str]]) -> GapGroup:
    wordings: list[str] = []
    for _question, masked in reversed(members):  # the newest wordings first
        shown = masked if len(masked) <= 200 else masked[:199] + "…"
        if shown.lower() not in (w.lower() for w in wordings):
            wordings.append(shown)
        if len(wordings) == WORDINGS:
            break
    lead = members[0][0]
    return GapGroup(
        key=lead.turn_id,
        count=len(members),
        chats=len({q.chat_id for q, _ in members}),
        wordings=tuple(wordings),
        lead_chat_id=lead.chat_id,
    )


class KnowledgeWriter(Protocol):
    """Where an admin's answer goes: the shop's knowledge (tools/knowledge/base.py), as
    an entry searchable by the next question."""

    async def add_entry(self, title: str, text: str, *, url: str | None = None) -> int: ...


DRAFT_KEY = "qa:"  # an awaited answer that edits a draft (not a gap's turn id)
ANSWER_WITHIN_S = 3600.0  # an "Answer this" waits this long for the admin's message
MAX_ANSWER_CHARS = 3000


class GapAnswers:
    """ "Answer this": the admin presses it under a gap, and the next message they write
    becomes a knowledge entry at once — titled with the question (masked: the entry is
    the shop's text from now on), holding the admin's words."""

    def __init__(
        self,
        repository: OutcomeRepository,
        knowledge: KnowledgeWriter,
        *,
        clock: Callable[[], float] = time.time,
        edit_draft: Callable[[int, int, str], Awaitable[str | None]] | None = None,
    ) -> None:
        """`edit_draft(draft id, admin, answer)`: an edited draft's answer is added
        (services/answer_drafts.py), its question returned."""
        self._repo = repository
        self._knowledge = knowledge
        self._clock = clock
        self._edit_draft = edit_draft

    async def start_edit(self, admin_id: int, draft_id: int) -> None:
        """✏️ under a draft: the admin's next message is its answer."""
        key = f"{DRAFT_KEY}{draft_id}"
        await self._repo.await_answer(admin_id=admin_id, turn_id=key, at=self._clock())

    async def start(self, admin_id: int, turn_id: str, language: str) -> str | None:
        """Wait for the admin's answer to the gap of `turn_id`; the question as the entry
        will be titled, None when the question is not stored."""
        question = await self._repo.question(turn_id)
        if question is None:
            return None
        await self._repo.await_answer(admin_id=admin_id, turn_id=turn_id, at=self._clock())
        return entry_title(question.text, language)

    async def waiting(self, admin_id: int) -> str | None:
        """The turn whose gap the admin is answering now, if any."""
        return await self._repo.awaited_answer(admin_id, since=self._clock() - ANSWER_WITHIN_S)

    async def cancel(self, admin_id: int) -> bool:
        return await self._repo.drop_answer(admin_id)

    async def answer(self, admin_id: int, text: str, language: str) -> str | None:
        """The admin's words become the entry for the awaited question: its title, or
        None when no answer was awaited (or the question is gone)."""
        turn_id = await self.waiting(admin_id)
        if turn_id is None:
            return None
        if turn_id.startswith(DRAFT_KEY) and self._edit_draft is not None:
            await self._repo.drop_answer(admin_id, turn_id)
            draft_id = int(turn_id.removeprefix(DRAFT_KEY))
            return await self._edit_draft(draft_id, admin_id, text)
        question = await self._repo.question(turn_id)
        if question is None:
            await self._repo.drop_answer(admin_id)
            return None
        title = entry_title(question.text, language)
        await self._knowledge.add_entry(title, text.strip()[:MAX_ANSWER_CHARS])
        await self._repo.drop_answer(admin_id, turn_id)
        return title


def entry_title(question: str, language: str) -> str:
    """A customer's question as a knowledge entry's title: masked, one line, bounded."""
    title = " ".join(mask(question, language).split())
    return title if len(title) <= 200 else title[:199] + "…"


@dataclass(frozen=True, slots=True)
class ConversationPage:
    chat_id: int
    lines: tuple[ConversationLine, ...]
    older: int | None  # the message id to page back from, None at the start


class ConversationReader:
    """The last messages of a conversation for an admin, each read recorded."""

    def __init__(
        self, repository: OutcomeRepository, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._repo = repository
        self._clock = clock

    async def read(
        self, chat_id: int, *, admin_id: int, via: str, before: int | None = None
    ) -> ConversationPage | None:
        """A page of the chat's conversation (None: the bot never talked there); the
        read is recorded first."""
        if not await self._repo.known_chat(chat_id):
            return None
        await self._repo.record_view(admin_id=admin_id, chat_id=chat_id, via=via, at=self._clock())
        lines, older = await self._repo.conversation(chat_id, before_id=before, limit=PAGE)
        return ConversationPage(chat_id, tuple(lines), older)

    async def chat_of_turn(self, turn_id: str) -> int | None:
        return await self._repo.chat_of_turn(turn_id)
