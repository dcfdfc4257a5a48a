"""The sending seam: the runtime's responder over Telegram's channel, and over any other.

Business updates are shaped as the Bot API documents them (API 7.2, `Update.business_message`,
`Message.business_connection_id`); the fake Bot API records what the bot sent.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from bot.runtime.channel import (
    NOT_SUPPORTED,
    Channel,
    Rendered,
    ReplyTarget,
    SendResult,
    reply_target,
)
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.sender import Sender
from storage.database import Database
from storage.inbox import InboxRepository, InboxRow, NewUpdate, StoredReply
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.telegram_server import fake_telegram as fake_telegram

CONNECTION = "business-connection-1"


@pytest.fixture
async def bot(fake_telegram: FakeTelegramServer) -> AsyncIterator[Bot]:
    # the owner connected the bot and customer 42 wrote in the last 24 hours: the fake,
    # like Telegram, refuses sends through a connection it does not know or outside that
    fake_telegram.connect_business(CONNECTION, 7)
    fake_telegram.business_incoming[(CONNECTION, 42)] = time.time()
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url))
    instance = Bot(token=fake_telegram.token, session=session)
    try:
        yield instance
    finally:
        await instance.session.close()


def message(chat_id: int, *, connection: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "message_id": 3,
        "date": 1,
        "chat": {"id": chat_id, "type": "private", "first_name": "Ann"},
        "from": {"id": chat_id, "is_bot": False, "first_name": "Ann"},
        "text": "where is my order?",
    }
    if connection is not None:
        body["business_connection_id"] = connection
    return body


async def stored(inbox: InboxRepository, update_id: int, payload: dict[str, Any]) -> InboxRow:
    await inbox.record([NewUpdate(update_id, 42, 42, {"update_id": update_id, **payload})])
    row = await inbox.get(update_id)
    assert row is not None
    return row


async def test_a_reply_goes_back_through_the_business_connection_it_came_by(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(Sender(bot, per_chat_interval_s=0.0)))
    business = await stored(inbox, 1, {"business_message": message(42, connection=CONNECTION)})
    own = await stored(inbox, 2, {"message": message(42)})

    await responder.reply(business, [StoredReply("<b>on its way</b>", "on its way")])
    await responder.reply(own, [StoredReply("hello", "hello")])

    first, second = fake_telegram.calls_of("sendMessage")
    assert first.params["business_connection_id"] == CONNECTION
    assert first.params["parse_mode"] == "HTML"
    assert "business_connection_id" not in second.params
    assert [m.text for m in fake_telegram.messages_to(42)] == ["<b>on its way</b>", "hello"]


async def test_typing_in_an_owners_chat_is_shown_as_the_owner(
    bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    channel = TelegramChannel(Sender(bot, per_chat_interval_s=0.0))
    await channel.show_typing(ReplyTarget(42, business_connection_id=CONNECTION))
    await channel.show_typing(ReplyTarget(42))

    first, second = fake_telegram.calls_of("sendChatAction")
    assert first.params["business_connection_id"] == CONNECTION
    assert "business_connection_id" not in second.params


async def test_nothing_is_copied_through_a_business_connection(
    bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    """copyMessage has no business connection in the Bot API: refused, never sent as the bot."""
    channel = TelegramChannel(Sender(bot, per_chat_interval_s=0.0))
    copy = StoredReply("", "", copy_from_chat_id=7, copy_message_id=9)
    result = await channel.send(ReplyTarget(42, business_connection_id=CONNECTION), copy)
    assert result == SendResult(status="failed", reason=NOT_SUPPORTED)
    assert fake_telegram.calls_of("copyMessage") == []


def test_a_part_for_another_chat_never_takes_the_updates_connection() -> None:
    payload = {"business_message": message(42, connection=CONNECTION)}
    relay = StoredReply("x", "x", chat_id=-100, thread_id=5)
    assert reply_target(42, payload, relay, thread_id=5) == ReplyTarget(-100, 5)
    own = StoredReply("x", "x")
    assert reply_target(42, payload, own, thread_id=None) == ReplyTarget(42, None, CONNECTION)
    assert not reply_target(42, payload, own, thread_id=None).streams_drafts
    assert reply_target(42, {"message": message(42)}, own, thread_id=None).streams_drafts


class RecordingChannel:
    """A second channel: no Telegram at all; what the runtime asks of any channel."""

    def __init__(self) -> None:
        self.sent: list[tuple[ReplyTarget, str]] = []
        self.typing: list[ReplyTarget] = []

    def render(self, markdown: str) -> Sequence[Rendered]:
        return [Rendered(markdown.upper(), markdown)]

    async def send(self, target: ReplyTarget, part: StoredReply) -> SendResult:
        self.sent.append((target, part.html))
        return SendResult(status="delivered", message_id=len(self.sent))

    async def show_typing(self, target: ReplyTarget) -> None:
        self.typing.append(target)


async def test_the_runtime_stores_and_delivers_through_any_channel(db: Database) -> None:
    inbox = InboxRepository(db)
    channel = RecordingChannel()
    seam: Channel = channel  # the Protocol is all the runtime needs
    responder = Responder(inbox, seam)
    row = await stored(inbox, 1, {"message": message(42)})
    parts = [StoredReply(p.html, p.plain) for p in responder.render("hi")]

    async with responder.typing(ReplyTarget(42)):
        await responder.reply(row, parts)

    assert channel.sent == [(ReplyTarget(42), "HI")]
    assert channel.typing[0] == ReplyTarget(42)
    finished = await inbox.get(1)
    assert finished is not None and finished.status == "delivered"
    assert finished.message_ids == (1,)
