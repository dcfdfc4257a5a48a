"""Limits through the real process: per-user message limits and the concurrent-turn cap."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.telegram.texts import RU
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    ask,
    finished_sql,
    last_user_text,
    seen_text,
    wait_for_db,
)
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, default_script
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    callback_update,
    contact_update,
    message_update,
)

pytestmark = pytest.mark.both_backends


async def test_a_flooding_user_gets_one_notice_and_no_more_model_calls(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(USER_MESSAGES_PER_MINUTE="2", USER_MESSAGES_PER_DAY="100")
    flood = [f"Привет {i}" for i in range(6)]
    update_ids = [fake_telegram.enqueue_update(message_update(801, text=t)) for t in flood]
    await wait_for_db(database_path, finished_sql(update_ids), [(6,)], *update_ids)
    other = await ask(fake_telegram, 802, "Привет")  # another customer is not affected

    texts = [seen_text(m.text) for m in fake_telegram.messages_to(801)]
    assert len(texts) == 3
    assert texts[2] == seen_text(RU.rate_limited_notice)
    asked_model = {last_user_text(b) for b in fake_openai.chat_requests}
    assert asked_model & set(flood) == set(flood[:2])
    assert other == "Здравствуйте! Чем могу помочь?"


async def test_turns_over_the_concurrency_cap_wait_and_are_all_answered(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    gate = asyncio.Event()

    def hold_the_first(body: Body) -> FakeReply:
        if last_user_text(body) == "first" and body.get("tools"):
            return completion(text="first answer", hold=gate)
        return default_script(body)

    fake_openai.handler = hold_the_first
    await start_bot(MAX_CONCURRENT_TURNS="1")
    fake_telegram.enqueue_update(message_update(911, text="first"))
    await fake_openai.wait_for_requests(1, within_s=WAIT_S)
    waiting = [
        fake_telegram.enqueue_update(message_update(chat_id, text="Где заказ 8041?"))
        for chat_id in range(912, 917)
    ]
    # the five turns are recorded and started, but the only slot is taken
    await wait_for_db(
        database_path,
        f"SELECT count(*) FROM updates WHERE update_id IN ({','.join('?' * 5)})",
        [(5,)],
        *waiting,
    )
    assert len(fake_openai.requests) == 1

    gate.set()
    first = await fake_telegram.wait_for_messages(911, within=WAIT_S)
    others = [await fake_telegram.wait_for_messages(c, within=WAIT_S) for c in range(912, 917)]

    assert seen_text(first[0].text) == "first answer"
    assert all("8041" in seen_text(messages[0].text) for messages in others)  # none dropped
    assert last_user_text(fake_openai.chat_requests[0]) == "first"


async def test_commands_over_the_limit_get_one_notice_and_cost_no_question(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    limit, admin = 5, 803
    await start_bot(USER_MESSAGES_PER_MINUTE=str(limit), ADMIN_IDS=str(admin))
    flood = [fake_telegram.enqueue_update(message_update(804, text="/help")) for _ in range(12)]
    stats = [fake_telegram.enqueue_update(message_update(admin, text="/stats")) for _ in range(7)]
    every = flood + stats
    await wait_for_db(database_path, finished_sql(every), [(len(every),)], *every)

    replies = [seen_text(m.text) for m in fake_telegram.messages_to(804)]
    assert len(replies) == limit + 1  # the help five times, one notice, then silence
    assert replies[-1] == seen_text(RU.rate_limited_notice)
    assert RU.rate_limited_notice not in replies[:-1]
    # the admins' /stats is never limited
    assert len(fake_telegram.messages_to(admin)) >= len(stats)
    assert all(
        seen_text(m.text) != seen_text(RU.rate_limited_notice)
        for m in fake_telegram.messages_to(admin)
    )
    # commands have a budget of their own: the customer's question still reaches the model
    assert await ask(fake_telegram, 804, "Привет") == "Здравствуйте! Чем могу помочь?"
    assert fake_openai.chat_requests


async def test_button_presses_over_the_limit_get_one_notice_then_silence(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    limit = 2
    await start_bot(USER_MESSAGES_PER_MINUTE=str(limit))
    presses = [
        fake_telegram.enqueue_update(callback_update(805, "fb:999:u", message_id=7))
        for _ in range(8)
    ]
    await wait_for_db(database_path, finished_sql(presses), [(len(presses),)], *presses)
    # two presses acknowledged (a button naming no answer of this chat), one notice
    assert len(fake_telegram.calls_of("answerCallbackQuery")) == limit
    notices = [seen_text(m.text) for m in fake_telegram.messages_to(805)]
    assert notices == [seen_text(RU.rate_limited_notice)]


async def test_contacts_over_the_limit_are_refused_and_not_kept(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    limit, customer = 1, 806
    await start_bot(USER_MESSAGES_PER_MINUTE=str(limit))
    cards = [
        fake_telegram.enqueue_update(
            contact_update(customer, phone_number="79005550101", contact_user_id=None)
        )
        for _ in range(4)
    ]
    await wait_for_db(database_path, finished_sql(cards), [(len(cards),)], *cards)
    replies = [seen_text(m.text) for m in fake_telegram.messages_to(customer)]
    assert replies == [seen_text(RU.contact_not_own), seen_text(RU.rate_limited_notice)]
    # no refused card stays in the inbox copy of its update either
    await wait_for_db(
        database_path, "SELECT count(*) FROM updates WHERE payload LIKE '%9005550101%'", [(0,)]
    )
