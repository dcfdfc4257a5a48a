"""Delivers the durable outbox of messages that answer no update (storage/outgoing.py).

Each due message is taken (one conditional update: of two instances, one sends it), sent
through the `Sender` (its own retries, pacing and plain-text fallback), and its outcome
recorded: delivered; certainly not sent because Telegram could not be reached
(`RETRYABLE_FAILURES`) → tried again later, waiting twice as long each time, for up to a
day; refused for good (blocked, chat not found) → failed; the answer lost on the way →
`unknown`, never resent blindly (it may have arrived). A process that dies mid-try leaves
the message to be tried again once its hold runs out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot.telegram.keyboards import markup_from_json
from bot.telegram.sender import RETRYABLE_FAILURES, Sender
from storage.database import StorageRetry
from storage.outgoing import DELIVERED, FAILED, UNKNOWN, OutgoingRepository, OutgoingRow

log = logging.getLogger(__name__)

HOLD_S = 300.0  # a try's hold: another worker takes the message after this if this one died
GIVE_UP_AFTER_S = 86_400.0  # as long as Telegram keeps an update: then failed
RETENTION_S = 7 * 86_400.0  # finished messages are kept a week, as the inbox's rows


class OutgoingDelivery:
    def __init__(
        self,
        repo: OutgoingRepository,
        sender: Sender,
        *,
        storage_retry: StorageRetry | None = None,
        first_retry_s: float = 15.0,
        max_retry_s: float = 600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._repo = repo
        self._sender = sender
        self._retry = storage_retry or StorageRetry()
        self._first_retry_s = first_retry_s
        self._max_retry_s = max_retry_s
        self._clock = clock

    async def forget_old(self) -> int:
        """Delete finished messages older than a week (at start, as the inbox does)."""
        return await self._retry.run(
            "pruning sent messages", lambda: self._repo.prune(older_than_s=RETENTION_S)
        )

    async def deliver_due(self) -> int:
        """Try every due message once; returns how many were delivered now."""
        delivered = 0
        for row in await self._retry.run("reading due messages", self._repo.due):
            if await self._take(row) and await self._deliver(row):
                delivered += 1
        return delivered

    async def _take(self, row: OutgoingRow) -> bool:
        return await self._retry.run(
            "taking a message to send", lambda: self._repo.take(row, hold_s=HOLD_S)
        )

    async def _deliver(self, row: OutgoingRow) -> bool:
        message = row.message
        try:
            result = await self._sender.send_text(
                message.chat_id,
                message.html,
                parse_mode="HTML",
                plain_text=message.plain,
                reply_markup=markup_from_json(message.reply_markup),
                business_connection_id=message.business_connection_id,
            )
        except Exception:
            log.exception("outbox: sending message %s failed", message.key)
            await self._finish(message.key, FAILED, reason="send_error")
            return False
        if result.status == "delivered":
            await self._finish(message.key, DELIVERED, message_id=result.message_id)
            return True
        reason = result.reason or result.status
        if result.status == "failed" and reason in RETRYABLE_FAILURES:
            if self._clock() - row.created_at < GIVE_UP_AFTER_S:
                wait = min(self._first_retry_s * 2 ** max(row.attempts, 0), self._max_retry_s)
                log.warning(
                    "outbox: message %s to chat %s not sent (%s); trying again in %.0f s",
                    message.key,
                    message.chat_id,
                    reason,
                    wait,
                )
                await self._retry.run(
                    "postponing a message",
                    lambda: self._repo.retry(message.key, after_s=wait, reason=reason),
                )
                return False
        status = UNKNOWN if result.status == "unknown" else FAILED
        log.warning(
            "outbox: message %s to chat %s: %s (%s)", message.key, message.chat_id, status, reason
        )
        await self._finish(message.key, status, reason=reason)
        return False

    async def _finish(
        self, key: str, status: str, *, message_id: int | None = None, reason: str | None = None
    ) -> None:
        await self._retry.run(
            "recording a message's outcome",
            lambda: self._repo.finish(key, status, message_id=message_id, reason=reason),
        )
