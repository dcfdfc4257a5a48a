"""The one sender inside the real process: flood control and an unreachable Telegram."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    query,
    seen_text,
    wait_for_db,
    wait_for_log,
)
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, default_script
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.both_backends


async def test_flood_control_is_honoured_and_the_answer_arrives_once(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot()
    fake_telegram.fail_next_sends_with_retry_after(retry_after=1, times=1)

    update_id = fake_telegram.enqueue_update(message_update(1101, text="Где заказ 8041?"))
    [answer] = await fake_telegram.wait_for_messages(1101, within=WAIT_S)

    assert "8041" in seen_text(answer.text)
    assert len(fake_telegram.calls_of("sendMessage")) == 2  # refused once, then accepted
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = ?", [("delivered",)], update_id
    )
    assert fake_telegram.messages_to(1101) == [answer]
    assert len(fake_openai.chat_requests) == 2  # the model was not asked again


async def test_an_answer_waits_out_a_telegram_outage_and_arrives_once(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    answer_ready = asyncio.Event()

    def held_answer(body: Body) -> FakeReply:
        if body.get("tools"):
            return completion(text="Заказ 8041 в пути.", hold=answer_ready)
        return default_script(body)

    fake_openai.handler = held_answer
    bot = await start_bot()
    port = int(fake_telegram.base_url.rsplit(":", 1)[1])
    update_id = fake_telegram.enqueue_update(message_update(1102, text="Где заказ 8041?"))
    await fake_openai.wait_for_requests(1, within_s=WAIT_S)

    await fake_telegram.stop()  # Telegram is unreachable: connections are refused
    answer_ready.set()
    await wait_for_log(bot, "network error on sendMessage")  # the first attempt failed
    await fake_telegram.start(port=port)

    [answer] = await fake_telegram.wait_for_messages(1102, within=WAIT_S)
    assert seen_text(answer.text) == "Заказ 8041 в пути."
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = ?", [("delivered",)], update_id
    )
    assert len(fake_telegram.calls_of("sendMessage")) == 1  # refused connections sent nothing
    assert query(database_path, "SELECT count(*) FROM turns") == [(1,)]
