"""Per-user message limits and concurrent turn slots, with a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from services.limits import TurnSlots, UserMessageLimiter
from tests.waits import OUTER_LIMIT_S


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_messages_within_the_limits_pass(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=3, per_day=100, clock=clock)

    decisions = [limiter.check(1) for _ in range(3)]

    assert all(d.allowed and not d.notify for d in decisions)


def test_over_the_minute_limit_one_notice_then_silence_until_the_window_passes(
    clock: FakeClock,
) -> None:
    limiter = UserMessageLimiter(per_minute=3, per_day=100, clock=clock)
    for _ in range(3):
        limiter.check(1)

    first_refusal = limiter.check(1)
    clock.now += 10
    later_refusals = [limiter.check(1) for _ in range(5)]

    assert (first_refusal.allowed, first_refusal.notify) == (False, True)
    assert first_refusal.limit == "per_minute"
    assert first_refusal.retry_after_s == pytest.approx(60.0)
    assert all(not d.allowed and not d.notify for d in later_refusals)

    clock.now += 50  # the minute window has passed
    assert limiter.check(1).allowed


def test_refused_messages_do_not_extend_the_window(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=2, per_day=100, clock=clock)
    limiter.check(1)
    limiter.check(1)
    for _ in range(30):  # hammering while refused
        clock.now += 1.9
        limiter.check(1)

    clock.now = 500.0 + 60.0
    assert limiter.check(1).allowed


def test_over_the_daily_limit_silence_lasts_until_the_day_window_ends(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=1000, per_day=5, clock=clock)
    for _ in range(5):
        assert limiter.check(1).allowed

    refusal = limiter.check(1)
    clock.now += 3600
    an_hour_later = limiter.check(1)

    assert (refusal.allowed, refusal.notify, refusal.limit) == (False, True, "per_day")
    assert (an_hour_later.allowed, an_hour_later.notify) == (False, False)
    clock.now = 500.0 + 86_400.0
    assert limiter.check(1).allowed


def test_a_new_window_gives_a_new_single_notice(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=1, per_day=100, clock=clock)
    limiter.check(1)
    assert limiter.check(1).notify

    clock.now += 60
    assert limiter.check(1).allowed
    assert limiter.check(1).notify  # a fresh window, a fresh notice
    assert not limiter.check(1).notify


def test_users_are_limited_independently(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=1, per_day=100, clock=clock)
    limiter.check(1)

    assert not limiter.check(1).allowed
    assert limiter.check(2).allowed


def test_users_idle_for_a_day_are_forgotten(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=10, per_day=100, clock=clock)
    for user in range(1000):
        limiter.check(user)
    assert limiter.tracked_users == 1000

    clock.now += 86_400
    limiter.check(5000)

    assert limiter.tracked_users == 1


def test_memory_is_capped_by_least_recently_seen(clock: FakeClock) -> None:
    limiter = UserMessageLimiter(per_minute=10, per_day=100, clock=clock, max_tracked_users=3)
    for user in (1, 2, 3, 1, 4):
        limiter.check(user)

    assert limiter.tracked_users == 3


async def test_turn_slots_queue_excess_turns_and_run_them_all() -> None:
    slots = TurnSlots(2)
    release = asyncio.Event()
    started: list[int] = []
    two_running = asyncio.Event()

    async def turn(n: int) -> int:
        async with slots.slot():
            started.append(n)
            if slots.running == 2:
                two_running.set()
            await release.wait()
        return n

    tasks = [asyncio.create_task(turn(n)) for n in range(5)]
    await asyncio.wait_for(two_running.wait(), OUTER_LIMIT_S)
    # all five tasks took their first step in the same loop iteration: three wait

    assert (slots.running, slots.waiting) == (2, 3)
    release.set()
    assert sorted(await asyncio.gather(*tasks)) == [0, 1, 2, 3, 4]  # queued, never dropped
    assert started == [0, 1, 2, 3, 4]  # in arrival order
    assert (slots.running, slots.waiting) == (0, 0)
