"""SQL for the durable inbox (`updates` table): record, reply, deliver, finish.

Status changes are guarded by the expected current status in the WHERE clause, so a
step that runs twice (a replay after a crash, a redelivered update) changes nothing the
second time; callers learn from the returned bool whether the row moved.

With several instances on one PostgreSQL database (`fence`: the claims'), the steps of an
answer — storing the reply, recording a delivered part, finishing the row — are also
fenced by the chat's claim (storage/coordination.py): they change the row only while this
instance holds a live claim on its chat, so an instance that outlived its lease (paused,
cut off) cannot overwrite what the chat's new owner did.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from storage.backend import Database
from storage.coordination import UNFENCED, InboxFence
from storage.database import StorageDataError, is_data_error

PENDING = "pending"
ANSWERED = "answered"
DELIVERED = "delivered"
FAILED = "failed"
UNKNOWN = "unknown"
IGNORED = "ignored"
FINAL_STATUSES = frozenset({DELIVERED, FAILED, UNKNOWN, IGNORED})
# rows per INSERT when recording a batch: 500 parameters, well inside both databases' limits
_RECORD_ROWS = 100

SQLITE_INT_MIN = -(2**63)
SQLITE_INT_MAX = 2**63 - 1

# Errors that come from one update's data, not from the store: storing the other updates
# of its batch still works. Any other error (locked, disk full, I/O) is the store's.
# PostgreSQL's data exceptions (the server's, and asyncpg refusing to encode a value,
# both SQLSTATE class 22/23) are re-raised by `record` as StorageDataError, a ValueError.
DATA_ERRORS: tuple[type[BaseException], ...] = (
    OverflowError,
    ValueError,  # includes UnicodeEncodeError and StorageDataError
    TypeError,
    RecursionError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.ProgrammingError,
)


@dataclass(frozen=True, slots=True)
class NewUpdate:
    """An update as received, before it is stored."""

    update_id: int
    chat_id: int | None
    user_id: int | None
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredReply:
    """One outgoing message of a reply: formatted text and its plain fallback.

    `reply_markup` is the message's keyboard as the Bot API's JSON object (e.g. a reply
    keyboard with a "share my phone number" button), stored so a resumed delivery sends
    the same keyboard; None for none.

    A part may go elsewhere than the update's chat (the handoff to operators: a relay
    to the customer, a mirror into the operators' topic): `chat_id` names that chat and
    `thread_id` the forum topic in it. A part with `copy_message_id` is a copy of that
    message of `copy_from_chat_id` (text, photo, document), not a text of its own.
    A part with `business_connection_id` is posted in a chat of the owner's business
    account, as the owner (Business mode).
    """

    html: str
    plain: str
    reply_to_message_id: int | None = None
    reply_markup: dict[str, Any] | None = None
    chat_id: int | None = None
    thread_id: int | None = None
    copy_from_chat_id: int | None = None
    copy_message_id: int | None = None
    business_connection_id: str | None = None


_OPTIONAL_PART_FIELDS = (
    "reply_markup",
    "chat_id",
    "thread_id",
    "copy_from_chat_id",
    "copy_message_id",
    "business_connection_id",
)


def _part_json(part: StoredReply) -> dict[str, Any]:
    """A part as stored: optional fields only when set, so older rows read the same."""
    stored: dict[str, Any] = {
        "html": part.html,
        "plain": part.plain,
        "reply_to_message_id": part.reply_to_message_id,
    }
    for name in _OPTIONAL_PART_FIELDS:
        value = getattr(part, name)
        if value is not None:
            stored[name] = value
    return stored


@dataclass(frozen=True, slots=True)
class InboxRow:
    update_id: int
    chat_id: int | None
    user_id: int | None
    received_at: float
    payload: dict[str, Any]
    status: str
    reply: tuple[StoredReply, ...]
    message_ids: tuple[int, ...]
    turn_id: str | None
    reason: str | None

    @property
    def undelivered(self) -> tuple[StoredReply, ...]:
        """Reply parts not yet accepted by Telegram (delivery resumes from here)."""
        return self.reply[len(self.message_ids) :]


_COLUMNS = (
    "update_id, chat_id, user_id, received_at, payload, status, reply, message_ids, turn_id, reason"
)


def unstorable_reason(update: NewUpdate) -> str | None:
    """Why the inbox cannot store `update`'s ids (a short code), or None if it can.

    A cheap check before the insert. Anything else about one update that the insert
    rejects (e.g. a lone surrogate in the text is not UTF-8) raises one of `DATA_ERRORS`.
    """
    for name, value in (
        ("update_id", update.update_id),
        ("chat_id", update.chat_id),
        ("user_id", update.user_id),
    ):
        if value is not None and not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
            return f"{name}_out_of_range"
    return None


def _row(record: Any) -> InboxRow:
    reply = json.loads(record["reply"]) if record["reply"] else []
    return InboxRow(
        update_id=int(record["update_id"]),
        chat_id=record["chat_id"],
        user_id=record["user_id"],
        received_at=float(record["received_at"]),
        payload=json.loads(record["payload"]),
        status=str(record["status"]),
        reply=tuple(StoredReply(**part) for part in reply),
        message_ids=tuple(json.loads(record["message_ids"] or "[]")),
        turn_id=record["turn_id"],
        reason=record["reason"],
    )


class InboxRepository:
    """The `updates` table; one method per state change."""

    def __init__(
        self, db: Database, *, clock: Any = time.time, fence: InboxFence = UNFENCED
    ) -> None:
        self._db = db
        self._clock = clock
        # several instances: this instance's claim fences the answer's steps (see above)
        self._fence = fence.sql
        self._fence_params = fence.params
        # rows this process moved to each final status (/metrics reads it at scrape time)
        self.finished: Counter[str] = Counter()

    async def record(self, updates: Sequence[NewUpdate]) -> list[int]:
        """Insert the batch in ONE committed transaction; return the ids that were new.

        An id already present (a redelivery or a replay) is left untouched. The rows go
        in as multi-row INSERTs of up to `_RECORD_ROWS`: one round trip to the database
        per hundred updates instead of one per update. While this transaction is open
        every turn's writes wait for it, so it lasts a moment, not a hundred round trips
        (under load a round trip waits behind the turns' reads: docs/benchmarks.md).
        """
        if not updates:
            return []
        now = self._clock()
        fresh: list[int] = []
        try:
            async with self._db.transaction() as tx:
                for start in range(0, len(updates), _RECORD_ROWS):
                    chunk = updates[start : start + _RECORD_ROWS]
                    params: list[object] = []
                    for update in chunk:
                        params += (
                            update.update_id,
                            update.chat_id,
                            update.user_id,
                            now,
                            json.dumps(update.payload, ensure_ascii=False, separators=(",", ":")),
                        )
                    rows = await tx.fetch_all(
                        "INSERT INTO updates (update_id, chat_id, user_id, received_at, payload)"
                        " VALUES "
                        + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
                        + " ON CONFLICT DO NOTHING RETURNING update_id",
                        params,
                    )
                    fresh += (int(row[0]) for row in rows)
        except Exception as exc:
            if not is_data_error(exc):
                raise
            # PostgreSQL's words may quote the update's text: they are dropped (from None)
            cause = exc.__cause__
            if isinstance(cause, (ValueError, OverflowError, TypeError)):
                raise cause from None  # asyncpg could not encode a value: as SQLite says it
            raise StorageDataError(f"SQLSTATE {getattr(exc, 'sqlstate', '')}") from None
        return fresh

    async def quarantine(self, entries: Sequence[tuple[int, str]]) -> int:
        """Record updates that cannot be stored: (update id, reason code), one commit.

        Only the id and the reason are kept, never the update. An id quarantined before
        (a redelivery) is left as it is. Returns how many were new.
        """
        if not entries:
            return 0
        now = self._clock()
        added = 0
        async with self._db.transaction() as tx:
            for update_id, reason in entries:
                added += await tx.execute(
                    "INSERT INTO quarantined_updates (update_id, received_at, reason) "
                    "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (str(update_id), now, reason),
                )
        return added

    async def get(self, update_id: int) -> InboxRow | None:
        record = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM updates WHERE update_id = ?", (update_id,)
        )
        return _row(record) if record is not None else None

    async def unfinished(self) -> list[InboxRow]:
        """Pending and answered rows, oldest first (the order they arrived in)."""
        records = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM updates WHERE status IN (?, ?) "
            "ORDER BY received_at, update_id",
            (PENDING, ANSWERED),
        )
        return [_row(r) for r in records]

    async def next_unfinished(self, kind: str, ident: int) -> InboxRow | None:
        """The oldest unfinished row of a chat (`kind` "chat", `ident` its id), or of an
        update without a chat ("update", its id): the claimed scheduler's queue.

        Status literals, not parameters, so the partial index on unfinished rows applies.
        """
        where = "chat_id = ?" if kind == "chat" else "update_id = ? AND chat_id IS NULL"
        record = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM updates WHERE {where} "
            f"AND status IN ('{PENDING}', '{ANSWERED}') "
            "ORDER BY received_at, update_id LIMIT 1",
            (ident,),
        )
        return _row(record) if record is not None else None

    async def oldest_answered_at(self) -> float | None:
        """When the longest-waiting stored answer was stored (None: none waits); /healthz.

        Reads only the unfinished rows (their partial index), so it stays cheap however
        large the table grows.
        """
        record = await self._db.fetch_one(
            "SELECT min(answered_at) FROM updates "
            "WHERE status IN (?, ?) AND status = ? AND answered_at IS NOT NULL",
            (PENDING, ANSWERED, ANSWERED),
        )
        return None if record is None or record[0] is None else float(record[0])

    async def count_unfinished(self) -> dict[str, int]:
        """Rows waiting to be answered (`pending`) or delivered (`answered`); /metrics.

        Reads only the unfinished rows (their partial index), so a scrape stays cheap
        however many finished rows the table keeps; finished rows are counted as they
        finish (`finished`).
        """
        counts = {PENDING: 0, ANSWERED: 0}
        # literals, not parameters: only then can SQLite prove the partial index applies
        # (INDEXED BY makes the query fail rather than scan the table if it cannot)
        hint = self._db.dialect.indexed_by("updates_unfinished")
        for status, count in await self._db.fetch_all(
            f"SELECT status, count(*) FROM updates {hint} "
            f"WHERE status IN ('{PENDING}', '{ANSWERED}') GROUP BY status"
        ):
            counts[str(status)] = int(count)
        return counts

    async def store_reply(
        self, update_id: int, parts: Sequence[StoredReply], *, turn_id: str | None = None
    ) -> bool:
        """pending → answered with the reply; False if the row was not pending."""
        reply = json.dumps([_part_json(p) for p in parts], ensure_ascii=False)
        changed = await self._db.write(
            "UPDATE updates SET status = ?, reply = ?, turn_id = ?, answered_at = ? "
            f"WHERE update_id = ? AND status = ?{self._fence}",
            (ANSWERED, reply, turn_id, self._clock(), update_id, PENDING, *self._fence_params),
        )
        return changed == 1

    async def drop_contact(self, update_id: int) -> None:
        """Remove a shared contact (phone number, names) from the stored update once it
        has been answered: the answer is stored, so the update is never handled again."""
        await self._db.write(
            f"UPDATE updates SET payload = {self._db.dialect.json_drop_contact('payload')} "
            "WHERE update_id = ? AND status != ?",
            (update_id, PENDING),
        )

    async def add_message_id(self, update_id: int, message_id: int) -> None:
        """One more reply part was accepted by Telegram."""
        await self._db.write(
            f"UPDATE updates SET message_ids = {self._db.dialect.json_append_id('message_ids')} "
            f"WHERE update_id = ? AND status = ?{self._fence}",
            (message_id, update_id, ANSWERED, *self._fence_params),
        )

    async def finish_delivered(self, update_id: int, last_message_id: int) -> bool:
        """The last part was accepted by Telegram: record its id and finish the row as
        delivered in one statement. Two writes would queue twice for the one writer,
        behind every other turn's writes (docs/benchmarks.md); False if the row was not
        answered."""
        changed = await self._db.write(
            f"UPDATE updates SET message_ids = {self._db.dialect.json_append_id('message_ids')}, "
            "status = ?, reason = NULL, finished_at = ? "
            f"WHERE update_id = ? AND status = ?{self._fence}",
            (
                last_message_id,
                DELIVERED,
                self._clock(),
                update_id,
                ANSWERED,
                *self._fence_params,
            ),
        )
        if changed == 1:
            self.finished[DELIVERED] += 1
        return changed == 1

    async def finish(self, update_id: int, status: str, *, reason: str | None = None) -> bool:
        """Move an unfinished row to a final status; False if it was already final."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"not a final status: {status}")
        changed = await self._db.write(
            "UPDATE updates SET status = ?, reason = ?, finished_at = ? "
            f"WHERE update_id = ? AND status IN (?, ?){self._fence}",
            (status, reason, self._clock(), update_id, PENDING, ANSWERED, *self._fence_params),
        )
        if changed == 1:
            self.finished[status] += 1
        return changed == 1

    async def reopen_failed(self, *, reasons: Collection[str], newer_than_s: float) -> int:
        """failed → answered for stored replies that failed for one of `reasons`.

        Which reasons mean "certainly not delivered, worth another try" is the sender's
        knowledge, so the caller names them. Returns how many rows were reopened.
        """
        if not reasons:
            return 0
        marks = ",".join("?" * len(reasons))
        return await self._db.write(
            "UPDATE updates SET status = ?, reason = NULL, finished_at = NULL "
            f"WHERE status = ? AND reply IS NOT NULL AND reason IN ({marks}) "
            "AND received_at >= ?",
            (ANSWERED, FAILED, *sorted(reasons), self._clock() - newer_than_s),
        )

    async def prune(self, *, older_than_s: float) -> int:
        """Delete finished rows received more than `older_than_s` ago; returns how many."""
        cutoff = self._clock() - older_than_s
        async with self._db.transaction() as tx:
            return await tx.execute(
                "DELETE FROM updates WHERE received_at < ? AND status NOT IN (?, ?)",
                (cutoff, PENDING, ANSWERED),
            )
