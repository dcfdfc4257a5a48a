"""The pacer alone, in virtual time: per-chat interval, global rate, idle chats forgotten."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from bot.telegram.pacer import ChatId, Pacer
from tests.doubles.virtual_time import VirtualTime


@pytest.fixture
def vtime() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
def pacer(vtime: VirtualTime) -> Pacer:
    return Pacer(
        per_chat_interval_s=1.0, global_per_second=25.0, clock=vtime.clock, sleep=vtime.sleep
    )


async def message(pacer: Pacer, vtime: VirtualTime, chat_id: ChatId, sent: list[float]) -> None:
    """What the sender does for one message with a single request; records its time."""
    await pacer.chat_turn(chat_id)
    await pacer.request_turn(chat_id)
    sent.append(vtime.now)


async def test_a_chats_messages_one_after_another_are_one_interval_apart(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    sent: list[float] = []

    async def three() -> None:
        for _ in range(3):
            await message(pacer, vtime, 1, sent)

    await vtime.run(three())

    assert sent == [0.0, 1.0, 2.0]


async def test_concurrent_messages_of_one_chat_are_still_spaced(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    """Not an ordering promise (the intake makes a chat's sends sequential); a bound."""
    sent: list[float] = []

    await vtime.run(asyncio.gather(*(message(pacer, vtime, 1, sent) for _ in range(4))))

    assert all(b - a >= 1.0 for a, b in itertools.pairwise(sorted(sent)))


async def test_the_interval_counts_from_the_request_not_from_the_turn(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    sent: list[float] = []

    async def scenario() -> None:
        for _ in range(10):  # book the global rate 0.4 s ahead
            await pacer.request_turn()
        await message(pacer, vtime, 1, sent)  # waits for the global rate
        await message(pacer, vtime, 1, sent)

    await vtime.run(scenario())

    assert sent[0] == pytest.approx(0.4)
    assert sent[1] - sent[0] == pytest.approx(1.0)


async def test_a_retry_only_waits_for_the_global_rate_and_moves_the_chat_on(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    sent: list[float] = []

    async def scenario() -> None:
        await message(pacer, vtime, 1, sent)
        await vtime.sleep(0.5)  # a short backoff after a failed attempt
        await pacer.request_turn(1)  # the retry: no chat turn
        sent.append(vtime.now)
        await message(pacer, vtime, 1, sent)

    await vtime.run(scenario())

    assert sent == [0.0, 0.5, 1.5]


async def test_other_chats_only_share_the_global_rate(vtime: VirtualTime, pacer: Pacer) -> None:
    sent: dict[int, list[float]] = {1: [], 2: []}

    async def chat(chat_id: int, count: int) -> None:
        for _ in range(count):
            await message(pacer, vtime, chat_id, sent[chat_id])

    await vtime.run(asyncio.gather(chat(1, 3), chat(2, 1)))

    assert sent[1] == [0.0, 1.0, 2.0]
    assert sent[2] == [pytest.approx(0.04)]  # one global slot later, not behind chat 1


async def test_the_global_rate_spaces_requests_evenly(vtime: VirtualTime, pacer: Pacer) -> None:
    times: list[float] = []

    async def one() -> None:
        await pacer.request_turn()
        times.append(vtime.now)

    await vtime.run(asyncio.gather(*(one() for _ in range(50))))

    gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
    assert gaps == pytest.approx([0.04] * 49)
    for i, start in enumerate(times):  # never more than 25 inside any one second
        assert sum(1 for t in times[i:] if t < start + 1.0) <= 25


async def test_the_global_backlog_is_how_far_the_rate_is_booked(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    async def scenario() -> tuple[float, float, float]:
        idle = pacer.global_backlog_s()
        turns = asyncio.gather(*(pacer.request_turn() for _ in range(20)))
        await asyncio.sleep(0)  # every request has booked its slot
        booked = pacer.global_backlog_s()
        await turns
        return idle, booked, pacer.global_backlog_s()

    idle, booked, after = await vtime.run(scenario())

    assert (idle, booked, after) == (0.0, pytest.approx(0.8), pytest.approx(0.04))


async def test_idle_chats_are_forgotten_busy_ones_kept(vtime: VirtualTime, pacer: Pacer) -> None:
    sent: list[float] = []
    await vtime.run(asyncio.gather(*(message(pacer, vtime, c, sent) for c in range(1, 51))))
    assert pacer.tracked_chats == 50  # each still inside its interval

    vtime.now += 10.0
    await vtime.run(message(pacer, vtime, 999, sent))

    assert pacer.tracked_chats == 1


async def test_requests_that_are_not_messages_leave_no_chat_state(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    await vtime.run(pacer.request_turn())
    assert pacer.tracked_chats == 0


def test_the_global_rate_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Pacer(global_per_second=0)


async def test_an_instances_share_of_the_global_rate_spaces_its_requests_wider(
    vtime: VirtualTime, pacer: Pacer
) -> None:
    """Two instances share 25/s: each paces at 12.5/s, so together they stay within 25."""
    pacer.set_global_rate(25.0 / 2)
    times: list[float] = []

    async def one() -> None:
        await pacer.request_turn()
        times.append(vtime.now)

    await vtime.run(asyncio.gather(*(one() for _ in range(20))))

    gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
    assert gaps == pytest.approx([0.08] * 19)
    assert pacer.global_per_second == pytest.approx(12.5)


async def test_a_new_share_applies_from_the_next_booking(vtime: VirtualTime, pacer: Pacer) -> None:
    times: list[float] = []

    async def one() -> None:
        await pacer.request_turn()
        times.append(vtime.now)

    await vtime.run(asyncio.gather(*(one() for _ in range(3))))  # 0, 0.04, 0.08
    pacer.set_global_rate(10.0)  # the live count changed at a heartbeat
    await vtime.run(asyncio.gather(*(one() for _ in range(3))))

    assert times == pytest.approx([0.0, 0.04, 0.08, 0.12, 0.22, 0.32])


def test_a_share_must_be_positive(pacer: Pacer) -> None:
    with pytest.raises(ValueError):
        pacer.set_global_rate(0)
