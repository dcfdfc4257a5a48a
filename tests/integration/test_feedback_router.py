"""The feedback router through the bot's real pipeline (inbox, dispatcher, sender) and a
real aiogram Bot against the fake Bot API: the "talk to a person" offer after a 👎 when
handoff is configured, who may rate in a group, and the stored answer's buttons.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import InlineKeyboardMarkup

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.filters import LanguageMiddleware
from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.keyboards import (
    FeedbackButton,
    HandoffButton,
    feedback_keyboard,
    markup_from_json,
    markup_to_json,
)
from bot.telegram.processing import UpdateProcessor
from bot.telegram.routers.feedback import build_feedback_router
from bot.telegram.sender import Sender
from bot.telegram.texts import EN, RU
from services.feedback import FeedbackService, Rating
from storage.database import Database
from storage.feedback import FeedbackRepository
from storage.inbox import InboxRepository
from tests.fakes.handler_deps import handler_deps
from tests.fakes.telegram_server import FakeTelegramServer, callback_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.waits import OUTER_LIMIT_S

TURN = "0123456789abcdef0123456789abcdef"
GROUP, ASKER, NEIGHBOUR = -100500, 8101, 8102
# the wire form of the "talk to a person" button, as earlier versions stored it too
HANDOFF_START = "handoff:start"


@pytest.fixture
async def bot(fake_telegram: FakeTelegramServer) -> AsyncIterator[Bot]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url))
    bot = Bot(token=fake_telegram.token, session=session)
    try:
        yield bot
    finally:
        await session.close()


async def _answer(db: Database, chat_id: int, user_id: int, stop_reason: str = "completed") -> None:
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO sessions (id, chat_id, opened_at) VALUES (1, ?, 0.0)", (chat_id,)
        )
        await conn.execute(
            "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
            " status, stop_reason, model_steps, tool_calls, prompt)"
            " VALUES (?, 1, ?, ?, 1000.0, 10.0, 'answered', ?, 1, 0, 'p@1')",
            (TURN, chat_id, user_id, stop_reason),
        )


async def _press(
    db: Database, bot: Bot, telegram: FakeTelegramServer, *, offer_operator: bool, **kw: Any
) -> str:
    """One press through intake → dispatcher → router; the acknowledgement's text."""
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    deps = handler_deps(db, sender, responder, feedback=FeedbackService(FeedbackRepository(db)))
    dispatcher = Dispatcher()
    dispatcher.update.outer_middleware(LanguageMiddleware())
    dispatcher.include_router(build_feedback_router(deps, offer_operator=offer_operator))
    intake = Intake(
        inbox, process=UpdateProcessor(bot, dispatcher, responder), deliver=responder.deliver
    )
    update = callback_update(message_id=77, **kw)
    await intake.accept([update])
    await asyncio.wait_for(intake.join(), OUTER_LIMIT_S)
    row = await inbox.get(update["update_id"])
    assert row is not None and row.status == "ignored"  # nothing to send: no new message
    [ack] = [
        c
        for c in telegram.calls_of("answerCallbackQuery")
        if c.params["callback_query_id"] == update["callback_query"]["id"]
    ]
    return str(ack.params["text"])


def _edited_markup(telegram: FakeTelegramServer) -> dict[str, Any]:
    markup = telegram.calls_of("editMessageReplyMarkup")[-1].params["reply_markup"]
    assert isinstance(markup, dict)
    return markup


