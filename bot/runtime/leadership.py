"""Which instance polls, when several bots share one PostgreSQL database.

Telegram serves one `getUpdates` client per bot; a second one gets 409 Conflict. So in
polling mode the instances elect a leader through a lock in the shared database
(`storage/leader.py`): the holder polls, the others are hot standbys that try for the
lock every `retry_s` and take over about that long after the leader dies. The leader
pings its lock every `ping_s`; a failed ping means the lock may already be another's, so
the poller stops polling at once (`bot/telegram/polling.py`). Every instance, leader or not,
keeps working on what is stored; only the polling moves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import SecretStr

from storage.leader import LeaderLock, polling_lock_name

log = logging.getLogger(__name__)

RETRY_S = 1.0
PING_S = 2.0
PING_TIMEOUT_S = 2.0


class Role(StrEnum):
    LEADER = "leader"
    STANDBY = "standby"


@dataclass(frozen=True, slots=True)
class LeaderWords:
    """The log lines of one election (the polling's by default; order updates have theirs)."""

    leading: str = "polling: this instance is the leader; it polls Telegram"
    standing_by: str = "polling: another instance is polling; this one stands by"
    unreachable: str = (
        "polling: cannot reach the database for the leader lock (%s); retrying every %.0f s"
    )
    lost: str = "polling: lost the leader lock; this instance stops polling"


class Leadership:
    """One instance's part in the election: wait to lead, notice losing it, step down."""

    def __init__(
        self,
        lock: LeaderLock,
        *,
        retry_s: float = RETRY_S,
        ping_s: float = PING_S,
        ping_timeout_s: float = PING_TIMEOUT_S,
        words: LeaderWords = LeaderWords(),
    ) -> None:
        self._lock = lock
        self._retry_s = retry_s
        self._ping_s = ping_s
        self._ping_timeout_s = ping_timeout_s
        self._words = words
        self.role = Role.STANDBY
        self._yield_first = False  # after losing the lock: let a standby take it first

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    async def acquire(self) -> None:
        """Return once this instance holds the lock, trying every `retry_s`.

        After losing the lock the first try waits `retry_s`: the instance that lost it
        is the likelier one to be in trouble, so a healthy standby gets it first."""
        said_standby = False
        failing: str | None = None
        if self._yield_first:
            self._yield_first = False
            await asyncio.sleep(self._retry_s)
        while True:
            try:
                if await self._lock.try_acquire():
                    self.role = Role.LEADER
                    log.info(self._words.leading)
                    return
                failing = None
                if not said_standby:
                    log.info(self._words.standing_by)
                    said_standby = True
            except Exception as exc:  # the database is unreachable: keep trying, say it once
                if failing != type(exc).__name__:
                    failing = type(exc).__name__
                    log.warning(
                        self._words.unreachable,
                        failing,
                        self._retry_s,
                    )
            await asyncio.sleep(self._retry_s)

    async def lost(self) -> None:
        """Return when the lock is no longer certainly ours (a ping failed)."""
        while True:
            await asyncio.sleep(self._ping_s)
            if not await self._lock.ping(self._ping_timeout_s):
                self.role = Role.STANDBY
                self._yield_first = True
                log.warning(self._words.lost)
                return

    async def step_down(self) -> None:
        """Give the lock up so another instance may lead."""
        self.role = Role.STANDBY
        await self._lock.release()


async def while_leading(
    leadership: Leadership, work: Callable[[], Coroutine[Any, Any, None]], name: str
) -> None:
    """Until cancelled: run `work` while this instance holds the lock — stopped when the
    lock is lost, started again when it is won back; work that fails gives the lock up
    so another instance may do it."""
    while True:
        await leadership.acquire()
        task = asyncio.create_task(work(), name=name)
        lost = asyncio.create_task(leadership.lost(), name=f"{name}-lock")
        try:
            await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for one in (task, lost):
                one.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await one
        if task.done() and not task.cancelled() and task.exception() is not None:
            await leadership.step_down()


def polling_leadership(database_url: SecretStr | None, bot_token: SecretStr) -> Leadership | None:
    """PostgreSQL (DATABASE_URL): the instances elect one poller. SQLite: one instance,
    it polls (None)."""
    if database_url is None:
        return None
    bot_id = int(bot_token.get_secret_value().split(":", 1)[0])  # public: getMe's id
    return Leadership(LeaderLock(database_url.get_secret_value(), polling_lock_name(bot_id)))
