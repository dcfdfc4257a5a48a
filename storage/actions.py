"""Rows of the actions a customer confirms (`pending_actions`) and the local backend's
records of what it carried out (`order_cancellations`, `order_returns`).

No rules here: which transitions are allowed and when is services/actions.py's; this
module makes each transition one conditional UPDATE (`WHERE status IN (...)`), so two
presses (or two instances) racing for one row move it once, on both backends. A result
and the line it adds to the chat's history are written in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from storage.backend import Database, Row, Tx
from storage.outgoing import Outgoing, add


class ActionStatus(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    EXECUTING = "executing"
    DONE = "done"
    FAILED = "failed"
    DECLINED = "declined"
    EXPIRED = "expired"
    NEEDS_ATTENTION = "needs_attention"  # the outcome stayed unknown: a person checks


FINISHED = frozenset(
    {
        ActionStatus.DONE,
        ActionStatus.FAILED,
        ActionStatus.DECLINED,
        ActionStatus.EXPIRED,
        ActionStatus.NEEDS_ATTENTION,
    }
)
_INSERTED = (
    "operation_id, action, order_number, chat_id, user_id, arguments, effect, done_words,"
    " status, reason, reference, press_update, turn_id, created_at, expires_at, updated_at"
)
_COLUMNS = f"{_INSERTED}, attempts, next_try_at, last_answer, language"


@dataclass(frozen=True, slots=True)
class ActionRow:
    operation_id: str
    action: str
    order_number: str
    chat_id: int
    user_id: int
    arguments: str  # JSON
    effect: str  # JSON {language: words}
    done_words: str  # JSON {language: words}
    status: ActionStatus
    reason: str | None
    reference: str | None
    press_update: int | None
    turn_id: str | None
    created_at: float
    expires_at: float
    updated_at: float
    attempts: int = 0  # the sweeper's asks of the shop after the press
    next_try_at: float | None = None
    last_answer: str | None = None  # the shop's last answer while unknown (a short code)
    language: str | None = None  # the customer's, noted at the press


@dataclass(frozen=True, slots=True)
class NewAction:
    operation_id: str
    action: str
    order_number: str
    chat_id: int
    user_id: int
    arguments: str
    effect: str
    done_words: str
    turn_id: str | None
    expires_at: float


@dataclass(frozen=True, slots=True)
class ActionCounts:
    """/stats: actions proposed in a period and what became of them."""

    proposed: int = 0
    confirmed: int = 0  # pressed ✅ (then done, failed or still running)
    declined: int = 0
    expired: int = 0  # replaced, or never pressed in time
    done: int = 0
    failed: int = 0
    needs_attention: int = 0  # the outcome stayed unknown: a person checks
    resolved_questions: int = 0  # turns whose proposal ended done (two orders cancelled: one)


class RequestStatus(StrEnum):
    OPEN = "open"
    REFUSING = "refusing"  # a person pressed Refuse; their next message is the reason
    DONE = "done"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ActionRequest:
    """A confirmed action the shop's people carry out (the local backend)."""

    operation_id: str
    order_number: str
    status: RequestStatus
    created_at: float
    escalated_at: float | None = None
    refusal: str | None = None


_REQUEST_COLUMNS = "operation_id, order_number, status, created_at, escalated_at, refusal"


def _request(row: Row) -> ActionRequest:
    return ActionRequest(
        operation_id=row["operation_id"],
        order_number=row["order_number"],
        status=RequestStatus(row["status"]),
        created_at=float(row["created_at"]),
        escalated_at=None if row["escalated_at"] is None else float(row["escalated_at"]),
        refusal=row["refusal"],
    )


def _row(row: Row) -> ActionRow:
    return ActionRow(
        operation_id=row["operation_id"],
        action=row["action"],
        order_number=row["order_number"],
        chat_id=int(row["chat_id"]),
        user_id=int(row["user_id"]),
        arguments=row["arguments"],
        effect=row["effect"],
        done_words=row["done_words"],
        status=ActionStatus(row["status"]),
        reason=row["reason"],
        reference=row["reference"],
        press_update=None if row["press_update"] is None else int(row["press_update"]),
        turn_id=row["turn_id"],
        created_at=float(row["created_at"]),
        expires_at=float(row["expires_at"]),
        updated_at=float(row["updated_at"]),
        attempts=int(row["attempts"]),
        next_try_at=None if row["next_try_at"] is None else float(row["next_try_at"]),
        last_answer=row["last_answer"],
        language=row["language"],
    )


