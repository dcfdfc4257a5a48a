"""Order updates' rules on a real database (both backends): who may subscribe, and when a
customer is told — once per change, never something older than what they were told,
never again after a restart or from a second instance, within the polling budget."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from services.order_updates import OrderUpdates, Subscribed
from storage.database import Database
from storage.order_updates import SENT, OrderUpdateRepository
from tools.shop.backend import ShopUnavailable
from tools.shop.orders import LiveOrder
from tools.shop.rules import OrderStatus

OWNER, STRANGER, PHONE_OWNER = 501, 502, 503
CHAT = OWNER
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


class FakeShop:
    """The orders as a dict; counts reads; `down` makes every read fail; a number in
    `poison` raises what a backend's reading of a broken answer raises."""

    def __init__(self) -> None:
        self.orders: dict[str, LiveOrder] = {}
        self.reads = 0
        self.down = False
        self.poison: dict[str, Exception] = {}

    async def __call__(self, number: str) -> LiveOrder | None:
        self.reads += 1
        if self.down:
            raise ShopUnavailable("unavailable")
        if number in self.poison:
            raise self.poison[number]
        return self.orders.get(number)

    def move(self, number: str, status: OrderStatus, minutes: int) -> None:
        self.orders[number] = replace(
            self.orders[number], status=status, updated_at=T0 + timedelta(minutes=minutes)
        )


def order(number: str, **kwargs: object) -> LiveOrder:
    fields: dict[str, object] = {
        "status": OrderStatus.PROCESSING,
        "updated_at": T0,
        "customer_telegram_id": OWNER,
    }
    fields.update(kwargs)
    return LiveOrder(number=number, **fields)  # type: ignore[arg-type]


async def no_phone(user_id: int) -> str | None:
    return "+79120000000" if user_id == PHONE_OWNER else None


def service(db: Database, shop: FakeShop, *, budget: int = 10) -> OrderUpdates:
    return OrderUpdates(
        OrderUpdateRepository(db),
        shop,
        no_phone,
        poll_interval_s=0.0,
        poll_budget=budget,
    )


async def subscribe(updates: OrderUpdates, number: str, user: int = OWNER) -> Subscribed:
    return await updates.subscribe(
        user_id=user, chat_id=user, private_chat=True, number=number, language="en"
    )


async def pending(db: Database) -> list[tuple[object, ...]]:
    rows = await db.fetch_all(
        "SELECT order_number, status FROM order_notifications ORDER BY id", ()
    )
    return [tuple(row) for row in rows]


async def test_only_the_owner_subscribes_in_a_private_chat(db: Database) -> None:
    shop = FakeShop()
    shop.orders["1001"] = order("1001")
    shop.orders["1002"] = order("1002", customer_telegram_id=None, customer_phone="+79120000000")
    shop.orders["1003"] = order("1003", customer_telegram_id=None, public=True)
    updates = service(db, shop)
    assert await subscribe(updates, "1001", STRANGER) is Subscribed.NOT_YOURS
    assert await subscribe(updates, "9999") is Subscribed.NOT_YOURS
    assert await subscribe(updates, "1003") is Subscribed.NOT_YOURS  # public: nobody's
    assert await subscribe(updates, "1002", OWNER) is Subscribed.NOT_YOURS
    assert await subscribe(updates, "1002", PHONE_OWNER) is Subscribed.SUBSCRIBED  # verified
    in_group = await updates.subscribe(
        user_id=OWNER, chat_id=-100, private_chat=False, number="1001", language="en"
    )
    assert in_group is Subscribed.PRIVATE_ONLY
    assert await subscribe(updates, "1001") is Subscribed.SUBSCRIBED
    assert await subscribe(updates, "1001") is Subscribed.ALREADY
    shop.orders["1004"] = order("1004", status=OrderStatus.DELIVERED)
    assert await subscribe(updates, "1004") is Subscribed.FINISHED
    shop.down = True
    assert await subscribe(updates, "1001") is Subscribed.UNAVAILABLE


