"""Personal data stays out of the logs: the real process's stderr, malformed updates.

pydantic's validation errors quote the invalid input (the message text, the sender's
name). The bot logs such errors as locations and error types only, at every level:
the process runs at LOG_LEVEL=DEBUG here, which includes everything up to ERROR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.chat_helpers import WAIT_S, StartBot, seen_text, wait_for_db
from tests.e2e.harness import WEBHOOK_PATH, WEBHOOK_SECRET, free_port, webhook_env
from tests.fakes.telegram_server import FakeTelegramServer, message_update

TEXT = "Zyxwvu-secret-order-text-4471"
NAME = "Quillibert-Privatename"
LAST_NAME = "Oxtongue-Familyname"
USERNAME = "quillibert_handle_9"


def malformed(chat_id: int, update_id: int) -> dict[str, Any]:
    """Fields of the wrong type next to the customer's text and names."""
    update = message_update(chat_id, text=TEXT, update_id=update_id)
    message = update["message"]
    message["from"].update(first_name=NAME, last_name=LAST_NAME, username=USERNAME)
    message["date"] = f"date {TEXT}"
    message["from"]["is_bot"] = f"{NAME} {TEXT}"
    message["chat"]["first_name"] = NAME
    message["entities"] = [{"type": TEXT, "offset": "x", "length": NAME}]
    return update


def assert_private(output: str) -> None:
    for secret in (TEXT, NAME, LAST_NAME, USERNAME, "Где заказ"):
        assert secret not in output, f"{secret!r} was logged:\n{output}"


@pytest.mark.parametrize("level", ["DEBUG", "INFO"])
async def test_malformed_update_is_logged_without_text_or_names_polling(
    level: str,
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    database_path: Path,
) -> None:
    bot = await start_bot(LOG_LEVEL=level)
    fake_telegram.enqueue_update(malformed(741, 93_001))
    fake_telegram.enqueue_update(message_update(741, text="Где заказ 8041?", update_id=93_002))

    [answer] = await fake_telegram.wait_for_messages(741, within=WAIT_S)
    assert "8041" in seen_text(answer.text)
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = 93001", [("failed",)]
    )
    assert await bot.terminate() == 0
    assert_private(bot.output)
    [line] = [line for line in bot.lines if "update 93001 cannot be parsed" in line]
    assert "validation error" in line and "message.date" in line


async def test_malformed_update_is_logged_without_text_or_names_webhook(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    database_path: Path,
) -> None:
    port = free_port()
    bot = await start_bot(webhook_env(bot_base_env, port), LOG_LEVEL="DEBUG")
    url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    async with aiohttp.ClientSession() as http:
        for update in (malformed(742, 93_101), message_update(742, text="/help")):
            async with http.post(url, json=update, headers=headers) as response:
                assert response.status == 200

    await fake_telegram.wait_for_messages(742, within=WAIT_S)
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = 93101", [("failed",)]
    )
    assert await bot.terminate() == 0
    assert_private(bot.output)
    assert any("update 93101 cannot be parsed" in line for line in bot.lines)
