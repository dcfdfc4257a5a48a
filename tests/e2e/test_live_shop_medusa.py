"""Live orders from the real Medusa engine, through the real bot process (SHOP_BACKEND=medusa).

The engine (tests/shop_engine/medusa_engine.py) holds an order of Anna's (her phone on
her Medusa customer). In Telegram, Anna shares her own contact, asks about the order and
gets it; staff ship it in Medusa, and after the cache's time (SHOP_CACHE_TTL_S=1) her
next question gets "in transit" with the tracking number. Boris, with his own verified
phone, gets for Anna's order exactly what he gets for a number that does not exist.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.chat_helpers import WAIT_S, StartBot, results_for, tool_messages, tool_step
from tests.e2e.harness import BotProcess
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import FakeTelegramServer, contact_update, message_update
from tests.shop_engine.medusa_engine import MedusaEngine

pytestmark = [pytest.mark.medusa, pytest.mark.timeout(900)]

ANNA, BORIS = 7401, 7402
ANNA_PHONE, BORIS_PHONE = "79123456789", "79990001122"  # as Telegram sends contacts
MISSING = "987654"
STATUS_WITHIN_S = 60.0


async def say(telegram: FakeTelegramServer, chat_id: int, update: dict[str, Any]) -> str:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(update)
    messages = await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S)
    return messages[before].text


async def lookup(
    telegram: FakeTelegramServer, openai: FakeOpenAIServer, chat_id: int, question: str
) -> dict[str, Any]:
    """Ask in Telegram; the order tool's result the model got for this question."""
    await say(telegram, chat_id, message_update(chat_id, text=question))
    results = results_for(openai, question)
    assert len(results) == 1, results
    data: dict[str, Any] = results[0]["data"]
    return data


async def test_a_customer_sees_their_live_medusa_order_and_its_new_status(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    medusa_engine: MedusaEngine,
) -> None:
    number = str(medusa_engine.place_order("anna", quantity=3))
    fake_openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"#(\d+)", text)
        ],
        lambda body: "Результат: " + json.dumps(tool_messages(body), ensure_ascii=False),
    )
    bot = await start_bot(
        SHOP_BACKEND="medusa",
        SHOP_API_URL=medusa_engine.url,
        SHOP_API_TOKEN=medusa_engine.api_key,
        SHOP_CACHE_TTL_S="1",
        SHOP_MISS_TTL_S="1",
        SHOP_TIMEOUT_S="4",  # the most the setting allows (inside the order tool's 5 s)
    )
    start_line = await bot.wait_for_line("shop data: medusa backend at")
    assert medusa_engine.url.removeprefix("http://") in start_line  # the start-up check ran
    for chat_id, phone in ((ANNA, ANNA_PHONE), (BORIS, BORIS_PHONE)):
        await say(
            fake_telegram,
            chat_id,
            contact_update(chat_id, phone_number=phone, contact_user_id=chat_id),
        )

    first = await lookup(fake_telegram, fake_openai, ANNA, f"Где мой заказ #{number}?")
    assert first["found"] is True
    assert first["status"] == "processing"
    assert first["items"] == [{"name": "USB-C cable", "quantity": 3}]

    medusa_engine.ship(int(number), "TRK-E2E")
    # the next questions, after the cache's second, see the shipment; bounded, no sleeps
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STATUS_WITHIN_S
    attempt = 0
    while True:
        attempt += 1
        now = await lookup(fake_telegram, fake_openai, ANNA, f"А сейчас? #{number} ({attempt})")
        if now["status"] == "in_transit" or loop.time() > deadline:
            break
        await asyncio.sleep(0.2)  # a pause between a customer's questions, not a sync
    assert now["status"] == "in_transit"
    assert now["tracking_number"] == "TRK-E2E"

    # Boris: Anna's order and a missing number get the same answer
    theirs = await lookup(fake_telegram, fake_openai, BORIS, f"Где заказ #{number}?")
    missing = await lookup(fake_telegram, fake_openai, BORIS, f"Где заказ #{MISSING}?")
    assert theirs["found"] is False and missing["found"] is False
    assert {k: v for k, v in theirs.items() if k != "order_id"} == {
        k: v for k, v in missing.items() if k != "order_id"
    }
    assert "TRK-E2E" not in json.dumps(theirs)
    assert medusa_engine.api_key not in bot.output


async def test_a_rejected_medusa_key_ends_the_start_with_one_line(
    bot_base_env: dict[str, str], tmp_path: Path, medusa_engine: MedusaEngine
) -> None:
    env = {
        **bot_base_env,
        "SHOP_BACKEND": "medusa",
        "SHOP_API_URL": medusa_engine.url,
        "SHOP_API_TOKEN": "sk_revoked_key_123",
        "SHOP_TIMEOUT_S": "4",
    }
    rejected = await BotProcess(env, tmp_path).start()
    assert await rejected.wait_exit() == 2
    errors = [line for line in rejected.lines if line.startswith("error:")]
    assert len(errors) == 1 and "SHOP_API_TOKEN was rejected by the Medusa shop" in errors[0]
    assert "sk_revoked_key_123" not in rejected.output and "Traceback" not in rejected.output
