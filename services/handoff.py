"""Handoff to a human operator: the decisions, with no Telegram in them.

- Is this chat with a person right now? (`current`): an open handoff in SQLite, so it
  survives a restart.
- Opening one (`start`, `request_from_model`) is idempotent per chat: the open one is
  returned again, so a redelivered /operator or a second `request_human` change nothing.
- The brief for the operators (`brief`): why (source, the model's reason), the running
  summary and the last few exchanges of the chat's session — the bot words it.
- What was said during a handoff enters the chat's history (`customer_said`,
  `operator_said`), once per update, so when the AI answers again it knows what a person
  promised: the operator's words are stored as what the shop said (the assistant role),
  marked as a person's.
- Working hours (`OperatorHours`): when operators answer, for the customer's notice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from services.history import to_pairs
from storage.conversations import ConversationRepository
from storage.database import StorageRetry
from storage.handoffs import Handoff, HandoffCounts, HandoffRepository, HandoffSource, Topic

# How a person's words are marked in the history the model reads
OPERATOR_PREFIX = "[A person from the shop's support team wrote:] "
BRIEF_EXCHANGES = 3
_HOURS_RE = re.compile(r"^(\d{1,2}):(\d{2})-(\d{1,2}):(\d{2})$")


@dataclass(frozen=True, slots=True)
class Exchange:
    customer: str
    answer: str


@dataclass(frozen=True, slots=True)
class HandoffBrief:
    """What operators read first in the topic (the bot words and formats it)."""

    source: str
    reason: str | None
    summary: str | None
    exchanges: tuple[Exchange, ...]


@dataclass(frozen=True, slots=True)
class OperatorHours:
    """Daily working hours of the operators, [start, end) in minutes at a UTC offset.

    `end` before `start` spans midnight (e.g. 22:00-06:00).
    """

    start_min: int
    end_min: int
    utc_offset_h: int = 0

    @classmethod
    def parse(cls, text: str, utc_offset_h: int = 0) -> OperatorHours:
        """ "09:00-18:00" → hours; `ValueError` with a short reason otherwise."""
        match = _HOURS_RE.fullmatch(text.strip())
        if match is None:
            raise ValueError("expected HH:MM-HH:MM, e.g. 09:00-18:00")
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2):
            raise ValueError("expected HH:MM-HH:MM with hours 00-24 and minutes 00-59")
        start, end = h1 * 60 + m1, h2 * 60 + m2
        if start == end:
            raise ValueError("start and end are the same time")
        return cls(start, end, utc_offset_h)

    def is_open(self, now: float) -> bool:
        local = datetime.fromtimestamp(now, UTC) + timedelta(hours=self.utc_offset_h)
        minute = local.hour * 60 + local.minute
        if self.start_min < self.end_min:
            return self.start_min <= minute < self.end_min
        return minute >= self.start_min or minute < self.end_min

    @property
    def label(self) -> str:
        """ "09:00–18:00 (UTC+3)" for the customer's notice."""

        def hhmm(minutes: int) -> str:
            return f"{minutes // 60:02d}:{minutes % 60:02d}"

        offset = f"UTC{self.utc_offset_h:+d}" if self.utc_offset_h else "UTC"
        return f"{hhmm(self.start_min)}–{hhmm(self.end_min)} ({offset})"


@dataclass(frozen=True, slots=True)
class HandoffStart:
    handoff: Handoff
    new: bool