class ActionRepository:
    """The `pending_actions` table."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def address_of(self, chat_id: int) -> tuple[int, str | None]:
        """Where a message to the action's chat goes: a chat of the owner's business
        account (its conversation id, business_chats) is reached through its connection;
        any other chat is its own address."""
        row = await self._db.fetch_one(
            "SELECT chat_id, connection_id FROM business_chats WHERE conversation_id = ?",
            (chat_id,),
        )
        if row is None:
            return chat_id, None
        return int(row["chat_id"]), str(row["connection_id"])

    async def create(self, new: NewAction) -> list[str]:
        """Store a proposed action (pending). Earlier pending cards of the same customer
        for the same order are replaced: they expire (reason `replaced`), in the same
        transaction. Returns their operation ids."""
        now = self._clock()
        async with self._db.transaction() as tx:
            await tx.lock(f"action-order:{new.order_number}")
            rows = await tx.fetch_all(
                "SELECT operation_id FROM pending_actions WHERE order_number = ? AND "
                "user_id = ? AND status = 'pending'",
                (new.order_number, new.user_id),
            )
            replaced = [str(r["operation_id"]) for r in rows]
            for operation_id in replaced:
                await tx.execute(
                    "UPDATE pending_actions SET status = 'expired', reason = 'replaced', "
                    "updated_at = ? WHERE operation_id = ? AND status = 'pending'",
                    (now, operation_id),
                )
            await tx.execute(
                f"INSERT INTO pending_actions({_INSERTED}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, NULL, NULL, ?, ?, ?, ?)",
                (
                    new.operation_id,
                    new.action,
                    new.order_number,
                    new.chat_id,
                    new.user_id,
                    new.arguments,
                    new.effect,
                    new.done_words,
                    new.turn_id,
                    now,
                    new.expires_at,
                    now,
                ),
            )
        return replaced

    async def get(self, operation_id: str) -> ActionRow | None:
        row = await self._db.fetch_one(
            f"SELECT {_COLUMNS} FROM pending_actions WHERE operation_id = ?", (operation_id,)
        )
        return None if row is None else _row(row)

    async def move(
        self,
        operation_id: str,
        *,
        from_: Sequence[ActionStatus],
        to: ActionStatus,
        press_update: int | None = None,
        reason: str | None = None,
        language: str | None = None,
    ) -> bool:
        """One conditional transition; True when this call made it."""
        marks = ", ".join("?" * len(from_))
        changed = await self._db.write(
            "UPDATE pending_actions SET status = ?, updated_at = ?,"
            " press_update = COALESCE(?, press_update), reason = COALESCE(?, reason),"
            " language = COALESCE(?, language)"
            f" WHERE operation_id = ? AND status IN ({marks})",
            (to.value, self._clock(), press_update, reason, language, operation_id, *from_),
        )
        return changed == 1

    async def stranded(self, *, quiet_for_s: float) -> list[ActionRow]:
        """Confirmed actions nobody has moved on for `quiet_for_s` (a press that died, an
        outcome that stayed unknown) whose next try is due: the sweeper's work."""
        now = self._clock()
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM pending_actions WHERE status IN ('confirmed', 'executing')"
            " AND COALESCE(reason, '') <> 'requested'"  # waiting for a person, not the shop
            " AND updated_at <= ? AND (next_try_at IS NULL OR next_try_at <= ?)"
            " ORDER BY updated_at",
            (now - quiet_for_s, now),
        )
        return [_row(r) for r in rows]

    async def take_for_retry(self, row: ActionRow, *, next_try_at: float) -> bool:
        """The sweeper takes a stranded action for one more ask: one conditional update
        on the attempts it saw, so of two sweepers (two instances) one asks."""
        changed = await self._db.write(
            "UPDATE pending_actions SET attempts = attempts + 1, next_try_at = ?,"
            " updated_at = ? WHERE operation_id = ? AND attempts = ?"
            " AND status IN ('confirmed', 'executing')",
            (next_try_at, self._clock(), row.operation_id, row.attempts),
        )
        return changed == 1

    async def note_unknown(self, operation_id: str, last_answer: str | None) -> None:
        """Still unknown after an ask: `executing`, reason `unknown`, the shop's answer."""
        await self._db.write(
            "UPDATE pending_actions SET status = 'executing', reason = 'unknown',"
            " last_answer = COALESCE(?, last_answer), updated_at = ?"
            " WHERE operation_id = ? AND status IN ('confirmed', 'executing')",
            (last_answer, self._clock(), operation_id),
        )

    async def needing_attention(self) -> list[ActionRow]:
        """Every action a person must check (any age), oldest first (/stats)."""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM pending_actions WHERE status = 'needs_attention'"
            " ORDER BY updated_at",
        )
        return [_row(r) for r in rows]

    async def retake(self, operation_id: str, *, old_press: int | None, new_press: int) -> bool:
        """A new press takes over an action whose outcome stayed unknown (`executing`,
        reason `unknown`): one conditional update, so of two such presses one wins; the
        reason is cleared, so no other press takes it while this one asks the shop."""
        changed = await self._db.write(
            "UPDATE pending_actions SET press_update = ?, reason = NULL, updated_at = ?"
            " WHERE operation_id = ? AND status = 'executing' AND reason = 'unknown'"
            " AND press_update = ?",  # set by the press that confirmed it
            (new_press, self._clock(), operation_id, old_press),
        )
        return changed == 1

    async def finish(
        self,
        operation_id: str,
        *,
        status: Literal[
            ActionStatus.DONE,
            ActionStatus.FAILED,
            ActionStatus.DECLINED,
            ActionStatus.NEEDS_ATTENTION,
        ],
        reason: str | None,
        reference: str | None,
        done_words: str | None = None,
        history: tuple[int, str] | None,
        last_answer: str | None = None,
        history_key: str = "",
        tell: Sequence[Outgoing] = (),
    ) -> bool:
        """The action's result, (`history`: chat id, words) its line in the chat's
        history and (`tell`) the messages that tell of it (storage/outgoing.py), once, in
        one transaction. A confirmed action becomes done or failed; a declined one (the
        press moved it) only gets its history line. False when it was already finished."""
        now = self._clock()
        before = "('declined')" if status is ActionStatus.DECLINED else "('confirmed', 'executing')"
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE pending_actions SET status = ?, reason = COALESCE(?, reason),"
                " reference = ?, done_words = COALESCE(?, done_words), updated_at = ?,"
                " last_answer = COALESCE(?, last_answer)"
                f" WHERE operation_id = ? AND status IN {before}",
                (status.value, reason, reference, done_words, now, last_answer, operation_id),
            )
            if changed != 1:
                return False
            if history is not None:
                chat_id, words = history
                key = f"action:{operation_id}{history_key}"
                await _add_history(tx, chat_id, words, key=key, now=now)
            await add(tx, tell, now=now)
        return True

    async def await_person(
        self, operation_id: str, *, history: tuple[int, str], tell: Sequence[Outgoing] = ()
    ) -> bool:
        """A confirmed action became a request to the shop's people: `executing`, reason
        `requested` (the sweeper leaves it alone: a person answers), its line in the
        chat's history and (`tell`) the messages about it, in one transaction. False when
        it was already finished."""
        now = self._clock()
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE pending_actions SET status = 'executing', reason = 'requested',"
                " updated_at = ? WHERE operation_id = ? AND status IN ('confirmed', 'executing')",
                (now, operation_id),
            )
            if changed != 1:
                return False
            chat_id, words = history
            await _add_history(tx, chat_id, words, key=f"action:{operation_id}", now=now)
            await add(tx, tell, now=now)
        return True

    async def open_request(self, operation_id: str, order_number: str) -> None:
        """The request to the shop's people for this action, once (asked again with the
        same operation id: nothing new)."""
        await self._db.write(
            "INSERT INTO action_requests(operation_id, order_number, status, created_at)"
            " VALUES (?, ?, 'open', ?) ON CONFLICT (operation_id) DO NOTHING",
            (operation_id, order_number, self._clock()),
        )

    async def request(self, operation_id: str) -> ActionRequest | None:
        row = await self._db.fetch_one(
            f"SELECT {_REQUEST_COLUMNS} FROM action_requests WHERE operation_id = ?",
            (operation_id,),
        )
        return None if row is None else _request(row)

    async def answer_done(self, operation_id: str, *, by: int) -> bool:
        """A person confirmed the request done: one conditional update (of two presses,
        one wins; a request already refused stays refused)."""
        changed = await self._db.write(
            "UPDATE action_requests SET status = 'done', answered_by = ?, answered_at = ?"
            " WHERE operation_id = ? AND status IN ('open', 'refusing')",
            (by, self._clock(), operation_id),
        )
        return changed == 1

    async def start_refusing(self, operation_id: str, *, by: int, chat_id: int) -> bool:
        """A person pressed Refuse: their next message in `chat_id` is the reason."""
        changed = await self._db.write(
            "UPDATE action_requests SET status = 'refusing', refusing_by = ?, refusing_chat = ?"
            " WHERE operation_id = ? AND status IN ('open', 'refusing')",
            (by, chat_id, operation_id),
        )
        return changed == 1

    async def refusing_of(self, user_id: int, chat_id: int) -> ActionRequest | None:
        """The request this person is asked the reason of a refusal for, in this chat —
        also one they refused whose result was never recorded (a crash in between: their
        message, handled again, finishes it)."""
        columns = ", ".join(f"r.{c.strip()}" for c in _REQUEST_COLUMNS.split(","))
        row = await self._db.fetch_one(
            f"SELECT {columns} FROM action_requests r"
            " JOIN pending_actions p ON p.operation_id = r.operation_id"
            " WHERE r.refusing_by = ? AND r.refusing_chat = ? AND (r.status = 'refusing'"
            " OR (r.status = 'refused' AND p.status = 'executing' AND p.reason = 'requested'))"
            " ORDER BY r.created_at DESC LIMIT 1",
            (user_id, chat_id),
        )
        return None if row is None else _request(row)

    async def refuse(self, operation_id: str, *, by: int, refusal: str) -> bool:
        """The refusal with its reason: only from the person asked for it, once."""
        changed = await self._db.write(
            "UPDATE action_requests SET status = 'refused', refusal = ?, answered_by = ?,"
            " answered_at = ? WHERE operation_id = ? AND status = 'refusing'"
            " AND refusing_by = ?",
            (refusal, by, self._clock(), operation_id, by),
        )
        return changed == 1

    async def open_requests(self) -> list[ActionRequest]:
        """Requests nobody has answered yet, oldest first (/stats, import-data)."""
        rows = await self._db.fetch_all(
            f"SELECT {_REQUEST_COLUMNS} FROM action_requests"
            " WHERE status IN ('open', 'refusing') ORDER BY created_at"
        )
        return [_request(r) for r in rows]

    async def escalate(
        self,
        *,
        older_than_s: float,
        tell: Callable[[ActionRequest], Sequence[Outgoing]] = lambda _request: (),
    ) -> list[ActionRequest]:
        """Unanswered requests older than `older_than_s`, not reminded of yet, each taken
        by one conditional update (two instances: one reminds) in the same transaction
        as its reminders (`tell`)."""
        now = self._clock()
        rows = await self._db.fetch_all(
            f"SELECT {_REQUEST_COLUMNS} FROM action_requests WHERE status IN"
            " ('open', 'refusing') AND escalated_at IS NULL AND created_at <= ?"
            " ORDER BY created_at",
            (now - older_than_s,),
        )
        taken = []
        for row in rows:
            request = _request(row)
            async with self._db.transaction() as tx:
                changed = await tx.execute(
                    "UPDATE action_requests SET escalated_at = ?"
                    " WHERE operation_id = ? AND escalated_at IS NULL",
                    (now, request.operation_id),
                )
                if changed == 1:
                    await add(tx, tell(request), now=now)
                    taken.append(request)
        return taken

    async def confirmed_arguments(
        self, order_number: str, action: str, *, excluding: str | None = None
    ) -> list[str]:
        """The arguments (JSON) of every `action` on this order a customer confirmed that
        did not fail — done, running, unknown or waiting for a person — whichever card
        it came from (`excluding`: the one being checked)."""
        rows = await self._db.fetch_all(
            "SELECT arguments FROM pending_actions WHERE order_number = ?"
            " AND action = ? AND operation_id <> ?"
            " AND status IN ('confirmed', 'executing', 'done', 'needs_attention')",
            (order_number, action, excluding or ""),
        )
        return [str(r["arguments"]) for r in rows]

    async def of_chat(self, chat_id: int) -> list[ActionRow]:
        """Every action proposed in a chat, oldest first (the simulation's verdicts)."""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM pending_actions WHERE chat_id = ? ORDER BY created_at",
            (chat_id,),
        )
        return [_row(r) for r in rows]

    async def unfinished(self) -> list[ActionRow]:
        """Actions a press confirmed whose result was never stored (a crash)."""
        rows = await self._db.fetch_all(
            f"SELECT {_COLUMNS} FROM pending_actions WHERE status IN ('confirmed', 'executing')"
            " ORDER BY created_at",
        )
        return [_row(r) for r in rows]

    async def counts(self, since: float | None, until: float) -> ActionCounts:
        start = since if since is not None else float("-inf")
        rows = await self._db.fetch_all(
            "SELECT operation_id, status, reason, expires_at, turn_id FROM pending_actions"
            " WHERE created_at >= ? AND created_at < ?",
            (start, until),
        )
        now = self._clock()
        counts = {
            name: 0
            for name in ("confirmed", "declined", "expired", "done", "failed", "needs_attention")
        }
        resolved: set[str] = set()
        for row in rows:
            status = ActionStatus(row["status"])
            if status is ActionStatus.DONE:
                resolved.add(str(row["turn_id"] or row["operation_id"]))
            if status is ActionStatus.PENDING:
                if float(row["expires_at"]) <= now:
                    counts["expired"] += 1
                continue
            if status in (ActionStatus.CONFIRMED, ActionStatus.EXECUTING):
                counts["confirmed"] += 1
            elif status in (ActionStatus.DONE, ActionStatus.FAILED, ActionStatus.NEEDS_ATTENTION):
                counts["confirmed"] += 1
                counts[status.value] += 1
            else:
                counts[status.value] += 1
        return ActionCounts(proposed=len(rows), resolved_questions=len(resolved), **counts)


