"""The durable outbox of messages that answer no update (`outgoing_messages`).

A reply to an update is stored in its inbox row before it is sent (storage/inbox.py).
What the bot says on its own — an action's result found by the background sweeper, the
staff's reminders — has no update to hang on, so it is stored here: `add` inside the
same transaction as the change it tells of (a crash after that change cannot lose the
message), then a delivery worker takes each due row (`take`: one conditional update, so
two instances never send one message at once), sends it and records the outcome. A try
that certainly did not reach Telegram is `retry`-ed later; an answer lost on the way
(`unknown`) is never resent blindly, as for replies.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from storage.backend import Database, Row, Tx

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to send: its key (what it tells, once), chat, formatted text, plain
    fallback and keyboard (the Bot API's JSON object, or None)."""

    key: str
    chat_id: int
    html: str
    plain: str
    reply_markup: dict[str, Any] | None = None
    business_connection_id: str | None = None  # a customer of the owner's business account


@dataclass(frozen=True, slots=True)
class OutgoingRow:
    message: Outgoing
    status: str
    attempts: int
    created_at: float


_COLUMNS = (
    "message_key, chat_id, html, plain, reply_markup, business_connection_id, status, "
    "attempts, created_at"
)


def _row(record: Row) -> OutgoingRow:
    markup = record["reply_markup"]
    return OutgoingRow(
        message=Outgoing(
            key=str(record["message_key"]),
            chat_id=int(record["chat_id"]),
            html=str(record["html"]),
            plain=str(record["plain"]),
            reply_markup=json.loads(markup) if markup else None,
            business_connection_id=record["business_connection_id"],
        ),
        status=str(record["status"]),
        attempts=int(record["attempts"]),
        created_at=float(record["created_at"]),
    )


async def add(tx: Tx, messages: Sequence[Outgoing], *, now: float) -> None:
    """Store `messages` in the caller's transaction; a key stored before is left as it is.
    They are sent in the order given (`created_at` a microsecond apart)."""
    for index, message in enumerate(messages):
        message = await _addressed(tx, message)
        markup = None
        if message.reply_markup is not None:
            markup = json.dumps(message.reply_markup, ensure_ascii=False)
        await tx.execute(
            "INSERT INTO outgoing_messages (message_key, chat_id, html, plain, reply_markup,"
            " business_connection_id, status, next_at, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)"
            " ON CONFLICT (message_key) DO NOTHING",
            (
                message.key,
                message.chat_id,
                message.html,
                message.plain,
                markup,
                message.business_connection_id,
                now,
                now + index * 1e-6,
            ),
        )


# Conversation ids of chats of the owner's business account lie below this
# (services/business.py's BUSINESS_CHATS_BELOW; storage does not import services).
_BUSINESS_CHATS_BELOW = -(2**62)


async def _addressed(tx: Tx, message: Outgoing) -> Outgoing:
    """A message to a business chat's conversation id goes to the customer's chat
    through the owner's connection (business_chats): the sweep's result of an action
    asked for there reaches the customer like any other."""
    if message.chat_id >= _BUSINESS_CHATS_BELOW or message.business_connection_id:
        return message
    row = await tx.fetch_one(
        "SELECT chat_id, connection_id FROM business_chats WHERE conversation_id = ?",
        (message.chat_id,),
    )
    if row is None:
        return message
    return replace(
        message,
        chat_id=int(row["chat_id"]),
        business_connection_id=str(row["connection_id"]),
    )


class OutgoingRepository:
    """The `outgoing_messages` table; one method per state change."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def add(self, messages: Sequence[Outgoing]) -> None:
        async with self._db.transaction() as tx:
            await add(tx, messages, now=self._clock())

    async def due(self, *, limit: int = 50) -> list[OutgoingRow]:
        """Pending messages whose try is due, oldest first."""
        records = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM outgoing_messages WHERE status = 'pending'"
            " AND next_at <= ? ORDER BY created_at, message_key LIMIT ?",
            (self._clock(), limit),
        )
        return [_row(r) for r in records]

    async def take(self, row: OutgoingRow, *, hold_s: float) -> bool:
        """This worker tries the message now: its next try moved `hold_s` on, on the
        attempts it saw (of two workers, one takes it; a worker that dies mid-try leaves
        it to be tried again after `hold_s`)."""
        changed = await self._db.write(
            "UPDATE outgoing_messages SET attempts = attempts + 1, next_at = ?"
            " WHERE message_key = ? AND status = 'pending' AND attempts = ?",
            (self._clock() + hold_s, row.message.key, row.attempts),
        )
        return changed == 1

    async def retry(self, key: str, *, after_s: float, reason: str) -> None:
        """Certainly not sent (Telegram unreachable): tried again after `after_s`."""
        await self._db.write(
            "UPDATE outgoing_messages SET next_at = ?, reason = ?"
            " WHERE message_key = ? AND status = 'pending'",
            (self._clock() + after_s, reason, key),
        )

    async def finish(
        self, key: str, status: str, *, message_id: int | None = None, reason: str | None = None
    ) -> bool:
        """pending → delivered | failed | unknown; False if it was finished already."""
        changed = await self._db.write(
            "UPDATE outgoing_messages SET status = ?, message_id = ?, reason = ?,"
            " finished_at = ? WHERE message_key = ? AND status = 'pending'",
            (status, message_id, reason, self._clock(), key),
        )
        return changed == 1

    async def get(self, key: str) -> tuple[str, int | None] | None:
        """The message's status and Telegram message id (tests, diagnostics)."""
        record = await self._db.fetch_one(
            "SELECT status, message_id FROM outgoing_messages WHERE message_key = ?", (key,)
        )
        if record is None:
            return None
        return str(record["status"]), record["message_id"]

    async def prune(self, *, older_than_s: float) -> int:
        """Delete finished messages created more than `older_than_s` ago."""
        return await self._db.write(
            "DELETE FROM outgoing_messages WHERE status <> 'pending' AND created_at < ?",
            (self._clock() - older_than_s,),
        )
