"""Replies go through the inbox: store first, then send, then record what Telegram said.

Handlers never send answers themselves. They get an `Outbox` bound to the update being
handled and hand it the answer; the `Responder` stores the formatted parts in the inbox
row (status `answered`), sends them one by one through the `Sender`, and records each
Telegram message id as it arrives. If the process dies between storing and sending, the
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

from aiogram.enums import ChatAction
from aiogram.methods import SendChatAction

from bot.telegram.formatting import Rendered, markdown_to_messages
from bot.telegram.keyboards import markup_from_json, markup_to_json
from bot.telegram.send_outcome import THREAD_NOT_FOUND
from bot.telegram.sender import ReplyMarkup, Sender, SendResult
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
        sender: Sender,
        *,
        storage_retry: StorageRetry | None = None,
        transient_failures: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.time,
        topic_lost: TopicLost = no_other_topic,
    ) -> None:
        self._inbox = inbox
        self._sender = sender
        self._topic_lost = topic_lost
        self._retry = storage_retry or StorageRetry()
        self._transient = transient_failures
        self._clock = clock
        # since when every delivery attempt has ended in a transient failure (None: the
        # last one that ended went through, or none failed yet); read by /healthz
        self.failing_since: float | None = None

    def outbox(
        self,
        row: InboxRow,
        *,
        reply_to_message_id: int | None = None,
        business_connection_id: str | None = None,
    ) -> Outbox:
        """The update's reply channel; an update from a chat of the owner's business
        account (`business_connection_id`) is answered there, as the owner."""
        return Outbox(
            self,
            row,
            reply_to_message_id=reply_to_message_id,
            business_connection_id=business_connection_id,
        )

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
        for part in row.undelivered:
            # a part names its chat, or goes to the update's (an update without a chat,
            # e.g. a business connection, is answered only in chats its parts name)
            chat_id = part.chat_id if part.chat_id is not None else row.chat_id
            if chat_id is None:
                await self._finish(row.update_id, FAILED, "no_chat")
                return
            try:
                result = await self._send_part(chat_id, part)
            except Exception:
                log.exception("sending the reply to update %s failed", row.update_id)
                await self._finish(row.update_id, FAILED, "send_error")
                return
            if result.status == "delivered" and result.message_id is not None:
                self.failing_since = None
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

    async def _send_part(self, chat_id: int, part: StoredReply) -> SendResult:
        """One part to its chat; a part whose forum topic was deleted goes to the topic
        `topic_lost` gives instead."""
        result = await self._send_once(chat_id, part, part.thread_id)
        if result.reason == THREAD_NOT_FOUND and part.thread_id is not None:
            thread_id = await self._topic_lost(chat_id, part.thread_id)
            if thread_id is not None:
                result = await self._send_once(chat_id, part, thread_id)
        return result

    async def _send_once(
        self, chat_id: int, part: StoredReply, thread_id: int | None
    ) -> SendResult:
        if part.copy_message_id is not None and part.copy_from_chat_id is not None:
            return await self._sender.copy_message(
                chat_id,
                from_chat_id=part.copy_from_chat_id,
                message_id=part.copy_message_id,
                message_thread_id=thread_id,
            )
        markup = markup_from_json(part.reply_markup)
        if part.business_connection_id is not None:  # in the owner's chat, as the owner
            return await self._sender.send_text(
                chat_id,
                part.html,
                parse_mode="HTML",
                plain_text=part.plain,
                reply_to_message_id=part.reply_to_message_id,
                reply_markup=markup,
                business_connection_id=part.business_connection_id,
            )
        if thread_id is None:  # the usual answer: no topic argument at all
            return await self._sender.send_text(
                chat_id,
                part.html,
                parse_mode="HTML",
                plain_text=part.plain,
                reply_to_message_id=part.reply_to_message_id,
                reply_markup=markup,
            )
        return await self._sender.send_text(
            chat_id,
            part.html,
            parse_mode="HTML",
            plain_text=part.plain,
            reply_to_message_id=part.reply_to_message_id,
            reply_markup=markup,
            message_thread_id=thread_id,
        )

    async def _record_part(self, update_id: int, message_id: int) -> None:
        await self._retry.run(
            f"recording a delivered part of update {update_id}",
            lambda: self._inbox.add_message_id(update_id, message_id),
        )

    async def _finish(self, update_id: int, status: str, reason: str | None) -> None:
        await self._retry.run(
            f"finishing update {update_id}",
            lambda: self._inbox.finish(update_id, status, reason=reason),
        )

    @contextlib.asynccontextmanager
    async def typing(
        self, chat_id: int, *, business_connection_id: str | None = None
    ) -> AsyncIterator[None]:
        """Show "typing…" in the chat until the block ends (refreshed every few seconds);
        `business_connection_id`: in a chat of the owner's business account."""

        async def keep_typing() -> None:
            while True:
                try:
                    await self._sender.call(
                        SendChatAction(
                            chat_id=chat_id,
                            action=ChatAction.TYPING,
                            business_connection_id=business_connection_id,
                        )
                    )
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


