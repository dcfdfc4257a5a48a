"""Two real bot processes in webhook mode on one PostgreSQL database; one is SIGKILLed.

The load balancer is played by the test: it posts each update to one instance or the
other in turn, some to both (Telegram retrying on another instance), and after the kill
only to the survivor. Each instance has its own fake model endpoint, so the test knows
when the doomed instance is in the middle of a turn: its endpoint answers a few questions
and then keeps the next one waiting. That is when it is killed, once the answers it did
give are recorded as delivered: a kill between Telegram accepting a message and the bot
recording it resends that message at the take-over (the inbox delivers at least once, at
most twice), while this test is about the turn cut off mid-way, which must be answered
once. The survivor takes over its chats when their claims' lease (CLAIM_LEASE_S) runs out.

Every question must be answered exactly once, in order in its chat, with one history pair
per question and every update delivered.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.harness import (
    BotProcess,
    bot_env,
    free_port,
    post_update,
    webhook_env,
)
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.pg import until_server_shows

pytestmark = pytest.mark.postgres

CHATS = tuple(range(601, 607))
QUESTIONS_BEFORE_KILL = 3
QUESTIONS_AFTER_KILL = 2
LEASE_S = 4
# the doomed instance's model answers this many turns, then keeps the next one waiting
ANSWERED_BEFORE_FREEZE = 2


def question(chat_id: int, number: int) -> str:
    return f"Вопрос {number} из чата {chat_id}"


def last_user_text(body: Body) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def echo(body: Body) -> FakeReply:
    """A model that answers each question by quoting it (so an answer names its question)."""
    if not body.get("tools"):  # a summary request
        return completion(text="Краткое содержание разговора.")
    return completion(text=f"Ответ: {last_user_text(body)}")


class FreezingModel:
    """Answers like `echo` a few times, then never again (the turn in flight at the kill)."""

    def __init__(self) -> None:
        self.turns = 0
        self.answered: list[str] = []  # the questions it answered, in order
        self.frozen = asyncio.Event()
        self._never = asyncio.Event()

    async def __call__(self, body: Body) -> FakeReply:
        if body.get("tools"):
            self.turns += 1
            if self.turns > ANSWERED_BEFORE_FREEZE:
                self.frozen.set()
                await self._never.wait()
            self.answered.append(last_user_text(body))
        return echo(body)


@pytest.fixture
async def doomed_model() -> AsyncIterator[tuple[FakeOpenAIServer, FreezingModel]]:
    model = FreezingModel()
    server = FakeOpenAIServer(model)
    await server.start()
    try:
        yield server, model
    finally:
        await server.close()


async def post_to_all(
    http: aiohttp.ClientSession, ports: list[int], update: dict[str, Any]
) -> None:
    """Post one update to every instance at once; each must answer 200 (stored)."""
    statuses = await asyncio.gather(*(post_update(http, port, update) for port in ports))
    assert statuses == [200] * len(ports), statuses


async def start_instance(
    start_bot: StartBot, env: dict[str, str], name: str, port: int, model: FakeOpenAIServer
) -> BotProcess:
    return await start_bot(
        webhook_env(env, port),
        INSTANCE_ID=name,
        CLAIM_LEASE_S=str(LEASE_S),
        OPENAI_BASE_URL=model.base_url,
    )


async def test_two_instances_answer_every_question_once_in_order_when_one_is_killed(
    start_bot: StartBot,
    clean_env: dict[str, str],
    database_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    doomed_model: tuple[FakeOpenAIServer, FreezingModel],
    http: aiohttp.ClientSession,
    pg_url: str,
) -> None:
    fake_openai.handler = echo
    doomed_server, doomed = doomed_model
    env = bot_env(
        clean_env,
        telegram=fake_telegram,
        openai=fake_openai,
        database=database_path,
        database_url=pg_url,
    )
    ports = [free_port(), free_port()]
    doomed_bot = await start_instance(start_bot, env, "doomed", ports[0], doomed_server)
    await start_instance(start_bot, env, "survivor", ports[1], fake_openai)

    asked: dict[int, list[str]] = defaultdict(list)
    update_ids: dict[str, int] = {}  # question → its update's id
    turn = itertools.count()
    for number in range(1, QUESTIONS_BEFORE_KILL + 1):
        for chat_id in CHATS:
            text = question(chat_id, number)
            asked[chat_id].append(text)
            n = next(turn)
            targets = ports if n % 7 == 6 else [ports[n % 2]]  # every 7th: to both
            update = message_update(chat_id, text=text)
            update_ids[text] = update["update_id"]
            await post_to_all(http, targets, update)

    await asyncio.wait_for(doomed.frozen.wait(), 60)  # the doomed instance is mid-turn
    conn = await asyncpg.connect(pg_url)
    try:  # ... and its answers so far are out and recorded (see the module's docstring)
        await until_server_shows(
            conn,
            "SELECT count(*) = 0 FROM updates WHERE update_id = ANY($1::bigint[])"
            " AND status <> 'delivered'",
            [update_ids[text] for text in doomed.answered],
            within=60,
        )
    finally:
        await conn.close()
    await doomed_bot.kill()

    for number in range(
        QUESTIONS_BEFORE_KILL + 1, QUESTIONS_BEFORE_KILL + QUESTIONS_AFTER_KILL + 1
    ):
        for chat_id in CHATS:
            text = question(chat_id, number)
            asked[chat_id].append(text)
            await post_to_all(http, [ports[1]], message_update(chat_id, text=text))

    total = sum(len(texts) for texts in asked.values())

    def answers() -> int:
        return sum(len(fake_telegram.messages_to(chat_id)) for chat_id in CHATS)

    await fake_telegram.wait_until(lambda: answers() >= total, within=LEASE_S + 90)
    conn = await asyncpg.connect(pg_url)
    try:
        # the last answers' rows finish right after their sendMessage: then nothing is
        # left to send, so the answers seen are all there will ever be
        await until_server_shows(
            conn, "SELECT count(*) = 0 FROM updates WHERE status IN ('pending', 'answered')"
        )
        statuses = await conn.fetch("SELECT status, count(*) FROM updates GROUP BY status")
        history = await conn.fetch(
            "SELECT s.chat_id, m.role, m.content FROM messages m "
            "JOIN sessions s ON s.id = m.session_id ORDER BY m.id"
        )
        answered_turns = await conn.fetchval("SELECT count(*) FROM turns WHERE status = 'answered'")
    finally:
        await conn.close()

    assert {row["status"]: row["count"] for row in statuses} == {"delivered": total}
    for chat_id in CHATS:
        got = [m.plain_text for m in fake_telegram.messages_to(chat_id)]
        assert got == [f"Ответ: {text}" for text in asked[chat_id]], chat_id
        user_history = [
            row["content"] for row in history if row["chat_id"] == chat_id and row["role"] == "user"
        ]
        assert user_history == asked[chat_id], chat_id  # one history pair per question
        answer_history = [
            row["content"]
            for row in history
            if row["chat_id"] == chat_id and row["role"] == "assistant"
        ]
        assert answer_history == [f"Ответ: {text}" for text in asked[chat_id]], chat_id
    assert answered_turns == total
    assert doomed.turns > ANSWERED_BEFORE_FREEZE  # the kill did land mid-turn
