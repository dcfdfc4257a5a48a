"""One poison order does not stop order updates: through the real process.

Two customers follow their orders. One order becomes unreadable in the shop's own tables
(a time the bot cannot read, written by the shop outside the import), and the shop
pushes it first; the other customer's order moves and is pushed after it. The healthy
customer is told within the wait bound, the poison push is tried EVENT_ATTEMPTS times and
then dropped, polling rounds go on for everyone, and the log says it once: no traceback.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from services.order_updates import EVENT_ATTEMPTS
from tests.e2e.chat_helpers import WAIT_S, StartBot, import_shop, seen_text, wait_for_db
from tests.e2e.harness import free_port
from tests.e2e.test_order_updates import (
    CUSTOMER,
    MOVED,
    OTHERS,
    OWNED,
    SECRET,
    STRANGER,
    event,
    inline,
    lookups,
    move,
    press,
    push,
    say,
    shop,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update


async def follow(telegram: FakeTelegramServer, customer: int, number: str) -> None:
    answer = await say(
        telegram, customer, message_update(customer, text=f"Where is {number}?", language_code="en")
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    await say(telegram, customer, press(customer, notify["callback_data"]))


@pytest.mark.sqlite_only
async def test_one_poison_order_and_a_healthy_customer_is_still_told(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    port = free_port()
    env = {
        **bot_base_env,
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "0.005",  # a polling round every 0.3 s as well
        "SHOP_WEBHOOK_SECRET": SECRET,
        "HEALTH_ENABLED": "true",
        "WEB_HOST": "127.0.0.1",
        "WEB_PORT": str(port),
    }
    await import_shop(env, tmp_path, shop())
    lookups(fake_openai)
    bot = await start_bot(env)
    await follow(fake_telegram, CUSTOMER, OWNED)
    await follow(fake_telegram, STRANGER, OTHERS)

    before = len(fake_telegram.messages_to(CUSTOMER))
    told_stranger = len(fake_telegram.messages_to(STRANGER))
    move(database_path, OTHERS, "in_transit", "the 30th, around noon")  # poison: no time
    async with aiohttp.ClientSession() as http:
        assert (await push(http, port, event("evt-poison", OTHERS)))[0] == 200
        move(database_path, OWNED, "in_transit", "2026-11-30T12:00:00+00:00")
        assert (await push(http, port, event("evt-healthy", OWNED)))[0] == 200

    moved = await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
    assert seen_text(moved[before].text) == MOVED
    await wait_for_db(
        database_path,
        "SELECT order_number, attempts, processed_at IS NOT NULL FROM shop_events "
        "ORDER BY order_number",
        [(OWNED, 1, 1), (OTHERS, EVENT_ATTEMPTS, 1)],
    )
    assert len(fake_telegram.messages_to(STRANGER)) == told_stranger  # nothing invented
    # said once for the pushes and once for the polling rounds, never a traceback
    assert bot.output.count("a pushed order could not be handled (ValidationError)") == 1
    assert bot.output.count("a polled order could not be handled (ValidationError)") <= 1
    assert "Traceback" not in bot.output