class Outbox:
    """The reply channel of one inbox row, handed to handlers in their `ctx`."""

    def __init__(
        self,
        responder: Responder,
        row: InboxRow,
        *,
        reply_to_message_id: int | None,
        business_connection_id: str | None = None,
    ) -> None:
        self._responder = responder
        self._row = row
        self._reply_to = reply_to_message_id
        self._business = business_connection_id
        self.used = False

    @property
    def update_id(self) -> int:
        return self._row.update_id

    async def send(
        self,
        markdown: str,
        *,
        turn_id: str | None = None,
        reply_markup: ReplyMarkup | None = None,
        also: Sequence[StoredReply] = (),
    ) -> None:
        """Answer the update with text in the Markdown subset of `bot.telegram.formatting`;
        `reply_markup` (a keyboard) goes with the last part; `also`: ready parts sent
        after it, e.g. to another chat (see `send_parts`)."""
        await self.send_rendered(
            markdown_to_messages(markdown), turn_id=turn_id, reply_markup=reply_markup, also=also
        )

    async def send_rendered(
        self,
        parts: Sequence[Rendered],
        *,
        turn_id: str | None = None,
        reply_markup: ReplyMarkup | None = None,
        also: Sequence[StoredReply] = (),
    ) -> None:
        if self.used:
            log.warning("update %s answered twice by handlers; keeping the first", self.update_id)
            return
        self.used = True
        markup = None if reply_markup is None else markup_to_json(reply_markup)
        stored = [
            StoredReply(
                html=part.html,
                plain=part.plain,
                reply_to_message_id=self._reply_to if index == 0 else None,
                reply_markup=markup if index == len(parts) - 1 else None,
                business_connection_id=self._business,
            )
            for index, part in enumerate(parts)
        ]
        stored += also
        if not stored:
            await self.ignore("empty_reply")
            return
        await self._responder.reply(self._row, stored, turn_id=turn_id)

    async def send_parts(self, parts: Sequence[StoredReply]) -> None:
        """Answer the update with ready parts, some of which may go to other chats or be
        copies (the handoff's relays and mirrors): stored, then sent, like any answer."""
        if self.used:
            log.warning("update %s answered twice by handlers; keeping the first", self.update_id)
            return
        self.used = True
        if not parts:
            await self.ignore("empty_reply")
            return
        await self._responder.reply(self._row, parts)

    async def drop_contact(self) -> None:
        """After the reply is stored: remove a shared contact from the stored update."""
        await self._responder.drop_contact(self._row)

    async def ignore(self, reason: str) -> None:
        """Nothing will be sent for this update (e.g. silenced by a limit)."""
        self.used = True
        await self._responder.ignore(self._row, reason)
