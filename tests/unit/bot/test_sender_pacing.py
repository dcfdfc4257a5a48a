"""Pacing through the sender in virtual time: per-chat spacing, the global rate, typing.

A session double answers instantly (no network), and a discrete-event clock wakes the
earliest sleeper only after every runnable task has reached its next sleep, so the
recorded request times are exactly the times the sender chose.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.base import BaseSession
from aiogram.methods import SendChatAction, SendMessage, TelegramMethod
from aiogram.types import Chat, Message

from bot.telegram.sender import Sender, guard_requests
from tests.doubles.virtual_time import VirtualTime


class InstantSession(BaseSession):
    """Answers every request at once and records (method, chat, text, virtual time)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock
        self.requests: list[tuple[str, Any, str | None, float]] = []
        self._ids = itertools.count(1)

    async def make_request(
        self,
        bot: Bot,
        method: TelegramMethod[Any],
        timeout: int | None = None,  # noqa: ASYNC109
    ) -> Any:
        chat_id = getattr(method, "chat_id", None)
        text = getattr(method, "text", None)
        self.requests.append((method.__api_method__, chat_id, text, self._clock()))
        if isinstance(method, SendMessage):
            return Message(
                message_id=next(self._ids),
                date=0,
                chat=Chat(id=int(method.chat_id), type="private"),
                text=method.text,
            )
        return True

    async def close(self) -> None:
        return None

    async def stream_content(self, *args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        raise NotImplementedError
        yield b""


@pytest.fixture
def vtime() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
def session(vtime: VirtualTime) -> InstantSession:
    return InstantSession(vtime.clock)


@pytest.fixture
def sender(vtime: VirtualTime, session: InstantSession) -> Sender:
    bot = Bot(token="123456:TEST-TOKEN", session=session)
    return Sender(
        bot,
        per_chat_interval_s=1.0,
        global_per_second=25.0,
        clock=vtime.clock,
        sleep=vtime.sleep,
    )


def times_in(session: InstantSession, chat_id: int) -> list[float]:
    """Virtual times of the messages (not chat actions) sent to `chat_id`."""
    return [
        at
        for name, chat, _text, at in session.requests
        if chat == chat_id and name == "sendMessage"
    ]


async def test_one_chat_gets_one_message_per_interval_in_call_order(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    await vtime.run(asyncio.gather(*(sender.send_text(1, f"part {i}") for i in range(4))))

    texts = [text for _name, chat, text, _at in session.requests if chat == 1]
    assert texts == ["part 0", "part 1", "part 2", "part 3"]
    times = times_in(session, 1)
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(times))


async def test_a_busy_chat_does_not_delay_other_chats(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    await vtime.run(
        asyncio.gather(
            *(sender.send_text(1, f"long answer {i}") for i in range(5)),
            sender.send_text(2, "short answer"),
        )
    )

    [chat_2_time] = times_in(session, 2)
    assert chat_2_time < times_in(session, 1)[1]  # not queued behind chat 1's backlog


async def test_global_rate_holds_across_many_chats(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    await vtime.run(asyncio.gather(*(sender.send_text(c, "hi") for c in range(1, 101))))

    times = sorted(at for *_rest, at in session.requests)
    assert len(times) == 100
    # never more than 25 requests inside any one-second window
    for i, start in enumerate(times):
        in_window = sum(1 for t in times[i:] if t < start + 1.0)
        assert in_window <= 25


async def test_typing_indicator_is_not_queued_behind_a_chats_messages(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    async def scenario() -> float:
        messages = asyncio.ensure_future(
            asyncio.gather(*(sender.send_text(1, f"m{i}") for i in range(3)))
        )
        await sender.call(SendChatAction(chat_id=1, action="typing"))
        returned_at = vtime.now
        await messages
        return returned_at

    returned_at = await vtime.run(scenario())

    assert returned_at < times_in(session, 1)[-1]


async def test_idle_chats_are_forgotten(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    await vtime.run(asyncio.gather(*(sender.send_text(c, "hello") for c in range(1, 51))))
    assert sender.tracked_chats > 0

    vtime.now += 10.0  # every chat is idle past its interval
    await vtime.run(sender.send_text(999, "hello"))

    assert sender.tracked_chats == 1


async def test_typing_indicators_are_skipped_while_answers_queue_for_the_global_rate(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    async def scenario() -> list[bool]:
        answers = asyncio.ensure_future(
            asyncio.gather(*(sender.send_text(c, "answer") for c in range(1, 31)))
        )
        await asyncio.sleep(0)  # the answers have reserved the next global slots
        shown = [await sender.call(SendChatAction(chat_id=c, action="typing")) for c in (1, 2)]
        await answers
        return shown

    shown = await vtime.run(scenario())

    assert shown == [False, False]
    assert [name for name, *_rest in session.requests].count("sendChatAction") == 0
    assert len(session.requests) == 30


async def test_a_typing_indicator_is_sent_when_the_rate_allows(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    shown = await vtime.run(sender.call(SendChatAction(chat_id=1, action="typing")))

    assert shown is True
    assert [name for name, *_rest in session.requests] == ["sendChatAction"]


async def test_a_message_sent_around_the_sender_is_still_paced(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    """A handler calling `bot.send_message` directly still respects the chat's interval."""
    bot = Bot(token="123456:TEST-TOKEN", session=session)

    async def scenario() -> None:
        await sender.send_text(1, "through the sender")
        await bot.send_message(1, "around the sender")
        await bot.send_message(1, "around again")

    await vtime.run(scenario())

    assert times_in(session, 1) == [0.0, 1.0, 2.0]


async def test_the_long_poll_is_not_paced(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    from aiogram.methods import GetUpdates

    bot = Bot(token="123456:TEST-TOKEN", session=session)  # the session the sender paces

    async def scenario() -> None:
        answers = asyncio.ensure_future(
            asyncio.gather(*(sender.send_text(c, "answer") for c in range(1, 31)))
        )
        await asyncio.sleep(0)  # the answers have booked the global rate ahead
        await bot(GetUpdates(timeout=0))  # as the poller calls it
        await answers

    await vtime.run(scenario())

    [poll_time] = [at for name, *_rest, at in session.requests if name == "getUpdates"]
    assert poll_time == 0.0


async def test_the_send_guard_runs_before_every_request_and_can_stop_it(
    vtime: VirtualTime, session: InstantSession
) -> None:
    """With several instances the guard stops a chat's work whose claim may be gone
    (bot/runtime/claimed.py): the request it refuses is never made."""
    refuse = {"now": False}

    def guard() -> None:
        if refuse["now"]:
            raise asyncio.CancelledError

    bot = Bot(token="123456:TEST-TOKEN", session=session)
    sender = Sender(bot, clock=vtime.clock, sleep=vtime.sleep)
    guard_requests(sender, guard)

    async def scenario() -> None:
        await sender.send_text(1, "allowed")
        refuse["now"] = True
        with pytest.raises(asyncio.CancelledError):
            await sender.send_text(1, "refused")
        with pytest.raises(asyncio.CancelledError):
            await bot.send_message(1, "refused around the sender")

    await vtime.run(scenario())

    assert [text for _name, _chat, text, _at in session.requests] == ["allowed"]


async def test_the_sender_takes_its_share_of_the_global_rate(
    vtime: VirtualTime, session: InstantSession, sender: Sender
) -> None:
    sender.set_global_rate(25.0 / 5)
    await vtime.run(asyncio.gather(*(sender.send_text(c, "hi") for c in range(1, 11))))

    times = sorted(at for *_rest, at in session.requests)
    assert times == pytest.approx([i * 0.2 for i in range(10)])
    assert sender.global_per_second == pytest.approx(5.0)
