"""`/stats` through the bot's real pipeline (inbox, dispatcher, responder, sender) and a real
aiogram Bot, against the fake Bot API over HTTP.

Updates enter through `Intake.accept` as polling hands them over; the bot's requests go
to the aiohttp fake (`TelegramAPIServer.from_base`), which records what an admin would
see. A stand-in fall-through router plays the bot's unknown-command reply, included after the admin
router exactly as `bot.telegram.routers.get_routers` orders them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiogram import Bot, Dispatcher, F, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.dispatcher.event.bases import UNHANDLED
from aiogram.types import Message, Update

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.context import UpdateContext
from bot.telegram.filters import LanguageMiddleware
from bot.telegram.formatting import Rendered
from bot.telegram.processing import UpdateProcessor
from bot.telegram.routers.admin import build_admin_router
from bot.telegram.sender import Sender
from services.stats import StatsReport, StatsService
from storage.database import Database
from storage.inbox import InboxRepository, InboxRow
from storage.stats import StatsRepository
from tests.fakes.handler_deps import handler_deps
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.unit.storage.test_stats import UNTIL, _seed
from tests.waits import OUTER_LIMIT_S

ADMIN = 7001
CUSTOMER = 7002
UNKNOWN_COMMAND = "Sorry, I don't know this command."


@pytest.fixture
async def bot(fake_telegram: FakeTelegramServer) -> AsyncIterator[Bot]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url))
    bot = Bot(token=fake_telegram.token, session=session)
    try:
        yield bot
    finally:
        await session.close()


@dataclass
class Pipeline:
    intake: Intake
    inbox: InboxRepository

    async def send(self, text: str, *, user: int = ADMIN, lang: str = "en") -> int:
        payload = message_update(user, text=text, user_id=user, language_code=lang)
        await self.intake.accept([payload])
        await asyncio.wait_for(self.intake.join(), OUTER_LIMIT_S)
        return int(payload["update_id"])


def _pipeline(db: Database, bot: Bot, **router_options: Any) -> Pipeline:
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    # the clock puts "now" just after the seeded rows, so 24h covers all of them
    stats = StatsService(StatsRepository(db), clock=lambda: UNTIL)
    deps = handler_deps(db, sender, responder, stats=stats)
    dispatcher = Dispatcher()
    # the language of the reply is chosen once per update, as the wiring's dispatcher does
    dispatcher.update.outer_middleware(LanguageMiddleware())
    dispatcher.include_router(build_admin_router(deps, frozenset({ADMIN}), **router_options))
    fallback = Router(name="unknown_command")

    @fallback.message(F.text.startswith("/"))
    async def unknown(message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.send_rendered([Rendered(UNKNOWN_COMMAND, UNKNOWN_COMMAND)])

    dispatcher.include_router(fallback)
    process = UpdateProcessor(bot, dispatcher, responder)
    return Pipeline(Intake(inbox, process=process, deliver=responder.deliver), inbox)


async def test_admin_gets_the_table_and_the_chart(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
):
    await _seed(db)
    update_id = await _pipeline(db, bot).send("/stats 24h")

    texts = [m for m in fake_telegram.messages_to(ADMIN) if m.kind == "text"]
    photos = [m for m in fake_telegram.messages_to(ADMIN) if m.kind == "photo"]
    assert len(texts) == 1 and len(photos) == 1
    table = texts[0]
    assert table.parse_mode == "HTML" and table.text.startswith("<pre>")
    assert "/stats · last 24 hours" in table.plain_text
    assert "Order status" in table.plain_text
    assert "QUESTIONS" in table.plain_text
    photo = photos[0]
    assert photo.text.startswith("Questions, last 24 hours: ")
    assert "\n" not in photo.text  # a one-line caption
    reference = photo.params["photo"]  # aiogram uploads the file as a form part
    assert reference.startswith("attach://")
    upload = photo.params[reference.removeprefix("attach://")]
    assert upload["size"] > 5_000
    # the photo comes after the table
    assert fake_telegram.messages_to(ADMIN)[-1].kind == "photo"
    # the table is the stored answer of the update, like every other reply
    row = await _stored(db, update_id)
    assert row.status == "delivered" and row.message_ids == (table.message_id,)


@pytest.mark.parametrize("lang", ["ru", "de", ""])
async def test_admin_gets_russian_for_a_russian_client(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer, lang: str
):
    """Russian, the shop's default, for Russian, any other language and no language."""
    await _seed(db)
    await _pipeline(db, bot).send("/stats", lang=lang)
    [table] = [m for m in fake_telegram.messages_to(ADMIN) if m.kind == "text"]
    [photo] = [m for m in fake_telegram.messages_to(ADMIN) if m.kind == "photo"]
    assert "/stats · за 24 часа" in table.plain_text
    assert photo.text.startswith("Вопросы за 24 часа: ")


