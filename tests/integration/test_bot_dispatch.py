"""Routers + inbox + responder + the real Sender and aiogram Bot against the fake Bot API.

The chat service is a double here (the real one is covered end to end), so each test can
decide what a turn returns or how it fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.processing import UpdateProcessor
from bot.telegram.sender import Sender
from bot.telegram.texts import EN, RU
from bot.telegram.wiring.telegram import build_dispatcher
from services.limits import UserMessageLimiter
from services.loop_types import StopReason, TurnReply
from storage.database import Database
from storage.inbox import InboxRepository
from storage.shop import ShopRepository
from tests.fakes.handler_deps import handler_deps
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.waits import OUTER_LIMIT_S
from tools.base import Caller
from tools.shop.demo import seed_demo_shop
from tools.shop.import_document import plan_import

CHAT = 77


@dataclass
class ChatDouble:
    """Answers every turn with `reply`, or raises `error` (a bug in the service)."""

    reply: TurnReply = field(
        default_factory=lambda: TurnReply("turn-1", "**Заказ** в пути", StopReason.COMPLETED)
    )
    error: Exception | None = None
    asked: list[str] = field(default_factory=list)
    resets: list[int] = field(default_factory=list)

    async def answer(
        self,
        caller: Caller,
        text: str,
        *,
        request_key: str | None = None,
        transcribed: bool = False,
        drafts: object = None,
        stop: object = None,
        language: str | None = None,
    ) -> TurnReply:
        self.asked.append(text)
        if self.error is not None:
            raise self.error
        return self.reply

    async def reset(self, chat_id: int) -> int:
        self.resets.append(chat_id)
        return 1


@dataclass
class Harness:
    intake: Intake
    chat: ChatDouble
    inbox: InboxRepository

    async def handle(self, update: dict) -> None:
        await self.intake.accept([update])
        await asyncio.wait_for(self.intake.join(), OUTER_LIMIT_S)


@pytest.fixture
async def harness(
    db: Database,
    fake_telegram: FakeTelegramServer,
) -> AsyncIterator[Harness]:
    bot = Bot(
        fake_telegram.token,
        session=AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url)),
    )
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    chat = ChatDouble()
    deps = handler_deps(
        db,
        sender,
        responder,
        chat_service=chat,
        limiter=UserMessageLimiter(per_minute=3, per_day=100),
        max_input_chars=50,
    )
    dispatcher = build_dispatcher(deps, admin_ids=frozenset())
    intake = Intake(
        inbox, process=UpdateProcessor(bot, dispatcher, responder), deliver=responder.deliver
    )
    yield Harness(intake, chat, inbox)
    await bot.session.close()


async def test_answer_is_formatted_and_the_row_delivered(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    update = message_update(CHAT, text="где заказ 8041?")
    await harness.handle(update)
    [message] = fake_telegram.messages_to(CHAT)
    assert (message.text, message.parse_mode) == ("<b>Заказ</b> в пути", "HTML")
    row = await harness.inbox.get(update["update_id"])
    assert row is not None
    assert (row.status, row.turn_id, row.message_ids) == ("delivered", "turn-1", (1,))


async def test_a_failing_handler_gets_an_apology_and_the_error_is_logged(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    harness.chat.error = RuntimeError("secret internal detail")
    update = message_update(CHAT, text="hello", language_code="en")
    await harness.handle(update)
    [message] = fake_telegram.messages_to(CHAT)
    assert message.plain_text == EN.apology
    assert "secret internal detail" not in message.text
    assert any(str(update["update_id"]) in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("language_code", ["ru", "de", None])
async def test_the_apology_falls_back_to_russian(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
    language_code: str | None,
) -> None:
    """The error handler speaks the language the middleware chose for the update."""
    harness.chat.error = RuntimeError("boom")
    await harness.handle(message_update(CHAT, text="hello", language_code=language_code))
    [message] = fake_telegram.messages_to(CHAT)
    assert message.plain_text == RU.apology


async def test_model_failure_codes_become_polite_texts(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    harness.chat.reply = TurnReply("t2", None, None, error_code="rate_limited")
    await harness.handle(message_update(CHAT, text="где заказ?"))
    [message] = fake_telegram.messages_to(CHAT)
    assert message.plain_text == RU.temporarily_unavailable


async def test_cheap_checks_never_reach_the_model(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    await harness.handle(message_update(CHAT, text="x" * 51))
    await harness.handle(message_update(CHAT, text="   "))
    await harness.handle(message_update(CHAT, extra={"location": {"latitude": 1, "longitude": 2}}))
    texts = [m.plain_text for m in fake_telegram.messages_to(CHAT)]
    assert texts == [RU.too_long_for(50), RU.empty_message, RU.text_only]
    assert harness.chat.asked == []


async def test_user_limit_sends_one_notice_then_silence(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    for _ in range(6):
        await harness.handle(message_update(CHAT, text="где заказ?"))
    texts = [m.plain_text for m in fake_telegram.messages_to(CHAT)]
    assert texts.count(RU.rate_limited_notice) == 1
    assert len(harness.chat.asked) == 3
    assert len(texts) == 4


async def test_group_reply_to_the_bot_is_answered_as_a_reply(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    group = -100
    await harness.handle(message_update(group, text="просто болтаем", user_id=5))
    update = message_update(group, text="а где заказ?", user_id=5, reply_to_bot=True)
    await harness.handle(update)
    [message] = fake_telegram.messages_to(group)
    assert harness.chat.asked == ["а где заказ?"]
    reply_to = message.params.get("reply_parameters") or {}
    assert reply_to.get("message_id") == update["message"]["message_id"]


async def test_new_resets_and_confirms(
    harness: Harness,
    fake_telegram: FakeTelegramServer,
) -> None:
    await harness.handle(message_update(CHAT, text="/new"))
    assert harness.chat.resets == [CHAT]
    [message] = fake_telegram.messages_to(CHAT)
    assert message.plain_text == RU.new_session


async def test_group_commands_for_another_bot_are_left_alone(
    harness: Harness, fake_telegram: FakeTelegramServer
) -> None:
    group = -101
    await harness.handle(message_update(group, text="/help@other_bot", user_id=5))
    await harness.handle(message_update(group, text="/weather@other_bot", user_id=5))
    assert fake_telegram.messages_to(group) == []
    await harness.handle(message_update(group, text="/help@shop_support_test_bot", user_id=5))
    [message] = fake_telegram.messages_to(group)
    assert "/new" in message.plain_text


TEA_SHOP = {
    "return_policies": [
        {
            "product": "Улун Те Гуань Инь",
            "return_days": 14,
            "conditions": "Упаковка цела.",
            "aliases": ["улун", "oolong"],
        },
    ],
    "faq": [
        {"topic": "Доставка", "answer": "Почтой, 3–7 дней.", "aliases": ["delivery"]},
        {"topic": "Оплата", "answer": "Картой или СБП.", "aliases": ["payment"]},
    ],
}


async def import_shop(db: Database, document: dict[str, object]) -> None:
    """As `import-data` writes a file (the demo goes with the first import)."""
    plan = plan_import(document)
    await ShopRepository(db).import_shop_data(
        orders=plan.orders, policies=plan.policies, texts=plan.texts, faq=plan.faq
    )


async def welcome(harness: Harness, fake_telegram: FakeTelegramServer, language: str) -> str:
    await harness.handle(message_update(CHAT, text="/start", language_code=language))
    return fake_telegram.messages_to(CHAT)[-1].plain_text


async def test_the_welcome_speaks_of_the_imported_shop_not_the_demo(
    harness: Harness, fake_telegram: FakeTelegramServer, db: Database
) -> None:
    await seed_demo_shop(ShopRepository(db))
    demo = await welcome(harness, fake_telegram, "ru")
    assert "Можно ли вернуть «Клавиатура»?" in demo  # the demo's own product
    await import_shop(db, TEA_SHOP)
    ru = await welcome(harness, fake_telegram, "ru")
    en = await welcome(harness, fake_telegram, "en")
    assert "Можно ли вернуть «Улун Те Гуань Инь»?" in ru
    assert "Can I return “oolong”?" in en  # the product's name in Latin letters
    for text in (ru, en):
        for demo_word in ("Клавиатура", "keyboard", "наушники", "headphones"):
            assert demo_word not in text
    assert "ответить на вопросы о доставке и оплате" in ru
    assert "Сколько стоит доставка?" in ru and "Как можно оплатить заказ?" in ru
    assert "answer questions about delivery and payment" in en
    assert "How much is delivery?" in en and "How can I pay for my order?" in en
    assert "{examples}" not in ru + en


async def test_a_shop_without_policies_or_faq_gets_the_order_question_alone(
    harness: Harness, fake_telegram: FakeTelegramServer, db: Database
) -> None:
    await import_shop(db, {"orders": [{"order_id": "1234", "status": "processing"}]})
    ru = await welcome(harness, fake_telegram, "ru")
    assert "Где сейчас мой заказ?" in ru
    assert "вернуть «" not in ru and "доставк" not in ru and "оплат" not in ru
    await import_shop(db, {"faq": [{"topic": "Оплата", "answer": "Картой."}]})
    ru = await welcome(harness, fake_telegram, "ru")
    assert "ответить на вопросы об оплате" in ru and "доставк" not in ru
