"""Poison updates never block intake: the real process in polling and webhook mode.

A poison update is one the inbox cannot store (an id beyond SQLite's 64-bit integers,
text that is not UTF-8) or one aiogram cannot parse (a field of the wrong type). It is
quarantined or finished as failed, acknowledged, and the updates around it are answered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.chat_helpers import WAIT_S, StartBot, query, seen_text, wait_for_db
from tests.e2e.harness import WEBHOOK_PATH, WEBHOOK_SECRET, free_port, webhook_env
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.both_backends

BIG = 2**63  # one more than SQLite's largest INTEGER


def chat_id_too_big(update_id: int) -> dict[str, Any]:
    update = message_update(701, text="Где заказ 8041?", update_id=update_id)
    update["message"]["chat"]["id"] = BIG + 7
    return update


def user_id_too_big(update_id: int) -> dict[str, Any]:
    update = message_update(702, text="Где заказ 8041?", update_id=update_id)
    update["message"]["from"]["id"] = BIG
    return update


def not_utf8(update_id: int) -> dict[str, Any]:
    # JSON allows an escaped lone surrogate; it is not UTF-8, so SQLite cannot take it
    return message_update(703, text="broken \ud800 text", update_id=update_id)


def wrong_types(chat_id: int, update_id: int) -> dict[str, Any]:
    update = message_update(chat_id, text="Где заказ 8041?", update_id=update_id)
    update["message"]["date"] = "yesterday"
    update["message"]["from"]["is_bot"] = {"no": 1}
    return update


def quarantined(database: Path) -> dict[str, str]:
    return dict(query(database, "SELECT update_id, reason FROM quarantined_updates"))


def status_of(database: Path, update_id: int) -> tuple[str, str | None]:
    [row] = query(database, "SELECT status, reason FROM updates WHERE update_id = ?", update_id)
    return row[0], row[1]


async def test_polling_moves_past_poison_updates_and_answers_the_rest(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    await start_bot()
    first = message_update(711, text="Где заказ 8041?", update_id=90_001)
    last = message_update(712, text="Где заказ 8041?", update_id=90_006)
    batch = [
        first,
        chat_id_too_big(90_002),
        user_id_too_big(90_003),
        not_utf8(90_004),
        wrong_types(711, 90_005),  # storable, not parsable: same chat as `first`
        last,
    ]
    for update in batch:  # no await in between: Telegram returns them as one batch
        fake_telegram.enqueue_update(update)

    await fake_telegram.wait_for_call(
        "getUpdates", lambda c: c.params.get("offset") == 90_007, within=WAIT_S
    )
    [a] = await fake_telegram.wait_for_messages(711, within=WAIT_S)
    [b] = await fake_telegram.wait_for_messages(712, within=WAIT_S)
    assert "8041" in seen_text(a.text) and "8041" in seen_text(b.text)
    # the batch was fetched once: no getUpdates asked for it again after it was confirmed
    offsets = [c.params.get("offset") for c in fake_telegram.calls_of("getUpdates")]
    assert offsets[offsets.index(90_007) :] == [90_007] * len(offsets[offsets.index(90_007) :])
    assert quarantined(database_path) == {
        "90002": "chat_id_out_of_range",
        "90003": "user_id_out_of_range",
        "90004": "not_storable_UnicodeEncodeError",
    }
    await wait_for_db(
        database_path,
        "SELECT status, reason FROM updates WHERE update_id = ?",
        [("failed", "unparsable")],
        90_005,
    )
    assert fake_telegram.messages_to(701) == fake_telegram.messages_to(703) == []

    # an update id beyond 64 bits is quarantined and confirmed too (offset = id + 1)
    fake_telegram.enqueue_update(message_update(713, text="hi", update_id=BIG + 1))
    await fake_telegram.wait_for_call(
        "getUpdates", lambda c: c.params.get("offset") == BIG + 2, within=WAIT_S
    )
    assert quarantined(database_path)[str(BIG + 1)] == "update_id_out_of_range"
    assert fake_telegram.pending_updates == 0


async def test_unparsable_update_does_not_hold_back_its_chat(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(wrong_types(721, 91_001))
    fake_telegram.enqueue_update(message_update(721, text="Где заказ 8041?", update_id=91_002))

    [answer] = await fake_telegram.wait_for_messages(721, within=WAIT_S)
    assert "8041" in seen_text(answer.text)
    await wait_for_db(
        database_path,
        "SELECT status, reason FROM updates WHERE update_id = ?",
        [("failed", "unparsable")],
        91_001,
    )


async def test_webhook_poison_post_gets_200_and_its_group_commit_still_succeeds(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    database_path: Path,
) -> None:
    port = free_port()
    await start_bot(webhook_env(bot_base_env, port))
    url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
    good = [message_update(731 + i, text="Где заказ 8041?", update_id=92_000 + i) for i in range(8)]
    poison = [chat_id_too_big(92_100), not_utf8(92_101), message_update(739, update_id=BIG)]

    async with aiohttp.ClientSession() as http:

        async def post(update: dict[str, Any]) -> int:
            async with http.post(url, json=update, headers=headers) as response:
                return response.status

        # all at once, so that they share group commits with the poison ones
        statuses = await asyncio.gather(*(post(u) for u in [*good[:4], *poison, *good[4:]]))
        assert statuses == [200] * len(statuses)
        # Telegram redelivering a quarantined update gets 200 again, and nothing else
        assert await post(poison[0]) == 200

    for i in range(8):
        [answer] = await fake_telegram.wait_for_messages(731 + i, within=WAIT_S)
        assert "8041" in seen_text(answer.text)
    assert set(quarantined(database_path)) == {"92100", "92101", str(BIG)}
    assert fake_telegram.messages_to(701) == fake_telegram.messages_to(703) == []
