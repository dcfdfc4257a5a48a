"""A discrete-event clock for pacing tests: sleeps resolve in deadline order, instantly.

The earliest sleeper is woken only after every runnable task has reached its next sleep,
so the times code under test reads from `clock()` are exactly the times it chose.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable
from typing import Any


class VirtualTime:
    """Sleeps resolve in target order; the clock jumps to each sleeper's wake-up time."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (self.now + max(0.0, delay), next(self._seq), future))
        await future

    async def run(self, work: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(work)
        while not task.done():
            for _ in range(50):  # let every runnable task reach its next sleep
                await asyncio.sleep(0)
            if self._heap and not task.done():
                target, _, future = heapq.heappop(self._heap)
                self.now = max(self.now, target)
                future.set_result(None)
        return task.result()