async def test_a_change_is_told_once_and_never_older(db: Database) -> None:
    shop = FakeShop()
    shop.orders["2001"] = order("2001")
    updates = service(db, shop)
    await subscribe(updates, "2001")
    assert await updates.observe("2001") == 0  # what they were shown: no news
    shop.move("2001", OrderStatus.IN_TRANSIT, 30)
    assert await updates.observe("2001") == 1
    assert await updates.observe("2001") == 0  # the same change seen again
    # an older sighting (a late push, a lagging replica) is not news, even with a new status
    shop.move("2001", OrderStatus.PROCESSING, 10)
    assert await updates.observe("2001") == 0
    # newer, same status: the mark moves, nobody is told
    shop.move("2001", OrderStatus.IN_TRANSIT, 40)
    assert await updates.observe("2001") == 0
    shop.move("2001", OrderStatus.DELIVERED, 50)
    assert await updates.observe("2001") == 1
    assert await pending(db) == [("2001", "in_transit"), ("2001", "delivered")]


async def test_concurrent_sightings_make_one_notification(db: Database) -> None:
    """Two instances (or a push and a poll) seeing the same change at once."""
    shop = FakeShop()
    shop.orders["3001"] = order("3001")
    first, second = service(db, shop), service(db, shop)
    await subscribe(first, "3001")
    shop.move("3001", OrderStatus.READY_FOR_PICKUP, 5)
    made = await asyncio.gather(*(u.observe("3001") for u in (first, second, first, second)))
    assert sum(made) == 1
    assert await pending(db) == [("3001", "ready_for_pickup")]


async def test_a_restart_tells_nothing_again(db: Database) -> None:
    shop = FakeShop()
    shop.orders["4001"] = order("4001")
    await subscribe(service(db, shop), "4001")
    shop.move("4001", OrderStatus.IN_TRANSIT, 1)
    assert await service(db, shop).observe("4001") == 1
    repo = OrderUpdateRepository(db)
    (note,) = await repo.due_notifications(10)
    assert await repo.claim(note.id)
    # the process dies while sending: the next start tries it once more ...
    assert await OrderUpdateRepository(db).recover_interrupted() == (1, 0)
    assert await repo.due_notifications(10) == [note]
    assert await service(db, shop).observe("4001") == 0  # and makes no second one
    # ... and a second cut-off fails it: never a third send
    assert await repo.claim(note.id)
    assert await OrderUpdateRepository(db).recover_interrupted() == (0, 1)
    assert await repo.due_notifications(10) == []
    assert await OrderUpdateRepository(db).recover_interrupted() == (0, 0)
    assert await service(db, shop).observe("4001") == 0


async def test_a_notification_sent_after_a_restart_is_not_tried_again(db: Database) -> None:
    shop = FakeShop()
    shop.orders["4101"] = order("4101")
    await subscribe(service(db, shop), "4101")
    shop.move("4101", OrderStatus.IN_TRANSIT, 1)
    assert await service(db, shop).observe("4101") == 1
    repo = OrderUpdateRepository(db)
    (note,) = await repo.due_notifications(10)
    assert await repo.claim(note.id)
    await repo.finish_sent(note, "moved")
    assert await OrderUpdateRepository(db).recover_interrupted() == (0, 0)
    assert await repo.due_notifications(10) == []


async def test_ownership_is_checked_at_every_sighting(db: Database) -> None:
    shop = FakeShop()
    shop.orders["5001"] = order("5001")
    updates = service(db, shop)
    await subscribe(updates, "5001")
    shop.orders["5001"] = order(
        "5001",
        status=OrderStatus.IN_TRANSIT,
        updated_at=T0 + timedelta(hours=1),
        customer_telegram_id=STRANGER,
    )
    assert await updates.observe("5001") == 0
    assert await updates.active(CHAT) == []


async def test_polling_stays_within_its_budget_and_skips_finished_orders(db: Database) -> None:
    shop = FakeShop()
    for n in range(5):
        shop.orders[f"60{n:02}"] = order(f"60{n:02}")
    updates = service(db, shop, budget=2)
    for n in range(5):
        await subscribe(updates, f"60{n:02}")
    shop.reads = 0
    for n in range(5):
        shop.move(f"60{n:02}", OrderStatus.DELIVERED, 1)
    assert await updates.poll_round() == 2
    assert shop.reads == 2
    assert await updates.poll_round() == 2
    assert await updates.poll_round() == 1
    reads = shop.reads
    assert await updates.poll_round() == 0  # all delivered: nothing left to poll
    assert shop.reads == reads


