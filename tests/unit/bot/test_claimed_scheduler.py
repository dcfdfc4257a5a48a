"""Two instances' intakes on one real PostgreSQL database: a chat runs where it is claimed.

Each "instance" is a real `Intake` with a `ClaimedScheduler`, its own claims, its own
fenced inbox and its own pool of connections; the two run in one event loop here (the
two-process version with SIGKILL is tests/e2e/test_multi_instance.py). A lease running out
is the row state it leaves (`lease_until` in the past), set in SQL; the fence's clock is a
variable the test moves. No test waits for a timer: the periodic tick is called directly.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from bot.runtime.claimed import ClaimedScheduler, ClaimFence, send_budget_share
from bot.runtime.intake import ChatKey, Intake, UpdateHandler, describe_update
from storage.coordination import ClaimRepository, claim_text
from storage.inbox import InboxRepository, InboxRow
from storage.postgres import PgDatabase
from tests.waits import OUTER_LIMIT_S

pytestmark = pytest.mark.postgres

LEASE_S = 30.0


def update(update_id: int, chat_id: int) -> dict:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 0,
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": chat_id, "is_bot": False, "first_name": "A"},
            "text": "hi",
        },
    }


@dataclass
class Log:
    """What both instances did, in the order they did it."""

    processed: list[tuple[str, int]] = field(default_factory=list)
    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    started: defaultdict[int, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )
    lives: list[tuple[str, int]] = field(default_factory=list)

    def gate(self, update_id: int) -> asyncio.Event:
        self.gates[update_id] = asyncio.Event()
        return self.gates[update_id]

    def order(self) -> list[int]:
        return [update_id for _name, update_id in self.processed]


class Instance:
    """One bot instance's intake side: claims, fence, fenced inbox, scheduler."""

    def __init__(self, pg: PgDatabase, name: str, log: Log) -> None:
        self.name = name
        self.now = 0.0
        self.claims = ClaimRepository(pg, owner=name, lease_s=LEASE_S)
        self.inbox = InboxRepository(pg, fence=self.claims.inbox_fence)
        self.fence = ClaimFence(lease_s=LEASE_S, clock=lambda: self.now)
        self._log = log
        self.scheduler: ClaimedScheduler | None = None
        self.finishes: list[tuple[int, bool]] = []
        self.intake = Intake(
            self.inbox, process=self.process, deliver=self.process, scheduling=self._build
        )

    def _build(self, handle: UpdateHandler, inbox: InboxRepository) -> ClaimedScheduler:
        self.scheduler = ClaimedScheduler(
            handle,
            inbox=inbox,
            claims=self.claims,
            fence=self.fence,
            on_live=lambda count: self._log.lives.append((self.name, count)),
        )
        return self.scheduler

    @property
    def sched(self) -> ClaimedScheduler:
        assert self.scheduler is not None
        return self.scheduler

    async def process(self, row: InboxRow) -> None:
        self._log.processed.append((self.name, row.update_id))
        self._log.started[row.update_id].set()
        gate = self._log.gates.get(row.update_id)
        if gate is not None:
            await gate.wait()
        self.fence.check()  # as the sender does before any Bot API request
        moved = await self.inbox.finish(row.update_id, "ignored", reason=f"by-{self.name}")
        self.finishes.append((row.update_id, moved))


@pytest.fixture
def pg(pg_db: PgDatabase) -> PgDatabase:
    return pg_db


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
async def two(pg: PgDatabase, log: Log) -> AsyncIterator[tuple[Instance, Instance]]:
    a, b = Instance(pg, "a", log), Instance(pg, "b", log)
    yield a, b
    for instance in (a, b):
        await instance.intake.drain(0)


async def settle(*instances: Instance) -> None:
    """Everything scheduled is handled; one tick each (the sweeper is the backstop for
    an update stored in the instant its chat's claim was given back)."""
    for _ in range(2):
        for instance in instances:
            await instance.intake.join()
        for instance in instances:
            await instance.sched.tick()
    for instance in instances:
        await instance.intake.join()


async def expire(pg: PgDatabase, key: ChatKey) -> None:
    await pg.write("UPDATE chat_claims SET lease_until = 0 WHERE claim_key = ?", (claim_text(key),))


async def status_of(pg: PgDatabase, update_id: int) -> tuple[str, str | None]:
    row = await InboxRepository(pg).get(update_id)
    assert row is not None
    return row.status, row.reason


async def test_one_chats_updates_stored_by_both_instances_are_handled_once_in_order(
    two: tuple[Instance, Instance], log: Log, pg: PgDatabase
) -> None:
    a, b = two
    first = log.gate(1)
    await a.intake.accept([update(1, 7)])
    await asyncio.wait_for(log.started[1].wait(), OUTER_LIMIT_S)  # a works on the chat
    for update_id in range(2, 9):  # the load balancer alternates
        instance = a if update_id % 2 else b
        await instance.intake.accept([update(update_id, 7)])
    await b.intake.join()  # b's claims were tried
    assert b.intake.busy_chats == 0  # b stored its updates but does not run a's chat

    first.set()
    await settle(a, b)

    assert log.order() == list(range(1, 9))
    assert {name for name, _ in log.processed} == {"a"}
    assert await b.claims.claim([("chat", 7)]) == {("chat", 7)}  # given back when done


