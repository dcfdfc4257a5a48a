"""Rows of order updates: subscriptions, the notifications to send, shop events.

The rules of *when* a customer is told live in services/order_updates.py; here is only
the SQL that makes them hold under concurrency: `record_sighting` moves a subscription's
told status forward in one transaction, only when the sighting is newer than what the
customer was told, and makes at most one notification per change (a unique key), so two
instances, a redelivered push and a poll that sees the same change all end in one row.
Sending claims a notification (`pending → sending`, counting the attempt) before the
message leaves. A crash in between leaves it `sending`: the next start makes it `pending`
again once (most such sends never reached Telegram: the claim comes before the pacer's
wait and the request), and fails a second cut-off as `interrupted`. So a crash never
loses a notification, and a customer gets one at most twice, only if both a send that
Telegram accepted and the next start's try were cut off before `sent` was written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from storage.backend import Database, Row

Clock = Callable[[], float]

# subscriptions' stop reasons
STOP_CUSTOMER = "customer"
STOP_BLOCKED = "blocked"
STOP_FINISHED = "finished"
STOP_NOT_OWNER = "not_owner"

# a notification whose send was cut off by a stop is tried again this many times in all
INTERRUPTED_ATTEMPTS = 2

# notification states
PENDING = "pending"
SENDING = "sending"
SENT = "sent"
FAILED = "failed"

_SUBSCRIPTION_COLUMNS = (
    "id, chat_id, user_id, order_number, language, active, told_status, told_updated_at"
)
_NOTIFICATION_COLUMNS = "id, subscription_id, chat_id, order_number, status, language"


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    chat_id: int
    user_id: int
    order_number: str
    language: str
    active: bool
    told_status: str
    told_updated_at: float


@dataclass(frozen=True, slots=True)
class Notification:
    id: int
    subscription_id: int
    chat_id: int
    order_number: str
    status: str
    language: str


@dataclass(frozen=True, slots=True)
class OrderUpdateCounts:
    """For /stats (within a period) and /metrics (all time: `active` is now)."""

    active: int
    subscribed: int
    sent: int
    failed: int
    unsubscribed: int  # stopped because the customer blocked the bot


def _subscription(row: Row) -> Subscription:
    return Subscription(
        id=int(row[0]),
        chat_id=int(row[1]),
        user_id=int(row[2]),
        order_number=str(row[3]),
        language=str(row[4]),
        active=bool(row[5]),
        told_status=str(row[6]),
        told_updated_at=float(row[7]),
    )


def _notification(row: Row) -> Notification:
    return Notification(
        id=int(row[0]),
        subscription_id=int(row[1]),
        chat_id=int(row[2]),
        order_number=str(row[3]),
        status=str(row[4]),
        language=str(row[5]),
    )


class OrderUpdateRepository:
    """SQL for subscriptions, notifications and shop events."""

    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock

    # subscriptions

    async def subscribe(
        self,
        *,
        chat_id: int,
        user_id: int,
        order_number: str,
        language: str,
        status: str,
        updated_at: float,
    ) -> bool:
        """Subscribe (or subscribe again) with the status the customer was just shown;
        False when the subscription was already active (nothing changes then)."""
        now = self._clock()
        async with self._db.transaction() as tx:
            await tx.lock(f"order-sub:{chat_id}:{order_number}")
            row = await tx.fetch_one(
                "SELECT id, active FROM order_subscriptions WHERE chat_id = ? AND order_number = ?",
                (chat_id, order_number),
            )
            if row is not None and bool(row[1]):
                return False
            if row is None:
                await tx.execute(
                    "INSERT INTO order_subscriptions(chat_id, user_id, order_number, language, "
                    "created_at, told_status, told_updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (chat_id, user_id, order_number, language, now, status, updated_at),
                )
                return True
            # told_updated_at never goes back: an older status shown now is not news
            await tx.execute(
                "UPDATE order_subscriptions SET active = 1, user_id = ?, language = ?, "
                "created_at = ?, stopped_at = NULL, stop_reason = NULL, "
                "told_status = CASE WHEN told_updated_at < ? THEN ? ELSE told_status END, "
                "told_updated_at = CASE WHEN told_updated_at < ? THEN ? ELSE told_updated_at END "
                "WHERE id = ?",
                (user_id, language, now, updated_at, status, updated_at, updated_at, row[0]),
            )
            return True

    async def stop(self, chat_id: int, order_number: str, reason: str) -> bool:
        """Stop one subscription; False when there was no active one."""
        changed = await self._db.write(
            "UPDATE order_subscriptions SET active = 0, stopped_at = ?, stop_reason = ? "
            "WHERE chat_id = ? AND order_number = ? AND active = 1",
            (self._clock(), reason, chat_id, order_number),
        )
        return changed > 0

    async def stop_chat(self, chat_id: int, reason: str) -> int:
        """Stop every subscription of a chat (the customer blocked the bot)."""
        return await self._db.write(
            "UPDATE order_subscriptions SET active = 0, stopped_at = ?, stop_reason = ? "
            "WHERE chat_id = ? AND active = 1",
            (self._clock(), reason, chat_id),
        )

    async def stop_by_id(self, subscription_id: int, reason: str) -> None:
        await self._db.write(
            "UPDATE order_subscriptions SET active = 0, stopped_at = ?, stop_reason = ? "
            "WHERE id = ? AND active = 1",
            (self._clock(), reason, subscription_id),
        )

    async def active_for_chat(self, chat_id: int) -> list[Subscription]:
        rows = await self._db.fetch_all(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM order_subscriptions "
            "WHERE chat_id = ? AND active = 1 ORDER BY created_at, id",
            (chat_id,),
        )
        return [_subscription(row) for row in rows]

    async def active_for_order(self, order_number: str) -> list[Subscription]:
        rows = await self._db.fetch_all(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM order_subscriptions "
            "WHERE order_number = ? AND active = 1 ORDER BY id",
            (order_number,),
        )
        return [_subscription(row) for row in rows]

    async def is_subscribed(self, order_number: str) -> bool:
        row = await self._db.fetch_one(
            "SELECT 1 FROM order_subscriptions WHERE order_number = ? AND active = 1 LIMIT 1",
            (order_number,),
        )
        return row is not None

    async def due_for_poll(
        self, *, finished: tuple[str, ...], checked_before: float, limit: int
    ) -> list[str]:
        """Order numbers with an active subscription whose told status is not final and
        that were not read since `checked_before`, least recently read first."""
        marks = ", ".join("?" for _ in finished) or "''"
        rows = await self._db.fetch_all(
            "SELECT order_number, MIN(COALESCE(checked_at, 0)) AS last FROM order_subscriptions "
            f"WHERE active = 1 AND told_status NOT IN ({marks}) "
            "GROUP BY order_number HAVING MIN(COALESCE(checked_at, 0)) < ? "
            "ORDER BY last, order_number LIMIT ?",
            (*finished, checked_before, limit),
        )
        return [str(row[0]) for row in rows]

    async def mark_checked(self, order_number: str) -> None:
        await self._db.write(
            "UPDATE order_subscriptions SET checked_at = ? WHERE order_number = ? AND active = 1",
            (self._clock(), order_number),
        )

    async def record_sighting(
        self,
        subscription_id: int,
        *,
        status: str,
        updated_at: float,
        notify: bool,
        marks_valid_until: float = float("inf"),
    ) -> bool:
        """The order was seen with `status` as of `updated_at`. Only when that is newer
        than what the customer was told does the subscription move forward, and then
        (with `notify`) one pending notification is made in the same transaction. True
        when a notification was made; a second sighting of the same change makes none.
        A told mark later than `marks_valid_until` (a shop's wrong clock, stored before
        such times were refused) holds no sighting back."""
        async with self._db.transaction() as tx:
            await tx.lock(f"order-sub-id:{subscription_id}")
            row = await tx.fetch_one(
                "SELECT chat_id, order_number, language, told_status, told_updated_at, active "
                "FROM order_subscriptions WHERE id = ?",
                (subscription_id,),
            )
            if row is None or not bool(row[5]):
                return False
            told_at = float(row[4])
            if updated_at <= told_at <= marks_valid_until:
                return False
            await tx.execute(
                "UPDATE order_subscriptions SET told_status = ?, told_updated_at = ? WHERE id = ?",
                (status, updated_at, subscription_id),
            )
            if not notify or str(row[3]) == status:
                return False
            made = await tx.fetch_one(
                "INSERT INTO order_notifications(subscription_id, chat_id, order_number, status, "
                "order_updated_at, language, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (subscription_id, row[0], row[1], status, updated_at, row[2], self._clock()),
            )
            return made is not None

    # notifications

    async def due_notifications(self, limit: int) -> list[Notification]:
        rows = await self._db.fetch_all(
            f"SELECT {_NOTIFICATION_COLUMNS} FROM order_notifications WHERE state = ? "
            "ORDER BY created_at, id LIMIT ?",
            (PENDING, limit),
        )
        return [_notification(row) for row in rows]

    async def claim(self, notification_id: int) -> bool:
        """pending → sending, one more attempt; False when another worker took it (or it
        is done)."""
        changed = await self._db.write(
            "UPDATE order_notifications SET state = ?, attempts = attempts + 1 "
            "WHERE id = ? AND state = ?",
            (SENDING, notification_id, PENDING),
        )
        return changed > 0

    async def finish(self, notification_id: int, state: str, reason: str | None = None) -> None:
        await self._db.write(
            "UPDATE order_notifications SET state = ?, reason = ?, finished_at = ? "
            "WHERE id = ? AND state = ?",
            (state, reason, self._clock(), notification_id, SENDING),
        )

    async def finish_sent(self, notification: Notification, text: str) -> None:
        """Sent: and the words enter the customer's conversation as the bot's message, so
        a question about them ("what does that mean?") is answered in context."""
        now = self._clock()
        async with self._db.transaction() as tx:
            await tx.lock(f"chat:{notification.chat_id}")
            await tx.execute(
                "UPDATE order_notifications SET state = ?, finished_at = ? WHERE id = ? "
                "AND state = ?",
                (SENT, now, notification.id, SENDING),
            )
            row = await tx.fetch_one(
                "SELECT id FROM sessions WHERE chat_id = ? AND closed_at IS NULL",
                (notification.chat_id,),
            )
            if row is None:
                row = await tx.fetch_one(
                    "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id",
                    (notification.chat_id, now),
                )
            assert row is not None
            await tx.execute(
                "INSERT INTO messages(session_id, role, content, turn_id, created_at) "
                "VALUES (?, 'assistant', ?, ?, ?)",
                (int(row[0]), text, f"order-update:{notification.id}", now),
            )

    async def recover_interrupted(self) -> tuple[int, int]:
        """Notifications whose sending a stop cut off (run at start, before any send):
        the first cut-off is tried again (`pending`), a later one is failed
        (`interrupted`). (How many are tried again, how many failed.)"""
        async with self._db.transaction() as tx:
            failed = await tx.execute(
                "UPDATE order_notifications SET state = ?, reason = 'interrupted', "
                "finished_at = ? WHERE state = ? AND attempts >= ?",
                (FAILED, self._clock(), SENDING, INTERRUPTED_ATTEMPTS),
            )
            again = await tx.execute(
                "UPDATE order_notifications SET state = ? WHERE state = ?",
                (PENDING, SENDING),
            )
        return again, failed

    async def drop_pending_for_chat(self, chat_id: int, reason: str) -> int:
        return await self._db.write(
            "UPDATE order_notifications SET state = ?, reason = ?, finished_at = ? "
            "WHERE chat_id = ? AND state = ?",
            (FAILED, reason, self._clock(), chat_id, PENDING),
        )

    # shop events (pushes)

    async def store_event(self, *, source: str, event_key: str, order_number: str) -> bool:
        """Store a push before it is acknowledged; False for a redelivered one."""
        async with self._db.transaction() as tx:
            row = await tx.fetch_one(
                "INSERT INTO shop_events(source, event_key, order_number, received_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
                (source, event_key, order_number, self._clock()),
            )
        return row is not None

    async def due_orders(self, limit: int) -> list[tuple[str, int]]:
        """Orders with unhandled pushes, oldest push first: (order number, the id of its
        latest unhandled push as of now). Many pushes about one order are one entry, so
        the order is read once for all of them."""
        rows = await self._db.fetch_all(
            "SELECT order_number, MAX(id), MIN(received_at) AS first FROM shop_events "
            "WHERE processed_at IS NULL GROUP BY order_number "
            "ORDER BY first, order_number LIMIT ?",
            (limit,),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    async def events_done(self, order_number: str, up_to_id: int) -> int:
        """The order's unhandled pushes up to `up_to_id` are handled (a push stored after
        the read began waits for the next one)."""
        return await self._db.write(
            "UPDATE shop_events SET processed_at = ?, attempts = attempts + 1 "
            "WHERE order_number = ? AND processed_at IS NULL AND id <= ?",
            (self._clock(), order_number, up_to_id),
        )

    async def events_failed(self, order_number: str, up_to_id: int, max_attempts: int) -> int:
        """One more attempt for the order's unhandled pushes up to `up_to_id`; those that
        reached `max_attempts` are dropped (handled). How many were dropped."""
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE shop_events SET attempts = attempts + 1 "
                "WHERE order_number = ? AND processed_at IS NULL AND id <= ?",
                (order_number, up_to_id),
            )
            return await tx.execute(
                "UPDATE shop_events SET processed_at = ? WHERE order_number = ? "
                "AND processed_at IS NULL AND id <= ? AND attempts >= ?",
                (self._clock(), order_number, up_to_id, max_attempts),
            )

    async def prune_events(self, older_than_s: float) -> int:
        """Forget pushes handled longer ago than that (nothing reads them again)."""
        return await self._db.write(
            "DELETE FROM shop_events WHERE processed_at IS NOT NULL AND processed_at < ?",
            (self._clock() - older_than_s,),
        )

    # numbers

    async def counts(
        self, since: float | None = None, until: float | None = None
    ) -> OrderUpdateCounts:
        low = since if since is not None else 0.0
        high = until if until is not None else 1e18
        subs = await self._db.fetch_one(
            "SELECT "
            "COALESCE(SUM(CASE WHEN active = 1 THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN created_at >= ? AND created_at < ? THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN stop_reason = ? AND stopped_at >= ? AND stopped_at < ? "
            "THEN 1 ELSE 0 END), 0) FROM order_subscriptions",
            (low, high, STOP_BLOCKED, low, high),
        )
        sent = await self._db.fetch_one(
            "SELECT COALESCE(SUM(CASE WHEN state = ? THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN state = ? THEN 1 ELSE 0 END), 0) FROM order_notifications "
            "WHERE finished_at >= ? AND finished_at < ?",
            (SENT, FAILED, low, high),
        )
        assert subs is not None and sent is not None
        return OrderUpdateCounts(
            active=int(subs[0]),
            subscribed=int(subs[1]),
            sent=int(sent[0]),
            failed=int(sent[1]),
            unsubscribed=int(subs[2]),
        )
