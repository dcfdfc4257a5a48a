"""Long polling that acknowledges an update only after the inbox has committed it.

aiogram's own polling advances the offset as soon as it reads a batch, so a crash
mid-turn loses the message. Here the offset — which confirms updates to Telegram on the
next `getUpdates` — moves past a batch only after `Intake.accept` has committed it.
Until then Telegram keeps the updates and sends them again. A poison update (one the
inbox cannot store) does not hold the offset back: `Intake.accept` quarantines it and
the offset moves past it with the rest of the batch; only a failure of the store itself
keeps the batch for the next `getUpdates`. While the store keeps failing (a lock, a full
disk, a database restart) the batch is tried again with exponential backoff, and the
outage is one WARNING when it starts and one line when it ends (`RecordOutage`): the log
must not fill the disk that is already full.

Several instances on one PostgreSQL database (`leadership` given): only the leader polls
(`bot/runtime/leadership.py`). On becoming leader it removes any webhook and polls from offset
None — Telegram sends again what no one confirmed, and the inbox stores an update once.
When the leader's lock is lost it cancels the running `getUpdates` at once (updates
already fetched are still recorded). A 409 Conflict (another client polls with this
token) makes it step down and stand by for `conflict_backoff_s`, never crash. Without
`leadership` (SQLite, one instance) every error, 409 included, is retried with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from aiogram import Bot
from aiogram.exceptions import TelegramConflictError
from aiogram.methods import DeleteWebhook, GetUpdates, TelegramMethod

from bot.runtime.intake import Intake, IntakeClosed
from bot.runtime.leadership import Leadership
from storage.database import storage_fault

log = logging.getLogger(__name__)

POLL_TIMEOUT_S = 25
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0
CONFLICT_BACKOFF_S = 10.0

T = TypeVar("T")


class LeadershipLost(Exception):
    """The leader lock is no longer certainly ours: stop polling now."""


class RecordOutage:
    """The store failing to record batches: one WARNING when it starts, one INFO line when
    a batch is recorded again, the delay before the next try doubling in between."""

    def __init__(self, first_delay_s: float = BACKOFF_START_S) -> None:
        self._first_delay_s = first_delay_s
        self._failures = 0
        self._started = 0.0
        self._delay = first_delay_s

    def failed(self, exc: Exception, batch: int) -> float:
        """Note one failed attempt; the seconds to wait before the next one."""
        if self._failures == 0:
            self._started = time.monotonic()
            self._delay = self._first_delay_s
            kind = storage_fault(exc)
            log.warning(
                "could not record %d update(s) (%s, storage %s); not acknowledged, "
                "retrying with backoff up to %.0f s",
                batch,
                type(exc).__name__,
                kind or "error",
                BACKOFF_MAX_S,
                exc_info=exc if kind is None else None,  # not the store's fault: a bug
            )
        else:
            log.debug("recording still fails (%s)", type(exc).__name__, exc_info=exc)
            self._delay = min(self._delay * 2, BACKOFF_MAX_S)
        self._failures += 1
        return self._delay

    def recorded(self) -> None:
        """A batch was recorded: close the outage, if there was one."""
        if self._failures:
            log.info(
                "recording updates again after %d failed attempt(s) over %.1f s",
                self._failures,
                time.monotonic() - self._started,
            )
            self._failures = 0


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
    """Reads updates with `getUpdates` until cancelled (as the leader, with `leadership`)."""

    def __init__(
        self,
        bot: Bot,
        intake: Intake,
        *,
        allowed_updates: list[str],
        poll_timeout_s: int = POLL_TIMEOUT_S,
        leadership: Leadership | None = None,
        conflict_backoff_s: float = CONFLICT_BACKOFF_S,
        record_backoff_s: float = BACKOFF_START_S,
    ) -> None:
        self._bot = bot
        self._intake = intake
        self._allowed_updates = allowed_updates
        self._poll_timeout_s = poll_timeout_s
        self._leadership = leadership
        self._conflict_backoff_s = conflict_backoff_s
        self._offset: int | None = None
        self._outage = RecordOutage(record_backoff_s)

    async def prepare(self) -> None:
        """Remove a webhook if one is set, keeping the updates Telegram holds for us."""
        await self._with_backoff(
            "deleteWebhook", lambda: self._bot(DeleteWebhook(drop_pending_updates=False))
        )

    async def run(self) -> None:
        """Remove any webhook, then poll until cancelled; network errors back off and retry.

        With `leadership`: stand by until leader, poll while leader, again and again."""
        if self._leadership is None:
            await self.prepare()
            await self._poll(None)
            return
        try:
            while True:
                await self._leadership.acquire()
                if await self._lead(self._leadership):
                    return
        finally:
            await self._leadership.step_down()

    async def _lead(self, leadership: Leadership) -> bool:
        """Poll while the lock is ours; True when the intake closed (shutdown)."""
        self._offset = None  # the inbox dedups what the previous leader already stored
        lost = asyncio.create_task(leadership.lost(), name="polling-leader-ping")
        try:
            await self._while_leader(lost, self.prepare())
            await self._poll(lost)
            return True
        except LeadershipLost:
            await leadership.step_down()
            return False
        except TelegramConflictError:
            log.warning(
                "getUpdates: 409 Conflict, another client polls with this bot token; "
                "stepping down for %.0f s",
                self._conflict_backoff_s,
            )
            await leadership.step_down()
            await asyncio.sleep(self._conflict_backoff_s)
            return False
        finally:
            lost.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lost

    async def _poll(self, lost: asyncio.Task[None] | None) -> None:
        """Fetch and record batches until the intake closes (returns) or, as the leader,
        until the lock is lost (`LeadershipLost`) or Telegram answers 409."""
        while True:
            updates = await self._while_leader(lost, self._with_backoff("getUpdates", self._fetch))
            if not updates:
                continue
            raw = _identified(updates)
            try:
                await self._intake.accept(raw)
            except IntakeClosed:
                return
            except Exception as exc:
                # not acknowledged: the same batch comes back with the next getUpdates
                await asyncio.sleep(self._outage.failed(exc, len(raw)))
                continue
            self._outage.recorded()
            if raw:
                self._offset = max(int(u["update_id"]) for u in raw) + 1
            elif updates:
                # cannot be confirmed without an id; Telegram never sends such entries
                log.warning("getUpdates returned %d entries without an update id", len(updates))
                await asyncio.sleep(BACKOFF_MAX_S)

    async def _while_leader(self, lost: asyncio.Task[None] | None, call: Awaitable[T]) -> T:
        """Run `call`, cancelling it the moment leadership is lost (`LeadershipLost`)."""
        if lost is None:
            return await call
        task = asyncio.ensure_future(call)
        try:
            await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if task.cancelled():
            raise LeadershipLost
        return task.result()

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

    async def _with_backoff(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        delay = BACKOFF_START_S
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except TelegramConflictError:
                if self._leadership is not None:
                    raise  # another poller: the leader steps down (see `_lead`)
                log.warning("%s: 409 Conflict; retrying in %.1f s", what, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
            except Exception as exc:
                log.warning("%s failed (%s); retrying in %.1f s", what, type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