async def _add_history(tx: Tx, chat_id: int, words: str, *, key: str, now: float) -> None:
    """One assistant line in the chat's open session (as storage/handoffs.py adds one),
    once per `key`."""
    await tx.lock(f"chat:{chat_id}")
    row = await tx.fetch_one(
        "SELECT id FROM sessions WHERE chat_id = ? AND closed_at IS NULL", (chat_id,)
    )
    if row is None:
        row = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id", (chat_id, now)
        )
        assert row is not None
    session_id = int(row["id"])
    seen = await tx.fetch_one(
        "SELECT 1 FROM messages WHERE session_id = ? AND turn_id = ?", (session_id, key)
    )
    if seen is None:
        await tx.execute(
            "INSERT INTO messages(session_id, role, content, turn_id, created_at) "
            "VALUES (?, 'assistant', ?, ?, ?)",
            (session_id, words, key, now),
        )


async def withdraw_unseen(tx: Tx, operation_id: str, *, now: float) -> None:
    """A card the customer never saw (the owner discarded its draft): it can no longer be
    confirmed — expired, reason `discarded`."""
    await tx.execute(
        "UPDATE pending_actions SET status = 'expired', reason = 'discarded', updated_at = ?"
        " WHERE operation_id = ? AND status = 'pending'",
        (now, operation_id),
    )


