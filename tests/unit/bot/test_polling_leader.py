"""Polling with several instances: only the leader polls, a standby takes over.

Real parts throughout: the real `Poller` and aiogram `Bot` against the fake Bot API over
HTTP (each instance under its own client name, so the fake tells them apart), the real
`Intake` over a real inbox, and the real `LeaderLock` on a real PostgreSQL. Intervals are
short so takeovers happen in a fraction of a second; every wait is for a condition.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from bot.runtime.intake import Intake
from bot.runtime.leadership import Leadership, Role
from bot.telegram.polling import Poller
from storage.database import Database
from storage.inbox import InboxRepository, InboxRow
from storage.leader import LeaderLock, polling_lock_name
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.pg import PgCluster
from tests.waits import OUTER_LIMIT_S

pytestmark = pytest.mark.postgres  # the lock lives in PostgreSQL
ALLOWED = ["message"]
_bot_ids = count(700_000)


@dataclass
class Instance:
    """One bot instance's polling side: its Bot, Intake, Leadership and Poller task."""

    name: str
    bot: Bot
    intake: Intake
    leadership: Leadership | None
    poller: Poller
    task: asyncio.Task[None] | None = None
    processed: list[int] = field(default_factory=list)
    done: defaultdict[int, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )

    async def processed_update(self, update_id: int) -> None:
        await asyncio.wait_for(self.done[update_id].wait(), OUTER_LIMIT_S)


StartInstance = Callable[..., Awaitable[Instance]]


@pytest.fixture
def leader_pg_url(pg_cluster: PgCluster) -> str:
    """The session's PostgreSQL server: the lock needs a server, not a schema."""
    return pg_cluster.admin_url


@pytest.fixture
def lock_name() -> str:
    return polling_lock_name(next(_bot_ids))


@pytest.fixture
async def start_instance(
    fake_telegram: FakeTelegramServer, db: Database, leader_pg_url: str, lock_name: str
) -> AsyncIterator[StartInstance]:
    """`await start_instance(name)` → an instance whose poller runs (leader or standby)."""
    started: list[Instance] = []

    async def start(
        name: str,
        *,
        leader_election: bool = True,
        conflict_backoff_s: float = 0.2,
        retry_s: float = 0.05,
    ) -> Instance:
        inbox = InboxRepository(db)
        processed: list[int] = []
        done: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)

        async def process(row: InboxRow) -> None:
            processed.append(row.update_id)
            await inbox.finish(row.update_id, "ignored", reason="test")
            done[row.update_id].set()

        async def deliver(row: InboxRow) -> None:
            await inbox.finish(row.update_id, "delivered")

        session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.client_url(name)))
        bot = Bot(fake_telegram.token, session=session)
        intake = Intake(inbox, process=process, deliver=deliver)
        leadership = (
            Leadership(
                LeaderLock(leader_pg_url, lock_name),
                retry_s=retry_s,
                ping_s=0.05,
                ping_timeout_s=2.0,
            )
            if leader_election
            else None
        )
        poller = Poller(
            bot,
            intake,
            allowed_updates=ALLOWED,
            leadership=leadership,
            conflict_backoff_s=conflict_backoff_s,
        )
        instance = Instance(name, bot, intake, leadership, poller, processed=processed, done=done)
        instance.task = asyncio.create_task(poller.run(), name=f"poller-{name}")
        started.append(instance)
        return instance

    yield start
    for instance in started:
        await stop(instance)
        await instance.bot.session.close()


async def stop(instance: Instance) -> None:
    """Shut the instance's poller down as the app does (cancel), then finish its work."""
    assert instance.task is not None
    instance.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await instance.task
    assert await instance.intake.drain(10.0)


def polls_by(fake: FakeTelegramServer, name: str) -> list[dict]:
    return [call.params for call in fake.calls_of("getUpdates") if call.client == name]


async def standby_tried(instance: Instance, times: int = 3) -> None:
    """Wait until the instance's election has asked for the lock `times` more times."""
    assert instance.leadership is not None
    await standby_tried_lock(instance.leadership._lock, times)  # type: ignore[arg-type]


async def standby_tried_lock(lock: LeaderLock, times: int = 3) -> None:
    """Wait until `lock.try_acquire` has been called `times` more times (any outcome)."""
    seen = asyncio.Event()
    calls = 0
    original = lock.try_acquire

    async def counting() -> bool:
        nonlocal calls
        try:
            return await original()
        finally:
            calls += 1
            if calls >= times:
                seen.set()

    lock.try_acquire = counting  # type: ignore[method-assign]
    try:
        await asyncio.wait_for(seen.wait(), OUTER_LIMIT_S)
    finally:
        lock.try_acquire = original  # type: ignore[method-assign]