async def test_a_thumbs_down_offers_a_person_when_handoff_is_configured(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    await _answer(db, ASKER, ASKER)
    text = await _press(
        db,
        bot,
        fake_telegram,
        offer_operator=True,
        chat_id=ASKER,
        data=f"fb:{TURN}:d",
        language_code="en",
    )
    assert text == EN.feedback_thanks
    rows = _edited_markup(fake_telegram)["inline_keyboard"]
    assert [b["text"] for b in rows[0]] == ["👍", "✓ 👎"]
    assert rows[1] == [
        {"text": HANDOFF_WORDS["en"].operator_button, "callback_data": HANDOFF_START}
    ]


async def test_no_person_is_offered_without_handoff_or_after_a_thumbs_up(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    await _answer(db, ASKER, ASKER)
    await _press(db, bot, fake_telegram, offer_operator=False, chat_id=ASKER, data=f"fb:{TURN}:d")
    assert len(_edited_markup(fake_telegram)["inline_keyboard"]) == 1
    await _press(db, bot, fake_telegram, offer_operator=True, chat_id=ASKER, data=f"fb:{TURN}:u")
    [row] = _edited_markup(fake_telegram)["inline_keyboard"]
    assert [b["text"] for b in row] == ["✓ 👍", "👎"]


async def test_in_a_group_only_the_asker_may_rate(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    await _answer(db, GROUP, ASKER)
    text = await _press(
        db,
        bot,
        fake_telegram,
        offer_operator=False,
        chat_id=GROUP,
        user_id=NEIGHBOUR,
        data=f"fb:{TURN}:d",
    )
    assert text == RU.feedback_not_asker
    assert await FeedbackRepository(db).rating_of(TURN) is None
    assert fake_telegram.calls_of("editMessageReplyMarkup") == []
    text = await _press(
        db,
        bot,
        fake_telegram,
        offer_operator=False,
        chat_id=GROUP,
        user_id=ASKER,
        data=f"fb:{TURN}:d",
    )
    assert text == RU.feedback_thanks
    assert await FeedbackRepository(db).rating_of(TURN) == -1


async def test_a_refused_answer_cannot_be_rated(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    await _answer(db, ASKER, ASKER, stop_reason="refused")
    text = await _press(
        db, bot, fake_telegram, offer_operator=False, chat_id=ASKER, data=f"fb:{TURN}:u"
    )
    assert text == RU.feedback_refused
    assert await FeedbackRepository(db).rating_of(TURN) is None


def test_callback_data_is_parsed_strictly_and_fits_telegrams_limit() -> None:
    markup = feedback_keyboard(TURN)
    for button in markup.inline_keyboard[0]:
        assert button.callback_data is not None and len(button.callback_data.encode()) <= 64
    for data, rating in ((f"fb:{TURN}:u", Rating.UP), (f"fb:{TURN}:d", Rating.DOWN)):
        button = FeedbackButton.read(data)
        assert button is not None and (button.turn_id, button.vote.rating) == (TURN, rating)
    for bad in (
        None,
        "",
        f"fb:{TURN}:u ",
        f"fb:{TURN}",
        f"fb:{TURN[:-1]}:u",
        f"xx:{TURN}:u",
        f"fb:{TURN}:u\n",
        f"fb:{TURN.upper()}:d",
        HANDOFF_START,
    ):
        assert FeedbackButton.read(bad) is None, bad
    # stored with the answer and read back as the same inline keyboard (redelivery)
    restored = markup_from_json(markup_to_json(markup))
    assert isinstance(restored, InlineKeyboardMarkup) and restored == markup


def test_buttons_stored_by_earlier_versions_still_parse() -> None:
    """Answers already in customers' chats (and replies stored before an upgrade, in
    `StoredReply.reply_markup`) carry the callback data earlier versions wrote by hand:
    the typed buttons write and read exactly those forms."""
    stored = {
        "inline_keyboard": [
            [
                {"text": "👍", "callback_data": f"fb:{TURN}:u"},
                {"text": "👎", "callback_data": f"fb:{TURN}:d"},
            ],
            [{"text": HANDOFF_WORDS["en"].operator_button, "callback_data": HANDOFF_START}],
        ]
    }
    restored = markup_from_json(stored)
    assert isinstance(restored, InlineKeyboardMarkup)
    up, down = (FeedbackButton.read(b.callback_data) for b in restored.inline_keyboard[0])
    assert up is not None and (up.turn_id, up.vote.rating) == (TURN, Rating.UP)
    assert down is not None and down.vote.rating is Rating.DOWN
    assert HandoffButton.unpack(HANDOFF_START) == HandoffButton()
    assert (
        markup_to_json(feedback_keyboard(TURN, operator_label=HANDOFF_WORDS["en"].operator_button))
        == stored
    )
