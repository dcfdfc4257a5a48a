"""The bot's Bot API session keeps the classes aiogram parses answers with.

Without `bot.telegram.response_types`, pydantic's weak cache lets the garbage collector free
`Response[Message]` after each pass and the next sendMessage builds it again (~2.6 ms of
CPU each time under load, docs/benchmarks.md). The bot here is built as the app builds
it, against the fake Bot API.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from aiogram.methods import Response, SendChatAction, SendMessage

from bot.runtime.config import load_settings
from bot.telegram.wiring.telegram import build_bot
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.telegram_server import fake_telegram as fake_telegram


def _answer_class_collected(method: type[SendMessage] | type[SendChatAction]) -> bool:
    """Whether `Response[...]` of `method` dies when nothing but pydantic's cache holds it."""
    ref = weakref.ref(Response[method.__returning__])  # type: ignore[name-defined]
    gc.collect()
    return ref() is None


async def test_answer_classes_outlive_garbage_collection(
    monkeypatch: pytest.MonkeyPatch, fake_telegram: FakeTelegramServer
) -> None:
    monkeypatch.setenv("BOT_TOKEN", fake_telegram.token)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TELEGRAM_API_URL", fake_telegram.base_url)
    bot = build_bot(load_settings())
    try:
        # what the bot has not called yet is only weakly cached: the test can see a loss
        assert _answer_class_collected(SendChatAction)

        sent = await bot.send_message(chat_id=7, text="Здравствуйте!")
        await bot.send_chat_action(chat_id=7, action="typing")

        assert not _answer_class_collected(SendMessage)
        assert not _answer_class_collected(SendChatAction)
        # and the answers are still parsed as before
        again = await bot.send_message(chat_id=7, text="Ещё раз")
        assert again.message_id != sent.message_id
        assert [m.text for m in fake_telegram.messages_to(7)] == ["Здравствуйте!", "Ещё раз"]
    finally:
        await bot.session.close()
