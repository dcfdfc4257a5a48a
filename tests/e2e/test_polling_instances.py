"""Two real bot processes in polling mode on one PostgreSQL database.

Exactly one polls (the holder of the leader lock); the other stands by. The fake Bot API
tells them apart (each has its own `client_url`) and counts polls that overlap. When the
leader is killed with SIGKILL the standby polls within a few seconds, and every question
is answered exactly once, in order per chat — also the one the leader was answering when
it died (the standby takes its chat once the claim's lease runs out, bot/runtime/claimed.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.e2e.harness import BotProcess, bot_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.pg import until_server_shows
from tests.waits import OUTER_LIMIT_S

pytestmark = pytest.mark.postgres

ORDERS = ("8041", "7718", "9912")  # the demo shop's orders: each answer names its own
CHATS = (5101, 5102, 5103)
TAKEOVER_WITHIN_S = OUTER_LIMIT_S  # the standby tries every second
LEASE_S = 3  # CLAIM_LEASE_S: how long a dead leader's chat waits for another instance


@pytest.fixture
async def processes() -> AsyncIterator[list[BotProcess]]:
    started: list[BotProcess] = []
    yield started
    for process in started:
        if process.proc is not None and process.proc.returncode is None:
            await process.kill()


async def start_instance(
    name: str,
    processes: list[BotProcess],
    *,
    env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    cwd: Path,
) -> BotProcess:
    process = BotProcess(
        {**env, "TELEGRAM_API_URL": fake_telegram.client_url(name), "INSTANCE_ID": name}, cwd
    )
    processes.append(process)
    await process.start()
    await process.wait_ready()
    return process


def ask(fake: FakeTelegramServer, chat: int, order: str) -> int:
    return fake.enqueue_update(message_update(chat, text=f"Где мой заказ {order}?", user_id=chat))


async def all_updates_finished(url: str, count: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        await until_server_shows(
            conn,
            "SELECT count(*) = $1 FROM updates WHERE status = 'delivered'",
            count,
            within=OUTER_LIMIT_S,
        )
    finally:
        await conn.close()


def answers(fake: FakeTelegramServer, chat: int) -> list[str]:
    """The order number each answer to `chat` names, in the order they were sent."""
    found = []
    for message in fake.messages_to(chat):
        named = [order for order in ORDERS if order in message.plain_text]
        assert len(named) == 1, message.plain_text
        found.append(named[0])
    return found


async def test_one_instance_polls_and_the_standby_takes_over_when_it_is_killed(
    clean_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    pg_url: str,
    tmp_path: Path,
    processes: list[BotProcess],
) -> None:
    env = bot_env(
        clean_env,
        telegram=fake_telegram,
        openai=fake_openai,
        database=tmp_path / "unused.sqlite3",
        database_url=pg_url,
        STREAM_ANSWERS="false",
        ORDER_LOOKUPS_PER_HOUR="1000",
    )
    a = await start_instance("A", processes, env=env, fake_telegram=fake_telegram, cwd=tmp_path)
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "A")
    b = await start_instance("B", processes, env=env, fake_telegram=fake_telegram, cwd=tmp_path)
    await b.wait_for_line("this one stands by")

    # the leader answers; the standby never polls
    for chat in CHATS:
        ask(fake_telegram, chat, ORDERS[0])
    for chat in CHATS:
        await fake_telegram.wait_for_messages(chat, 1)
    assert not [c for c in fake_telegram.calls_of("getUpdates") if c.client == "B"]
    assert [c.client for c in fake_telegram.calls_of("deleteWebhook")] == ["A"]
    # finished, not only sent: a kill between the send and its record would resend that
    # answer (the one at-least-once window of delivery, the same as with one instance)
    await all_updates_finished(pg_url, len(CHATS))

    # questions wait at Telegram while the leader dies
    await a.kill()
    for chat in CHATS:
        ask(fake_telegram, chat, ORDERS[1])
    first = await fake_telegram.wait_for_call(
        "getUpdates", lambda c: c.client == "B", within=TAKEOVER_WITHIN_S
    )
    assert "offset" not in first.params  # whatever Telegram still holds
    await b.wait_for_line("this instance is the leader")
    for chat in CHATS:
        ask(fake_telegram, chat, ORDERS[2])
    for chat in CHATS:
        await fake_telegram.wait_for_messages(chat, 3)

    # a final question per chat proves nothing more is on its way
    for chat in CHATS:
        ask(fake_telegram, chat, ORDERS[0])
    for chat in CHATS:
        await fake_telegram.wait_for_messages(chat, 4)
    for chat in CHATS:
        assert answers(fake_telegram, chat) == [*ORDERS, ORDERS[0]]  # once each, in order
    assert fake_telegram.poll_overlaps == 0
    assert await b.terminate() == 0


async def test_the_question_a_killed_leader_was_answering_is_answered_once_by_the_standby(
    clean_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    pg_url: str,
    tmp_path: Path,
    processes: list[BotProcess],
) -> None:
    env = bot_env(
        clean_env,
        telegram=fake_telegram,
        openai=fake_openai,
        database=tmp_path / "unused.sqlite3",
        database_url=pg_url,
        STREAM_ANSWERS="false",
        CLAIM_LEASE_S=str(LEASE_S),
    )
    a = await start_instance("A", processes, env=env, fake_telegram=fake_telegram, cwd=tmp_path)
    await fake_telegram.wait_for_call("getUpdates", lambda c: c.client == "A")
    b = await start_instance("B", processes, env=env, fake_telegram=fake_telegram, cwd=tmp_path)
    await b.wait_for_line("this one stands by")

    release = fake_openai.hold_answers()
    chat = CHATS[0]
    ask(fake_telegram, chat, ORDERS[0])
    await fake_openai.wait_for_requests(1)  # the leader is mid-turn
    await a.kill()
    release.set()

    await fake_telegram.wait_for_call(
        "getUpdates", lambda c: c.client == "B", within=TAKEOVER_WITHIN_S
    )
    ask(fake_telegram, chat, ORDERS[1])  # queued behind the dead leader's question
    await fake_telegram.wait_for_messages(chat, 2, within=LEASE_S + 30)
    await all_updates_finished(pg_url, 2)
    assert answers(fake_telegram, chat) == [ORDERS[0], ORDERS[1]]
    conn = await asyncpg.connect(pg_url)
    try:
        pairs = await conn.fetch(
            "SELECT role, count(*) AS n FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_id = $1 GROUP BY role ORDER BY role",
            chat,
        )
    finally:
        await conn.close()
    assert [(r["role"], r["n"]) for r in pairs] == [("assistant", 2), ("user", 2)]
    assert await b.terminate() == 0
