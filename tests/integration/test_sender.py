"""The one sender against a real aiogram Bot and the fake Bot API over HTTP.

Time is virtual: the sender gets a fake clock and a fake sleep that advances it, so
flood-control waits, backoff and pacing are observed without really waiting.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramNetworkError
from aiogram.methods import GetMe, SendChatAction
from aiohttp import web

from bot.telegram.sender import Sender
from tests.fakes.telegram_server import FakeTelegramServer


class FakeTime:
    """A monotonic clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []
        self.on_sleep: list[Any] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        self.now += delay
        for hook in self.on_sleep:
            await hook()
        await asyncio.sleep(0)


class RecordingTelegram(FakeTelegramServer):
    """The shared fake, plus scripted 502 answers to sendMessage."""

    def __init__(self) -> None:
        super().__init__()
        self.server_errors = 0

    async def _m_sendmessage(self, params: dict[str, Any], request: web.Request) -> web.Response:
        if self.server_errors:
            self.server_errors -= 1
            return web.json_response(
                {"ok": False, "error_code": 502, "description": "Bad Gateway"}, status=502
            )
        return await super()._m_sendmessage(params, request)


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
async def telegram() -> AsyncIterator[RecordingTelegram]:
    server = RecordingTelegram()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def make_bot(base_url: str, token: str, *, timeout: float = 10.0) -> Bot:
    session = AiohttpSession(api=TelegramAPIServer.from_base(base_url), timeout=timeout)
    return Bot(token=token, session=session)


@pytest.fixture
async def bot(telegram: RecordingTelegram) -> AsyncIterator[Bot]:
    instance = make_bot(telegram.base_url, telegram.token)
    try:
        yield instance
    finally:
        await instance.session.close()


def make_sender(bot: Bot, fake_time: FakeTime, **kwargs: Any) -> Sender:
    return Sender(bot, clock=fake_time.clock, sleep=fake_time.sleep, **kwargs)


