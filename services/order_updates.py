"""Order updates: the customer hears when their order moves.

The rules, in one place:

- **Who may subscribe**: the order's owner in a private chat, by the same rule as an
  order lookup (tools/order_status.py): their Telegram id is the order's, or their
  *verified* phone is. Public (demo) orders have no owner and get no subscription. The
  order is read again when the button is pressed: the button's data is only a hint.
- **When a customer is told**: a sighting of the order (a poll, or the read that follows
  a shop's push) is news only when its `updated_at` is newer than what the customer was
  last told and its status differs; a newer sighting with the same status moves the mark
  silently; an older or equal one changes nothing. The storage makes that one
  transaction with a unique notification per change (storage/order_updates.py), so a
  redelivered push, a poll that sees the same change, a restart or a second instance
  never tell the customer twice, and never tell them something older.
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
    (`UNKNOWN_TIME`) gets the time of the read, so a new status is still news once."""
    return now if order.updated_at == UNKNOWN_TIME else order.updated_at.timestamp()


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
            if await self.repo.record_sighting(
                subscription.id,
                status=order.status.value,
                updated_at=changed_at(order, self._clock()),
                notify=True,
            ):
                made += 1
        return made

    async def poll_round(self) -> int:
        """One round of the polling fallback: at most `poll_budget` reads of subscribed,
        unfinished orders not read within the interval."""
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
        return made

    async def process_events(self, limit: int = 50) -> int:
        """The stored pushes: each order is read again from the shop, then forgotten; a
        read that fails is retried on the next pass (at most EVENT_ATTEMPTS times)."""
        made = 0
        for event in await self.repo.due_events(limit):
            try:
                made += await self.observe(event.order_number)
            except ShopUnavailable as exc:
                log.warning("order updates: a pushed order could not be read (%s)", exc.kind)
                if event.attempts + 1 >= EVENT_ATTEMPTS:
                    await self.repo.event_done(event.id)
                else:
                    await self.repo.event_failed(event.id)
                continue
            await self.repo.event_done(event.id)
        return made