class HandoffService:
    """Handoff state and history for the bot's handoff handlers and the `request_human` tool."""

    def __init__(
        self,
        repository: HandoffRepository,
        conversations: ConversationRepository,
        *,
        hours: OperatorHours | None = None,
        storage_retry: StorageRetry | None = None,
        clock: Callable[[], float],
    ) -> None:
        self._repo = repository
        self._conversations = conversations
        self._hours = hours
        self._retry = storage_retry or StorageRetry()
        self._clock = clock

    # --- state ----------------------------------------------------------------------

    async def current(self, chat_id: int) -> Handoff | None:
        return await self._repo.current(chat_id)

    async def start(self, chat_id: int, *, source: HandoffSource) -> HandoffStart:
        handoff, new = await self._retry.run(
            f"opening a handoff in chat {chat_id}",
            lambda: self._repo.open(chat_id, source=source, reason=None),
        )
        return HandoffStart(handoff, new)

    async def request_from_model(self, chat_id: int, reason: str) -> int | None:
        """`request_human`: open a handoff (source "model"); its id, None if one was open."""
        handoff, new = await self._repo.open(chat_id, source="model", reason=reason)
        return handoff.id if new else None

    async def mark_briefed(self, handoff_id: int) -> None:
        await self._retry.run(
            f"marking handoff {handoff_id} briefed", lambda: self._repo.mark_briefed(handoff_id)
        )

    async def close(self, chat_id: int, *, reason: Literal["command", "topic_closed"]) -> bool:
        """Close the chat's open handoff; False when none was open (nothing to tell)."""
        closed = await self._retry.run(
            f"closing the handoff of chat {chat_id}",
            lambda: self._repo.close(chat_id, reason=reason),
        )
        return closed is not None

    def operators_available(self) -> bool:
        return self._hours is None or self._hours.is_open(self._clock())

    @property
    def hours_label(self) -> str | None:
        return None if self._hours is None else self._hours.label

    # --- topics ---------------------------------------------------------------------

    async def topic_of(self, chat_id: int) -> Topic | None:
        return await self._repo.topic_of(chat_id)

    async def customer_of(self, operator_chat_id: int, topic_id: int) -> int | None:
        return await self._repo.customer_of(operator_chat_id, topic_id)

    async def save_topic(
        self, chat_id: int, *, operator_chat_id: int, topic_id: int, title: str, language: str
    ) -> None:
        await self._retry.run(
            f"storing the topic of chat {chat_id}",
            lambda: self._repo.save_topic(
                chat_id,
                operator_chat_id=operator_chat_id,
                topic_id=topic_id,
                title=title,
                language=language,
            ),
        )

    async def set_language(self, chat_id: int, language: str) -> None:
        """The customer's language as of their latest request (for the close notice)."""
        await self._retry.run(
            f"storing the language of chat {chat_id}",
            lambda: self._repo.set_language(chat_id, language),
        )

    async def forget_topic(self, operator_chat_id: int, topic_id: int) -> None:
        await self._retry.run(
            f"forgetting topic {topic_id}",
            lambda: self._repo.forget_topic(operator_chat_id, topic_id),
        )

    # --- what operators read and what the model will remember ----------------------

    async def brief(self, handoff: Handoff) -> HandoffBrief:
        """Why, the running summary and the last few exchanges of the chat's session."""
        return await self.brief_for(handoff.chat_id, source=handoff.source, reason=handoff.reason)

    async def brief_for(self, chat_id: int, *, source: str, reason: str | None) -> HandoffBrief:
        """The brief of a handoff known by its facts (the turn's offer, not a re-read)."""
        session_id = await self._conversations.current_session(chat_id)
        summary: str | None = None
        exchanges: tuple[Exchange, ...] = ()
        if session_id is not None:
            stored = await self._conversations.summary(session_id)
            summary = stored.content if stored is not None and stored.content.strip() else None
            recent = await self._conversations.recent_messages(
                session_id, limit=BRIEF_EXCHANGES * 2 + 1
            )
            exchanges = tuple(
                Exchange(p.user.content, p.assistant.content)
                for p in to_pairs(recent)
                if p.user is not None and p.assistant is not None
            )[-BRIEF_EXCHANGES:]
        return HandoffBrief(source=source, reason=reason, summary=summary, exchanges=exchanges)

    async def customer_said(self, chat_id: int, *, update_id: int, text: str) -> None:
        """A customer message mirrored to the operators: into the history, once."""
        await self._retry.run(
            f"storing the handoff message of update {update_id}",
            lambda: self._repo.add_history(
                chat_id, role="user", content=text, key=f"handoff:{update_id}"
            ),
        )

    async def operator_said(self, handoff: Handoff, *, update_id: int, text: str) -> None:
        """An operator reply relayed to the customer: into the history (as the shop's
        words, marked as a person's), once; the handoff's first reply time is noted."""
        await self._retry.run(
            f"storing the operator reply of update {update_id}",
            lambda: self._repo.add_history(
                handoff.chat_id,
                role="assistant",
                content=OPERATOR_PREFIX + text,
                key=f"handoff:{update_id}",
            ),
        )
        await self._retry.run(
            f"noting the reply to handoff {handoff.id}",
            lambda: self._repo.mark_replied(handoff.id),
        )

    async def counts(self, since: float | None, until: float) -> HandoffCounts:
        return await self._repo.counts(since, until)

    async def open_count(self) -> int:
        """Handoffs open right now (the /metrics gauge)."""
        return await self._repo.open_count()