async def test_admin_gets_english_for_a_regional_english_client(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
):
    await _seed(db)
    await _pipeline(db, bot).send("/stats 7d", lang="en-GB")
    [table] = [m for m in fake_telegram.messages_to(ADMIN) if m.kind == "text"]
    assert "/stats · last 7 days" in table.plain_text


async def test_non_admin_stats_is_an_unknown_command(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
):
    await _seed(db)
    await _pipeline(db, bot).send("/stats", user=CUSTOMER)
    [reply] = fake_telegram.messages_to(CUSTOMER)
    assert reply.text == UNKNOWN_COMMAND
    assert fake_telegram.calls_of("sendPhoto") == []


async def test_no_admins_configured_means_no_stats(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
):
    sender = Sender(bot, per_chat_interval_s=0.0)
    stats = StatsService(StatsRepository(db), clock=lambda: UNTIL)
    deps = handler_deps(
        db, sender, Responder(InboxRepository(db), TelegramChannel(sender)), stats=stats
    )
    dispatcher = Dispatcher()
    dispatcher.include_router(build_admin_router(deps, frozenset()))
    result = await dispatcher.feed_update(
        bot,
        Update.model_validate(
            message_update(ADMIN, text="/stats", user_id=ADMIN), context={"bot": bot}
        ),
    )
    assert result is UNHANDLED  # the router did not take the update
    assert fake_telegram.messages == []


@pytest.mark.parametrize("argument", ["week", "24h please", "1h"])
async def test_bad_period_gets_a_one_line_usage_hint(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer, argument: str
):
    await _seed(db)
    await _pipeline(db, bot).send(f"/stats {argument}")
    [reply] = fake_telegram.messages_to(ADMIN)
    assert reply.text == "Usage: /stats [24h|7d|30d|all] (default 24h)"
    assert fake_telegram.calls_of("sendPhoto") == []


async def test_empty_database_says_no_data_and_sends_no_chart(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
):
    await _pipeline(db, bot).send("/stats all")
    [reply] = fake_telegram.messages_to(ADMIN)
    assert reply.plain_text.endswith("No data for this period yet.")
    assert fake_telegram.calls_of("sendPhoto") == []


async def test_chart_failure_still_sends_the_table(
    db: Database,
    bot: Bot,
    fake_telegram: FakeTelegramServer,
    caplog: pytest.LogCaptureFixture,
):
    await _seed(db)

    def broken(report: StatsReport, language: str) -> bytes:
        raise RuntimeError("font missing")

    with caplog.at_level(logging.ERROR, logger="bot.telegram.routers.admin"):
        await _pipeline(db, bot, chart_renderer=broken).send("/stats")

    [table] = fake_telegram.messages_to(ADMIN)
    assert "Order status" in table.plain_text
    assert fake_telegram.calls_of("sendPhoto") == []
    assert "stats chart rendering failed" in caplog.text


async def _stored(db: Database, update_id: int) -> InboxRow:
    row = await InboxRepository(db).get(update_id)
    assert row is not None
    return row