async def test_a_shop_that_is_down_loses_nothing(db: Database) -> None:
    shop = FakeShop()
    shop.orders["7001"] = order("7001")
    updates = service(db, shop)
    await subscribe(updates, "7001")
    repo = OrderUpdateRepository(db)
    assert await repo.store_event(source="http", event_key="e1", order_number="7001")
    assert not await repo.store_event(source="http", event_key="e1", order_number="7001")
    shop.move("7001", OrderStatus.IN_TRANSIT, 3)
    shop.down = True
    assert await updates.process_events() == 0
    assert await updates.poll_round() == 0
    shop.down = False
    assert await updates.process_events() == 1
    assert await updates.process_events() == 0  # the event is done
    assert await repo.prune_events(older_than_s=3600) == 0  # handled just now: kept
    assert await repo.prune_events(older_than_s=-1) == 1
    assert await updates.poll_round() == 0  # and the poll sees nothing new


async def test_stop_and_counts(db: Database) -> None:
    shop = FakeShop()
    shop.orders["8001"] = order("8001")
    updates = service(db, shop)
    await subscribe(updates, "8001")
    assert [s.order_number for s in await updates.active(CHAT)] == ["8001"]
    assert await updates.stop(CHAT, "8001")
    assert not await updates.stop(CHAT, "8001")
    shop.move("8001", OrderStatus.IN_TRANSIT, 1)
    assert await updates.observe("8001") == 0  # stopped: not told
    assert await subscribe(updates, "8001") is Subscribed.SUBSCRIBED  # again, as of now
    assert await updates.observe("8001") == 0
    repo = OrderUpdateRepository(db)
    assert await repo.stop_chat(CHAT, "blocked") == 1
    counts = await repo.counts()
    assert (counts.active, counts.unsubscribed, counts.sent) == (0, 1, 0)
    assert SENT == "sent"


@pytest.mark.parametrize("minutes", [0, -5])
async def test_resubscribing_never_moves_the_mark_back(db: Database, minutes: int) -> None:
    shop = FakeShop()
    shop.orders["9001"] = order("9001")
    updates = service(db, shop)
    await subscribe(updates, "9001")
    shop.move("9001", OrderStatus.IN_TRANSIT, 20)
    assert await updates.observe("9001") == 1
    await updates.stop(CHAT, "9001")
    shop.move("9001", OrderStatus.PROCESSING, minutes)  # an older view of the order
    await subscribe(updates, "9001")
    shop.move("9001", OrderStatus.IN_TRANSIT, 20)
    assert await updates.observe("9001") == 0


POISONS = [
    AttributeError("'list' object has no attribute 'get'"),
    RecursionError("maximum recursion depth exceeded"),
    ValueError("'lost_in_space' is not a valid OrderStatus"),
    KeyError("billing"),
]


@pytest.mark.parametrize("poison", POISONS, ids=lambda e: type(e).__name__)
async def test_a_poison_push_counts_its_attempts_and_the_others_are_told(
    db: Database, poison: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    shop = FakeShop()
    shop.orders["3001"] = order("3001")
    shop.orders["3002"] = order("3002", customer_telegram_id=STRANGER)
    updates = service(db, shop)
    await subscribe(updates, "3001")
    await subscribe(updates, "3002", STRANGER)
    repo = OrderUpdateRepository(db)
    shop.poison["3002"] = poison
    shop.move("3001", OrderStatus.IN_TRANSIT, 5)
    # the poison push came first: the healthy one is handled in the same pass
    await repo.store_event(source="http", event_key="bad", order_number="3002")
    await repo.store_event(source="http", event_key="good", order_number="3001")
    assert await updates.process_events() == 1
    assert await pending(db) == [("3001", "in_transit")]
    for _ in range(10):
        await updates.process_events()
    rows = await db.fetch_all("SELECT order_number, attempts, processed_at FROM shop_events", ())
    attempts = {str(r[0]): (int(r[1]), r[2] is not None) for r in rows}
    assert attempts == {"3002": (5, True), "3001": (1, True)}  # tried 5 times, then dropped
    # one line for the poison order (no traceback), one when the push is dropped
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        f"order updates: a pushed order could not be handled ({type(poison).__name__}); "
        "the others go on",
        "order updates: a push is dropped after 5 attempts",
    ]
    assert not [r for r in warnings if r.exc_info]


