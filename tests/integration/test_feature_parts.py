"""A feature's part in a turn's reply arrives through the seam, and only from there.

The chat path knows no feature: what a feature adds to a turn's reply (the handoff's
notice under the answer and its brief to the operators) is an `AfterTurn` part in
`HandlerDeps.after_turn`, and the "talk to a person" button is shown only when a feature
answers it (`HandlerDeps.person_button`). Routers + inbox + responder + the real Sender
against the fake Bot API; the chat service is a double that returns the turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.context import TurnAddition, UpdateContext
from bot.telegram.processing import UpdateProcessor
from bot.telegram.sender import Sender
from bot.telegram.wiring.telegram import build_dispatcher
from services.loop_types import StopReason, TurnReply
from storage.database import Database
from storage.inbox import InboxRepository, StoredReply
from tests.fakes.handler_deps import handler_deps
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.waits import OUTER_LIMIT_S
from tools.base import Caller

CHAT = 77
OPERATORS = -100500


@dataclass
class TurnDouble:
    reply: TurnReply

    async def answer(self, caller: Caller, text: str, **_: Any) -> TurnReply:
        return self.reply


@dataclass
class NoticeFeature:
    """An after-turn part: a notice, a part for another chat, and work once it is sent."""

    inbox: InboxRepository
    seen_status_when_sent: list[str] = field(default_factory=list)

    async def __call__(
        self, message: Message, reply: TurnReply, ctx: UpdateContext
    ) -> TurnAddition | None:
        update_id = ctx.update_id

        async def sent() -> None:
            row = await self.inbox.get(update_id)
            assert row is not None
            self.seen_status_when_sent.append(row.status)

        return TurnAddition(
            notice="A person will answer here.",
            also=(StoredReply(html="brief", plain="brief", chat_id=OPERATORS),),
            sent=sent,
        )


async def _run(
    db: Database, fake_telegram: FakeTelegramServer, reply: TurnReply, **deps: Any
) -> None:
    bot = Bot(
        fake_telegram.token,
        session=AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url)),
    )
    try:
        sender = Sender(bot, per_chat_interval_s=0.0)
        inbox = deps.pop("inbox", None) or InboxRepository(db)
        responder = Responder(inbox, TelegramChannel(sender))
        handlers = handler_deps(db, sender, responder, chat_service=TurnDouble(reply), **deps)
        dispatcher = build_dispatcher(handlers, admin_ids=frozenset())
        intake = Intake(
            inbox, process=UpdateProcessor(bot, dispatcher, responder), deliver=responder.deliver
        )
        await intake.accept([message_update(CHAT, text="help me")])
        await asyncio.wait_for(intake.join(), OUTER_LIMIT_S)
    finally:
        await bot.session.close()


async def test_a_features_after_turn_part_goes_with_the_answer(
    db: Database, fake_telegram: FakeTelegramServer
) -> None:
    inbox = InboxRepository(db)
    feature = NoticeFeature(inbox)
    answer = TurnReply("turn-1", "Here is your answer.", StopReason.COMPLETED)
    await _run(db, fake_telegram, answer, inbox=inbox, after_turn=(feature,))
    [message] = fake_telegram.messages_to(CHAT)
    assert message.plain_text == "Here is your answer.\n\nA person will answer here."
    [brief] = fake_telegram.messages_to(OPERATORS)
    assert brief.plain_text == "brief"
    assert feature.seen_status_when_sent == ["delivered"]  # after the reply went out


@pytest.mark.parametrize("person_button", [False, True])
async def test_the_person_button_under_an_apology_only_when_a_feature_answers_it(
    db: Database, fake_telegram: FakeTelegramServer, person_button: bool
) -> None:
    failed = TurnReply("turn-1", None, None, error_code="rate_limited")
    await _run(db, fake_telegram, failed, person_button=person_button)
    [message] = fake_telegram.messages_to(CHAT)
    markup = message.reply_markup or {}
    buttons = [b for row in markup.get("inline_keyboard", []) for b in row]
    assert bool(buttons) is person_button