async def test_only_the_leader_polls_and_a_standby_takes_over_from_offset_none(
    start_instance: StartInstance, fake_telegram: FakeTelegramServer
) -> None:
    a = await start_instance("A")
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "A")
    b = await start_instance("B")
    await standby_tried(b)
    assert a.leadership is not None and a.leadership.role is Role.LEADER
    assert b.leadership is not None and b.leadership.role is Role.STANDBY
    assert polls_by(fake_telegram, "B") == []
    assert [c.client for c in fake_telegram.calls_of("deleteWebhook")] == ["A"]

    first = message_update(10, text="one")
    first_id = fake_telegram.enqueue_update(first)
    await a.processed_update(first_id)

    await stop(a)  # a shutdown releases the lock; the standby leads within its retry
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "B")
    assert b.leadership.role is Role.LEADER
    assert "offset" not in polls_by(fake_telegram, "B")[0]  # from whatever Telegram holds
    assert "B" in [c.client for c in fake_telegram.calls_of("deleteWebhook")]

    fake_telegram.enqueue_update(first)  # Telegram sending again what was not confirmed
    second_id = fake_telegram.enqueue_update(message_update(11, text="two"))
    await b.processed_update(second_id)
    assert first_id not in b.processed  # the inbox had it: processed once, by A
    assert fake_telegram.poll_overlaps == 0


async def test_a_leader_that_loses_its_lock_ends_its_poll_at_once(
    start_instance: StartInstance,
    fake_telegram: FakeTelegramServer,
    leader_pg_url: str,
    lock_name: str,
) -> None:
    a = await start_instance("A", retry_s=1.0)  # B, quicker, is the one to take over
    await fake_telegram.wait_until(lambda: fake_telegram.polls_in_flight() == ["A"])
    b = await start_instance("B")
    await standby_tried(b)

    admin = await asyncpg.connect(leader_pg_url)
    try:
        ended = await admin.fetchval(
            "SELECT bool_and(pg_terminate_backend(pid, 5000)) FROM pg_locks"
            " WHERE locktype = 'advisory' AND granted"
            " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)",
            lock_name,
        )
    finally:
        await admin.close()
    assert ended

    # A's long poll (25 s) is cancelled long before it would end; B leads
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "B")
    await fake_telegram.wait_until(lambda: fake_telegram.polls_in_flight() == ["B"])
    assert b.leadership is not None and b.leadership.role is Role.LEADER
    assert a.task is not None and not a.task.done()  # A stands by, it did not stop
    await standby_tried(a)
    assert a.leadership is not None and a.leadership.role is Role.STANDBY
    polls_of_a = len(polls_by(fake_telegram, "A"))
    update_id = fake_telegram.enqueue_update(message_update(12, text="after"))
    await b.processed_update(update_id)
    assert len(polls_by(fake_telegram, "A")) == polls_of_a


async def test_a_409_conflict_makes_the_leader_step_down_instead_of_crashing(
    start_instance: StartInstance, fake_telegram: FakeTelegramServer
) -> None:
    """Another client polls with the same token (a stray instance): Telegram ends the
    leader's poll with 409; the leader steps down, a standby leads."""
    fake_telegram.conflict_on_overlap = True
    a = await start_instance("A", conflict_backoff_s=5.0)
    await fake_telegram.wait_until(lambda: fake_telegram.polls_in_flight() == ["A"])
    b = await start_instance("B")
    await standby_tried(b)

    await rogue_poll(fake_telegram)
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "B")
    assert b.leadership is not None and b.leadership.role is Role.LEADER
    assert a.leadership is not None and a.leadership.role is Role.STANDBY
    assert a.task is not None and not a.task.done()
    update_id = fake_telegram.enqueue_update(message_update(13, text="still served"))
    await b.processed_update(update_id)


async def test_without_leader_election_a_409_is_retried_as_before(
    start_instance: StartInstance, fake_telegram: FakeTelegramServer
) -> None:
    """SQLite, one instance: no lock; a 409 is one more error to retry with backoff."""
    fake_telegram.conflict_on_overlap = True
    solo = await start_instance("solo", leader_election=False)
    await fake_telegram.wait_until(lambda: fake_telegram.polls_in_flight() == ["solo"])
    polls = len(polls_by(fake_telegram, "solo"))
    await rogue_poll(fake_telegram)
    await fake_telegram.wait_until(lambda: len(polls_by(fake_telegram, "solo")) > polls)
    assert solo.task is not None and not solo.task.done()
    update_id = fake_telegram.enqueue_update(message_update(14, text="served"))
    await solo.processed_update(update_id)


async def rogue_poll(fake: FakeTelegramServer) -> None:
    """A getUpdates by another client with this token (it returns at once)."""
    url = f"{fake.client_url('rogue')}/bot{fake.token}/getUpdates"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json={"timeout": 0}) as response:
            assert response.status == 200


async def test_an_unreachable_database_keeps_the_election_trying_and_says_so_once(
    tmp_path: Path, leader_pg_url: str, lock_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No server at the URL yet (a socket folder with nothing in it): the instance stays
    a standby, warns once, and leads as soon as the database answers."""
    lock = LeaderLock(f"postgresql://postgres:@/postgres?host={tmp_path}", lock_name)
    leadership = Leadership(lock, retry_s=0.01)
    trying = asyncio.create_task(leadership.acquire())
    try:
        await standby_tried_lock(lock, times=5)
        assert not trying.done() and leadership.role is Role.STANDBY
        lock._url = leader_pg_url  # the database is back
        await asyncio.wait_for(trying, OUTER_LIMIT_S)
        assert leadership.role is Role.LEADER
    finally:
        trying.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await trying
        await leadership.step_down()
    warnings = [r for r in caplog.records if "cannot reach the database" in r.getMessage()]
    assert len(warnings) == 1
    assert "postgres:" not in caplog.text  # the URL (and any password in it) is not logged
