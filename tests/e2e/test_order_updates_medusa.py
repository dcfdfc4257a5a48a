"""Order updates' polling fallback against the real Medusa engine,
through the real bot process (SHOP_BACKEND=medusa, no pushes).

Anna shares her own contact (her verified phone is her Medusa customer's), asks about her
order and presses "notify me when it moves". Staff ship the order in Medusa: the polling
fallback tells her exactly once, however many rounds read the order again. A restart of
the bot tells her nothing more. Staff mark the order delivered: exactly one more message.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from bot.telegram.order_update_words import ORDER_UPDATE_WORDS
from tests.e2e.chat_helpers import WAIT_S, StartBot, query, seen_text, tool_step, wait_for_db
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    contact_update,
    message_update,
)
from tests.shop_engine.medusa_engine import MedusaEngine

EN_WORDS = ORDER_UPDATE_WORDS["en"]

pytestmark = [pytest.mark.medusa, pytest.mark.both_backends, pytest.mark.timeout(900)]

ANNA = 7411
ANNA_PHONE = "79123456789"  # Anna's Medusa customer's phone, as Telegram sends contacts
ROUNDS_WITHIN_S = 120.0  # a polling round reads Medusa, which shares two loaded cores


async def say(telegram: FakeTelegramServer, chat_id: int, update: dict[str, Any]) -> SentMessage:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(update)
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


def texts_to(telegram: FakeTelegramServer, chat_id: int) -> list[str]:
    return [seen_text(m.text) for m in telegram.messages_to(chat_id)]


def checked_at(database: Path) -> float:
    [(at,)] = query(database, "SELECT COALESCE(checked_at, 0) FROM order_subscriptions")
    return float(at)


async def polled_after(database: Path, moment: float) -> None:
    """Bounded wait until a polling round has read the order after `moment` (unix s)."""
    async with asyncio.timeout(ROUNDS_WITHIN_S):
        while True:
            if checked_at(database) > moment:
                return
            await asyncio.sleep(0.1)


async def test_medusa_polling_tells_each_change_once_and_a_restart_nothing_more(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    medusa_engine: MedusaEngine,
) -> None:
    number = str(medusa_engine.place_order("anna"))
    fake_openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"#(\d+)", text)
        ],
        lambda body: "Here is what I found.",
    )
    env = {
        **bot_base_env,
        "SHOP_BACKEND": "medusa",
        "SHOP_API_URL": medusa_engine.url,
        "SHOP_API_TOKEN": medusa_engine.api_key,
        "SHOP_TIMEOUT_S": "4",
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "0.02",  # a round every 1.2 s: many in a short test
    }
    bot = await start_bot(env)
    await say(
        fake_telegram,
        ANNA,
        contact_update(ANNA, phone_number=ANNA_PHONE, contact_user_id=ANNA, language_code="en"),
    )
    answer = await say(
        fake_telegram,
        ANNA,
        message_update(ANNA, text=f"Where is my order #{number}?", language_code="en"),
    )
    markup = answer.reply_markup or {}
    [notify] = [
        b
        for row in markup.get("inline_keyboard") or []
        for b in row
        if b["callback_data"].startswith("ou:")
    ]
    assert notify["callback_data"] == f"ou:on:{number}"
    done = await say(
        fake_telegram, ANNA, callback_update(ANNA, notify["callback_data"], language_code="en")
    )
    assert seen_text(done.text) == EN_WORDS.for_order("order_updates_subscribed", number)
    assert query(database_path, "SELECT told_status FROM order_subscriptions") == [("processing",)]

    # staff ship it in Medusa: one message, and later rounds reading it again add none
    moved = EN_WORDS.for_order("order_update_in_transit", number)
    before = len(fake_telegram.messages_to(ANNA))
    medusa_engine.ship(int(number), "TRK-POLL")
    told = await fake_telegram.wait_for_messages(ANNA, before + 1, within=ROUNDS_WITHIN_S)
    assert seen_text(told[before].text) == moved
    sent_at = checked_at(database_path)
    await polled_after(database_path, sent_at)
    await polled_after(database_path, checked_at(database_path))
    assert texts_to(fake_telegram, ANNA).count(moved) == 1

    # a restart: the new process polls the order again and tells nothing more
    assert await bot.terminate() == 0
    stopped = len(fake_telegram.messages_to(ANNA))
    await start_bot(env)
    restarted = checked_at(database_path)
    await polled_after(database_path, restarted)
    await polled_after(database_path, checked_at(database_path))
    assert len(fake_telegram.messages_to(ANNA)) == stopped

    # delivered in Medusa: exactly one more message
    delivered = EN_WORDS.for_order("order_update_delivered", number)
    medusa_engine.deliver(int(number))
    told = await fake_telegram.wait_for_messages(ANNA, stopped + 1, within=ROUNDS_WITHIN_S)
    assert seen_text(told[stopped].text) == delivered
    await wait_for_db(
        database_path,
        "SELECT status, state FROM order_notifications ORDER BY id",
        [("in_transit", "sent"), ("delivered", "sent")],
    )
    assert texts_to(fake_telegram, ANNA).count(moved) == 1
    assert texts_to(fake_telegram, ANNA).count(delivered) == 1
    assert len(fake_telegram.messages_to(ANNA)) == stopped + 1
