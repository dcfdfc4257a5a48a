"""Pacing of outgoing Bot API requests: one message per interval in a chat, a global rate.

Telegram throttles a bot that sends more than about one message per second to a chat or
about thirty per second overall. The pacer keeps the bot under both, so flood control is
the exception rather than the rule.

Several instances of the bot (PostgreSQL) share one bot's limit: each paces itself at
its share, the global rate divided by the live instances (`set_global_rate`), so no
request needs a round trip to a shared counter. While an instance starts or dies the
shares add up to more than the limit for at most one heartbeat; Telegram's flood control
(`retry_after`, handled by the sender) covers that.

Pacing is not ordering. The order of a chat's messages is decided upstream — the intake
runs one update of a chat at a time and the responder sends its parts one by one — so
the pacer only keeps a "next allowed time" per chat. It is reserved when a message takes
its turn (so two concurrent sends of one chat are still spaced) and pushed on when a
request is actually made (so waiting for the global rate never shortens the gap). A chat
whose next allowed time has passed is forgotten: idle chats cost no memory.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

ChatId = int | str


class Pacer:
    """Per-chat interval and global rate, with an injectable clock and sleep."""

    def __init__(
        self,
        *,
        per_chat_interval_s: float = 1.0,
        global_per_second: float = 25.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self._chat_interval_s = max(0.0, per_chat_interval_s)
        self._global_interval_s = 0.0
        self.set_global_rate(global_per_second)
        self._clock = clock
        self._sleep = sleep
        # chat -> the earliest time its next message may go; least recently set first
        self._next_in_chat: OrderedDict[ChatId, float] = OrderedDict()
        self._next_global_at = 0.0
        self._waiting = 0

    @property
    def global_per_second(self) -> float:
        return 1.0 / self._global_interval_s

    def set_global_rate(self, per_second: float) -> None:
        """Change the global rate from the next booking on (slots already booked stay).

        With several instances each one takes its share of Telegram's limit, recomputed
        as instances come and go (bot/runtime/claimed.py counts them).
        """
        if per_second <= 0:
            raise ValueError("global_per_second must be positive")
        self._global_interval_s = 1.0 / per_second

    @property
    def waiting(self) -> int:
        """Requests waiting right now for their chat's turn or a global slot (metrics)."""
        return self._waiting

    @property
    def tracked_chats(self) -> int:
        """How many chats hold pacing state (those still inside their interval)."""
        return len(self._next_in_chat)

    def global_backlog_s(self) -> float:
        """How far ahead the global rate is already booked (0 when a request may go now)."""
        return max(0.0, self._next_global_at - self._clock())

    async def chat_turn(self, chat_id: ChatId) -> None:
        """Wait until the chat may get its next message, and book the interval after it.

        Called once per message, before its first request (retries of the same message
        only wait for the global rate, see `request_turn`).
        """
        now = self._clock()
        self._forget_idle_chats(now)
        at = max(now, self._next_in_chat.get(chat_id, now))
        self._book_chat(chat_id, at + self._chat_interval_s)
        if at > now:
            await self._wait(at - now)

    async def request_turn(self, chat_id: ChatId | None = None) -> None:
        """Wait for the next global slot (evenly spaced, no bursts); called per request.

        With a `chat_id` the request is a chat message: the chat's next message may go
        no earlier than one interval after this request is actually made.
        """
        now = self._clock()
        at = max(now, self._next_global_at)
        self._next_global_at = at + self._global_interval_s
        if at > now:
            await self._wait(at - now)
        if chat_id is not None:
            made_at = self._clock()
            booked = self._next_in_chat.get(chat_id, made_at)
            self._book_chat(chat_id, max(booked, made_at + self._chat_interval_s))

    async def try_request_turn(self) -> bool:
        """Take the next global slot only if it is at most one slot away; otherwise take
        nothing and return False. For requests that are dropped rather than queued
        (drafts): they wait at most one slot and never move a chat's messages."""
        now = self._clock()
        if self._next_global_at - now > self._global_interval_s:
            return False
        at = max(now, self._next_global_at)
        self._next_global_at = at + self._global_interval_s
        if at > now:
            await self._sleep(at - now)
        return True

    async def _wait(self, delay_s: float) -> None:
        self._waiting += 1
        try:
            await self._sleep(delay_s)
        finally:
            self._waiting -= 1

    def _book_chat(self, chat_id: ChatId, next_at: float) -> None:
        self._next_in_chat[chat_id] = next_at
        self._next_in_chat.move_to_end(chat_id)

    def _forget_idle_chats(self, now: float) -> None:
        """Drop chats whose interval is over, least recently booked first (amortised O(1))."""
        while self._next_in_chat:
            chat_id, next_at = next(iter(self._next_in_chat.items()))
            if next_at > now:
                break
            del self._next_in_chat[chat_id]
