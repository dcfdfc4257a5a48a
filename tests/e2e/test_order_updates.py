"""Order updates through the real process: `python -m bot` against both fakes.

A customer asks about their own order and gets a "notify me when it moves" button; only
they can subscribe (a forged press by someone else subscribes nobody). The order then
changes in the shop's own tables (the local backend) and the shop pushes a signed event:
exactly one message, in the customer's language, which enters their conversation. A
redelivered push, another push about the same change, and a restart send nothing more.
A push with a wrong signature, an oversized body, or for an order nobody subscribed to
changes nothing and gets the expected HTTP answer. The polling fallback finds a change
without any push; a customer who blocked the bot is unsubscribed.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.runtime.shop_push import generic_signature
from bot.telegram.order_update_words import ORDER_UPDATE_WORDS
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    ask,
    import_shop,
    query,
    seen_text,
    tool_step,
    wait_for_db,
)
from tests.e2e.harness import PgDatabasePath, bot_env, free_port, post_update, webhook_env
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.shop_api import TOKEN as SHOP_TOKEN
from tests.fakes.shop_api import FakeShopApi
from tests.fakes.shop_api import order as shop_order
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
)

EN_WORDS = ORDER_UPDATE_WORDS["en"]

CUSTOMER, STRANGER, ADMIN = 7301, 7302, 7399
OWNED, OTHERS = "8141", "8142"
SECRET = "push-secret-for-tests"
MOVED = EN_WORDS.for_order("order_update_in_transit", OWNED)


def shop() -> dict[str, Any]:
    return {
        "orders": [
            {
                "order_id": OWNED,
                "status": "processing",
                "owner_telegram_id": CUSTOMER,
                "updated_at": "2026-11-30T10:00:00+00:00",
            },
            {
                "order_id": OTHERS,
                "status": "processing",
                "owner_telegram_id": STRANGER,
                "updated_at": "2026-11-30T10:00:00+00:00",
            },
        ]
    }


def lookups(openai: FakeOpenAIServer) -> None:
    """The model looks up every 4-digit number, then says something short."""
    openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"\d{4}", text)
        ],
        lambda body: "Here is what I found.",
    )


def move(database: Path, number: str, status: str, updated_at: str) -> None:
    """The shop changes the order in its own tables (the local backend)."""
    query(
        database,
        "UPDATE orders SET status = ?, updated_at = ? WHERE order_id = ?",
        status,
        updated_at,
        number,
    )


def inline(message: SentMessage) -> list[dict[str, Any]]:
    markup = message.reply_markup or {}
    return [button for row in markup.get("inline_keyboard") or [] for button in row]


async def say(telegram: FakeTelegramServer, chat_id: int, update: dict[str, Any]) -> SentMessage:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(update)
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


def press(chat_id: int, data: str, user_id: int | None = None) -> dict[str, Any]:
    return callback_update(chat_id, data, user_id=user_id, language_code="en")


async def push(
    http: aiohttp.ClientSession,
    port: int,
    body: bytes,
    *,
    signature: str | None = None,
) -> tuple[int, dict[str, Any]]:
    headers = {
        "Content-Type": "application/json",
        "X-Shop-Signature": signature if signature is not None else generic_signature(SECRET, body),
    }
    url = f"http://127.0.0.1:{port}/shop/events"
    async with http.post(url, data=body, headers=headers) as response:
        return response.status, await response.json(content_type=None)


def event(event_id: str, number: str) -> bytes:
    return json.dumps(
        {"id": event_id, "type": "order.updated", "order": {"number": number}}
    ).encode()


def texts_to(telegram: FakeTelegramServer, chat_id: int) -> list[str]:
    return [seen_text(m.text) for m in telegram.messages_to(chat_id)]


async def all_events_done(database: Path) -> None:
    await wait_for_db(
        database, "SELECT count(*) FROM shop_events WHERE processed_at IS NULL", [(0,)]
    )


@pytest.mark.sqlite_only
async def test_subscribe_push_exactly_one_message_and_nothing_more(
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
        "ORDER_UPDATES_POLL_MINUTES": "0",  # pushes only: the push is what tells
        "SHOP_WEBHOOK_SECRET": SECRET,
        "SHOP_WEBHOOK_MAX_BYTES": "2048",
        "ADMIN_IDS": str(ADMIN),
        "HEALTH_ENABLED": "true",
        "WEB_HOST": "127.0.0.1",
        "WEB_PORT": str(port),
    }
    await import_shop(env, tmp_path, shop())
    lookups(fake_openai)
    bot = await start_bot(env)

    # the owner's answer offers the button; the stranger's (a miss) does not
    answer = await say(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text=f"Where is {OWNED}?", language_code="en"),
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    assert notify == {
        "text": EN_WORDS.for_order("order_updates_button", OWNED),
        "callback_data": f"ou:on:{OWNED}",
    }
    missed = await say(
        fake_telegram,
        STRANGER,
        message_update(STRANGER, text=f"Where is {OWNED}?", language_code="en"),
    )
    assert not [b for b in inline(missed) if b["callback_data"].startswith("ou:")]

    # a forged press by someone else subscribes nobody
    refused = await say(fake_telegram, STRANGER, press(STRANGER, f"ou:on:{OWNED}"))
    assert seen_text(refused.text) == EN_WORDS.for_order("order_updates_not_yours", OWNED)
    assert query(database_path, "SELECT count(*) FROM order_subscriptions") == [(0,)]

    done = await say(fake_telegram, CUSTOMER, press(CUSTOMER, notify["callback_data"]))
    assert seen_text(done.text) == EN_WORDS.for_order("order_updates_subscribed", OWNED)
    again = await say(fake_telegram, CUSTOMER, press(CUSTOMER, notify["callback_data"]))
    assert seen_text(again.text) == EN_WORDS.for_order("order_updates_already", OWNED)

    async with aiohttp.ClientSession() as http:
        # refused pushes change nothing
        body = event("evt-1", OWNED)
        assert (await push(http, port, body, signature="sha256=" + "0" * 64))[0] == 401
        assert (await push(http, port, body, signature=""))[0] == 401
        big = json.dumps({"id": "x", "order": {"number": OWNED}, "pad": "a" * 4096}).encode()
        assert (await push(http, port, big))[0] == 413
        assert (await push(http, port, b"not json"))[0] == 400
        status, answer_body = await push(http, port, event("evt-0", OTHERS))
        assert (status, answer_body["stored"]) == (200, False)  # nobody subscribed to it
        assert query(database_path, "SELECT count(*) FROM shop_events") == [(0,)]

        move(database_path, OWNED, "in_transit", "2026-11-30T12:00:00+00:00")
        before = len(fake_telegram.messages_to(CUSTOMER))
        status, answer_body = await push(http, port, body)
        assert (status, answer_body["stored"]) == (200, True)
        moved = await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
        assert seen_text(moved[before].text) == MOVED

        # the same push redelivered, and another push about the same change: nothing more
        assert (await push(http, port, body))[0] == 200
        assert (await push(http, port, event("evt-2", OWNED)))[0] == 200
        await all_events_done(database_path)
        assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1

    # the notification is part of the conversation: the next question is asked with it
    await say(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text="What does that mean?", language_code="en"),
    )
    asked = [
        b
        for b in fake_openai.chat_requests
        if any(m.get("content") == "What does that mean?" for m in b["messages"])
    ][-1]
    assert {"role": "assistant", "content": MOVED} in [
        {"role": m["role"], "content": m["content"]} for m in asked["messages"]
    ]
    assert query(
        database_path, "SELECT state FROM order_notifications WHERE order_number = ?", OWNED
    ) == [("sent",)]
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        metrics = await response.text()
    assert 'support_bot_order_updates_total{outcome="sent"} 1.0' in metrics
    assert "support_bot_order_update_subscriptions 1.0" in metrics
    owners_view = await ask(fake_telegram, ADMIN, "/stats", language_code="en")
    assert re.search(
        r"ORDER UPDATES\s+subscriptions now\s+1\s+new subscriptions\s+1\s+sent\s+1\s+"
        r"not delivered\s+0\s+unsubscribed \(bot blocked\)\s+0",
        owners_view,
    ), owners_view

    # a restart sends nothing again, and a new push about the same change neither
    assert await bot.terminate() == 0
    await start_bot(env)
    async with aiohttp.ClientSession() as http:
        assert (await push(http, port, event("evt-3", OWNED)))[0] == 200
        await all_events_done(database_path)
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1

    # /updates lists the order with a stop button; after stopping, a change tells nobody
    listed = await say(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/updates", language_code="en")
    )
    assert EN_WORDS.order_updates_list in seen_text(listed.text)
    [stop] = inline(listed)
    assert stop["callback_data"] == f"ou:off:{OWNED}"
    stopped = await say(fake_telegram, CUSTOMER, press(CUSTOMER, stop["callback_data"]))
    assert seen_text(stopped.text) == EN_WORDS.for_order("order_updates_stopped", OWNED)
    move(database_path, OWNED, "delivered", "2026-11-30T15:00:00+00:00")
    async with aiohttp.ClientSession() as http:
        status, answer_body = await push(http, port, event("evt-4", OWNED))
        assert (status, answer_body["stored"]) == (200, False)
    none = await say(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/updates", language_code="en")
    )
    assert seen_text(none.text) == seen_text(EN_WORDS.order_updates_none)
    delivered = EN_WORDS.for_order("order_update_delivered", OWNED)
    assert delivered not in texts_to(fake_telegram, CUSTOMER)


@pytest.mark.sqlite_only
async def test_polling_finds_a_change_once_and_a_blocked_customer_is_unsubscribed(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    env = {
        **bot_base_env,
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "0.005",  # every 0.3 s: many rounds in a short test
    }
    await import_shop(env, tmp_path, shop())
    lookups(fake_openai)
    await start_bot(env)
    answer = await say(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text=f"Where is {OWNED}?", language_code="en"),
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    await say(fake_telegram, CUSTOMER, press(CUSTOMER, notify["callback_data"]))

    before = len(fake_telegram.messages_to(CUSTOMER))
    move(database_path, OWNED, "in_transit", "2026-11-30T12:00:00+00:00")
    moved = await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
    assert seen_text(moved[before].text) == MOVED
    # several more rounds read the same order: still one message
    [(checked,)] = query(database_path, "SELECT checked_at FROM order_subscriptions")
    async with asyncio.timeout(WAIT_S):
        while True:
            [(now,)] = query(database_path, "SELECT checked_at FROM order_subscriptions")
            if now > checked + 1:
                break
            await asyncio.sleep(0.05)
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1

    # the customer blocks the bot: the next change fails with 403 and unsubscribes them
    fake_telegram.blocked_by.add(CUSTOMER)
    move(database_path, OWNED, "ready_for_pickup", "2026-11-30T13:00:00+00:00")
    await wait_for_db(
        database_path,
        "SELECT active, stop_reason FROM order_subscriptions",
        [(0, "blocked")],
    )
    assert query(
        database_path, "SELECT status, state, reason FROM order_notifications ORDER BY id"
    ) == [("in_transit", "sent", None), ("ready_for_pickup", "failed", "forbidden")]


@pytest.mark.postgres
async def test_two_instances_on_postgresql_send_one_message_whichever_gets_the_push(
    start_bot: StartBot,
    clean_env: dict[str, str],
    tmp_path: Path,
    database_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    http: aiohttp.ClientSession,
    pg_url: str,
) -> None:
    """Both instances take pushes and updates; both would poll every 0.3 s, but one
    lock-holder polls and sends: the change is told once, whoever saw it first."""
    env = {
        **bot_env(
            clean_env,
            telegram=fake_telegram,
            openai=fake_openai,
            database=database_path,
            database_url=pg_url,
        ),
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "0.005",
        "SHOP_WEBHOOK_SECRET": SECRET,
    }
    db = PgDatabasePath.of(database_path, pg_url)
    await import_shop(env, tmp_path, shop())
    lookups(fake_openai)
    ports = [free_port(), free_port()]
    bots = [
        await start_bot(webhook_env(env, port), INSTANCE_ID=name)
        for name, port in zip(("one", "two"), ports, strict=True)
    ]

    async def post(port: int, update: dict[str, Any]) -> SentMessage:
        before = len(fake_telegram.messages_to(CUSTOMER))
        assert await post_update(http, port, update) == 200
        return (await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S))[before]

    answer = await post(
        ports[0], message_update(CUSTOMER, text=f"Where is {OWNED}?", language_code="en")
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    done = await post(ports[1], press(CUSTOMER, notify["callback_data"]))
    assert seen_text(done.text) == EN_WORDS.for_order("order_updates_subscribed", OWNED)

    before = len(fake_telegram.messages_to(CUSTOMER))
    move(db, OWNED, "in_transit", "2026-11-30T12:00:00+00:00")
    pushes = [push(http, port, event(f"evt-{port}-{n}", OWNED)) for port in ports for n in range(3)]
    assert [status for status, _ in await asyncio.gather(*pushes)] == [200] * 6
    await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
    await all_events_done(db)
    # and several polling rounds later, still one
    [(checked,)] = query(db, "SELECT checked_at FROM order_subscriptions")
    async with asyncio.timeout(WAIT_S):
        while True:
            [(now,)] = query(db, "SELECT checked_at FROM order_subscriptions")
            if now > checked + 1:
                break
            await asyncio.sleep(0.05)
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1
    assert query(db, "SELECT count(*) FROM order_notifications") == [(1,)]
    leaders = [b for b in bots if "order updates: this instance holds the lock" in b.output]
    assert len(leaders) == 1


@pytest.mark.sqlite_only
async def test_live_http_shop_push_and_polling_read_the_shop_not_a_cache(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    http: aiohttp.ClientSession,
) -> None:
    """SHOP_BACKEND=http (tests/fakes/shop_api.py, the published contract): the change is
    read from the shop (not the 30 s cache of lookups); a shop that is down when the push
    comes loses nothing, the push is told once the shop answers again."""
    number = "100234"
    fake_shop_api.put(shop_order(number, "processing", telegram_id=CUSTOMER))
    port = free_port()
    await start_bot(
        {
            **bot_base_env,
            "SHOP_BACKEND": "http",
            "SHOP_API_URL": fake_shop_api.base_url,
            "SHOP_API_TOKEN": SHOP_TOKEN,
            "ORDER_UPDATES_ENABLED": "true",
            "ORDER_UPDATES_POLL_MINUTES": "0",
            "SHOP_WEBHOOK_SECRET": SECRET,
            "HEALTH_ENABLED": "true",
            "WEB_HOST": "127.0.0.1",
            "WEB_PORT": str(port),
        }
    )
    fake_openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"\d{6}", text)
        ],
        lambda body: "Here is what I found.",
    )
    answer = await say(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text=f"Where is {number}?", language_code="en"),
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    await say(fake_telegram, CUSTOMER, press(CUSTOMER, notify["callback_data"]))

    fake_shop_api.put(
        shop_order(
            number, "ready_for_pickup", telegram_id=CUSTOMER, updated_at="2026-12-01T12:00:00Z"
        )
    )
    fake_shop_api.fail("500", times=2)  # the read after the push fails (with its retry)
    reads = len(fake_shop_api.requests)
    before = len(fake_telegram.messages_to(CUSTOMER))
    status, body = await push(http, port, event("evt-live", number))
    assert (status, body["stored"]) == (200, True)
    ready = EN_WORDS.for_order("order_update_ready_for_pickup", number)
    moved = await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S)
    assert seen_text(moved[before].text) == ready
    assert texts_to(fake_telegram, CUSTOMER).count(ready) == 1
    # two failed reads, then the one that told: the push was kept through the outage
    assert [path for path, *_ in fake_shop_api.requests[reads:]] == [f"/api/orders/{number}"] * 3


@pytest.mark.sqlite_only
async def test_a_notification_cut_off_by_sigkill_is_sent_once_more_never_a_third_time(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    http: aiohttp.ClientSession,
) -> None:
    """Killed while Telegram holds the notification (the held request is dropped, as one
    Telegram never got): the next start sends it once more, so the customer is told once
    and a new push of the same change adds nothing. A notification cut off at its first
    send and again at the next start's is failed ("interrupted"): never a third send."""
    port = free_port()
    env = {
        **bot_base_env,
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "0",
        "SHOP_WEBHOOK_SECRET": SECRET,
        "HEALTH_ENABLED": "true",
        "WEB_HOST": "127.0.0.1",
        "WEB_PORT": str(port),
    }
    await import_shop(env, tmp_path, shop())
    lookups(fake_openai)
    bot = await start_bot(env)
    answer = await say(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text=f"Where is {OWNED}?", language_code="en"),
    )
    [notify] = [b for b in inline(answer) if b["callback_data"].startswith("ou:")]
    await say(fake_telegram, CUSTOMER, press(CUSTOMER, notify["callback_data"]))

    # cut off once: sent at the next start, exactly once
    hold = fake_telegram.hold_send_message(CUSTOMER)
    move(database_path, OWNED, "in_transit", "2026-11-30T12:00:00+00:00")
    assert (await push(http, port, event("evt-k1", OWNED)))[0] == 200
    await asyncio.wait_for(hold.arrived.wait(), WAIT_S)
    assert query(database_path, "SELECT state FROM order_notifications") == [("sending",)]
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle, within=WAIT_S)
    hold.release()
    assert MOVED not in texts_to(fake_telegram, CUSTOMER)

    bot = await start_bot(env)
    await wait_for_db(
        database_path,
        "SELECT state, reason, attempts FROM order_notifications",
        [("sent", None, 2)],
    )
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1
    assert (await push(http, port, event("evt-k2", OWNED)))[0] == 200
    await all_events_done(database_path)
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1

    # cut off at the first send and again at the next start's: failed, never a third
    ready = EN_WORDS.for_order("order_update_ready_for_pickup", OWNED)
    hold = fake_telegram.hold_send_message(CUSTOMER)
    move(database_path, OWNED, "ready_for_pickup", "2026-11-30T13:00:00+00:00")
    assert (await push(http, port, event("evt-k3", OWNED)))[0] == 200
    await asyncio.wait_for(hold.arrived.wait(), WAIT_S)
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle, within=WAIT_S)
    bot = await start_bot(env)
    await fake_telegram.wait_until(lambda: hold.waiting == 1, within=WAIT_S)
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle, within=WAIT_S)
    hold.release()

    await start_bot(env)
    await wait_for_db(
        database_path,
        "SELECT status, state, reason, attempts FROM order_notifications ORDER BY id",
        [("in_transit", "sent", None, 2), ("ready_for_pickup", "failed", "interrupted", 2)],
    )
    assert (await push(http, port, event("evt-k4", OWNED)))[0] == 200
    await all_events_done(database_path)
    assert ready not in texts_to(fake_telegram, CUSTOMER)
    assert texts_to(fake_telegram, CUSTOMER).count(MOVED) == 1
