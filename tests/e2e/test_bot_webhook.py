"""The real bot process in webhook mode: secret mandatory, 200 only after the commit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.chat_helpers import query
from tests.e2e.conftest import StartBot
from tests.e2e.harness import WEBHOOK_PATH, WEBHOOK_SECRET, free_port, post_update, webhook_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.both_backends

CHAT = 2002


@pytest.fixture
def port() -> int:
    return free_port()


def turns_started(openai: FakeOpenAIServer) -> list[dict]:
    """Model requests that open a turn (the last message is the customer's)."""
    return [r for r in openai.chat_requests if r["messages"][-1]["role"] == "user"]


def inbox_ids(database: Path) -> set[int]:
    return {row[0] for row in query(database, "SELECT update_id FROM updates")}


async def test_webhook_is_registered_with_secret_and_used_update_types(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    port: int,
    http: aiohttp.ClientSession,
) -> None:
    bot = await start_bot(webhook_env(bot_base_env, port))
    call = await fake_telegram.wait_for_call("setWebhook")
    assert call.params["url"] == "https://bot.example.test" + WEBHOOK_PATH
    assert call.params["secret_token"] == WEBHOOK_SECRET
    assert call.params["allowed_updates"] == [
        "callback_query",  # 👍/👎 presses
        "message",
        "stopped_message_generation",  # the stop button of a streamed answer
    ]
    assert not call.params.get("drop_pending_updates")
    # Telegram may deliver 100 updates at once (its own default, 40, took them in slower)
    assert int(call.params["max_connections"]) == 100
    assert fake_telegram.calls_of("getUpdates") == []
    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
        assert response.status == 200
    assert WEBHOOK_SECRET not in bot.output


async def test_right_secret_is_answered_wrong_or_missing_secret_is_not(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    port: int,
    http: aiohttp.ClientSession,
    database_path: Path,
) -> None:
    await start_bot(webhook_env(bot_base_env, port))
    forged = message_update(CHAT, text="Где сейчас находится заказ 8041?")
    assert await post_update(http, port, forged, secret="wrong") == 401
    missing = message_update(CHAT, text="Где сейчас находится заказ 8041?")
    assert await post_update(http, port, missing, secret=None) == 401

    real = message_update(CHAT, text="Где сейчас находится заказ 8041?")
    assert await post_update(http, port, real) == 200
    assert real["update_id"] in inbox_ids(database_path)  # committed before the 200
    [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert "8041" in answer.plain_text
    assert forged["update_id"] not in inbox_ids(database_path)
    assert missing["update_id"] not in inbox_ids(database_path)
    assert len(turns_started(fake_openai)) == 1


async def test_an_update_posted_twice_is_answered_once(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    port: int,
    http: aiohttp.ClientSession,
) -> None:
    await start_bot(webhook_env(bot_base_env, port))
    update = message_update(CHAT, text="Где сейчас находится заказ 8041?")
    statuses = await asyncio.gather(
        post_update(http, port, update), post_update(http, port, update)
    )
    assert statuses == [200, 200]
    assert await post_update(http, port, update) == 200  # a late redelivery too
    # a later update of the same chat is handled after the first, so once its reply
    # is there, a second answer to the duplicate would be there as well
    assert await post_update(http, port, message_update(CHAT, text="/help")) == 200
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert len(messages) == 2
    assert "8041" in messages[0].plain_text and "/new" in messages[1].plain_text
    assert len(turns_started(fake_openai)) == 1


async def test_sigterm_in_webhook_mode_finishes_the_turn(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    port: int,
    http: aiohttp.ClientSession,
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot(webhook_env(bot_base_env, port))
    assert await post_update(http, port, message_update(CHAT, text="Где заказ 8041?")) == 200
    await fake_openai.wait_for_requests(1)
    assert bot.proc is not None
    bot.proc.terminate()
    await bot.wait_for_line("stopping")
    # no longer taking updates: the web server is closed
    with pytest.raises(aiohttp.ClientError):
        await post_update(http, port, message_update(CHAT, text="/help"))
    release.set()
    assert await bot.wait_exit() == 0
    [answer] = fake_telegram.messages_to(CHAT)
    assert "8041" in answer.plain_text


async def test_with_business_mode_the_webhook_asks_for_the_business_update_types(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    port: int,
) -> None:
    """Telegram sends business updates only when they are in `allowed_updates`."""
    env = webhook_env(bot_base_env, port) | {"BUSINESS_ENABLED": "true", "ADMIN_IDS": "7501"}
    await start_bot(env)
    call = await fake_telegram.wait_for_call("setWebhook")
    assert {
        "business_connection",
        "business_message",
        "edited_business_message",
        "deleted_business_messages",
    } <= set(call.params["allowed_updates"])
