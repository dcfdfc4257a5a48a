"""Rows of a handoff to a human operator: episodes (`handoffs`) and topics (`handoff_topics`).

A chat has at most one open handoff (the partial unique index in 0008 enforces it), so
opening one twice — a redelivered /operator, the model asking during an open handoff — is
a no-op that returns the open one. Closing is guarded by `closed_at IS NULL`, so a /close
followed by Telegram's "topic closed" service message closes once. Nothing here decides
who may open or close; that is `services/handoff.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from storage.backend import Database, Row

HandoffSource = Literal["command", "button", "model"]
SOURCES: tuple[HandoffSource, ...] = ("command", "button", "model")


@dataclass(frozen=True, slots=True)
class Handoff:
    id: int
    chat_id: int
    source: str
    reason: str | None
    started_at: float
    briefed_at: float | None
    first_reply_at: float | None
    closed_at: float | None


@dataclass(frozen=True, slots=True)
class Topic:
    """A customer's topic in the operators' forum; `topic_id` None: to be (re)created."""

    chat_id: int
    operator_chat_id: int
    topic_id: int | None
    title: str
    language: str  # the customer's, for the notices they get when operators act


@dataclass(frozen=True, slots=True)
class HandoffCounts:
    """Raw numbers for /stats over [since, until)."""

    started: dict[str, int]  # by source
    open_now: int
    closed: int
    first_reply_delays_s: tuple[float, ...]  # of handoffs started in the period, sorted


_HANDOFF_COLUMNS = "id, chat_id, source, reason, started_at, briefed_at, first_reply_at, closed_at"


def _handoff(row: Row) -> Handoff:
    return Handoff(
        id=int(row["id"]),
        chat_id=int(row["chat_id"]),
        source=str(row["source"]),
        reason=row["reason"],
        started_at=float(row["started_at"]),
        briefed_at=row["briefed_at"],
        first_reply_at=row["first_reply_at"],
        closed_at=row["closed_at"],
    )


class HandoffRepository:
    """SQL for handoffs and their topics."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    # --- episodes -------------------------------------------------------------------

    async def current(self, chat_id: int) -> Handoff | None:
        """The chat's open handoff, if any."""
        row = await self._db.fetch_one(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE chat_id = ? AND closed_at IS NULL",
            (chat_id,),
        )
        return None if row is None else _handoff(row)

    async def open(
        self, chat_id: int, *, source: HandoffSource, reason: str | None
    ) -> tuple[Handoff, bool]:
        """The chat's open handoff, opened now if there is none; True when it is new."""
        async with self._db.transaction() as tx:
            await tx.lock(f"handoff:{chat_id}")
            row = await tx.fetch_one(
                f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE chat_id = ? AND closed_at IS NULL",
                (chat_id,),
            )
            if row is not None:
                return _handoff(row), False
            created = await tx.fetch_one(
                "INSERT INTO handoffs(chat_id, source, reason, started_at) VALUES (?, ?, ?, ?) "
                f"RETURNING {_HANDOFF_COLUMNS}",
                (chat_id, source, reason, self._clock()),
            )
            assert created is not None
            return _handoff(created), True

    async def mark_briefed(self, handoff_id: int) -> None:
        await self._db.write(
            "UPDATE handoffs SET briefed_at = ? WHERE id = ? AND briefed_at IS NULL",
            (self._clock(), handoff_id),
        )

    async def mark_replied(self, handoff_id: int) -> None:
        """The first operator reply of this handoff was stored (later ones change nothing)."""
        await self._db.write(
            "UPDATE handoffs SET first_reply_at = ? WHERE id = ? AND first_reply_at IS NULL",
            (self._clock(), handoff_id),
        )

    async def close(self, chat_id: int, *, reason: str) -> Handoff | None:
        """Close the chat's open handoff; the closed row, or None when none was open."""
        async with self._db.transaction() as tx:
            row = await tx.fetch_one(
                "UPDATE handoffs SET closed_at = ?, close_reason = ? "
                f"WHERE chat_id = ? AND closed_at IS NULL RETURNING {_HANDOFF_COLUMNS}",
                (self._clock(), reason, chat_id),
            )
            return None if row is None else _handoff(row)

    # --- topics ---------------------------------------------------------------------

    async def topic_of(self, chat_id: int) -> Topic | None:
        row = await self._db.fetch_one(
            "SELECT chat_id, operator_chat_id, topic_id, title, language FROM handoff_topics "
            "WHERE chat_id = ?",
            (chat_id,),
        )
        if row is None:
            return None
        return Topic(
            chat_id=int(row["chat_id"]),
            operator_chat_id=int(row["operator_chat_id"]),
            topic_id=row["topic_id"],
            title=str(row["title"]),
            language=str(row["language"]),
        )

    async def customer_of(self, operator_chat_id: int, topic_id: int) -> int | None:
        """The customer chat whose topic this is; None for any topic the bot did not create."""
        row = await self._db.fetch_one(
            "SELECT chat_id FROM handoff_topics WHERE operator_chat_id = ? AND topic_id = ?",
            (operator_chat_id, topic_id),
        )
        return None if row is None else int(row["chat_id"])

    async def save_topic(
        self, chat_id: int, *, operator_chat_id: int, topic_id: int, title: str, language: str
    ) -> None:
        await self._db.write(
            "INSERT INTO handoff_topics"
            "(chat_id, operator_chat_id, topic_id, title, language, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET "
            "operator_chat_id = excluded.operator_chat_id, topic_id = excluded.topic_id, "
            "title = excluded.title, language = excluded.language, "
            "created_at = excluded.created_at",
            (chat_id, operator_chat_id, topic_id, title, language, self._clock()),
        )

    async def set_language(self, chat_id: int, language: str) -> None:
        await self._db.write(
            "UPDATE handoff_topics SET language = ? WHERE chat_id = ?", (language, chat_id)
        )

    async def forget_topic(self, operator_chat_id: int, topic_id: int) -> None:
        """The topic is gone (deleted by an operator): the next use creates a new one."""
        await self._db.write(
            "UPDATE handoff_topics SET topic_id = NULL WHERE operator_chat_id = ? AND topic_id = ?",
            (operator_chat_id, topic_id),
        )

    # --- history --------------------------------------------------------------------

    async def add_history(
        self, chat_id: int, *, role: Literal["user", "assistant"], content: str, key: str
    ) -> bool:
        """Add one message to the chat's open session history, once per `key`.

        `key` (stored as the message's turn id, e.g. "handoff:<update id>") makes a
        handler that runs again after a crash add nothing the second time. True if added.
        """
        async with self._db.transaction() as tx:
            # the session's get-or-create takes the same key as ConversationRepository's
            await tx.lock(f"chat:{chat_id}")
            row = await tx.fetch_one(
                "SELECT id FROM sessions WHERE chat_id = ? AND closed_at IS NULL", (chat_id,)
            )
            if row is None:
                row = await tx.fetch_one(
                    "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id",
                    (chat_id, self._clock()),
                )
                assert row is not None
            session_id = int(row["id"])
            seen = await tx.fetch_one(
                "SELECT 1 FROM messages WHERE session_id = ? AND turn_id = ?", (session_id, key)
            )
            if seen is not None:
                return False
            await tx.execute(
                "INSERT INTO messages(session_id, role, content, turn_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, role, content, key, self._clock()),
            )
            return True

    # --- /stats ---------------------------------------------------------------------

    async def open_count(self) -> int:
        row = await self._db.fetch_one("SELECT count(*) FROM handoffs WHERE closed_at IS NULL")
        return int(row[0]) if row else 0

    async def counts(self, since: float | None, until: float) -> HandoffCounts:
        start = since if since is not None else float("-inf")
        rows = await self._db.fetch_all(
            "SELECT source, count(*) AS n FROM handoffs "
            "WHERE started_at >= ? AND started_at < ? GROUP BY source",
            (start, until),
        )
        started: dict[str, int] = {str(source): 0 for source in SOURCES}
        started.update({str(r["source"]): int(r["n"]) for r in rows})
        open_now = await self.open_count()
        closed_row = await self._db.fetch_one(
            "SELECT count(*) FROM handoffs WHERE closed_at >= ? AND closed_at < ?",
            (start, until),
        )
        delays = await self._db.fetch_all(
            "SELECT first_reply_at - started_at AS d FROM handoffs "
            "WHERE started_at >= ? AND started_at < ? AND first_reply_at IS NOT NULL "
            "ORDER BY d",
            (start, until),
        )
        return HandoffCounts(
            started=started,
            open_now=open_now,
            closed=int(closed_row[0]) if closed_row else 0,
            first_reply_delays_s=tuple(float(r["d"]) for r in delays),
        )