async def test_different_chats_run_on_both_instances_at_once(
    two: tuple[Instance, Instance], log: Log
) -> None:
    a, b = two
    gate_a, gate_b = log.gate(1), log.gate(2)
    await a.intake.accept([update(1, 10)])
    await b.intake.accept([update(2, 20)])
    await asyncio.wait_for(asyncio.gather(log.started[1].wait(), log.started[2].wait()), 10)

    assert (a.intake.busy_chats, b.intake.busy_chats) == (1, 1)
    gate_a.set()
    gate_b.set()
    await settle(a, b)
    assert sorted(log.processed) == [("a", 1), ("b", 2)]


async def test_the_same_update_posted_to_both_instances_is_handled_once(
    two: tuple[Instance, Instance], log: Log
) -> None:
    a, b = two
    fresh = await asyncio.gather(a.intake.accept([update(5, 30)]), b.intake.accept([update(5, 30)]))
    await settle(a, b)

    assert sorted(fresh) == [[], [5]]
    assert log.order() == [5]


async def test_a_frozen_instances_chat_is_finished_by_the_other_once_the_lease_runs_out(
    two: tuple[Instance, Instance], log: Log, pg: PgDatabase
) -> None:
    a, b = two
    log.gate(1)  # a freezes mid-turn on update 1 and never comes back on its own
    await a.intake.accept([update(1, 40)])
    await asyncio.wait_for(log.started[1].wait(), OUTER_LIMIT_S)
    await b.intake.accept([update(2, 40)])
    await b.sched.tick()
    assert b.intake.busy_chats == 0  # a's lease is alive: b leaves the chat alone

    await expire(pg, ("chat", 40))
    log.gates.pop(1)  # b's turn on update 1 runs through
    await b.sched.tick()  # the sweeper claims the chat
    await b.intake.join()

    assert log.processed == [("a", 1), ("b", 1), ("b", 2)]
    assert await status_of(pg, 1) == ("ignored", "by-b")
    assert await status_of(pg, 2) == ("ignored", "by-b")

    a.now = 1.0  # a's next renewal, a second later
    await a.sched.tick()  # it learns the claim is gone: its worker is cancelled
    await a.intake.join()
    assert a.intake.busy_chats == 0
    assert a.finishes == []  # a never moved a row


async def test_a_zombie_cannot_finish_a_row_of_a_chat_it_no_longer_holds(
    two: tuple[Instance, Instance], log: Log, pg: PgDatabase
) -> None:
    a, b = two
    a_gate = log.gate(1)
    await a.intake.accept([update(1, 50)])
    await asyncio.wait_for(log.started[1].wait(), OUTER_LIMIT_S)
    await expire(pg, ("chat", 50))
    b_holds = await b.claims.claim([("chat", 50)])  # b takes the chat (its sweeper would)
    assert b_holds == {("chat", 50)}

    a_gate.set()  # a wakes up, unaware, and tries to finish update 1
    await a.intake.join()

    assert a.finishes == [(1, False)]  # refused in SQL: the claim is b's
    assert await status_of(pg, 1) == ("pending", None)
    assert a.intake.busy_chats == 0  # and a stopped: the chat is not its own any more


async def test_an_instance_that_cannot_renew_stops_before_it_sends(
    two: tuple[Instance, Instance], log: Log, pg: PgDatabase
) -> None:
    a, _b = two
    gate = log.gate(1)
    await a.intake.accept([update(1, 60)])
    await asyncio.wait_for(log.started[1].wait(), OUTER_LIMIT_S)

    a.now = a.fence.stale_after_s  # no renewal for two thirds of the lease
    gate.set()
    await a.intake.join()

    assert a.finishes == []  # stopped at the send guard, before any request
    assert await status_of(pg, 1) == ("pending", None)
    assert await a.claims.claim([("chat", 60)]) == {("chat", 60)}  # the claim is still a's


async def test_start_up_claims_what_a_previous_run_left_and_counts_the_instances(
    two: tuple[Instance, Instance], log: Log, pg: PgDatabase
) -> None:
    a, _b = two
    await InboxRepository(pg).record(  # stored by a run that died before handling them
        [describe_update(update(1, 70)), describe_update(update(2, 71))]
    )

    assert await a.intake.resume() == 2
    await a.intake.join()
    assert sorted(log.order()) == [1, 2]
    assert log.lives[-1] == ("a", 1)

    c = Instance(pg, "c", log)
    await c.sched.tick()
    await a.sched.tick()
    assert log.lives[-1] == ("a", 2)  # a's share of the send budget is now a half
    await c.intake.drain(0)


async def test_a_clean_stop_gives_the_claims_back_at_once(
    two: tuple[Instance, Instance], log: Log
) -> None:
    a, b = two
    log.gate(1)
    await a.intake.accept([update(1, 80)])
    await asyncio.wait_for(log.started[1].wait(), OUTER_LIMIT_S)

    assert await a.intake.drain(0) is False  # the turn is cut; update 1 stays pending
    log.gates.pop(1)
    await b.sched.tick()  # no lease to wait for
    await b.intake.join()

    assert log.processed == [("a", 1), ("b", 1)]


def test_each_instance_sends_at_its_share_of_the_global_rate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.runtime.claimed")
    rates: list[float] = []
    on_live = send_budget_share(rates.append, 25.0)

    for live in (1, 2, 2, 3, 0):
        on_live(live)

    assert rates == [25.0, 12.5, 25.0 / 3, 25.0]  # unchanged counts set nothing
    assert "2 instance(s) live: this one sends at most 12.5 requests/s" in caplog.text
