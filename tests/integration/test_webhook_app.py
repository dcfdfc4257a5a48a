"""The webhook endpoint's answers decide whether Telegram redelivers: check each one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.runtime.health import Health
from bot.runtime.intake import IntakeClosed
from bot.telegram.webhook import SECRET_HEADER, GroupCommit, build_web_app
from storage.database import Database
from storage.inbox import InboxRepository

SECRET = "s3cret-Value_1"
PATH = "/tg/hook"


class IntakeDouble:
    def __init__(self) -> None:
        self.accepted: list[dict[str, Any]] = []
        self.error: Exception | None = None
        self.stalled_chats = 0
        self.failing_since: float | None = None  # stands in for the responder too

    async def accept(self, raw_updates: Sequence[dict[str, Any]]) -> list[int]:
        if self.error is not None:
            raise self.error
        self.accepted.extend(raw_updates)
        return [u["update_id"] for u in raw_updates]


@pytest.fixture
def intake() -> IntakeDouble:
    return IntakeDouble()


@pytest.fixture
async def base_url(intake: IntakeDouble, db: Database) -> AsyncIterator[str]:
    health = Health(
        db=db,
        inbox=InboxRepository(db),
        intake=intake,
        delivery=intake,
        delivery_threshold_s=60,
        cache_s=0,
    )
    app = build_web_app(intake=intake, health=health, path=PATH, secret=SECRET)  # type: ignore[arg-type]
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def post(base_url: str, body: Any, secret: str | None = SECRET) -> int:
    headers = {SECRET_HEADER: secret} if secret is not None else {}
    async with aiohttp.ClientSession() as http:
        async with http.post(base_url + PATH, json=body, headers=headers) as response:
            return response.status


UPDATE = {"update_id": 5, "message": {"text": "hi"}}


async def test_committed_update_gets_200(base_url: str, intake: IntakeDouble) -> None:
    assert await post(base_url, UPDATE) == 200
    assert intake.accepted == [UPDATE]


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET + "x", SECRET.upper()])
async def test_wrong_or_missing_secret_is_401_and_not_recorded(
    base_url: str, intake: IntakeDouble, secret: str | None
) -> None:
    assert await post(base_url, UPDATE, secret=secret) == 401
    assert intake.accepted == []


async def test_failed_insert_is_500_so_telegram_redelivers(
    base_url: str, intake: IntakeDouble
) -> None:
    intake.error = RuntimeError("database is locked")
    assert await post(base_url, UPDATE) == 500


async def test_shutting_down_is_503(base_url: str, intake: IntakeDouble) -> None:
    intake.error = IntakeClosed()
    assert await post(base_url, UPDATE) == 503


@pytest.mark.parametrize("body", [[1, 2], {"no_id": 1}, {"update_id": "5"}])
async def test_malformed_body_is_400(base_url: str, body: Any) -> None:
    assert await post(base_url, body) == 400


async def test_healthz_follows_the_database(base_url: str, db: Database) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(base_url + "/healthz") as response:
            assert response.status == 200
        await db.close()
        async with http.get(base_url + "/healthz") as response:
            assert response.status == 503


class SlowIntake:
    """Holds its first commit until `gate` opens; fails every commit if `error` is set."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.error: Exception | None = None

    async def accept(self, raw_updates: Sequence[dict[str, Any]]) -> list[int]:
        self.batches.append([u["update_id"] for u in raw_updates])
        self.entered.set()
        if len(self.batches) == 1:
            await self.gate.wait()
        if self.error is not None:
            raise self.error
        return self.batches[-1]


async def test_updates_arriving_during_a_commit_share_the_next_one() -> None:
    intake = SlowIntake()
    commits = GroupCommit(intake)  # type: ignore[arg-type]
    first = asyncio.create_task(commits.accept({"update_id": 1}))
    await intake.entered.wait()

    async def open_gate() -> None:  # runs after both accepts below have queued
        intake.gate.set()

    await asyncio.gather(
        commits.accept({"update_id": 2}), commits.accept({"update_id": 3}), open_gate()
    )
    await first
    assert intake.batches == [[1], [2, 3]]  # one commit for the two that waited