async def shown_now(tx: Tx, operation_id: str, *, now: float) -> None:
    """A card posted later than proposed (the owner sent its draft): its time to be
    pressed starts now, as long as it was when proposed."""
    await tx.execute(
        "UPDATE pending_actions SET expires_at = ? + (expires_at - created_at), updated_at = ?"
        " WHERE operation_id = ? AND status = 'pending'",
        (now, now, operation_id),
    )


CancelOutcome = Literal["done", "not_processing", "missing"]
ReturnOutcome = Literal["done", "missing"]


class LocalActionStore:
    """What the local backend carries out on the bot's own `orders` table: a cancel is a
    conditional update (processing only), a return a row; both keyed by the operation id,
    so a call repeated with the same id finds the first one's record and does nothing."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def cancel(self, operation_id: str, order_id: str, *, updated_at: str) -> CancelOutcome:
        async with self._db.transaction() as tx:
            await tx.lock(f"action-op:{operation_id}")
            seen = await tx.fetch_one(
                "SELECT 1 FROM order_cancellations WHERE operation_id = ?", (operation_id,)
            )
            if seen is not None:
                return "done"
            changed = await tx.execute(
                "UPDATE orders SET status = 'cancelled', updated_at = ?"
                " WHERE order_id = ? AND status = 'processing'",
                (updated_at, order_id),
            )
            if changed == 1:
                await tx.execute(
                    "INSERT INTO order_cancellations(operation_id, order_id, created_at)"
                    " VALUES (?, ?, ?)",
                    (operation_id, order_id, self._clock()),
                )
                return "done"
            exists = await tx.fetch_one("SELECT 1 FROM orders WHERE order_id = ?", (order_id,))
            return "not_processing" if exists is not None else "missing"

    async def add_return(
        self, operation_id: str, order_id: str, *, lines: str, reason: str
    ) -> ReturnOutcome:
        async with self._db.transaction() as tx:
            await tx.lock(f"action-op:{operation_id}")
            seen = await tx.fetch_one(
                "SELECT 1 FROM order_returns WHERE operation_id = ?", (operation_id,)
            )
            if seen is not None:
                return "done"
            exists = await tx.fetch_one("SELECT 1 FROM orders WHERE order_id = ?", (order_id,))
            if exists is None:
                return "missing"
            await tx.execute(
                "INSERT INTO order_returns(operation_id, order_id, lines, reason, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (operation_id, order_id, lines, reason, self._clock()),
            )
            return "done"