async def test_a_poison_order_in_a_polling_round_is_skipped_and_the_others_are_polled(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    shop = FakeShop()
    for number in ("4001", "4002", "4003"):
        shop.orders[number] = order(number)
    updates = service(db, shop)
    for number in ("4001", "4002", "4003"):
        await subscribe(updates, number)
    shop.poison["4001"] = AttributeError("'str' object has no attribute 'get'")
    shop.move("4002", OrderStatus.IN_TRANSIT, 5)
    shop.move("4003", OrderStatus.READY_FOR_PICKUP, 5)
    assert await updates.poll_round() == 2
    for _ in range(3):
        await updates.poll_round()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and not warnings[0].exc_info  # said once, not every round
    del shop.poison["4001"]
    shop.move("4001", OrderStatus.IN_TRANSIT, 6)
    assert await updates.poll_round() == 1
    assert sorted(await pending(db)) == [
        ("4001", "in_transit"),
        ("4002", "in_transit"),
        ("4003", "ready_for_pickup"),
    ]


async def test_one_far_future_time_does_not_silence_the_subscription(db: Database) -> None:
    """A shop's wrong date (year 2999) once: later real changes are still told."""
    shop = FakeShop()
    shop.orders["5001"] = order("5001")
    updates = service(db, shop)
    await subscribe(updates, "5001")
    far = datetime(2999, 1, 1, tzinfo=UTC)
    shop.orders["5001"] = replace(
        shop.orders["5001"], status=OrderStatus.IN_TRANSIT, updated_at=far
    )
    assert await updates.observe("5001") == 1  # news, as of the time of the read
    # the shop's clock is right again: the next change is later than that read
    later = datetime.now(UTC) + timedelta(seconds=30)
    shop.orders["5001"] = replace(
        shop.orders["5001"], status=OrderStatus.READY_FOR_PICKUP, updated_at=later
    )
    assert await updates.observe("5001") == 1
    assert await pending(db) == [("5001", "in_transit"), ("5001", "ready_for_pickup")]


async def test_a_far_future_mark_stored_before_does_not_hold_changes_back(db: Database) -> None:
    shop = FakeShop()
    shop.orders["5002"] = order("5002")
    updates = service(db, shop)
    await subscribe(updates, "5002")
    await db.write(
        "UPDATE order_subscriptions SET told_updated_at = ? WHERE order_number = ?",
        (datetime(2999, 1, 1, tzinfo=UTC).timestamp(), "5002"),
    )
    shop.orders["5002"] = replace(
        shop.orders["5002"], status=OrderStatus.IN_TRANSIT, updated_at=datetime.now(UTC)
    )
    assert await updates.observe("5002") == 1
    assert await updates.observe("5002") == 0  # and once only


async def test_many_pushes_for_one_order_are_one_read(db: Database) -> None:
    """300 signed pushes for one unchanged order: one read of the shop, all handled."""
    shop = FakeShop()
    shop.orders["6101"] = order("6101")
    shop.orders["6102"] = order("6102")
    updates = service(db, shop)
    await subscribe(updates, "6101")
    await subscribe(updates, "6102")
    repo = OrderUpdateRepository(db)
    for n in range(300):
        await repo.store_event(source="http", event_key=f"e{n}", order_number="6101")
    await repo.store_event(source="http", event_key="other", order_number="6102")
    shop.reads = 0
    assert await updates.process_events() == 0
    assert shop.reads == 2  # one per order, not one per push
    assert await updates.process_events() == 0
    assert shop.reads == 2  # nothing left
    rows = await db.fetch_all("SELECT count(*) FROM shop_events WHERE processed_at IS NULL", ())
    assert int(rows[0][0]) == 0
    # a push that comes after the read is read again: a change is never missed
    shop.move("6101", OrderStatus.IN_TRANSIT, 5)
    await repo.store_event(source="http", event_key="late", order_number="6101")
    assert await updates.process_events() == 1
    assert shop.reads == 3