class StepClock:
    """The commits' clock: moves only when the test says; `asked` is set on every read."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.asked = asyncio.Event()

    def __call__(self) -> float:
        self.asked.set()
        return self.now


async def _commit_slowly(commits: GroupCommit, intake: SlowIntake, clock: StepClock) -> None:
    """A first commit of three updates that takes long on the clock (load)."""
    wave = [asyncio.create_task(commits.accept({"update_id": n})) for n in (1, 2, 3)]
    await intake.entered.wait()
    clock.now += 4000
    intake.gate.set()
    await asyncio.gather(*wave)
    assert intake.batches == [[1, 2, 3]]


async def test_the_next_wave_after_a_slow_commit_is_committed_together() -> None:
    # under load a commit answers its POSTs at once and the next updates come back over
    # those connections one by one: the first of them must not be committed alone, or
    # the rest wait for its commit and then their own
    intake = SlowIntake()
    clock = StepClock()
    commits = GroupCommit(intake, fill_max_s=3600, clock=clock)  # type: ignore[arg-type]
    await _commit_slowly(commits, intake, clock)
    clock.asked.clear()
    first = asyncio.create_task(commits.accept({"update_id": 4}))
    await clock.asked.wait()  # the commit for update 4 has started deciding
    await asyncio.gather(commits.accept({"update_id": 5}), commits.accept({"update_id": 6}))
    await first
    assert intake.batches == [[1, 2, 3], [4, 5, 6]]


async def test_an_update_after_a_quiet_moment_is_committed_at_once() -> None:
    intake = SlowIntake()
    clock = StepClock()
    # a wrongful wait for the wave would last an hour and time the test out
    commits = GroupCommit(intake, fill_max_s=3600, clock=clock)  # type: ignore[arg-type]
    await _commit_slowly(commits, intake, clock)
    clock.now += 5000  # nothing arrived for longer than the last commit took
    await commits.accept({"update_id": 4})
    assert intake.batches == [[1, 2, 3], [4]]


async def test_a_failed_shared_commit_fails_every_update_in_it() -> None:
    intake = SlowIntake()
    intake.gate.set()
    intake.error = RuntimeError("database is locked")
    commits = GroupCommit(intake)  # type: ignore[arg-type]
    results = await asyncio.gather(
        commits.accept({"update_id": 1}),
        commits.accept({"update_id": 2}),
        return_exceptions=True,
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    # nothing is stuck: the next update gets its own commit attempt
    intake.error = None
    await commits.accept({"update_id": 3})
    assert intake.batches[-1] == [3]


async def test_answered_updates_keep_their_connection_open_for_the_next(
    base_url: str, intake: IntakeDouble
) -> None:
    # Telegram keeps up to max_connections connections open and reuses them: nothing on
    # the accepted path may close one, or every update pays a TCP accept and close
    opened = aiohttp.TraceConfig()
    connections: list[object] = []

    async def count(*_: object) -> None:
        connections.append(object())

    opened.on_connection_create_end.append(count)
    updates = [{"update_id": n, "message": {"text": "hi"}} for n in range(1, 201)]
    connector = aiohttp.TCPConnector(limit=5)
    async with aiohttp.ClientSession(connector=connector, trace_configs=[opened]) as http:

        async def deliver(update: dict[str, Any]) -> int:
            headers = {SECRET_HEADER: SECRET}
            async with http.post(base_url + PATH, json=update, headers=headers) as response:
                await response.read()
                return response.status

        statuses = await asyncio.gather(*(deliver(u) for u in updates))
    assert statuses == [200] * len(updates)
    assert sorted(u["update_id"] for u in intake.accepted) == list(range(1, 201))
    assert 1 <= len(connections) <= 5
