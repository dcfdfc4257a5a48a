"""The owner's web sources fetched again on a schedule, in the background.

Every `KNOWLEDGE_SYNC_EVERY_HOURS` (a day by default; 0: never) each source added from a
URL (a site, a page) is synced again: changed pages are re-read, unchanged ones cost a
conditional request, pages gone from the site leave the knowledge. Files, the FAQ and
entries are not fetched from anywhere and are left alone.

When a source is due is read from the database (its last sync, else when it was added),
not kept in memory: a restart does not sync everything again, and with several instances
on one PostgreSQL database only the holder of the knowledge-sync lock (`Leadership`)
syncs — a new holder sees what the last one did. A source whose sync failed (the site
down) keeps its error for `knowledge list` and /knowledge and is tried again after
`retry_s` (an hour), not at every tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from bot.runtime.leadership import Leadership, LeaderWords

log = logging.getLogger(__name__)

TICK_S = 60.0  # how often due sources are looked for
RETRY_S = 3600.0  # a failed source is tried again after this long
URL_KINDS = frozenset({"site", "page", "sitemap"})

RESYNC_WORDS = LeaderWords(
    leading="knowledge sync: this instance holds the lock; it re-syncs the web sources",
    standing_by="knowledge sync: another instance re-syncs the web sources; this one stands by",
    unreachable=(
        "knowledge sync: cannot reach the database for the lock (%s); retrying every %.0f s"
    ),
    lost="knowledge sync: lost the lock; this instance stops re-syncing",
)


def knowledge_sync_lock_name(bot_id: int) -> str:
    return f"shop-support-bot:knowledge-sync:{bot_id}"


class SourceState(Protocol):
    """What the schedule reads of a source (storage/knowledge.py:SourceRecord)."""

    @property
    def kind(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def added_at(self) -> float: ...
    @property
    def synced_at(self) -> float | None: ...


class KnowledgeResync:
    """The background re-sync: `run` until cancelled; `tick` is one look (tests)."""

    def __init__(
        self,
        sources: Callable[[], Awaitable[Sequence[SourceState]]],
        sync_one: Callable[[str], Awaitable[object]],
        *,
        every_s: float,
        leadership: Leadership | None = None,
        clock: Callable[[], float] = time.time,
        tick_s: float = TICK_S,
        retry_s: float = RETRY_S,
    ) -> None:
        self._sources = sources
        self._sync_one = sync_one
        self._every_s = every_s
        self._leadership = leadership
        self._clock = clock
        self._tick_s = tick_s
        self._retry_s = retry_s
        self._failed_at: dict[str, float] = {}  # location -> when its last try failed

    async def due(self) -> list[str]:
        """The URL sources whose last sync (or addition) is `every_s` old or older, and
        that did not fail within `retry_s`."""
        now = self._clock()
        out = []
        for source in await self._sources():
            if source.kind not in URL_KINDS:
                continue
            last = source.synced_at if source.synced_at is not None else source.added_at
            failed = self._failed_at.get(source.location)
            if now - last >= self._every_s and (failed is None or now - failed >= self._retry_s):
                out.append(source.location)
        return out

    async def tick(self) -> int:
        """Sync every due source, one after another: how many worked."""
        synced = 0
        for location in await self.due():
            try:
                await self._sync_one(location)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the site down, a bad page: the next source still goes
                self._failed_at[location] = self._clock()
                log.warning(
                    "knowledge sync: %s failed (%s); tried again in %.0f min",
                    location,
                    type(exc).__name__,
                    self._retry_s / 60,
                )
                continue
            self._failed_at.pop(location, None)
            synced += 1
        if synced:
            log.info("knowledge sync: %d source(s) synced on schedule", synced)
        return synced

    async def run(self) -> None:
        """Until cancelled: look every `tick_s` while this instance leads (always on
        SQLite). Off when `every_s` is 0."""
        if self._every_s <= 0:
            return
        if self._leadership is None:
            await self._work()
            return
        while True:
            await self._leadership.acquire()
            work = asyncio.create_task(self._work(), name="knowledge-sync")
            lost = asyncio.create_task(self._leadership.lost(), name="knowledge-sync-lock")
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
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database away for a moment: the next tick tries again
                log.exception("knowledge sync: looking for due sources failed")
            await asyncio.sleep(self._tick_s)
