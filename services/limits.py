"""Per-user message limits and the cap on concurrent turns.

Every customer message that passes costs a model call, so a flood from one account (a
script, a stuck client, a bored user) must stop before it reaches the model. The limiter
answers one question per message — may it go on, and should the user be told why not —
so the customer hears one polite notice when a limit is hit and then nothing more until
the window has passed (a notice per message would itself be a flood).

Who counts as one user is the caller's decision (the bot's `bot.telegram.filters.caller_of`): a
Telegram user id, or for a message sent on behalf of a chat (an anonymous group admin, a
channel) that chat's id — so one group's anonymous admins share one allowance, and not
that of every anonymous admin of every group.

Windows are fixed, starting at the user's first message in the window: simple to explain
("10 messages a minute") and O(1) memory per user. State lives in memory: a restart
forgets it, which errs on the customer's side. Users idle for a full day are forgotten,
and at most `max_tracked_users` are tracked (the least recently seen go first).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

MINUTE_S = 60.0
DAY_S = 86_400.0

LimitKind = Literal["per_minute", "per_day"]


@dataclass(frozen=True, slots=True)
class LimitDecision:
    """The verdict on one message.

    `allowed`: pass it on to the model. `notify`: it was refused and this is the first
    refusal in the current window, so tell the user once. `limit` and `retry_after_s`
    say which limit was hit and when the user may write again (for the notice text).
    """

    allowed: bool
    notify: bool = False
    limit: LimitKind | None = None
    retry_after_s: float = 0.0


_ALLOWED = LimitDecision(allowed=True)


@dataclass(slots=True)
class _UserWindow:
    minute_start: float
    minute_count: int
    day_start: float
    day_count: int
    silent_until: float  # a notice was sent; stay quiet until then


class UserMessageLimiter:
    """Counts each sender's messages per minute and per day; refusals are free."""

    def __init__(
        self,
        per_minute: int,
        per_day: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_tracked_users: int = 100_000,
    ) -> None:
        if per_minute < 1 or per_day < 1:
            raise ValueError("limits must be at least 1")
        self._per_minute = per_minute
        self._per_day = per_day
        self._clock = clock
        self._max_tracked_users = max(1, max_tracked_users)
        self._users: OrderedDict[int, _UserWindow] = OrderedDict()

    @property
    def tracked_users(self) -> int:
        return len(self._users)

    def check(self, user_id: int) -> LimitDecision:
        """Record one incoming message of `user_id` and decide whether it may proceed.

        A refused message does not count against the user's quota.
        """
        now = self._clock()
        self._forget_idle(now)
        window = self._users.get(user_id)
        if window is None:
            window = _UserWindow(now, 0, now, 0, silent_until=now)
            self._users[user_id] = window
            if len(self._users) > self._max_tracked_users:
                self._users.popitem(last=False)
        self._users.move_to_end(user_id)

        if now - window.minute_start >= MINUTE_S:
            window.minute_start, window.minute_count = now, 0
        if now - window.day_start >= DAY_S:
            window.day_start, window.day_count = now, 0

        limit: LimitKind | None = None
        reopens_at = now
        if window.day_count >= self._per_day:
            limit, reopens_at = "per_day", window.day_start + DAY_S
        elif window.minute_count >= self._per_minute:
            limit, reopens_at = "per_minute", window.minute_start + MINUTE_S
        if limit is None:
            window.minute_count += 1
            window.day_count += 1
            return _ALLOWED

        notify = now >= window.silent_until
        if notify:
            window.silent_until = reopens_at
        return LimitDecision(
            allowed=False, notify=notify, limit=limit, retry_after_s=max(0.0, reopens_at - now)
        )

    def _forget_idle(self, now: float) -> None:
        """Drop users unseen for a day: least recently seen first, so this stays O(1)."""
        while self._users:
            user_id, window = next(iter(self._users.items()))
            last_relevant = max(window.day_start + DAY_S, window.silent_until)
            if now < last_relevant:
                break
            del self._users[user_id]


class TurnSlots:
    """At most `limit` turns run at once; the rest wait in arrival order, none dropped.

    A thin wrapper over `asyncio.Semaphore` (FIFO for waiters) that also tells how many
    turns run and wait, for logs and /stats.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._semaphore = asyncio.Semaphore(limit)
        self.limit = limit
        self.running = 0
        self.waiting = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._semaphore.release()
