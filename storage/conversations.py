"""Sessions, their history and their running summary, as stored rows.

A chat has at most one open session (the partial unique index in 0002 enforces it);
`/new` closes it with close_reason 'reset' and opens a fresh one. Closed sessions keep
their messages and summary for audit; nothing here decides what reaches the model.
History is stored as user/assistant pairs written in one transaction, so the integer
message id is the order of the conversation and a pair is never half-written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from storage.backend import Database, Row, Statement, Tx

Clock = Callable[[], float]

RESET = "reset"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    session_id: int
    role: str  # "user" | "assistant"
    content: str
    turn_id: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: int
    content: str
    covers_message_id: int  # the last message folded into the summary
    prompt: str  # the summary prompt's id@version
    updated_at: float


_INSERT_MESSAGE = (
    "INSERT INTO messages(session_id, role, content, turn_id, created_at, transcribed) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def pair_statements(
    *,
    session_id: int,
    user_text: str,
    assistant_text: str,
    turn_id: str | None,
    created_at: float,
    user_transcribed: bool = False,
) -> list[Statement]:
    """The user/assistant pair as two INSERTs, for a caller's `Database.write_all`.

    `user_transcribed`: the user's message is the transcript of a voice note.
    """
    return [
        (
            _INSERT_MESSAGE,
            (session_id, role, content, turn_id, created_at, 1 if transcribed else 0),
        )
        for role, content, transcribed in (
            ("user", user_text, user_transcribed),
            ("assistant", assistant_text, False),
        )
    ]


def _message(row: Row) -> StoredMessage:
    return StoredMessage(
        id=row["id"],
        session_id=row["session_id"],
        role=row["role"],
        content=row["content"],
        turn_id=row["turn_id"],
        created_at=row["created_at"],
    )


class ConversationRepository:
    """Rows of `sessions`, `messages` and `summaries`."""

    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock

    # --- sessions -------------------------------------------------------------------

    async def current_session(self, chat_id: int) -> int | None:
        row = await self._db.fetch_one(
            "SELECT id FROM sessions WHERE chat_id = ? AND closed_at IS NULL", (chat_id,)
        )
        return None if row is None else int(row["id"])

    async def open_session(self, chat_id: int) -> int:
        """The chat's open session, created on first use."""
        session_id = await self.current_session(chat_id)
        if session_id is not None:
            return session_id
        async with self._db.transaction() as tx:
            await tx.lock(f"chat:{chat_id}")
            row = await tx.fetch_one(
                "SELECT id FROM sessions WHERE chat_id = ? AND closed_at IS NULL", (chat_id,)
            )
            if row is not None:
                return int(row["id"])
            return await self._insert_session(tx, chat_id)

    async def reset(self, chat_id: int) -> int:
        """Close the open session (reason 'reset') and open a new one; returns the new id."""
        async with self._db.transaction() as tx:
            await tx.lock(f"chat:{chat_id}")
            await tx.execute(
                "UPDATE sessions SET closed_at = ?, close_reason = ? "
                "WHERE chat_id = ? AND closed_at IS NULL",
                (self._clock(), RESET, chat_id),
            )
            return await self._insert_session(tx, chat_id)

    async def _insert_session(self, tx: Tx, chat_id: int) -> int:
        row = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id",
            (chat_id, self._clock()),
        )
        assert row is not None
        return int(row[0])

    # --- messages -------------------------------------------------------------------

    async def recent_messages(
        self, session_id: int, *, limit: int, after_id: int = 0
    ) -> list[StoredMessage]:
        """The newest `limit` messages with id > after_id, oldest first."""
        rows = await self._db.fetch_all(
            "SELECT id, session_id, role, content, turn_id, created_at FROM messages "
            "WHERE session_id = ? AND id > ? ORDER BY id DESC LIMIT ?",
            (session_id, after_id, limit),
        )
        return [_message(row) for row in reversed(rows)]

    async def messages_between(
        self, session_id: int, *, after_id: int, before_id: int, limit: int
    ) -> list[StoredMessage]:
        """The oldest `limit` messages with after_id < id < before_id, oldest first."""
        rows = await self._db.fetch_all(
            "SELECT id, session_id, role, content, turn_id, created_at FROM messages "
            "WHERE session_id = ? AND id > ? AND id < ? ORDER BY id LIMIT ?",
            (session_id, after_id, before_id, limit),
        )
        return [_message(row) for row in rows]

    # --- summaries ------------------------------------------------------------------

    async def summary(self, session_id: int) -> SessionSummary | None:
        row = await self._db.fetch_one(
            "SELECT session_id, content, covers_message_id, prompt, updated_at "
            "FROM summaries WHERE session_id = ?",
            (session_id,),
        )
        if row is None:
            return None
        return SessionSummary(
            session_id=row["session_id"],
            content=row["content"],
            covers_message_id=row["covers_message_id"],
            prompt=row["prompt"],
            updated_at=row["updated_at"],
        )

    async def save_summary(
        self, session_id: int, *, content: str, covers_message_id: int, prompt_ref: str
    ) -> bool:
        """Store the summary unless a stored one already covers as much; True when stored.

        The guard keeps a summary from ever moving backwards, whatever order writers
        finish in.
        """
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "INSERT INTO summaries(session_id, content, covers_message_id, prompt, updated_at) "
                "VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET content = excluded.content, "
                "covers_message_id = excluded.covers_message_id, prompt = excluded.prompt, "
                "updated_at = excluded.updated_at "
                "WHERE excluded.covers_message_id > summaries.covers_message_id",
                (session_id, content, covers_message_id, prompt_ref, self._clock()),
            )
            return changed > 0
