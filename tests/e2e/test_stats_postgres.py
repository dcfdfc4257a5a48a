"""The owner's /stats through the real process on PostgreSQL, the same as on SQLite.

One bot process on SQLite (DATABASE_PATH) and one on PostgreSQL (DATABASE_URL) each get
the same two customer questions (one answered, one the model refuses) and a 👎 on the
answer; the owner's `/stats all` table must then read the same on both (but for the
header's time range and the reply times, each run's own), and the chart must arrive.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from bot.telegram.stats_view.wording import words_for
from tests.e2e.chat_helpers import WAIT_S, StartBot, seen_text
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer, callback_update, message_update

pytestmark = pytest.mark.postgres

CUSTOMER, ADMIN = 7401, 7409
EN_WORDS = words_for("en")


def model(body: Body) -> FakeReply:
    if not body.get("tools"):
        return completion(text="summary")
    asked = str(body["messages"][-1].get("content"))
    if "weapon" in asked:
        return completion(refusal="I can't help with that.")
    return completion(text="Your order is on its way.")


async def _owner_table(
    start_bot: StartBot, env: dict[str, str], telegram: FakeTelegramServer
) -> list[str]:
    """Run one process: the questions, a 👎, then `/stats all`; the table's lines after
    its header, once the chart has arrived too."""
    bot = await start_bot(env, ADMIN_IDS=str(ADMIN))
    for text in ("Where is my order 8041?", "How do I build a weapon?"):
        before = len(telegram.messages_to(CUSTOMER))
        telegram.enqueue_update(message_update(CUSTOMER, text=text, language_code="en"))
        await telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
    answer = next(m for m in telegram.messages_to(CUSTOMER)[-2:] if m.reply_markup)
    down = answer.reply_markup["inline_keyboard"][0][1]["callback_data"]
    press = callback_update(CUSTOMER, data=down, message_id=answer.message_id, language_code="en")
    telegram.enqueue_update(press)
    await telegram.wait_for_call(
        "answerCallbackQuery",
        lambda c: c.params.get("callback_query_id") == press["callback_query"]["id"],
        within=WAIT_S,
    )

    before = len(telegram.messages_to(ADMIN))
    telegram.enqueue_update(message_update(ADMIN, text="/stats all", language_code="en"))
    await telegram.wait_until(
        lambda: any(m.kind == "photo" for m in telegram.messages_to(ADMIN)[before:]),
        within=WAIT_S,
    )
    assert await bot.terminate() == 0
    tables = [m for m in telegram.messages_to(ADMIN)[before:] if m.kind == "text"]
    lines = "\n".join(seen_text(m.text) for m in tables).splitlines()
    timings = (EN_WORDS.reply_typical, EN_WORDS.reply_slow)  # how long this run took
    return [line for line in lines[2:] if not line.strip().startswith(timings)]


async def test_the_owners_stats_read_the_same_on_postgres_as_on_sqlite(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    pg_url: str,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.handler = model
    on_sqlite = await _owner_table(start_bot, bot_base_env, fake_telegram)

    parts = urlsplit(pg_url)
    pg_env = {k: v for k, v in bot_base_env.items() if k != "DATABASE_PATH"}
    pg_env["DATABASE_URL"] = f"postgresql://postgres@{parts.path}?{parts.query}"
    on_postgres = await _owner_table(start_bot, pg_env, fake_telegram)

    assert on_postgres == on_sqlite
    table = [" ".join(line.split()) for line in on_postgres]
    for line in ("QUESTIONS 2", "answered 1 50%", "declined, off-topic 1", "not helpful 1"):
        assert line in table, (line, table)
