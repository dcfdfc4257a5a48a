"""Replies go through the inbox: store first, then send, then record what Telegram said.

Handlers never send answers themselves. They get an `Outbox` bound to the update being
handled (bot/telegram/outbox.py) and hand it the answer; the `Responder` stores the
formatted parts in the inbox row (status `answered`), sends them one by one through the
`Channel` (bot/runtime/channel.py; Telegram's: bot/telegram/channel.py), and records
each message id as it arrives. If the process dies between storing and sending, the
next start delivers the stored parts without calling the model again, continuing after
the last part Telegram accepted.

Every inbox write here is retried in place while the database has a storage fault
(`StorageRetry`: locked, disk full, …), so the intake's worker for the chat waits and the
reply is stored and delivered exactly once when the store works again; beyond the retry
bound `StorageUnavailable` reaches the intake, which leaves the update for the next start.
The responder also remembers since when deliveries have been failing for reasons worth
retrying (Telegram unreachable), for /healthz.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace

from bot.runtime.channel import (
    THREAD_NOT_FOUND,
    Channel,
    Rendered,
    ReplyTarget,
    SendResult,
    reply_target,
)
from storage.database import StorageRetry
from storage.inbox import (
    DELIVERED,
    FAILED,
    IGNORED,
    UNKNOWN,
    InboxRepository,
    InboxRow,
    StoredReply,
)

log = logging.getLogger(__name__)

TYPING_REFRESH_S = 4.0  # Telegram shows "typing…" for about 5 s per chat action


# Called when a part's forum topic no longer exists: (chat id, lost topic id) → the id of
# a topic to post in instead, or None (the handoff feature recreates a customer's topic:
# bot/telegram/features/handoff.py, `Feature.topic_lost`).
TopicLost = Callable[[int, int], Awaitable[int | None]]


async def no_other_topic(_chat_id: int, _topic_id: int) -> int | None:
    """Without a feature that owns topics, a lost topic's part is not sent elsewhere."""
    return None


class Responder:
    """Stores and delivers replies recorded in the inbox."""

    def __init__(
        self,
        inbox: InboxRepository,
        channel: Channel,
        *,
        storage_retry: StorageRetry | None = None,
        transient_failures: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.time,
        topic_lost: TopicLost = no_other_topic,
    ) -> None:
        self._inbox = inbox
        self._channel = channel
        self._topic_lost = topic_lost
        self._retry = storage_retry or StorageRetry()
        self._transient = transient_failures
        self._clock = clock
        # since when every delivery attempt has ended in a transient failure (None: the
        # last one that ended went through, or none failed yet); read by /healthz
        self.failing_since: float | None = None

    def render(self, markdown: str) -> Sequence[Rendered]:
        """The model's Markdown as the channel's messages (what an `Outbox` stores)."""
        return self._channel.render(markdown)

    async def reply(
        self, row: InboxRow, parts: Sequence[StoredReply], *, turn_id: str | None = None
    ) -> None:
        """Store the reply (pending → answered), then deliver it."""
        stored = await self._retry.run(
            f"storing the reply to update {row.update_id}",
            lambda: self._inbox.store_reply(row.update_id, parts, turn_id=turn_id),
        )
        if not stored:
            log.warning("update %s already has a reply; not answering twice", row.update_id)
            return
        answered = await self._inbox.get(row.update_id)
        if answered is not None:
            await self.deliver(answered)

    async def drop_contact(self, row: InboxRow) -> None:
        """Keep no shared contact in the inbox row of an answered update (privacy)."""
        await self._retry.run(
            f"dropping the contact of update {row.update_id}",
            lambda: self._inbox.drop_contact(row.update_id),
        )

    async def ignore(self, row: InboxRow, reason: str) -> None:
        """Nothing will be sent for this update."""
        await self._finish(row.update_id, IGNORED, reason)

    async def fail(self, row: InboxRow, reason: str) -> None:
        """Nothing will be sent for this update: it cannot be handled (`reason`)."""
        await self._inbox.finish(row.update_id, FAILED, reason=reason)

    async def deliver(self, row: InboxRow) -> None:
        """Send the parts Telegram has not accepted yet; finish the row."""
        parts = row.undelivered
        for index, part in enumerate(parts):
            # a part names its chat, or goes to the update's (an update without a chat,
            # e.g. a business connection, is answered only in chats its parts name)
            chat_id = part.chat_id if part.chat_id is not None else row.chat_id
            if chat_id is None:
                await self._finish(row.update_id, FAILED, "no_chat")
                return
            try:
                result = await self._send_part(row, chat_id, part)
            except Exception:
                log.exception("sending the reply to update %s failed", row.update_id)
                await self._finish(row.update_id, FAILED, "send_error")
                return
            if result.status == "delivered" and result.message_id is not None:
                self.failing_since = None
                if index == len(parts) - 1:
                    await self._finish_delivered(row.update_id, result.message_id)
                    return
                await self._record_part(row.update_id, result.message_id)
                continue
            status = UNKNOWN if result.status == "unknown" else FAILED
            log.warning(
                "reply to update %s in chat %s: %s (%s)",
                row.update_id,
                row.chat_id,
                status,
                result.reason,
            )
            if result.reason in self._transient and self.failing_since is None:
                self.failing_since = self._clock()
            await self._finish(row.update_id, status, result.reason or status)
            return
        await self._finish(row.update_id, DELIVERED, None)

    async def _send_part(self, row: InboxRow, chat_id: int, part: StoredReply) -> SendResult:
        """One part to its target (the update's chat unless the part names another); a
        part whose forum topic was deleted goes to the topic `topic_lost` gives instead."""
        target = reply_target(chat_id, row.payload, part, thread_id=part.thread_id)
        result = await self._channel.send(target, part)
        if result.reason == THREAD_NOT_FOUND and target.thread_id is not None:
            thread_id = await self._topic_lost(target.chat_id, target.thread_id)
            if thread_id is not None:
                result = await self._channel.send(replace(target, thread_id=thread_id), part)
        return result

    async def _record_part(self, update_id: int, message_id: int) -> None:
        await self._retry.run(
            f"recording a delivered part of update {update_id}",
            lambda: self._inbox.add_message_id(update_id, message_id),
        )

    async def _finish_delivered(self, update_id: int, last_message_id: int) -> None:
        """The last part's id and the row's end in one write (see `finish_delivered`)."""
        await self._retry.run(
            f"finishing update {update_id}",
            lambda: self._inbox.finish_delivered(update_id, last_message_id),
        )

    async def _finish(self, update_id: int, status: str, reason: str | None) -> None:
        await self._retry.run(
            f"finishing update {update_id}",
            lambda: self._inbox.finish(update_id, status, reason=reason),
        )

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        """Show "typing…" at `target` until the block ends (refreshed every few seconds)."""
        chat_id = target.chat_id

        async def keep_typing() -> None:
            while True:
                try:
                    await self._channel.show_typing(target)
                except Exception as exc:  # cosmetic: never fail a turn over it
                    log.debug("chat action failed in chat %s: %s", chat_id, type(exc).__name__)
                await asyncio.sleep(TYPING_REFRESH_S)

        task = asyncio.create_task(keep_typing(), name=f"typing-{chat_id}")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
