"""The real bot process on PostgreSQL (DATABASE_URL instead of DATABASE_PATH).

The same path as on SQLite — stored before acknowledged, answered, recorded, resumed
across a restart — with every row read back from the server, and the URL's password
never printed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import asyncpg
import pytest

from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.postgres

CHAT = 1001
SECRET = "e2e-Pg-Secret_42"


@pytest.fixture
def pg_bot_env(bot_base_env: dict[str, str], pg_url: str) -> dict[str, str]:
    """The bot on this test's PostgreSQL database, with a password in the URL.

    The test server trusts local connections, so the password is accepted and ignored:
    it is there only to prove it never reaches the output.
    """
    parts = urlsplit(pg_url)
    url = f"postgresql://postgres:{SECRET}@{parts.path}?{parts.query}"
    env = {k: v for k, v in bot_base_env.items() if k != "DATABASE_PATH"}
    return {**env, "DATABASE_URL": url}


async def test_a_question_is_answered_and_recorded_in_postgres(
    start_bot: StartBot,
    pg_bot_env: dict[str, str],
    pg_url: str,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    bot = await start_bot(pg_bot_env)
    fake_telegram.enqueue_update(
        message_update(CHAT, text="Где сейчас находится заказ 8041?", user_id=CHAT)
    )
    [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert await bot.terminate() == 0

    # a restart on the same database remembers the conversation
    bot = await start_bot(pg_bot_env)
    fake_telegram.enqueue_update(message_update(CHAT, text="А когда его доставят?", user_id=CHAT))
    await fake_telegram.wait_for_messages(CHAT, 2)
    earlier = " ".join(str(m.get("content")) for m in fake_openai.chat_requests[-1]["messages"])
    assert "8041" in earlier
    assert await bot.terminate() == 0

    conn = await asyncpg.connect(pg_url)
    try:
        status = await conn.fetchval("SELECT status FROM orders WHERE order_id = '8041'")
        updates = await conn.fetch("SELECT status FROM updates WHERE chat_id = $1", CHAT)
        turns = await conn.fetchval("SELECT count(*) FROM turns WHERE status = 'answered'")
        roles = await conn.fetch("SELECT role FROM messages ORDER BY id")
    finally:
        await conn.close()
    assert status in answer.plain_text  # the demo data was seeded into PostgreSQL
    assert [r["status"] for r in updates] == ["delivered", "delivered"]
    assert turns == 2
    assert [r["role"] for r in roles] == ["user", "assistant", "user", "assistant"]
    assert SECRET not in bot.output
