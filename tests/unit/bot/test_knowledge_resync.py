"""The scheduled re-sync of the owner's web sources: due by what the database says (last
sync, else addition), URL sources only, a failing site retried after an hour rather than
every tick; with several instances on PostgreSQL only the lock's holder syncs."""

from __future__ import annotations

import asyncio
import contextlib
from itertools import count

import pytest

from bot.runtime.knowledge_resync import KnowledgeResync, knowledge_sync_lock_name
from bot.runtime.leadership import Leadership
from storage.database import Database
from storage.knowledge import KnowledgeRepository
from storage.leader import LeaderLock
from tests.pg import PgCluster
from tests.waits import OUTER_LIMIT_S

DAY = 86_400.0
_names = count(1)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def _sources(db: Database) -> KnowledgeRepository:
    repo = KnowledgeRepository(db)
    # added long ago and synced yesterday-and-a-bit / an hour ago / never (added 2 days ago)
    for kind, location in [
        ("site", "https://shop.example/"),
        ("page", "https://shop.example/delivery.html"),
        ("site", "https://other.example/"),
        ("file", "catalogue.pdf"),
        ("faq", "faq"),
    ]:
        await repo.ensure_source(kind, location, location, now=0.0)
    source = {s.location: s.id for s in await repo.sources()}
    await repo.apply(source["https://shop.example/"], [], now=10 * DAY - DAY - 60)
    await repo.apply(source["https://shop.example/delivery.html"], [], now=10 * DAY - 3600)
    return repo


async def test_due_url_sources_are_synced_and_the_rest_left_alone(db: Database) -> None:
    repo = await _sources(db)
    clock = Clock(10 * DAY)
    synced: list[str] = []

    async def sync_one(location: str) -> None:
        synced.append(location)
        source = await repo.source(location)
        assert source is not None
        await repo.apply(source.id, [], now=clock.now)

    resync = KnowledgeResync(repo.sources, sync_one, every_s=DAY, clock=clock)
    assert await resync.tick() == 2
    assert sorted(synced) == ["https://other.example/", "https://shop.example/"]
    synced.clear()
    assert await resync.tick() == 0  # just synced: not due again
    clock.now += DAY - 3000  # the page synced an hour before the others is due first
    assert await resync.tick() == 1 and synced == ["https://shop.example/delivery.html"]


async def test_a_failing_site_is_tried_again_after_the_retry_time(db: Database) -> None:
    repo = await _sources(db)
    clock = Clock(10 * DAY)
    tries: list[str] = []

    async def sync_one(location: str) -> None:
        tries.append(location)
        if location == "https://other.example/":
            raise ConnectionError("down")
        source = await repo.source(location)
        assert source is not None
        await repo.apply(source.id, [], now=clock.now)

    resync = KnowledgeResync(repo.sources, sync_one, every_s=DAY, clock=clock, retry_s=3600)
    assert await resync.tick() == 1  # the other one still synced
    clock.now += 600
    await resync.tick()
    assert tries.count("https://other.example/") == 1  # not hammered every tick
    clock.now += 3600
    await resync.tick()
    assert tries.count("https://other.example/") == 2


async def test_off_when_the_interval_is_zero(db: Database) -> None:
    repo = await _sources(db)

    async def sync_one(location: str) -> None:
        raise AssertionError("never called")

    await asyncio.wait_for(KnowledgeResync(repo.sources, sync_one, every_s=0).run(), OUTER_LIMIT_S)


@pytest.mark.postgres
async def test_with_several_instances_only_the_lock_holder_syncs(
    db: Database, pg_cluster: PgCluster
) -> None:
    repo = await _sources(db)
    name = knowledge_sync_lock_name(800_000 + next(_names))
    synced: list[tuple[int, str]] = []
    done = asyncio.Event()

    def worker(instance: int) -> KnowledgeResync:
        async def sync_one(location: str) -> None:
            synced.append((instance, location))
            source = await repo.source(location)
            assert source is not None
            await repo.apply(source.id, [], now=10 * DAY)
            if len(synced) >= 2:
                done.set()

        leadership = Leadership(LeaderLock(pg_cluster.admin_url, name), retry_s=0.05)
        return KnowledgeResync(
            repo.sources,
            sync_one,
            every_s=DAY,
            leadership=leadership,
            clock=lambda: 10 * DAY,
            tick_s=0.05,
        )

    tasks = [asyncio.create_task(worker(i).run()) for i in (1, 2)]
    try:
        # both start at once with both sources due: without the lock both would sync
        await asyncio.wait_for(done.wait(), OUTER_LIMIT_S)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert len(synced) == 2 and len({instance for instance, _ in synced}) == 1
