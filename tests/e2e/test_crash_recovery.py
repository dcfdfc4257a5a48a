"""Crash proof: SIGKILL at the worst moments, restart, and the customer gets one answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import query
from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import FakeOpenAIServer, default_script
from tests.fakes.telegram_server import FakeTelegramServer, message_update

CHAT = 3003
QUESTION = "Где сейчас находится заказ 8041?"


pytestmark = pytest.mark.both_backends


def inbox_status(database: Path, update_id: int) -> str:
    [(status,)] = query(database, "SELECT status FROM updates WHERE update_id = ?", update_id)
    return str(status)


async def exactly_one_answer(fake_telegram: FakeTelegramServer) -> str:
    """The answer, checked to be the only one: a later /help in the same chat is handled
    after it, so when the /help reply is there, any duplicate would be there too."""
    fake_telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await fake_telegram.wait_for_messages(CHAT, 2, within=30)
    assert len(messages) == 2, [m.text for m in messages]
    assert "/new" in messages[1].plain_text
    return messages[0].plain_text


async def test_killed_mid_turn_answers_once_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot()
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await fake_openai.wait_for_requests(1)
    assert inbox_status(database_path, update_id) == "pending"
    await bot.kill()
    assert fake_telegram.messages_to(CHAT) == []

    fake_openai.handler = default_script
    release.set()
    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer
    assert inbox_status(database_path, update_id) == "delivered"


async def test_killed_after_the_reply_was_stored_sends_it_without_the_model(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    hold = fake_telegram.hold_send_message(CHAT)
    bot = await start_bot()
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await asyncio.wait_for(hold.arrived.wait(), 20)
    assert inbox_status(database_path, update_id) == "answered"
    model_calls = len(fake_openai.requests)
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle)  # the dead request was dropped
    hold.release()
    assert fake_telegram.messages_to(CHAT) == []

    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer
    assert len(fake_openai.requests) == model_calls  # the model was not asked again
    assert inbox_status(database_path, update_id) == "delivered"


async def test_turn_cut_by_the_shutdown_grace_is_answered_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot(SHUTDOWN_GRACE_S="0.5")
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await fake_openai.wait_for_requests(1)
    assert await bot.terminate() == 0  # the model never answered: the grace ran out
    await bot.wait_for_line("left for the next start")
    assert inbox_status(database_path, update_id) == "pending"
    assert fake_telegram.messages_to(CHAT) == []

    fake_openai.handler = default_script
    release.set()
    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer
