"""Business mode's rows: the owners' connections, their customers' chats, the drafts
waiting for the owner's approval (migration 0020). No rules here: who is served, when
the bot is silent and what a draft may become are services/business.py's decisions.

Every change of state is one conditional statement, so a step handled twice (a replay
after a crash) changes nothing the second time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from storage.actions import shown_now, withdraw_unseen
from storage.backend import Database, Row

WAITING = "waiting"
EDITING = "editing"
SENT = "sent"
DISCARDED = "discarded"


@dataclass(frozen=True, slots=True)
class Connection:
    """A business connection as Telegram last described it."""

    connection_id: str
    owner_id: int
    owner_chat_id: int  # the owner's private chat with the bot
    enabled: bool
    can_reply: bool
    approval: bool  # drafts go to the owner before the customer sees them


@dataclass(frozen=True, slots=True)
class BusinessChat:
    conversation_id: int
    connection_id: str
    chat_id: int
    paused_until: float | None


@dataclass(frozen=True, slots=True)
class Draft:
    draft_id: str
    connection_id: str
    chat_id: int
    message_id: int
    text: str
    status: str
    asked_at: float  # when the customer's message was sent (the 24-hour window)
    turn_id: str | None = None  # the turn that wrote it (its answer in the history)
    # the action the turn proposed: its card's words and ✅/✖ keyboard (JSON), posted with
    # the draft on Send
    operation_id: str | None = None
    card: str | None = None
    card_markup: str | None = None


def _connection(row: Row) -> Connection:
    return Connection(
        connection_id=str(row["connection_id"]),
        owner_id=int(row["owner_id"]),
        owner_chat_id=int(row["owner_chat_id"]),
        enabled=bool(row["enabled"]),
        can_reply=bool(row["can_reply"]),
        approval=bool(row["approval"]),
    )


def _draft(row: Row) -> Draft:
    return Draft(
        draft_id=str(row["draft_id"]),
        connection_id=str(row["connection_id"]),
        chat_id=int(row["chat_id"]),
        message_id=int(row["message_id"]),
        text=str(row["text"]),
        status=str(row["status"]),
        asked_at=float(row["asked_at"]),
        turn_id=None if row["turn_id"] is None else str(row["turn_id"]),
        operation_id=None if row["operation_id"] is None else str(row["operation_id"]),
        card=None if row["card"] is None else str(row["card"]),
        card_markup=None if row["card_markup"] is None else str(row["card_markup"]),
    )


_DRAFT_COLUMNS = (
    "draft_id, connection_id, chat_id, message_id, text, status, asked_at, turn_id,"
    " operation_id, card, card_markup"
)


class BusinessRepository:
    """`business_connections`, `business_chats`, `business_drafts`."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    # --- connections ------------------------------------------------------------------
    async def connection(self, connection_id: str) -> Connection | None:
        row = await self._db.fetch_one(
            "SELECT * FROM business_connections WHERE connection_id = ?", (connection_id,)
        )
        return None if row is None else _connection(row)

    async def save_connection(self, connection: Connection) -> Connection | None:
        """Insert or update a connection (its approval mode kept when it exists);
        returns what was stored before (None: new)."""
        async with self._db.transaction() as tx:
            await tx.lock(f"business:{connection.connection_id}")
            row = await tx.fetch_one(
                "SELECT * FROM business_connections WHERE connection_id = ?",
                (connection.connection_id,),
            )
            before = None if row is None else _connection(row)
            if before is None:
                await tx.execute(
                    "INSERT INTO business_connections (connection_id, owner_id, owner_chat_id,"
                    " enabled, can_reply, approval, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        connection.connection_id,
                        connection.owner_id,
                        connection.owner_chat_id,
                        int(connection.enabled),
                        int(connection.can_reply),
                        int(connection.approval),
                        self._clock(),
                    ),
                )
            else:
                await tx.execute(
                    "UPDATE business_connections SET owner_chat_id = ?, enabled = ?, "
                    "can_reply = ?, updated_at = ? WHERE connection_id = ?",
                    (
                        connection.owner_chat_id,
                        int(connection.enabled),
                        int(connection.can_reply),
                        self._clock(),
                        connection.connection_id,
                    ),
                )
            return before

    async def of_owner(self, owner_id: int) -> list[Connection]:
        rows = await self._db.fetch_all(
            "SELECT * FROM business_connections WHERE owner_id = ? ORDER BY connection_id",
            (owner_id,),
        )
        return [_connection(r) for r in rows]

    async def set_approval(self, owner_id: int, approval: bool) -> int:
        return await self._db.write(
            "UPDATE business_connections SET approval = ? WHERE owner_id = ?",
            (int(approval), owner_id),
        )

    # --- chats ------------------------------------------------------------------------
    async def chat(self, connection_id: str, chat_id: int) -> BusinessChat | None:
        row = await self._db.fetch_one(
            "SELECT conversation_id, connection_id, chat_id, paused_until FROM business_chats "
            "WHERE connection_id = ? AND chat_id = ?",
            (connection_id, chat_id),
        )
        if row is None:
            return None
        return BusinessChat(
            conversation_id=int(row["conversation_id"]),
            connection_id=str(row["connection_id"]),
            chat_id=int(row["chat_id"]),
            paused_until=None if row["paused_until"] is None else float(row["paused_until"]),
        )

    async def note_chat(self, conversation_id: int, connection_id: str, chat_id: int) -> None:
        """The chat is known (its conversation id kept for reading it back)."""
        await self._db.write(
            "INSERT INTO business_chats (conversation_id, connection_id, chat_id) "
            "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (conversation_id, connection_id, chat_id),
        )

    async def pause(
        self, conversation_id: int, connection_id: str, chat_id: int, until: float
    ) -> None:
        """The owner wrote by hand: silent until `until` (a later pause extends it)."""
        await self.note_chat(conversation_id, connection_id, chat_id)
        await self._db.write(
            "UPDATE business_chats SET paused_until = ? WHERE conversation_id = ? "
            "AND (paused_until IS NULL OR paused_until < ?)",
            (until, conversation_id, until),
        )

    async def resume(self, connection_ids: list[str], chat_id: int | None = None) -> int:
        """The bot answers again: in every chat of the connections, or one chat."""
        if not connection_ids:
            return 0
        marks = ",".join("?" * len(connection_ids))
        where = f"connection_id IN ({marks}) AND paused_until IS NOT NULL"
        params: list[object] = [*connection_ids]
        if chat_id is not None:
            where += " AND chat_id = ?"
            params.append(chat_id)
        return await self._db.write(
            f"UPDATE business_chats SET paused_until = NULL WHERE {where}", params
        )

    # --- drafts -----------------------------------------------------------------------
    async def add_draft(self, draft: Draft) -> None:
        await self._db.write(
            f"INSERT INTO business_drafts ({_DRAFT_COLUMNS}, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                draft.draft_id,
                draft.connection_id,
                draft.chat_id,
                draft.message_id,
                draft.text,
                draft.status,
                draft.asked_at,
                draft.turn_id,
                draft.operation_id,
                draft.card,
                draft.card_markup,
                self._clock(),
            ),
        )

    async def draft(self, draft_id: str) -> Draft | None:
        row = await self._db.fetch_one(
            f"SELECT {_DRAFT_COLUMNS} FROM business_drafts WHERE draft_id = ?", (draft_id,)
        )
        return None if row is None else _draft(row)

    async def editing(self, connection_ids: list[str]) -> Draft | None:
        """The draft the owner is rewriting (their next message is its text), if any."""
        if not connection_ids:
            return None
        marks = ",".join("?" * len(connection_ids))
        row = await self._db.fetch_one(
            f"SELECT {_DRAFT_COLUMNS} FROM business_drafts WHERE status = ? "
            f"AND connection_id IN ({marks}) ORDER BY created_at DESC LIMIT 1",
            (EDITING, *connection_ids),
        )
        return None if row is None else _draft(row)

    async def move_draft(
        self,
        draft_id: str,
        *,
        to: str,
        from_: tuple[str, ...],
        text: str | None = None,
        withdrawn: bool = False,
    ) -> bool:
        """One conditional move; False when the draft was not in one of `from_`. In the
        same transaction the history follows what the customer read (a discarded draft's
        answer leaves it — with the customer's question when they `withdrawn` it by
        deleting it —, a rewrite replaces it) and so does its action card (discarded: it
        can no longer be confirmed; sent: its time to be pressed starts now)."""
        marks = ",".join("?" * len(from_))
        now = self._clock()
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE business_drafts SET status = ?, decided_at = ?, "
                f"text = COALESCE(?, text) WHERE draft_id = ? AND status IN ({marks})",
                (to, now, text, draft_id, *from_),
            )
            if changed != 1:
                return False
            row = await tx.fetch_one(
                "SELECT turn_id, operation_id FROM business_drafts WHERE draft_id = ?",
                (draft_id,),
            )
            turn_id = None if row is None else row["turn_id"]
            operation_id = None if row is None else row["operation_id"]
            if operation_id is not None and to == DISCARDED:
                await withdraw_unseen(tx, str(operation_id), now=now)
            elif operation_id is not None and to == SENT:
                await shown_now(tx, str(operation_id), now=now)
            if turn_id is None:
                return True
            if to == DISCARDED:
                roles = "" if withdrawn else " AND role = 'assistant'"
                await tx.execute(f"DELETE FROM messages WHERE turn_id = ?{roles}", (turn_id,))
            elif to == SENT and text is not None:
                await tx.execute(
                    "UPDATE messages SET content = ? WHERE turn_id = ? AND role = 'assistant'",
                    (text, turn_id),
                )
        return True

    async def discard_for_messages(
        self, connection_id: str, chat_id: int, message_ids: list[int]
    ) -> int:
        """The customer deleted the messages: their undecided drafts are discarded, each
        as the owner's Discard would (the action card is withdrawn), and their turns leave
        the history, question and answer."""
        if not message_ids:
            return 0
        marks = ",".join("?" * len(message_ids))
        rows = await self._db.fetch_all(
            "SELECT draft_id FROM business_drafts WHERE connection_id = ? AND chat_id = ? "
            f"AND status IN (?, ?) AND message_id IN ({marks})",
            (connection_id, chat_id, WAITING, EDITING, *message_ids),
        )
        moved = 0
        for row in rows:
            draft_id = str(row["draft_id"])
            moved += await self.move_draft(
                draft_id, to=DISCARDED, from_=(WAITING, EDITING), withdrawn=True
            )
        return moved

    async def forget_turn(self, turn_id: str, *, question: bool) -> int:
        """A turn whose answer the customer never read leaves the history: its answer,
        and (`question`) the customer's message too when they deleted it. The turn itself
        stays in the records (turns, /stats)."""
        roles = "" if question else " AND role <> 'user'"
        return await self._db.write(f"DELETE FROM messages WHERE turn_id = ?{roles}", (turn_id,))

    # --- /stats -----------------------------------------------------------------------
    async def questions_by_channel(self, since: float, below: int) -> tuple[int, int]:
        """Turns since `since`: (in the bot's own chats, in the owners' chats: chat ids
        below `below`)."""
        row = await self._db.fetch_one(
            "SELECT COALESCE(SUM(CASE WHEN chat_id < ? THEN 0 ELSE 1 END), 0), "
            "COALESCE(SUM(CASE WHEN chat_id < ? THEN 1 ELSE 0 END), 0) "
            "FROM turns WHERE started_at >= ?",
            (below, below, since),
        )
        assert row is not None
        return int(row[0]), int(row[1])
