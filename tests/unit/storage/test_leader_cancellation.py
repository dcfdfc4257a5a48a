"""A cancelled leader ping stays cancelled, however the timing falls.

Python 3.11's `asyncio.wait_for` returns the result, and drops the cancellation, when the
cancel arrives just as the awaited query completes. The polling leader pings its lock
every few hundred milliseconds, so at shutdown the ping loop sometimes ran on for ever and
the poller never stopped (a test run hung on it). No server is needed to show it: the
query is replaced by one that completes in the very step the cancel arrives.
"""

from __future__ import annotations

import asyncio
from typing import Any

from storage.leader import LeaderLock


async def test_a_cancel_that_arrives_as_the_ping_completes_is_not_lost() -> None:
    lock = LeaderLock("postgresql://unused", "bot-1")
    lock._held = True  # as after try_acquire: a live session holding the lock
    lock._conn = object()  # type: ignore[assignment]
    pinger: asyncio.Task[str] | None = None

    async def still_held(_conn: Any) -> bool:
        assert pinger is not None
        pinger.cancel()  # shutdown, in the same step the answer arrives
        return True

    lock._still_held = still_held  # type: ignore[method-assign]

    async def ping_then_go_on() -> str:
        await lock.ping(5.0)
        await asyncio.sleep(0)
        return "went on pinging"

    pinger = asyncio.create_task(ping_then_go_on())
    await asyncio.wait({pinger})

    assert pinger.cancelled()
