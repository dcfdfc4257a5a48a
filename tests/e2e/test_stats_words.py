"""/stats as a shop owner reads it, through the real process: an order lookup that found
nothing is the shop's data saying no, and tools are named in words (the Russian table's
words: tests/unit/bot/test_stats_table.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.chat_helpers import StartBot, ask, results_for, wait_for_db
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer

ADMIN = 901


async def test_a_lookup_that_found_no_order_is_said_no_not_done(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(ADMIN_IDS=str(ADMIN))
    found = "Где сейчас заказ 8041?"  # a demo order, public
    await ask(fake_telegram, 801, found)
    assert results_for(fake_openai, found)[0]["data"]["found"] is True
    missing = "Где сейчас заказ 5555?"  # no such order
    await ask(fake_telegram, 802, missing)
    assert results_for(fake_openai, missing)[0]["data"]["found"] is False
    await wait_for_db(database_path, "SELECT count(*) FROM tool_calls", [(2,)])

    english = await ask(fake_telegram, ADMIN, "/stats", language_code="en")
    assert re.search(
        r"TOOLS, for the curious\s+calls of all tools\s+2\s+Order status\s+calls\s+2\s+"
        r"done\s+1\s+50%\s+said no\s+1\s+failed\s+0",
        english,
    ), english
    assert "get_order_status" not in english
