"""A turn replayed after a crash gives the customer the same text and the same button.

The bot's own path in one process — intake, dispatcher, routers, chat service, the real
loop with the real tools, responder, sender — over a real SQLite file and the fake Bot
API, with a scripted model. The crash: the handler's turn is stored (`ChatService.answer`,
what `on_text` runs before it replies), then the process dies before the reply is stored;
the next start resumes the update from the inbox. (A real SIGKILL at that point needs a
Bot API call between the two writes, and a plain answer has none.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Update

from bot.runtime.intake import Intake, describe_update
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.filters import caller_of
from bot.telegram.processing import UpdateProcessor
from bot.telegram.sender import Sender
from bot.telegram.wiring.telegram import build_dispatcher
from services.chat import ChatService, build_chat_service
from services.limits import UserMessageLimiter
from services.llm.types import Message, ToolChoice
from services.loop import BoundedToolLoop
from services.prompts import build_prompt_registry
from storage.database import open_database
from storage.inbox import InboxRepository
from storage.shop import ShopRepository
from tests.doubles import ScriptedLLM, text_response, tool_call, tool_calls_response
from tests.fakes.handler_deps import handler_deps
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import seed_demo_shop

CALM, CRASHED = 7401, 7402  # two customers' private chats
QUESTION = "Где мой заказ 9999?"  # no such order, and no verified phone
ANSWER = "Заказ 9999 не найден."


def _misses(messages: list[Message], tool_choice: ToolChoice | None) -> object:
    """The model looks the order up, then says it was not found."""
    last = messages[-1]
    if last["role"] == "tool":
        return text_response(ANSWER)
    if tool_choice == "auto" and "9999" in str(last["content"]):
        return tool_calls_response(tool_call("get_order_status", {"order_id": "9999"}))
    return text_response("summary")


@dataclass
class Running:
    intake: Intake
    service: ChatService
    inbox: InboxRepository
    llm: ScriptedLLM


@asynccontextmanager
async def running_bot(path: Path, telegram: FakeTelegramServer) -> AsyncIterator[Running]:
    """One run of the bot over the database file at `path` (closed when it ends)."""
    db = await open_database(path)
    llm = ScriptedLLM(_misses)  # type: ignore[arg-type]
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    registry = build_registry()
    service = build_chat_service(
        db=db,
        loop=BoundedToolLoop(llm, registry, ToolExecutor(registry), max_steps=3),
        model=llm,
        prompts=build_prompt_registry(),
        shop=shop,
    )
    bot = Bot(
        telegram.token,
        session=AiohttpSession(api=TelegramAPIServer.from_base(telegram.base_url)),
    )
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    deps = handler_deps(
        db,
        sender,
        responder,
        chat_service=service,
        limiter=UserMessageLimiter(per_minute=10, per_day=100),
        max_input_chars=500,
    )
    dispatcher = build_dispatcher(deps, admin_ids=frozenset())
    intake = Intake(
        inbox, process=UpdateProcessor(bot, dispatcher, responder), deliver=responder.deliver
    )
    try:
        yield Running(intake, service, inbox, llm)
    finally:
        await service.aclose()
        await bot.session.close()
        await db.close()


def _turn_requests(llm: ScriptedLLM) -> int:
    return sum(1 for r in llm.chat_requests if r.messages[-1]["role"] == "user")


async def test_after_a_crash_between_the_turn_and_its_reply_the_customer_gets_the_same_reply(
    fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    path = tmp_path / "bot.sqlite3"
    async with running_bot(path, fake_telegram) as first:
        # a customer without a crash, for comparison
        await first.intake.accept([message_update(CALM, text=QUESTION)])
        await first.intake.join()
        [calm] = fake_telegram.messages_to(CALM)
        # the crash: the update is stored, its turn is answered and stored; the process
        # dies before the reply is stored
        update = message_update(CRASHED, text=QUESTION)
        await first.inbox.record([describe_update(update)])
        message = Update.model_validate(update).message
        assert message is not None
        await first.service.answer(
            caller_of(message), QUESTION, request_key=f"telegram:{update['update_id']}"
        )
        asked = _turn_requests(first.llm)
    assert fake_telegram.messages_to(CRASHED) == []

    async with running_bot(path, fake_telegram) as restarted:
        assert await restarted.intake.resume() == 1
        await restarted.intake.join()
        assert _turn_requests(restarted.llm) == 0  # the stored turn, not a new model call
    [replayed] = fake_telegram.messages_to(CRASHED)
    assert (replayed.text, replayed.reply_markup) == (calm.text, calm.reply_markup)
    assert calm.plain_text.startswith(ANSWER)
    [[button]] = (calm.reply_markup or {})["keyboard"]
    assert button["request_contact"] is True  # the share-my-phone button
    assert asked == 2  # both customers' turns went to the model once in the first run
