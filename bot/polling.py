"""Long polling that acknowledges an update only after the inbox has committed it.

aiogram's own polling advances the offset as soon as it reads a batch, so a crash
mid-turn loses the message. Here the offset — which confirms updates to Telegram on the
next `getUpdates` — moves past a batch only after `Intake.accept` has committed it.
Until then Telegram keeps the updates and sends them again. A poison update (one the
inbox cannot store) does not hold the offset back: `Intake.accept` quarantines it and
the offset moves past it with the rest of the batch; only a failure of the store itself
keeps the batch for the next `getUpdates`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from aiogram import Bot
from aiogram.methods import DeleteWebhook, GetUpdates, TelegramMethod

from bot.intake import Intake, IntakeClosed

log = logging.getLogger(__name__)

POLL_TIMEOUT_S = 25
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0


class GetRawUpdates(GetUpdates):
    """getUpdates returning Telegram's JSON objects as they are.

    Parsing happens later, one update at a time, when the update is processed: an
    update aiogram cannot parse then fails alone (its row is marked failed) instead of
    failing the whole batch forever, and the inbox stores exactly what Telegram sent.
    """

    __returning__ = list[dict[str, Any]]


def _identified(updates: list[Any]) -> list[dict[str, Any]]:
    """The entries that carry an update id (Telegram's always do); the rest are skipped."""
    return [
        u
        for u in updates
        if isinstance(u, dict) and type(u.get("update_id")) is int  # bool is no id
    ]


class Poller:
    """Reads updates with `getUpdates` until cancelled."""

    def __init__(
        self,
        bot: Bot,
        intake: Intake,
        *,
        allowed_updates: list[str],
        poll_timeout_s: int = POLL_TIMEOUT_S,
    ) -> None:
        self._bot = bot
        self._intake = intake
        self._allowed_updates = allowed_updates
        self._poll_timeout_s = poll_timeout_s
        self._offset: int | None = None

    async def prepare(self) -> None:
        """Remove a webhook if one is set, keeping the updates Telegram holds for us."""
        await self._with_backoff(
            "deleteWebhook", lambda: self._bot(DeleteWebhook(drop_pending_updates=False))
        )

    async def run(self) -> None:
        """Remove any webhook, then poll until cancelled; network errors back off and retry."""
        await self.prepare()
        while True:
            updates = await self._with_backoff("getUpdates", self._fetch)
            if not updates:
                continue
            raw = _identified(updates)
            try:
                await self._intake.accept(raw)
            except IntakeClosed:
                return
            except Exception:
                # not acknowledged: the same batch comes back with the next getUpdates
                log.exception("could not record %d update(s); retrying", len(raw))
                await asyncio.sleep(BACKOFF_START_S)
                continue
            if raw:
                self._offset = max(int(u["update_id"]) for u in raw) + 1
            elif updates:
                # cannot be confirmed without an id; Telegram never sends such entries
                log.warning("getUpdates returned %d entries without an update id", len(updates))
                await asyncio.sleep(BACKOFF_MAX_S)

    async def _fetch(self) -> list[dict[str, Any]]:
        method = GetRawUpdates(
            offset=self._offset,
            timeout=self._poll_timeout_s,
            allowed_updates=self._allowed_updates,
        )
        timeout = int((self._bot.session.timeout or 60) + self._poll_timeout_s)
        # aiogram types GetUpdates as returning parsed Updates; this subclass returns JSON
        raw = cast("TelegramMethod[list[dict[str, Any]]]", method)
        return await self._bot(raw, request_timeout=timeout)

    async def _with_backoff(self, what: str, call: Any) -> Any:
        delay = BACKOFF_START_S
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s failed (%s); retrying in %.1f s", what, type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
