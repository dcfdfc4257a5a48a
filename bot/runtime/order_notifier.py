"""The order-updates worker: learns of changes and tells the customers.

One loop, on one instance: with several instances on PostgreSQL the holder of a lock of
its own (`storage/leader.py`, `order_updates_lock_name`) runs it and the others stand by,
so the shop is polled once and every notification is sent by one process (the storage's
rules would keep a second one from telling anyone twice anyway). Pushes are stored by
whichever instance received them (bot/runtime/shop_push.py) and read here.

Each tick: the stored pushes (each order read again from the shop), a polling round when
one is due (services/order_updates.py: budget, unfinished orders only), then the due
notifications — outside quiet hours — each claimed (`sending`) before it is sent through
the `Channel` (bot/runtime/channel.py; paced like every answer), then `sent` with its
words in the customer's conversation, or `failed`. A refusal for good (`FORBIDDEN`: the
customer blocked the bot) stops all the chat's subscriptions. After a crash, a
notification left `sending` is tried once more at the next start
(storage/order_updates.py: never lost to a crash, at most twice), as the inbox delivers
an answer's stored parts again; a send whose outcome the channel left unknown while the
process ran is failed, as an answer's is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial

from bot.runtime.channel import FORBIDDEN, Channel, ReplyTarget
from bot.runtime.leadership import Leadership
from services.order_updates import OrderUpdates
from storage.inbox import StoredReply
from storage.order_updates import (
    FAILED,
    STOP_BLOCKED,
    Notification,
    OrderUpdateRepository,
)

log = logging.getLogger(__name__)

TICK_S = 1.0
EVENT_RETENTION_S = 7 * 86_400.0  # handled pushes are forgotten after a week
SEND_BATCH = 20

# The words telling a customer of a notification's change, in their language (Markdown);
# None when there are none for its status. Given by the feature that owns the words.
NotificationWords = Callable[[Notification], str | None]


def order_updates_lock_name(bot_id: int) -> str:
    return f"shop-support-bot:order-updates:{bot_id}"


@dataclass(frozen=True, slots=True)
class QuietHours:
    """No notification from `start` to `end` o'clock (wrapping midnight when start > end)
    at `utc_offset` hours."""

    start: int
    end: int
    utc_offset: int = 0

    @classmethod
    def parse(cls, text: str | None, utc_offset: int) -> QuietHours | None:
        if not text:
            return None
        start, end = (int(part) for part in text.split("-", 1))
        return None if start == end else cls(start, end, utc_offset)

    def now_quiet(self, now: float) -> bool:
        hour = datetime.fromtimestamp(now, timezone(timedelta(hours=self.utc_offset))).hour
        if self.start < self.end:
            return self.start <= hour < self.end
        return hour >= self.start or hour < self.end


class OrderNotifier:
    def __init__(
        self,
        updates: OrderUpdates,
        repo: OrderUpdateRepository,
        channel: Channel,
        words: NotificationWords,
        *,
        leadership: Leadership | None,
        poll_every_s: float,
        quiet: QuietHours | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._updates = updates
        self._repo = repo
        self._channel = channel
        self._words = words
        self._leadership = leadership
        self._poll_every_s = poll_every_s
        self._quiet = quiet
        self._clock = clock
        self._wake = asyncio.Event()
        self._next_poll = 0.0
        self._failing: dict[str, str] = {}  # step -> the kind of its failure, said once

    def wake(self) -> None:
        """A push was stored: look now rather than at the next tick."""
        self._wake.set()

    async def run(self) -> None:
        """Until cancelled: work while this instance leads (always, on SQLite)."""
        if self._leadership is None:
            await self._work()
            return
        while True:
            await self._leadership.acquire()
            work = asyncio.create_task(self._work(), name="order-updates")
            lost = asyncio.create_task(self._leadership.lost(), name="order-updates-lock")
            try:
                await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (work, lost):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if work.done() and not work.cancelled() and work.exception() is not None:
                await self._leadership.step_down()

    async def _work(self) -> None:
        await self._repo.prune_events(EVENT_RETENTION_S)
        again, failed = await self._repo.recover_interrupted()
        if again:
            log.warning(
                "order updates: %d notification(s) cut off by a stop are sent once more", again
            )
        if failed:
            log.warning(
                "order updates: %d notification(s) cut off twice are not sent again", failed
            )
        while True:
            await self._stage("round", self.tick)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_S):
                    await self._wake.wait()
            self._wake.clear()

    async def tick(self) -> None:
        """Pushes, a polling round, sending: each step runs whatever the one before it
        did, so a failure in one (a poison order) never keeps the others' news back."""
        await self._stage("pushes", self._updates.process_events)
        now = self._clock()
        if self._poll_every_s > 0 and now >= self._next_poll:
            self._next_poll = now + min(self._poll_every_s, 60.0)
            await self._stage("polling", self._updates.poll_round)
        if self._quiet is not None and self._quiet.now_quiet(now):
            return
        for notification in await self._repo.due_notifications(SEND_BATCH):
            await self._stage("sending", partial(self._send, notification))

    async def _stage(self, name: str, work: Callable[[], Awaitable[object]]) -> None:
        """Run one step; its failure is logged once with its traceback (then DEBUG while
        it keeps failing the same way, INFO when it works again), not every second."""
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            kind = type(exc).__name__
            if self._failing.get(name) == kind:
                log.debug("order updates: %s failed again (%s)", name, kind)
                return
            self._failing[name] = kind
            log.warning(
                "order updates: %s failed (%s); trying again, said once", name, kind, exc_info=exc
            )
            return
        if self._failing.pop(name, None) is not None:
            log.info("order updates: %s works again", name)

    async def _send(self, notification: Notification) -> None:
        if not await self._repo.claim(notification.id):
            return
        words = self._words(notification)
        if words is None:
            await self._repo.finish(notification.id, FAILED, "unknown_status")
            return
        (part, *_) = self._channel.render(words)
        result = await self._channel.send(
            ReplyTarget(notification.chat_id), StoredReply(part.html, part.plain)
        )
        if result.status == "delivered":
            await self._repo.finish_sent(notification, words)
            return
        reason = result.reason or result.status
        log.warning("order updates: a notification was not delivered (%s)", reason)
        await self._repo.finish(notification.id, FAILED, reason)
        if reason == FORBIDDEN:
            stopped = await self._repo.stop_chat(notification.chat_id, STOP_BLOCKED)
            await self._repo.drop_pending_for_chat(notification.chat_id, STOP_BLOCKED)
            log.info("order updates: %d subscription(s) stopped, the bot was blocked", stopped)