async def test_plain_send_is_delivered_with_message_id(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    result = await make_sender(bot, fake_time).send_text(7, "Hello", reply_to_message_id=55)

    assert result.status == "delivered"
    assert result.message_id == telegram.messages_to(7)[0].message_id
    sent = telegram.calls_of("sendMessage")[0].params
    assert sent["reply_parameters"]["message_id"] == 55
    assert sent["reply_parameters"]["allow_sending_without_reply"] is True


async def test_retry_after_is_honoured_then_delivered(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.fail_next_sends_with_retry_after(retry_after=7, times=2)

    result = await make_sender(bot, fake_time).send_text(7, "Your order is on its way")

    assert result.status == "delivered"
    assert [m.text for m in telegram.messages_to(7)] == ["Your order is on its way"]
    assert len(telegram.calls_of("sendMessage")) == 3
    assert fake_time.sleeps.count(7.0) == 2  # waited exactly as long as Telegram asked


async def test_attempts_are_bounded_then_failed(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.fail_next_sends_with_retry_after(retry_after=1, times=10)

    result = await make_sender(bot, fake_time, max_attempts=3).send_text(7, "Hi")

    assert result.status == "failed"
    assert result.reason == "flood_control"
    assert len(telegram.calls_of("sendMessage")) == 3
    assert telegram.messages_to(7) == []


async def test_retry_after_longer_than_the_cap_fails_at_once(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.fail_next_sends_with_retry_after(retry_after=3600, times=1)

    result = await make_sender(bot, fake_time, max_retry_after_s=60).send_text(7, "Hi")

    assert (result.status, result.reason) == ("failed", "flood_control")
    assert len(telegram.calls_of("sendMessage")) == 1
    assert 3600.0 not in fake_time.sleeps


async def test_connection_refused_is_retried_with_backoff(fake_time: FakeTime) -> None:
    with socket.socket() as probe:  # a port nobody listens on yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    telegram = RecordingTelegram()
    bot = make_bot(f"http://127.0.0.1:{port}", telegram.token)

    async def start_server_after_two_failures() -> None:
        if len(fake_time.sleeps) == 2 and not telegram.base_url:
            await telegram.start(port=port)

    fake_time.on_sleep.append(start_server_after_two_failures)
    try:
        result = await make_sender(bot, fake_time).send_text(7, "Back online")
    finally:
        await bot.session.close()
        await telegram.stop()

    assert result.status == "delivered"
    assert [m.text for m in telegram.messages_to(7)] == ["Back online"]
    backoff = [s for s in fake_time.sleeps if s >= 0.5]
    assert backoff[:2] == [0.5, 1.0]  # exponential


async def test_connection_refused_every_time_ends_failed(fake_time: FakeTime) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bot = make_bot(f"http://127.0.0.1:{port}", "123456:TEST-TOKEN")
    try:
        sender = make_sender(bot, fake_time, max_attempts=3, max_network_attempts=4)
        result = await sender.send_text(7, "Hi")
    finally:
        await bot.session.close()

    assert (result.status, result.reason) == ("failed", "network")
    assert [s for s in fake_time.sleeps if s >= 0.5] == [0.5, 1.0, 2.0]  # 4 attempts


async def test_read_timeout_is_unknown_and_not_resent(
    telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    hold = telegram.hold_send_message(chat_id=7)  # Telegram got it but never answers
    bot = make_bot(telegram.base_url, telegram.token, timeout=0.3)
    try:
        result = await make_sender(bot, fake_time).send_text(7, "Maybe delivered")
    finally:
        hold.release()
        await bot.session.close()

    assert (result.status, result.reason) == ("unknown", "timeout")
    assert result.message_id is None
    assert len(telegram.calls_of("sendMessage")) == 1  # exactly one request, no blind retry


async def test_server_error_is_retried_then_delivered(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.server_errors = 2

    result = await make_sender(bot, fake_time).send_text(7, "After the hiccup")

    assert result.status == "delivered"
    assert [m.text for m in telegram.messages_to(7)] == ["After the hiccup"]


async def test_rejected_formatting_falls_back_to_plain_text(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.reject_html = True

    result = await make_sender(bot, fake_time).send_text(
        7, "<b>Order 8041</b> is <i>shipped", parse_mode="HTML", plain_text="Order 8041 is shipped"
    )

    assert result.status == "delivered"
    [message] = telegram.messages_to(7)
    assert message.text == "Order 8041 is shipped"
    assert message.parse_mode is None


async def test_rejected_formatting_without_plain_text_sends_the_text_unformatted(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    telegram.reject_html = True

    result = await make_sender(bot, fake_time).send_text(7, "a < b", parse_mode="HTML")

    assert result.status == "delivered"
    assert [(m.text, m.parse_mode) for m in telegram.messages_to(7)] == [("a < b", None)]


async def test_each_chat_gets_its_messages_in_order_while_chats_interleave(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    """A chat's messages reach the sender one after another (the intake and the responder
    make them sequential; see tests/unit/bot/test_intake.py); chats run side by side."""
    sender = make_sender(bot, fake_time, per_chat_interval_s=1.0)

    async def one_by_one(chat_id: int, texts: list[str]) -> list[str]:
        return [(await sender.send_text(chat_id, text)).status for text in texts]

    statuses = await asyncio.gather(
        one_by_one(1, ["one-1", "one-2", "one-3"]), one_by_one(2, ["two-1", "two-2"])
    )

    assert statuses == [["delivered"] * 3, ["delivered"] * 2]
    assert [m.text for m in telegram.messages_to(1)] == ["one-1", "one-2", "one-3"]
    assert [m.text for m in telegram.messages_to(2)] == ["two-1", "two-2"]


async def test_call_retries_idempotent_methods_after_a_lost_response(
    telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    """getMe (like setMyCommands, deleteWebhook) may be repeated freely, unlike sendMessage."""
    attempts = 0

    class FlakySession(AiohttpSession):
        async def make_request(
            self,
            bot: Bot,
            method: Any,
            timeout: int | None = None,  # noqa: ASYNC109
        ) -> Any:
            nonlocal attempts
            attempts += 1
            if attempts == 1:
                raise TelegramNetworkError(method=method, message="Request timeout error") from (
                    TimeoutError()
                )
            return await super().make_request(bot, method, timeout)

    session = FlakySession(api=TelegramAPIServer.from_base(telegram.base_url))
    bot = Bot(token=telegram.token, session=session)
    try:
        me = await make_sender(bot, fake_time).call(GetMe())
    finally:
        await bot.session.close()

    assert me.username == "shop_support_test_bot"
    assert attempts == 2


async def test_a_typing_indicator_is_tried_once(
    telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    """It is refreshed by the caller every few seconds; retrying it only costs slots."""
    session = AiohttpSession(api=TelegramAPIServer.from_base(telegram.base_url))
    attempts = 0

    async def lose_the_response(make_request: Any, bot: Bot, method: Any) -> Any:
        nonlocal attempts
        attempts += 1
        raise TelegramNetworkError(method=method, message="Request timeout error")

    session.middleware(lose_the_response)
    bot = Bot(token=telegram.token, session=session)
    try:
        with pytest.raises(TelegramNetworkError):
            await make_sender(bot, fake_time).call(SendChatAction(chat_id=7, action="typing"))
    finally:
        await bot.session.close()

    assert attempts == 1


async def test_call_raises_the_telegram_error_when_it_cannot_succeed(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    from aiogram.exceptions import TelegramNotFound
    from aiogram.methods import DeleteMessage

    with pytest.raises(TelegramNotFound):  # the fake does not know deleteMessage
        await make_sender(bot, fake_time).call(DeleteMessage(chat_id=7, message_id=1))


async def test_send_photo_delivers_png_with_caption(
    bot: Bot, telegram: RecordingTelegram, fake_time: FakeTime
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 64

    result = await make_sender(bot, fake_time).send_photo(7, png, caption="Tool calls today")

    assert result.status == "delivered"
    [message] = telegram.messages_to(7)
    assert (message.kind, message.text) == ("photo", "Tool calls today")
    assert str(message.params["photo"]).startswith("attach://")  # uploaded as a file
