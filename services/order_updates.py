"""Order updates: the customer hears when their order moves.

The rules, in one place:

- **Who may subscribe**: the order's owner in a private chat, by the same rule as an
  order lookup (tools/order_status.py): their Telegram id is the order's, or their
  *verified* phone is. Public (demo) orders have no owner and get no subscription. The
  order is read again when the button is pressed: the button's data is only a hint.
- **When a customer is told**: a sighting of the order (a poll, or the read that follows
  a shop's push) is news only when its `updated_at` is newer than what the customer was
  last told and its status differs; a newer sighting with the same status moves the mark
  silently; an older or equal one changes nothing. A time far in the future (a shop's
  wrong clock) counts as the time of the read, so it never silences later changes. The
  storage makes that one transaction with a unique notification per change
  (storage/order_updates.py), so a redelivered push, a poll that sees the same change, a
  restart or a second instance never tell the customer twice, and never tell them something older.
- **Ownership is checked again at every sighting**: an order that no longer belongs to the
  subscriber stops the subscription without a word.
- **Reads** go to the shop through `OrderReader` — the configured backend
  (`ShopDirectory.backend`, SHOP_BACKEND), fresh rather than from the directory's cache,
  since a change must be seen — within a budget per polling round; a shop that cannot
  answer leaves everything as it was for the next round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Protocol

from storage.database import StorageUnavailable, storage_fault
from storage.order_updates import (
    STOP_CUSTOMER,
    STOP_NOT_OWNER,
    OrderUpdateRepository,
    Subscription,
)
from tools.shop.access import Visibility, may_see
from tools.shop.backend import ShopUnavailable
from tools.shop.orders import UNKNOWN_TIME, LiveOrder
from tools.shop.rules import OrderStatus

log = logging.getLogger(__name__)

# an order in one of these is not polled any more (a push still counts)
FINISHED: tuple[str, ...] = (OrderStatus.DELIVERED.value, OrderStatus.CANCELLED.value)
# a push whose order cannot be read is tried again this many times, then dropped
EVENT_ATTEMPTS = 5
# an order's time further ahead of ours than this is a wrong clock, not a change
FUTURE_SKEW_S = 300.0

VerifiedPhone = Callable[[int], Awaitable[str | None]]


class OrderReader(Protocol):
    """Reads one order from the shop as it is now (raises `ShopUnavailable`)."""

    async def __call__(self, number: str) -> LiveOrder | None: ...


def owned_by(order: LiveOrder, user_id: int, verified_phone: str | None) -> bool:
    """The lookups' rule (tools/shop/access.py `may_see`, in a private chat): the owner by
    Telegram id or by their verified phone; a public order belongs to nobody."""
    seen = may_see(
        order,
        caller_user_id=user_id,
        verified_phone=verified_phone,
        private_chat=True,
        sender_is_chat=False,
    )
    return seen is Visibility.VISIBLE and not order.public


def changed_at(order: LiveOrder, now: float) -> float:
    """When the order last changed, by the shop's clock; a shop that keeps no time
    (`UNKNOWN_TIME`) gets the time of the read, so a new status is still news once. So
    does a time later than `FUTURE_SKEW_S` from now: a wrong date (year 2999) would
    otherwise be "newer" than every real change after it and silence the subscription."""
    if order.updated_at == UNKNOWN_TIME:
        return now
    stamp = order.updated_at.timestamp()
    return now if stamp > now + FUTURE_SKEW_S else stamp


class Subscribed(StrEnum):
    """What a press of "notify me" came to (each has its own words for the customer)."""

    SUBSCRIBED = "subscribed"
    ALREADY = "already"
    FINISHED = "finished"  # delivered or cancelled: nothing more will happen
    NOT_YOURS = "not_yours"  # missing, someone else's, public: one answer for all
    PRIVATE_ONLY = "private_only"
    UNAVAILABLE = "unavailable"  # the shop could not answer


class OrderUpdates:
    """Subscriptions and sightings; the bot's worker and handlers call these."""

    def __init__(
        self,
        repo: OrderUpdateRepository,
        read: OrderReader,
        verified_phone: VerifiedPhone,
        *,
        normalise: Callable[[str], str] = str.strip,
        poll_interval_s: float,
        poll_budget: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = repo
        self._read = read
        self._phone = verified_phone
        self._normalise = normalise
        self._poll_interval_s = poll_interval_s
        self._poll_budget = poll_budget
        self._clock = clock
        self._troubles = Troubles()

    async def subscribe(
        self, *, user_id: int, chat_id: int, private_chat: bool, number: str, language: str
    ) -> Subscribed:
        if not private_chat:
            return Subscribed.PRIVATE_ONLY
        try:
            number = self._normalise(number)
        except ValueError:  # not one of this shop's numbers (forged data)
            return Subscribed.NOT_YOURS
        try:
            order = await self._read(number)
        except ShopUnavailable as exc:
            log.warning("order updates: the shop could not be read to subscribe (%s)", exc.kind)
            return Subscribed.UNAVAILABLE
        if order is None or not owned_by(order, user_id, await self._phone(user_id)):
            return Subscribed.NOT_YOURS
        if order.status.value in FINISHED:
            return Subscribed.FINISHED
        made = await self.repo.subscribe(
            chat_id=chat_id,
            user_id=user_id,
            order_number=order.number,
            language=language,
            status=order.status.value,
            updated_at=changed_at(order, self._clock()),
        )
        return Subscribed.SUBSCRIBED if made else Subscribed.ALREADY

    async def stop(self, chat_id: int, number: str) -> bool:
        return await self.repo.stop(chat_id, number, STOP_CUSTOMER)

    async def active(self, chat_id: int) -> Sequence[Subscription]:
        return await self.repo.active_for_chat(chat_id)

    async def observe(self, number: str) -> int:
        """Read the order now and record the sighting for each subscriber; the number of
        notifications made (raises `ShopUnavailable`)."""
        subscriptions = await self.repo.active_for_order(number)
        if not subscriptions:
            return 0
        order = await self._read(number)
        await self.repo.mark_checked(number)
        if order is None:
            return 0
        made = 0
        for subscription in subscriptions:
            phone = await self._phone(subscription.user_id)
            if not owned_by(order, subscription.user_id, phone):
                log.info("order updates: a subscription stopped, the order is not its owner's")
                await self.repo.stop_by_id(subscription.id, STOP_NOT_OWNER)
                continue
            now = self._clock()
            if await self.repo.record_sighting(
                subscription.id,
                status=order.status.value,
                updated_at=changed_at(order, now),
                notify=True,
                marks_valid_until=now + FUTURE_SKEW_S,
            ):
                made += 1
        return made

    async def poll_round(self) -> int:
        """One round of the polling fallback: at most `poll_budget` reads of subscribed,
        unfinished orders not read within the interval. An order that cannot be handled
        (`ShopUnavailable` aside) is skipped until the next interval; the others go on."""
        due = await self.repo.due_for_poll(
            finished=FINISHED,
            checked_before=self._clock() - self._poll_interval_s,
            limit=self._poll_budget,
        )
        made = 0
        for number in due:
            try:
                made += await self.observe(number)
            except ShopUnavailable as exc:
                log.warning("order updates: the shop could not be read (%s); next round", exc.kind)
                break  # the shop is down: do not spend the budget on more failures
            except Exception as exc:  # one poison order: the others are still polled
                if store_down(exc):
                    raise  # the whole round waits for the store, nothing is counted
                self._troubles.failed(number, exc, "a polled order")
                await self.repo.mark_checked(number)
                continue
            self._troubles.cleared(number)
        return made

    async def process_events(self, limit: int = 50) -> int:
        """The stored pushes: each order with pushes is read again from the shop once,
        however many pushes name it (a shop may send hundreds for one order), then they
        are forgotten. A read that fails or cannot be handled — whatever the failure —
        counts an attempt for its pushes, which are retried on the next pass (at most
        EVENT_ATTEMPTS times); the other orders are handled meanwhile."""
        made = 0
        for number, up_to in await self.repo.due_orders(limit):
            try:
                made += await self.observe(number)
            except Exception as exc:  # ShopUnavailable, or one poison order
                if store_down(exc):
                    raise  # the whole pass waits for the store, nothing is counted
                if isinstance(exc, ShopUnavailable):
                    log.warning("order updates: a pushed order could not be read (%s)", exc.kind)
                else:
                    self._troubles.failed(number, exc, "a pushed order")
                if await self.repo.events_failed(number, up_to, EVENT_ATTEMPTS):
                    log.warning(
                        "order updates: a push is dropped after %d attempts", EVENT_ATTEMPTS
                    )
                continue
            self._troubles.cleared(number)
            await self.repo.events_done(number, up_to)
        return made


def store_down(exc: Exception) -> bool:
    """A fault of the bot's own store (not of one order): the notifier's tick is retried
    as a whole, and no push loses an attempt to it."""
    return isinstance(exc, StorageUnavailable) or storage_fault(exc) is not None


class Troubles:
    """Orders whose handling failed with something other than `ShopUnavailable` (a
    shop's answer the backend could not read, a value the rules cannot take). The first
    failure of an order is one WARNING line naming the error's type (never the order's
    data; the traceback at DEBUG); the same failure again is DEBUG only, so a poison
    order read every second does not fill the log. Kept for at most `limit` orders."""

    def __init__(self, limit: int = 1000) -> None:
        self._limit = limit
        self._known: dict[str, str] = {}

    def failed(self, number: str, exc: Exception, what: str) -> None:
        kind = type(exc).__name__
        if self._known.get(number) == kind:
            log.debug("order updates: %s could not be handled again (%s)", what, kind)
            return
        if len(self._known) >= self._limit:
            self._known.clear()
        self._known[number] = kind
        log.warning("order updates: %s could not be handled (%s); the others go on", what, kind)
        log.debug("order updates: the failure", exc_info=exc)

    def cleared(self, number: str) -> None:
        if self._known.pop(number, None) is not None:
            log.info("order updates: an order that failed is handled again")
