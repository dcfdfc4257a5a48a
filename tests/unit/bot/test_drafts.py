"""Drafts below the process: the sender's lowest-priority draft, the one-time
fallback when a server rejects drafts, the stop signal, and the relay's pace and guard."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest, TelegramNotFound, TelegramRetryAfter
from aiogram.methods import SendMessageDraft, TelegramMethod

from bot.telegram.drafts import Drafts, draft_id_for
from bot.telegram.sender import Sender
from services.answer_stream import DraftRelay
from tests.doubles.virtual_time import VirtualTime
from tests.unit.bot.test_sender_pacing import InstantSession
from tests.waits import OUTER_LIMIT_S


def _sender(vtime: VirtualTime, session: InstantSession) -> Sender:
    bot = Bot(token="123456:TEST-TOKEN", session=session)
    return Sender(
        bot, per_chat_interval_s=1.0, global_per_second=25.0, clock=vtime.clock, sleep=vtime.sleep
    )


async def test_a_draft_is_shed_when_messages_hold_the_global_rate() -> None:
    vtime = VirtualTime()
    session = InstantSession(vtime.clock)
    sender = _sender(vtime, session)

    async def scenario() -> tuple[str, str]:
        answers = asyncio.ensure_future(
            asyncio.gather(*(sender.send_text(c, "answer") for c in range(1, 11)))
        )
        await asyncio.sleep(0)  # the answers have booked the next global slots
        busy = await sender.send_draft(99, 1, "draft")
        await answers
        idle = await sender.send_draft(99, 1, "draft")
        return busy, idle

    busy, idle = await vtime.run(scenario())
    assert (busy, idle) == ("shed", "shown")
    names = [name for name, *_rest in session.requests]
    assert names.count("sendMessageDraft") == 1 and names[-1] == "sendMessageDraft"
    # the shed draft took no slot: the ten answers went out at the global rate, 0.04 s apart
    times = [at for name, _c, _t, at in session.requests if name == "sendMessage"]
    assert times[-1] == pytest.approx(9 * 0.04)


async def test_a_draft_does_not_move_the_chats_next_message() -> None:
    vtime = VirtualTime()
    session = InstantSession(vtime.clock)
    sender = _sender(vtime, session)

    async def scenario() -> None:
        await sender.send_draft(5, 1, "")
        await sender.send_draft(5, 1, "some text")
        await sender.send_text(5, "answer")

    await vtime.run(scenario())
    [answer_at] = [at for name, _c, _t, at in session.requests if name == "sendMessage"]
    assert answer_at < 0.1  # not one chat interval (1 s) after the drafts


class ScriptedSession(InstantSession):
    """Answers drafts with a scripted error (or success) in order."""

    def __init__(self, clock: Any, errors: list[Exception | None]) -> None:
        super().__init__(clock)
        self._errors = errors

    async def make_request(
        self,
        bot: Bot,
        method: TelegramMethod[Any],
        timeout: int | None = None,  # noqa: ASYNC109
    ) -> Any:
        if isinstance(method, SendMessageDraft) and self._errors:
            error = self._errors.pop(0)
            if error is not None:
                self.requests.append(("sendMessageDraft", method.chat_id, "error", self._clock()))
                raise error
        return await super().make_request(bot, method, timeout)


async def test_draft_outcomes_by_error() -> None:
    draft = SendMessageDraft(chat_id=1, draft_id=1)
    errors: list[Exception | None] = [
        TelegramRetryAfter(method=draft, message="Too Many Requests", retry_after=3),
        TelegramBadRequest(method=draft, message="Bad Request: can't parse entities"),
        TelegramNotFound(method=draft, message="Not Found: method not found"),
        None,
    ]
    vtime = VirtualTime()
    sender = _sender(vtime, ScriptedSession(vtime.clock, errors))

    async def scenario() -> list[str]:
        return [await sender.send_draft(1, 1, "x") for _ in range(4)]

    assert await vtime.run(scenario()) == ["shed", "failed", "rejected", "shown"]


class FakeDraftSender:
    def __init__(self, statuses: list[str]) -> None:
        self.statuses = statuses
        self.drafts: list[tuple[int, int, str, str | None]] = []
        self.actions: list[Any] = []
        self.sent = asyncio.Event()

    async def send_draft(
        self, chat_id: int, draft_id: int, text: str, *, parse_mode: str | None = None
    ) -> str:
        self.drafts.append((chat_id, draft_id, text, parse_mode))
        self.sent.set()
        return self.statuses.pop(0) if self.statuses else "shown"

    async def call(self, method: TelegramMethod[bool]) -> bool:
        self.actions.append(method)
        self.sent.set()
        return True


async def test_rejection_turns_drafts_off_for_the_process_and_typing_shows_instead() -> None:
    sender = FakeDraftSender(["rejected"])
    drafts = Drafts(sender)
    async with drafts.stream(7, 700) as stream:
        while not sender.actions:  # the rejected placeholder, then the typing indicator
            sender.sent.clear()
            await asyncio.wait_for(sender.sent.wait(), OUTER_LIMIT_S)
        stream.show("ignored now")
    assert drafts.enabled is False
    assert [d[2] for d in sender.drafts] == [""]
    assert await drafts.send(7, 1, "anything") is False  # nothing more is even tried
    assert len(sender.drafts) == 1


async def test_drafts_are_formatted_like_answers_and_fit_one_message() -> None:
    sender = FakeDraftSender([])
    drafts = Drafts(sender)
    assert await drafts.send(1, 1, "**жирный** и <тег>") is True
    assert sender.drafts[-1][2:] == ("<b>жирный</b> и &lt;тег&gt;", "HTML")
    long = "слово " * 2000  # beyond 4096 characters: the part being written is shown
    assert await drafts.send(1, 1, long) is True
    assert 0 < len(sender.drafts[-1][2]) <= 4096
    assert await drafts.send(1, 1, "") is True
    assert sender.drafts[-1][2:] == ("", None)  # the "Thinking…" placeholder


async def test_a_stop_press_reaches_the_running_turn_of_its_draft_only() -> None:
    drafts = Drafts(FakeDraftSender([]))
    async with drafts.stream(7, 700) as first, drafts.stream(8, 800) as second:
        drafts.signal({"update_id": 1, "message": {"chat": {"id": 7}}})
        drafts.signal(
            {"update_id": 2, "stopped_message_generation": {"chat": {"id": 7}, "draft_id": 800}}
        )
        assert not first.stop.is_set() and not second.stop.is_set()
        drafts.signal(
            {
                "update_id": 3,
                "stopped_message_generation": {"chat": {"id": 7}, "draft_id": draft_id_for(700)},
            }
        )
        assert first.stop.is_set() and not second.stop.is_set()
    assert drafts.stops_pressed == 1
    drafts.signal(  # after the turn: nothing to stop, nothing happens
        {"update_id": 4, "stopped_message_generation": {"chat": {"id": 7}, "draft_id": 700}}
    )
    assert drafts.stops_pressed == 1


def test_draft_ids_are_positive_31_bit_numbers() -> None:
    assert draft_id_for(50_000) == 50_000
    assert draft_id_for(2_147_483_647) == 1
    assert 0 < draft_id_for(2**40 + 5) < 2**31


# ------------------------------------------------------------------------ the relay


class Sink:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def show(self, text: str) -> None:
        self.shown.append(text)

    def thinking(self) -> None:
        self.shown.append("")


def test_the_relay_shows_the_first_text_at_once_then_one_per_interval() -> None:
    now = [0.0]
    sink = Sink()
    relay = DraftRelay(sink, leaks=lambda _text: False, interval_s=1.0, clock=lambda: now[0])
    for step, text in enumerate(["a", "a b", "a b c", "a b c d", "a b c d e"]):
        now[0] = step * 0.4
        relay.on_text(text)
    assert sink.shown == ["a", "a b c d"]  # at 0.0 and 1.2 s


def test_a_tool_step_returns_the_draft_to_thinking() -> None:
    sink = Sink()
    relay = DraftRelay(sink, leaks=lambda _text: False, interval_s=1.0, clock=lambda: 0.0)
    relay.on_text("Let me check")
    relay.on_tool_call()
    relay.on_text("Your order")  # the answering step shows at once
    assert sink.shown == ["Let me check", "", "Your order"]


def test_a_draft_that_leaks_is_never_shown_nor_any_after_it() -> None:
    now = [0.0]
    sink = Sink()
    relay = DraftRelay(
        sink, leaks=lambda text: "SECRET" in text, interval_s=0.0, clock=lambda: now[0]
    )
    relay.on_text("Hello")
    relay.on_text("Hello SECRET")
    relay.on_text("Hello SECRET and more")
    assert relay.leaked
    assert sink.shown == ["Hello", ""]  # back to the placeholder, the leak never shown


async def test_under_load_a_turn_is_answered_whole() -> None:
    busy = [1]
    drafts = Drafts(FakeDraftSender([]), max_busy_chats=2, busy_chats=lambda: busy[0])
    assert drafts.can_stream()
    busy[0] = 2
    assert drafts.can_stream()
    busy[0] = 3  # a third chat being answered: no new turn streams
    assert not drafts.can_stream()
    assert drafts.streams_declined == 1
    busy[0] = 1
    assert drafts.can_stream()
    assert not Drafts(FakeDraftSender([]), enabled=False).can_stream()
